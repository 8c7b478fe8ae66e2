# SPDX-License-Identifier: GPL-2.0
"""The ABI gate's verdict, on recorded abidiff reports: a break, an
unrecorded addition and a report the gate cannot classify each fail the
build; an unchanged KMI passes.  abi.check runs for real, with abidw and
abidiff replaced by a record from abidiff/ (see test_abi_report.py)."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path
from unittest import mock

import context  # noqa: F401 (sets the import path)
import abi
from test_abi_report import LZ4, recorded

BREAK = 'the KMI differs from the baseline'
UPDATE = './build/gki abi update'


class VerdictTest(unittest.TestCase):
	"""The same CRC table on both sides unless a test says otherwise, so
	the report alone decides, as it must for what the CRCs do not cover
	(libabigail sees types, MODVERSIONS sees CRCs)."""

	CRCS = {'LZ4_decompress_safe': '0xc7c1107a', 'init_uts_ns': '0xb72a650c'}

	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.dir = Path(tmp.name)
		(self.dir / 'abi').mkdir()
		(self.dir / 'out').mkdir()		# abidw, replaced here, makes it
		(self.dir / 'abi' / abi.BASELINE).write_text('<abi-corpus/>\n')
		abi.write_symvers(self.dir / 'abi' / abi.SYMVERS,
				  {s: (c, 'vmlinux') for s, c in self.CRCS.items()})

	def check(self, name: str, crcs: dict[str, str] | None = None) -> abi.Result:
		"""abi.check with abidiff's answer taken from the record name and
		the build's Module.symvers holding crcs."""
		crcs = crcs or self.CRCS
		new = self.dir / 'Module.symvers'
		new.write_text(''.join(f'{c}\t{s}\tvmlinux\tEXPORT_SYMBOL\t\n'
				       for s, c in crcs.items()))
		with mock.patch.object(abi, 'dump'), \
		     mock.patch.object(abi, 'diff', return_value=recorded(name)):
			return abi.check(self.dir / 'abi', self.dir / 'vmlinux', new, set(crcs),
					 self.dir / 'out')

	def fails(self, r: abi.Result) -> str:
		"""The verdict, which must be a failure."""
		v = abi.verdict(r)
		self.assertIsNotNone(v, f'the gate passed:\n{r.summary()}')
		return v

	def test_unchanged_passes(self):
		r = self.check('unchanged')
		self.assertIsNone(abi.verdict(r), r.summary())
		self.assertIn('ABI check: 0 removed, 0 type change(s), 0 CRC change(s), 0 added',
			      r.summary())

	def test_enumerator_addition_fails(self):
		self.fails(self.check('enum-enumerator-added'))

	def test_type_change_fails(self):
		r = self.check('kernel-parameter-type-changed')
		self.assertTrue(r.breaks)
		self.assertIn(BREAK, self.fails(r))
		self.assertIn(f'BREAK [C] {LZ4}', r.summary())

	def test_removal_in_the_report_alone_fails(self):
		for name, sym in (('function-removed', 'gone'), ('variable-removed', 'spare'),
				  ('kernel-asm-export-removed', '__arch_copy_from_user')):
			with self.subTest(name):
				r = self.check(name)
				self.assertEqual([sym], r.removed)
				self.assertIn(BREAK, self.fails(r))
				self.assertIn(f'BREAK removed: {sym}', r.summary())

	def test_crc_change_alone_fails(self):
		r = self.check('unchanged', {**self.CRCS, 'LZ4_decompress_safe': '0x329f0514'})
		self.assertEqual(['LZ4_decompress_safe'], r.crc_changed)
		self.assertIn(BREAK, self.fails(r))

	def test_addition_in_the_report_fails_without_a_new_baseline(self):
		for name, sym in (('function-added', 'fresh'), ('variable-added', 'extra'),
				  ('nodebug-symbol-added', 'raw_fill')):
			with self.subTest(name):
				r = self.check(name)
				self.assertFalse(r.breaks, r.summary())
				self.assertEqual([sym], r.added)
				self.assertIn(UPDATE, self.fails(r))

	def test_addition_in_the_crcs_fails_without_a_new_baseline(self):
		r = self.check('unchanged', {**self.CRCS, 'LZ4_compress_fast': '0x1'})
		self.assertFalse(r.breaks, r.summary())
		self.assertEqual(['LZ4_compress_fast'], r.added)
		self.assertIn(UPDATE, self.fails(r))

	def test_break_is_named_before_an_addition(self):
		r = self.check('combined')
		self.assertIn(BREAK, self.fails(r))
		self.assertEqual(['extra', 'fresh', 'raw_fill'], r.added)

	def test_unclassified_report_fails_and_is_printed_whole(self):
		r = self.check('soname-changed')
		self.assertFalse(r.breaks)
		self.assertIn('cannot classify', self.fails(r))
		for line in recorded('soname-changed')[1].splitlines():
			self.assertIn(line, r.summary())
		self.assertIn("SONAME changed from 'libfixture.so.1' to 'libfixture.so.2'",
			      r.report.read_text())


if __name__ == '__main__':
	unittest.main()
