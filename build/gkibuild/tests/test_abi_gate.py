# SPDX-License-Identifier: GPL-2.0
"""The ABI gate on real builds.  The baseline is dumped from the built
small tree (layout.SCRATCH) once, over the KMI of symbol_lists/, as `abi
update` would write it.  Each case copies that tree, makes one change,
rebuilds what the change touches (scratch.py: seconds, not a kernel build)
and runs the check against that baseline, on the lines of its KMI in
Module.symvers (the small tree does not trim its exports).  Two cases also
boot the changed kernel with the incfs module built against the unchanged
tree: MODVERSIONS must refuse it after a type change and load it after a
change that keeps the KMI.  One takes the type change through 'abi update' on a copy of the
baseline: refused, then recorded.  The release's own baseline in abi/ is
checked by every build (the abi-check stage)."""

import os
import shutil
import tempfile
import unittest
from pathlib import Path

from gkibuild import toolchain
from gkibuild.abi import breaks, gate, kmi
from gkibuild.abi.symvers import write_symvers
from gkibuild.kernel import Kernel
from gkibuild.layout import SCRATCH, Layout
from gkibuild.sandbox import unavailable
from gkibuild.scratch import Scratch
from gkibuild.tests import prereq, probe
from gkibuild.util import GkiError

LAYOUT = Layout.default()
# The small tree (layout.SCRATCH) is built beside the host tests by `gki
# test`: this module runs after that build (testrun.host_run_split).
NEEDS_EVERY_VARIANT = True
LZ4_H = 'include/linux/lz4.h'
LZ4_C = 'lib/lz4/lz4_decompress.c'
INCFS = '/modules/vendor/incfs/incrementalfs.ko'
# The probe's body (probe.py): load the module built against the unchanged
# tree and say whether the kernel took it.
PROBE = '''if insmod {ko}; then
	echo "# GKI-KMI: loaded"
else
	echo "# GKI-KMI: refused"
	dmesg | grep 'disagrees about version' | sed 's/^/# /'
fi
'''


def require_gate() -> None:
	prereq.require(unavailable(LAYOUT, SCRATCH), 'the ABI gate')


def trimmed(symvers: Path, symbols: set[str], dest: Path) -> Path:
	"""The lines of symbols in symvers, written to dest: the small tree
	exports everything (gki-debug.config: no trimming), where the release
	exports exactly the KMI (CONFIG_TRIM_UNUSED_KSYMS); the gate reads a
	release's Module.symvers."""
	write_symvers(dest, gate.kmi_exports(symvers, symbols))
	return dest


# LZ4_decompress_safe()'s last parameter, int -> long: its declaration and
# its definition (other LZ4 functions have a parameter of the same name).
LZ4_H_OLD = ('int LZ4_decompress_safe(const char *source, char *dest, int compressedSize,\n'
	     '\tint maxDecompressedSize);')
LZ4_C_OLD = ('int LZ4_decompress_safe(const char *source, char *dest,\n'
	     '\tint compressedSize, int maxDecompressedSize)')


def int_to_long(old: str):
	return lambda text: text.replace(old, old.replace('int maxDecompressedSize',
							  'long maxDecompressedSize'))


class AbiGateTest(unittest.TestCase):
	@classmethod
	def setUpClass(cls):
		require_gate()
		cls.env = toolchain.hermetic_env()
		cls.kernel = Kernel(LAYOUT, SCRATCH, cls.env, os.cpu_count() or 1)
		cls.lists = kmi.load_all(LAYOUT.symbol_lists)
		cls.tmp = tempfile.TemporaryDirectory()
		cls.dir = Path(cls.tmp.name)
		cls.baseline = cls.dir / 'abi'
		obj = cls.kernel.obj
		gate.write_baseline(cls.baseline, obj / 'vmlinux', obj / 'Module.symvers',
				    kmi.union(cls.lists), {'kernel_release': 'sandbox'})

	@classmethod
	def tearDownClass(cls):
		cls.tmp.cleanup()

	def scratch(self) -> Scratch:
		name = self.id().rsplit('.', 1)[-1]
		s = Scratch(self.kernel, LAYOUT.out / 'gate' / name).create()
		self.addCleanup(s.remove)
		self.name = name
		return s

	def build_and_check(self, s: Scratch, listed: set[str] = frozenset()) -> gate.Result:
		s.build(LAYOUT.log(SCRATCH, f'gate-{self.name}'))
		lists = {**self.lists, 'test': set(listed)} if listed else self.lists
		self.symvers = trimmed(s.obj / 'Module.symvers', kmi.union(lists),
				       self.dir / f'{self.name}.symvers')
		return gate.check(self.baseline, s.obj / 'vmlinux', self.symvers, lists,
				  self.dir / self.name)

	def boot_and_load(self, s: Scratch) -> str:
		"""Boot the scratch kernel; insmod the module built against the
		unchanged tree and say whether it loaded."""
		image = s.obj / 'arch' / 'arm64' / 'boot' / 'Image'
		b = probe.boot_with(LAYOUT, SCRATCH, image, probe.script(PROBE.format(ko=INCFS),
									   'kmi_probe', {}),
				    'kmi_probe', self.dir / self.name)
		self.assertTrue(b.finished, b.console[-2000:])
		return b.console

	def test_parameter_type_change_is_a_break_and_modules_are_refused(self):
		s = self.scratch()
		s.edit(LZ4_H, int_to_long(LZ4_H_OLD))
		s.edit(LZ4_C, int_to_long(LZ4_C_OLD))
		r = self.build_and_check(s)
		self.assertTrue(r.breaks)
		self.assertEqual(['LZ4_decompress_safe'], r.crc_changed)
		[sym] = r.of('symbol')
		self.assertEqual('LZ4_decompress_safe', sym.name)
		self.assertIn("type name changed from 'int' to 'long int'", sym.what)
		self.assertEqual(['crc', 'symbol'], sorted(c.kind for c in r.changes), r.short)
		self.assertIn('  BREAK     LZ4_decompress_safe: parameter 4', r.short)
		self.assertIn('(reached by its own signature)', r.short)
		self.assertIn('  incfs: 1 symbol(s): LZ4_decompress_safe', r.short)
		self.assertIn('LZ4_decompress_safe', r.report.read_text())
		self.update_refuses_then_records(s, r)
		console = self.boot_and_load(s)
		self.assertIn('GKI-KMI: refused', console)
		self.assertIn('disagrees about version of symbol LZ4_decompress_safe', console)

	def update_refuses_then_records(self, s: Scratch, r: gate.Result) -> None:
		"""abi update on a copy of the baseline: refused without a reason,
		the baseline untouched; with one, the break is in allowed_breaks
		and the new baseline checks clean."""
		copy = self.dir / 'update-abi'
		shutil.copytree(self.baseline, copy)
		before = {p.name: p.read_bytes() for p in copy.iterdir()}
		meta = {'kernel_release': 'scratch', 'toolchain': {}}
		vmlinux, symvers = s.obj / 'vmlinux', self.symvers
		out = self.dir / 'update'
		with self.assertRaisesRegex(GkiError, '--accept-break'):
			gate.update(copy, vmlinux, symvers, self.lists, meta, out, None, '2026-12-03')
		self.assertEqual(before, {p.name: p.read_bytes() for p in copy.iterdir()})
		earlier = set(breaks.load(copy))
		gate.update(copy, vmlinux, symvers, self.lists, meta, out, 'test', '2026-12-03')
		# This adds exactly its own breaks to what allowed_breaks held.
		self.assertEqual({c.key for c in r.changes}, set(breaks.load(copy)) - earlier)
		again = gate.check(copy, vmlinux, symvers, self.lists, self.dir / 'again')
		self.assertEqual([], again.changes, again.short)

	def test_export_kind_namespace_and_removal_each_named(self):
		s = self.scratch()
		s.edit(LZ4_C, lambda t: t.replace('EXPORT_SYMBOL(LZ4_decompress_safe);',
						  'EXPORT_SYMBOL_GPL(LZ4_decompress_safe);'))
		s.edit('lib/ratelimit.c', lambda t: t.replace('EXPORT_SYMBOL(___ratelimit);',
							      'EXPORT_SYMBOL_NS(___ratelimit, GKI_TEST);'))
		s.edit('lib/kobject.c', lambda t: t.replace(
			'EXPORT_SYMBOL_GPL(kobject_create_and_add);', ''))
		r = self.build_and_check(s)
		got = {(c.kind, c.name): c.what for c in r.changes}
		self.assertEqual({('export', 'LZ4_decompress_safe'): 'EXPORT_SYMBOL -> EXPORT_SYMBOL_GPL',
				  ('export', '___ratelimit'): "namespace '' -> 'GKI_TEST'",
				  ('removed', 'kobject_create_and_add'): 'no longer exported'},
				 got, r.short)
		self.assertTrue(r.breaks)
		# Named with every list that holds it (incfs's, and at real size
		# core's and the virtual device's too).
		holders = ', '.join(sorted(n for n, syms in self.lists.items() if '___ratelimit' in syms))
		self.assertIn('incfs', holders)
		self.assertIn(f"  BREAK     ___ratelimit: namespace '' -> 'GKI_TEST' [{holders}]", r.short)

	def test_unexported_function_and_log_string_change_nothing(self):
		s = self.scratch()
		s.edit(LZ4_C, lambda t: t + '\nint gki_gate_unexported(int x);\n'
		       'int gki_gate_unexported(int x)\n{\n\treturn x + 1;\n}\n')
		s.edit('fs/filesystems.c', lambda t: t.replace(
			'"%s: truncating file system list\\n"',
			'"%s: file system list truncated\\n"'))
		r = self.build_and_check(s)
		self.assertEqual([], r.changes, r.short)

	def test_symbol_added_to_a_list_without_the_baseline_fails(self):
		s = self.scratch()
		s.add_kmi_symbols({'LZ4_compress_default'})
		r = self.build_and_check(s, {'LZ4_compress_default'})
		self.assertFalse(r.breaks, r.short)
		self.assertEqual(['LZ4_compress_default'], r.added)
		self.assertIn('./build/gki abi update', gate.decide(r).why)
		self.assertIn('  ADDED     LZ4_compress_default: newly exported [test]', r.short)

	def test_lts_style_fix_keeps_the_kmi_and_modules_load(self):
		s = self.scratch()
		s.edit(LZ4_C, lambda t: t.replace(
			LZ4_C_OLD + '\n{',
			LZ4_C_OLD + '\n{\n\tif (unlikely(compressedSize < 0))\n\t\treturn -1;\n'))
		r = self.build_and_check(s)
		self.assertEqual([], r.changes, r.short)
		console = self.boot_and_load(s)
		self.assertIn('GKI-KMI: loaded', console)


if __name__ == '__main__':
	unittest.main()
