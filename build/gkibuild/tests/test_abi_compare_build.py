# SPDX-License-Identifier: GPL-2.0
"""abi compare on a real build: a point release made here from the pinned
tarball, built in a scratch copy of the small tree (layout.SCRATCH,
scratch.py; root) and checked against a baseline dumped from that tree,
as test_abi_gate does: at real size each case would rebuild the release's
vmlinux three times over.  One harmless change is compatible, one
breaking change as well breaks and the report names it.  The command's
own path, the release tree against abi/, is what every build's abi-check
stage runs."""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
import unittest
from pathlib import Path

from gkibuild import source
from gkibuild.abi import compare, gate, kmi
from gkibuild.layout import SCRATCH, Layout
from gkibuild.sandbox import unavailable
from gkibuild.tests import prereq
from gkibuild.tests.test_abi_gate import LZ4_C, LZ4_C_OLD, LZ4_H, LZ4_H_OLD, int_to_long

LAYOUT = Layout.default()
# The small tree (layout.SCRATCH) is built beside the host tests by `gki
# test`: this module runs after that build (testrun.host_run_split).
NEEDS_EVERY_VARIANT = True


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
	of the small tree (scratch.py; root) against its own baseline."""

	@classmethod
	def setUpClass(cls):
		prereq.require(unavailable(LAYOUT, SCRATCH), 'abi compare')
		cls.tmp = tempfile.TemporaryDirectory()
		baseline = Path(cls.tmp.name) / 'abi'
		obj = LAYOUT.obj(SCRATCH)
		gate.write_baseline(baseline, obj / 'vmlinux', obj / 'Module.symvers',
				    kmi.union(kmi.load_all(LAYOUT.symbol_lists)),
				    {'kernel_release': 'sandbox'})
		cls.against = compare.Against(SCRATCH, baseline)

	@classmethod
	def tearDownClass(cls):
		cls.tmp.cleanup()

	def run_compare(self, cand: compare.Candidate, edit) -> tuple[int, str]:
		self.addCleanup(shutil.rmtree, cand.root(LAYOUT), True)
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			status = compare.run(LAYOUT, cand, 2, edit, self.against)
		return status, out.getvalue()

	def test_a_fix_inside_a_function_is_compatible(self):
		status, out = self.run_compare(compare.Candidate('test-harmless'), harmless)
		self.assertEqual(compare.COMPATIBLE, status, out)
		self.assertIn('0 type change(s), 0 symbol change(s): 0 break(s)', out)
		self.assertIn(f'compatible with the KMI in {self.against}', out)

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
		self.assertIn(f'BREAKS the KMI in {self.against}', out)
		self.assertFalse((cand.root(LAYOUT) / 'tree').exists())

if __name__ == '__main__':
	unittest.main()
