# SPDX-License-Identifier: GPL-2.0
"""abi compare on a real build: a point release made here from the pinned
tarball, built in a scratch copy of the release tree (scratch.py; root):
one harmless change is compatible, one breaking change as well breaks and
the report names it."""

from __future__ import annotations

import contextlib
import io
import shutil
import unittest
from pathlib import Path

from gkibuild import source
from gkibuild.abi import compare
from gkibuild.layout import VARIANTS, Layout
from gkibuild.sandbox import unavailable
from gkibuild.tests import prereq
from gkibuild.tests.test_abi_gate import LZ4_C, LZ4_C_OLD, LZ4_H, LZ4_H_OLD, int_to_long

LAYOUT = Layout.default()


def replace(tree: Path, rel: str, old: str, new: str) -> None:
	"""Edit a file of a candidate tree by replacing it (never through a
	hard link)."""
	path = tree / rel
	text = path.read_text()
	if old not in text:
		raise AssertionError(f'{rel}: {old!r} not found')
	path.unlink()
	path.write_text(text.replace(old, new))


def harmless(tree: Path) -> None:
	"""What a point release mostly is: a fix inside a function."""
	replace(tree, 'fs/filesystems.c', '"%s: truncating file system list\\n"',
		'"%s: file system list truncated\\n"')


def breaking(tree: Path) -> None:
	harmless(tree)
	for rel, old in ((LZ4_H, LZ4_H_OLD), (LZ4_C, LZ4_C_OLD)):
		replace(tree, rel, old, int_to_long(old)(old))


class PointReleaseTest(unittest.TestCase):
	"""A point release made here from the pinned source, built in a copy
	of the real release tree (scratch.py; root)."""

	@classmethod
	def setUpClass(cls):
		prereq.require(unavailable(LAYOUT, VARIANTS['release']), 'abi compare')

	def run_compare(self, cand: compare.Candidate, edit) -> tuple[int, str]:
		self.addCleanup(shutil.rmtree, cand.root(LAYOUT), True)
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			status = compare.run(LAYOUT, cand, 2, edit)
		return status, out.getvalue()

	def test_a_fix_inside_a_function_is_compatible(self):
		status, out = self.run_compare(compare.Candidate('test-harmless'), harmless)
		self.assertEqual(compare.COMPATIBLE, status, out)
		self.assertIn('0 type change(s), 0 symbol change(s): 0 break(s)', out)
		self.assertIn('compatible with the KMI in abi/', out)

	def test_a_point_release_with_a_break_is_reported(self):
		pin = source.load_pin(LAYOUT.common / 'source.pin')
		# The tarball the release build was made from: installed or fetched.
		cand = compare.Candidate('test-point-release', source.obtain(pin, False).tarball)
		status, out = self.run_compare(cand, breaking)
		self.assertEqual(compare.BREAKS, status, out)
		short = (cand.root(LAYOUT) / 'abi' / 'report.short').read_text()
		self.assertIn('0 type change(s), 2 symbol change(s): 2 break(s)', short)
		self.assertIn("  BREAK     LZ4_decompress_safe: parameter 4 of type 'int' changed", short)
		self.assertIn('  incfs: 1 symbol(s): LZ4_decompress_safe', short)
		self.assertIn('compare: source 3 changed, 0 added', out)
		self.assertIn('BREAKS the KMI in abi/', out)
		self.assertFalse((cand.root(LAYOUT) / 'tree').exists())

if __name__ == '__main__':
	unittest.main()
