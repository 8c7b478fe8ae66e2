# SPDX-License-Identifier: GPL-2.0
"""'abi update' as a reviewed step, abi/allowed_breaks, abi.prop and
GKI_KMI_ENFORCED, on recorded abidiff reports (abidw and abidiff replaced
as in test_abi_verdict.py): an update takes additions, refuses a break or
an enum change without a reason and records one given with a reason.  And
the build's rule that each symbol list stands alone."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from gkibuild import main, modules
from gkibuild.abi import abidiff, breaks, gate, kmi
from gkibuild.abi.changes import Change, Result
from gkibuild.abi.symvers import Export, read_symvers, write_symvers
from gkibuild.layout import Layout, variants
from gkibuild.tests.test_abi_report import recorded
from gkibuild.util import GkiError

LISTS = {'incfs': {'LZ4_compress_fast', 'LZ4_decompress_safe', 'init_uts_ns'},
	 'core': {'module_layout'}}
OLD = {'LZ4_decompress_safe': Export('0xc7c1107a', 'vmlinux', 'EXPORT_SYMBOL', ''),
       'init_uts_ns': Export('0xb72a650c', 'vmlinux', 'EXPORT_SYMBOL_GPL', '')}
NEW_CRC = {**OLD, 'LZ4_decompress_safe': Export('0x329f0514', 'vmlinux', 'EXPORT_SYMBOL', '')}
ADDED = {**OLD, 'LZ4_compress_fast': Export('0x12345678', 'vmlinux', 'EXPORT_SYMBOL', '')}
META = {'kernel_release': '6.12.118-gki', 'toolchain': {'clang': '19.1.7', 'ld.lld': '19.1.7'}}
TODAY = '2026-12-03'


class UpdateTest(unittest.TestCase):
	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.dir = Path(tmp.name)
		self.abi = self.dir / 'abi'
		self.abi.mkdir()
		(self.abi / gate.BASELINE).write_text('<abi-corpus/>\n')
		write_symvers(self.abi / gate.SYMVERS, OLD)
		self.out = self.dir / 'out'

	def run_update(self, record: str, exports: dict[str, Export],
		       accept: str | None = None) -> Result | None:
		"""abi.update against abidiff's record; the 'new baseline' abidw
		would write is a marker naming the record."""
		new = self.dir / 'Module.symvers'
		write_symvers(new, exports)

		def fake_dump(vmlinux, symbols, out, cache=None):
			out.parent.mkdir(parents=True, exist_ok=True)
			out.write_text(f'<abi-corpus of="{record}"/>\n')
		with mock.patch.object(abidiff, 'dump', side_effect=fake_dump), \
		     mock.patch.object(abidiff, 'diff', return_value=recorded(record)), \
		     mock.patch('builtins.print'):
			return gate.update(self.abi, self.dir / 'vmlinux', new, LISTS, META, self.out,
					   accept, TODAY)

	def assert_baseline_untouched(self):
		self.assertEqual('<abi-corpus/>\n', (self.abi / gate.BASELINE).read_text())
		self.assertEqual(OLD, read_symvers(self.abi / gate.SYMVERS))
		self.assertFalse((self.abi / breaks.FILE).exists())

	def test_additions_are_taken_without_a_reason(self):
		r = self.run_update('unchanged', ADDED)
		self.assertEqual(['LZ4_compress_fast'], r.added)
		self.assertEqual(ADDED, read_symvers(self.abi / gate.SYMVERS))
		self.assertIn('unchanged', (self.abi / gate.BASELINE).read_text())
		self.assertFalse((self.abi / breaks.FILE).exists())
		msg = (self.out / gate.COMMIT_MSG).read_text()
		self.assertIn('Adds 1 symbol(s) to the KMI: LZ4_compress_fast.', msg)
		self.assertIn('    abi update: 0 type change(s), 1 symbol change(s)', msg)

	def test_a_break_is_refused_without_a_reason(self):
		for record, exports in (('kernel-parameter-type-changed', NEW_CRC),
					('unchanged', NEW_CRC), ('function-removed', OLD)):
			with self.subTest(record):
				with self.assertRaisesRegex(GkiError, '--accept-break "REASON"'):
					self.run_update(record, exports)
				self.assert_baseline_untouched()
				self.assertIn('BREAK', (self.out / gate.SHORT).read_text())

	def test_an_enum_change_is_refused_without_a_reason(self):
		with self.assertRaisesRegex(GkiError, 'need approval'):
			self.run_update('enum-enumerator-added', OLD)
		self.assert_baseline_untouched()

	def test_an_empty_reason_is_refused(self):
		with self.assertRaisesRegex(GkiError, 'needs a reason'):
			self.run_update('kernel-parameter-type-changed', NEW_CRC, '  ')
		self.assert_baseline_untouched()

	def test_a_break_with_a_reason_is_recorded_and_then_honoured(self):
		why = 'LZ4 takes long sizes; every vendor module rebuilt for 2027.1'
		r = self.run_update('kernel-parameter-type-changed', NEW_CRC, why)
		self.assertEqual(NEW_CRC, read_symvers(self.abi / gate.SYMVERS))
		records = breaks.load(self.abi)
		self.assertEqual({c.key for c in r.changes}, set(records))
		rec = next(iter(records.values()))
		self.assertEqual((TODAY, why, '6.12.118-gki'), (rec.when, rec.why, rec.release))
		self.assertIn(why, (self.out / gate.COMMIT_MSG).read_text())
		self.assertIn('[[break]]', (self.abi / breaks.FILE).read_text())
		# The same break against the old baseline (a rebase, a cherry-pick)
		# now passes; another break does not.
		write_symvers(self.abi / gate.SYMVERS, OLD)
		again = self.run_update('kernel-parameter-type-changed', NEW_CRC)
		self.assertIsNone(gate.decide(again).why, again.short)
		self.assertIn('ALLOWED', again.short)
		with self.assertRaises(GkiError):
			self.run_update('struct-member-added', OLD)

	def test_first_baseline_needs_no_comparison(self):
		for f in self.abi.iterdir():
			f.unlink()
		self.assertIsNone(self.run_update('unchanged', OLD))
		self.assertEqual(OLD, read_symvers(self.abi / gate.SYMVERS))
		self.assertIn('add the KMI baseline', (self.out / gate.COMMIT_MSG).read_text())


class AllowedBreaksTest(unittest.TestCase):
	def test_a_malformed_file_fails_instead_of_allowing(self):
		with tempfile.TemporaryDirectory() as d:
			path = Path(d) / breaks.FILE
			for text in ('[[break]]\nwhen = "2026-12-03"\n', 'changes = [\n'):
				with self.subTest(text):
					path.write_text(text)
					with self.assertRaisesRegex(GkiError, 'allowed_breaks'):
						breaks.load(Path(d))

	def test_old_format_records_fail_with_one_error(self):
		"""A change cut to 160 characters, or a type without its site,
		could allow another change: the file fails, naming them all."""
		old = ("type struct module: type size changed from 5632 to 9216 (in bits); "
		       "'tracepoint_ptr_t* tracepo...",
		       'type struct module_memory: type size changed from 128 to 576 (in bits)')
		with tempfile.TemporaryDirectory() as d:
			breaks.append(Path(d), breaks.Record(TODAY, 'new', 'r', (
				'type struct module_memory at module.h: type size changed',
				'crc f: CRC 0x1 -> 0x2', 'removed g: no longer exported')))
			path = Path(d) / breaks.FILE
			path.write_text(path.read_text() + breaks.render(
				breaks.Record(TODAY, 'old', 'r', old)))
			with self.assertRaises(GkiError) as e:
				breaks.load(Path(d))
		msg = str(e.exception)
		self.assertIn('2 recorded change(s) in the old format', msg)
		for key in old:
			self.assertIn(f'\n  {key}\n', msg)
		self.assertNotIn('at module.h', msg)
		self.assertIn('./build/gki abi update --accept-break', msg)

	def test_the_checked_in_file_loads(self):
		self.assertTrue(breaks.load(Layout.default().abi))

	def test_quotes_and_backslashes_round_trip(self):
		with tempfile.TemporaryDirectory() as d:
			rec = breaks.Record(TODAY, 'a "quoted" \\ reason', 'r',
						("type struct a at a.h: 'x' -> \"y\"",))
			breaks.append(Path(d), rec)
			breaks.append(Path(d), breaks.Record(TODAY, 'second', 'r', ('crc b: 1',)))
			got = breaks.load(Path(d))
			self.assertEqual(rec, got["type struct a at a.h: 'x' -> \"y\""])
			self.assertEqual('second', got['crc b: 1'].why)


class ListsStandAloneTest(unittest.TestCase):
	"""A build of a variant that trims its exports fails when a module
	set's list lacks a symbol its modules use that another list has: the
	kernel exports it, so the modules built.  The kernel, module, tools and
	dist steps are replaced; the lists and the rule are real."""

	NEEDS = {'kunit.ko': {'kunit_init'}, 'alpha.ko': {'kfree', 'kmalloc'},
		 'beta.ko': {'kmalloc'}}

	def build(self, lists: dict[str, str], trims: bool = True) -> None:
		"""main.build of the release variant in a tree with these lists
		(name -> symbols), a vendor module folder per list but core's."""
		with tempfile.TemporaryDirectory() as d:
			top = Path(d)
			(top / 'symbol_lists').mkdir()
			for name, syms in lists.items():
				(top / 'symbol_lists' / name).write_text('[abi_symbol_list]\n' + syms)
				if name != kmi.CORE:
					(top / 'vendor_modules' / name).mkdir(parents=True)
					(top / 'vendor_modules' / name / 'Kbuild').write_text('obj-m += m.o\n')
			kernel = mock.MagicMock()
			kernel.trims_exports.return_value = trims
			kernel.in_tree_modules.return_value = [Path('kunit.ko')]
			with mock.patch.multiple(main, toolchain=mock.DEFAULT, source=mock.DEFAULT,
						 tools=mock.DEFAULT, dist=mock.DEFAULT,
						 Kernel=mock.Mock(return_value=kernel)), \
			     mock.patch.object(kmi, 'strict'), \
			     mock.patch.object(kmi, 'needs', side_effect=self.needs), \
			     mock.patch.object(modules, 'build',
					       side_effect=lambda k, m: [Path(f'{m.name}.ko')]), \
			     mock.patch.object(gate, 'write_prop'), \
			     contextlib.redirect_stdout(io.StringIO()):
				main.build(Layout(top, top / 'out'), variants('release'), 1, False,
					   abi_check=False, distcc_hosts='')

	def needs(self, kos: list[Path], env, own: bool = True) -> dict[str, set[str]]:
		out: dict[str, set[str]] = {}
		for ko in kos:
			for sym in self.NEEDS[ko.name]:
				out.setdefault(sym, set()).add(ko.name)
		return out

	def test_a_symbol_only_in_another_list_fails_the_build(self):
		lists = {'core': 'kunit_init\nmodule_layout\n', 'alpha': 'kfree\n', 'beta': 'kmalloc\n'}
		with self.assertRaises(GkiError) as e:
			self.build(lists)
		self.assertIn('\n  alpha.ko needs kmalloc, missing from symbol_lists/alpha '
			      '(./build/gki symbols update alpha)', str(e.exception))
		self.assertNotIn('beta', str(e.exception))

	def test_lists_that_stand_alone_build(self):
		self.build({'core': 'kunit_init\nmodule_layout\n', 'alpha': 'kfree\nkmalloc\n',
			    'beta': 'kmalloc\n'})
		# A variant that keeps every export has nothing to check.
		self.build({'core': 'module_layout\n', 'alpha': 'kfree\n', 'beta': 'kmalloc\n'},
			   trims=False)


class PropTest(unittest.TestCase):
	def test_abi_prop_and_the_flattened_list(self):
		with tempfile.TemporaryDirectory() as d:
			dist = Path(d)
			gate.write_prop(dist, LISTS, False, META)
			props = dict(ln.split('=', 1) for ln in (dist / gate.PROP).read_text().splitlines())
			self.assertEqual('0', props['KMI_ENFORCED'])
			self.assertEqual('abi/gki.xml', props['KMI_DEFINITION'])
			self.assertEqual('symbol_lists/core symbol_lists/incfs', props['KMI_SYMBOL_LISTS'])
			self.assertEqual('6.12.118-gki', props['KERNEL_RELEASE'])
			self.assertEqual('clang-19.1.7 ld.lld-19.1.7', props['TOOLCHAIN'])
			self.assertEqual(gate.list_digest(kmi.union(LISTS)),
					 props['KMI_SYMBOL_LIST_SHA256'])
			self.assertEqual('init_uts_ns\nLZ4_compress_fast\nLZ4_decompress_safe\nmodule_layout\n',
					 (dist / 'abi_symbollist.raw').read_text())
			self.assertTrue((dist / 'abi_symbollist').read_text().startswith(
				'[abi_symbol_list]\n  init_uts_ns\n'))


class EnforcementTest(unittest.TestCase):
	def result(self) -> Result:
		return Result([Change('removed', 'gone', 'no longer exported', ('gone',))],
				  Path('report.txt'))

	def test_enforced_by_default_and_refusing_other_values(self):
		with mock.patch.dict(os.environ, clear=True):
			self.assertTrue(main.kmi_enforced())
		for value, want in (('1', True), ('0', False)):
			with mock.patch.dict(os.environ, {main.ENFORCED_ENV: value}):
				self.assertEqual(want, main.kmi_enforced())
		with mock.patch.dict(os.environ, {main.ENFORCED_ENV: 'no'}):
			with self.assertRaisesRegex(GkiError, 'expected 0 or 1'):
				main.kmi_enforced()

	def test_not_enforced_reports_without_failing(self):
		with self.assertRaisesRegex(GkiError, 'differs from the baseline'):
			main.abi_gate(self.result(), True)
		with mock.patch('builtins.print') as out:
			main.abi_gate(self.result(), False)
		self.assertIn('KMI not enforced', str(out.call_args))


if __name__ == '__main__':
	unittest.main()
