# SPDX-License-Identifier: GPL-2.0
"""Vendor hooks in the KMI (common/patches/: include/trace/hooks/ and
drivers/android/vendor_hooks.c).  A hook is a tracepoint; its arguments
reach the KMI through __traceiter_<hook>'s prototype, so a changed hook
is a break the gate names, and a new hook whose symbols join the KMI is an
addition only.

On real scratch builds of the small tree (layout.SCRATCH; scratch.py;
root): one copy of the built tree, whose hook symbols are put into its
KMI and dumped as the baseline before any edit, so the test depends
neither on abi/ nor on which list in symbol_lists/ names the hooks.  Each
case edits the copy, relinks, checks against that baseline and reverts
its edits.  The short report's naming of hooks is also tested without a
build."""

from __future__ import annotations

import os
import tempfile
import unittest
from pathlib import Path
from typing import Callable

from gkibuild import toolchain
from gkibuild.abi import gate, kmi, short
from gkibuild.abi.changes import Change, Result
from gkibuild.kernel import Kernel
from gkibuild.layout import SCRATCH, Layout
from gkibuild.sandbox import unavailable
from gkibuild.scratch import Scratch
from gkibuild.tests import prereq
from gkibuild.tests.test_abi_gate import trimmed

LAYOUT = Layout.default()
# The small tree (layout.SCRATCH) is built beside the host tests by `gki
# test`: this module runs after that build (testrun.host_run_split).
NEEDS_EVERY_VARIANT = True
MM_H = 'include/trace/hooks/mm.h'
MEMINFO_C = 'fs/proc/meminfo.c'
HOOKS_C = 'drivers/android/vendor_hooks.c'
MEMINFO = 'android_vh_meminfo_proc_show'
ADDED = 'android_vh_test_added'
ITER = f'__traceiter_{MEMINFO}'

# The hook's declaration and its one call site, before and after the test
# gives it a second parameter.
PROTO_OLD = 'TP_PROTO(struct seq_file *m),\n\t     TP_ARGS(m));'
PROTO_NEW = 'TP_PROTO(struct seq_file *m, int extra),\n\t     TP_ARGS(m, extra));'
CALL_OLD = f'trace_{MEMINFO}(m);'
CALL_NEW = f'trace_{MEMINFO}(m, 0);'
MM_H_END = '#endif /* _TRACE_HOOK_MM_H */'
NEW_HOOK = f'''/* Added by test_abi_hooks.py. */
DECLARE_HOOK({ADDED},
	     TP_PROTO(int x),
	     TP_ARGS(x));

'''


def companions(hook: str) -> set[str]:
	"""What a vendor module lists to use a hook (as Android's lists do)."""
	return {f'__tracepoint_{hook}', f'__traceiter_{hook}'}


def replacing(old: str, new: str) -> Callable[[str], str]:
	return lambda text: text.replace(old, new)


def require_hooks() -> None:
	why = unavailable(LAYOUT, SCRATCH)
	config = LAYOUT.obj(SCRATCH) / '.config'
	if why is None and 'CONFIG_ANDROID_VENDOR_HOOKS=y' not in config.read_text():
		why = f"the {SCRATCH.name} GKI was built without vendor hooks ({config})"
	prereq.require(why, 'vendor hooks in the KMI')


class HookAbiTest(unittest.TestCase):
	@classmethod
	def setUpClass(cls):
		require_hooks()
		env = toolchain.hermetic_env()
		cls.kernel = Kernel(LAYOUT, SCRATCH, env, os.cpu_count() or 1)
		tmp = tempfile.TemporaryDirectory()
		cls.addClassCleanup(tmp.cleanup)
		cls.dir = Path(tmp.name)
		cls.lists = {**kmi.load_all(LAYOUT.symbol_lists), 'hooks': companions(MEMINFO)}
		cls.scratch = Scratch(cls.kernel, LAYOUT.out / 'gate' / 'hooks').create()
		cls.addClassCleanup(cls.scratch.remove)
		cls.symbols = kmi.union(cls.lists)
		cls.set_kmi(cls.symbols)
		cls.scratch.build(LAYOUT.log(SCRATCH, 'gate-hooks-baseline'))
		cls.baseline = cls.dir / 'abi'
		gate.write_baseline(cls.baseline, cls.scratch.obj / 'vmlinux',
				    cls.scratch.obj / 'Module.symvers', cls.symbols,
				    {'kernel_release': 'scratch'})

	@classmethod
	def set_kmi(cls, symbols: set[str]) -> None:
		"""The copy's KMI is exactly symbols, whatever the lists held when
		the real tree was built: the baseline and each check see one KMI."""
		kmi.write_whitelist(cls.scratch.obj / kmi.WHITELIST, symbols)

	def edit(self, rel: str, change: Callable[[str], str]) -> None:
		"""Edit a file of the copy, back to the real tree's after the test."""
		self.scratch.edit(rel, change)
		self.addCleanup(self.scratch.revert, rel)

	def add_kmi_symbols(self, symbols: set[str]) -> None:
		"""Into the copy's KMI, out of it again after the test."""
		self.scratch.add_kmi_symbols(symbols)
		self.addCleanup(self.set_kmi, self.symbols)

	def build_and_check(self, name: str, lists: dict[str, set[str]]) -> gate.Result:
		self.scratch.build(LAYOUT.log(SCRATCH, f'gate-hooks-{name}'))
		s = self.scratch
		symvers = trimmed(s.obj / 'Module.symvers', kmi.union(lists),
				  self.dir / f'{name}.symvers')
		return gate.check(self.baseline, s.obj / 'vmlinux', symvers, lists, self.dir / name)

	def test_changed_hook_prototype_is_a_break_naming_the_hook(self):
		self.edit(MM_H, replacing(PROTO_OLD, PROTO_NEW))
		self.edit(MEMINFO_C, replacing(CALL_OLD, CALL_NEW))
		r = self.build_and_check('prototype', self.lists)
		self.assertIn('the KMI differs from the baseline', gate.decide(r).why or '', r.short)
		blocking = {(c.kind, c.name) for c in r.blocking()}
		self.assertEqual({('symbol', ITER), ('crc', ITER)}, blocking, r.short)
		[sym] = r.of('symbol')
		self.assertIn("parameter 3 of type 'int' was added", sym.what)
		[crc] = r.of('crc')
		self.assertEqual('reached by its own signature', crc.cause)
		self.assertIn(f'  BREAK     {ITER} (vendor hook {MEMINFO}): parameter 3', r.short)
		self.assertIn(f'  BREAK     {ITER} (vendor hook {MEMINFO}): CRC ', r.short)
		self.assertIn(f'  hooks: 1 symbol(s): {ITER}', r.short)
		self.assertIn(ITER, r.report.read_text())

	def test_added_hook_is_an_addition_only(self):
		self.edit(MM_H, replacing(MM_H_END, NEW_HOOK + MM_H_END))
		self.edit(HOOKS_C, lambda t: t + f'EXPORT_TRACEPOINT_SYMBOL_GPL({ADDED});\n')
		self.add_kmi_symbols(companions(ADDED))
		r = self.build_and_check('added', {**self.lists, 'test': companions(ADDED)})
		self.assertEqual([], r.blocking(), r.short)
		self.assertEqual(sorted(companions(ADDED)), r.added)
		self.assertEqual(['added', 'added'], [c.kind for c in r.changes], r.short)
		self.assertIn('./build/gki abi update', gate.decide(r).why or '')
		self.assertIn(f'  ADDED     __traceiter_{ADDED} (vendor hook {ADDED}): newly exported',
			      r.short)
		self.assertIn('0 break(s), 0 needing approval, 2 addition(s)', r.short)


class HookNamesTest(unittest.TestCase):
	"""report.short says which hook a tracepoint's symbol is: no build."""

	def render(self, *found: Change) -> str:
		res = Result(list(found), Path('report.txt'))
		return short.render(res, {'vhooks': {c.name for c in found}}, 'ABI check')

	def test_hook_symbols_name_their_hook(self):
		rvh = '__tracepoint_android_rvh_set_user_nice'
		text = self.render(
			Change('symbol', ITER, "parameter 3 of type 'int' was added", (ITER,)),
			Change('added', rvh, 'newly exported', (rvh,)),
			Change('crc', '__SCK__tp_func_sched_switch', 'CRC 0x1 -> 0x2',
			       ('__SCK__tp_func_sched_switch',)))
		self.assertIn(f'  BREAK     {ITER} (vendor hook {MEMINFO}): parameter 3', text)
		self.assertIn(f'  ADDED     {rvh} (vendor hook android_rvh_set_user_nice): '
			      'newly exported', text)
		self.assertIn('  BREAK     __SCK__tp_func_sched_switch (tracepoint sched_switch): '
			      'CRC 0x1 -> 0x2', text)

	def test_other_symbols_and_types_keep_their_names(self):
		text = self.render(
			Change('crc', 'LZ4_decompress_safe', 'CRC 0x1 -> 0x2', ('LZ4_decompress_safe',)),
			Change('type', 'struct tracepoint', "1 data member insertion", (ITER,)))
		self.assertIn('  BREAK     LZ4_decompress_safe: CRC 0x1 -> 0x2', text)
		self.assertIn('  BREAK     struct tracepoint: 1 data member insertion', text)
		self.assertNotIn('(tracepoint', text)
		self.assertNotIn('(vendor hook', text)


if __name__ == '__main__':
	unittest.main()
