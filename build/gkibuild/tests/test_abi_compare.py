# SPDX-License-Identifier: GPL-2.0
"""abi compare's plumbing, without a second kernel build: the version and
toolchain arguments; a series that does not apply to the candidate (a tiny
tarball: fails in seconds, naming the patch and the hunk); and a locally
made "point release" built in a scratch copy of the release tree: the
pinned tarball with one harmless change (compatible) and then one breaking
change as well (breaks, and the report names it).  The real comparisons
(6.12.111, 6.12.117, clang-16) are documented commands: BUILD.md."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import context  # noqa: F401 (sets the import path)
import compare
import prereq
import source
from layout import VARIANTS, Layout
from sandbox import unavailable
from test_abi_gate import LZ4_C, LZ4_C_OLD, LZ4_H, LZ4_H_OLD, int_to_long
from util import GkiError

LAYOUT = Layout.default()
OFFERED = ['6.12.118-1~deb12u1', '6.12.117-1~deb12u1', '6.12.115-2~deb12u1',
	   '6.12.115-1~deb12u1', '6.12.111-1~deb12u1']
FAILING = '''From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: GKI test <gki@example.com>
Subject: [PATCH] ANDROID: a change for another kernel

---
 Makefile | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/Makefile b/Makefile
--- a/Makefile
+++ b/Makefile
@@ -1,3 +1,3 @@
 VERSION = 6
-PATCHLEVEL = 13
+PATCHLEVEL = 14
 SUBLEVEL = 0
'''


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


class ArgumentsTest(unittest.TestCase):
	def test_versions_resolve_exactly_or_by_upstream_version(self):
		self.assertEqual('6.12.111-1~deb12u1', compare.resolve('6.12.111', OFFERED))
		self.assertEqual('6.12.117-1~deb12u1', compare.resolve('6.12.117-1~deb12u1', OFFERED))
		with self.assertRaisesRegex(GkiError, 'matches several versions'):
			compare.resolve('6.12.115', OFFERED)
		with self.assertRaisesRegex(GkiError, 'is not in the archive; the archive offers: '
					    '6.12.111-1~deb12u1, '):
			compare.resolve('6.12.99', OFFERED)

	def test_toolchain_is_a_debian_clang(self):
		self.assertEqual(16, compare.parse_toolchain('clang-16'))
		for bad in ('gcc-12', 'clang', 'clang-16.0'):
			with self.subTest(bad), self.assertRaisesRegex(GkiError, 'expected clang-N'):
				compare.parse_toolchain(bad)


class SeriesTest(unittest.TestCase):
	"""The series must apply to the candidate; when it does not, the
	comparison stops before copying anything, naming the patch and hunk."""

	def test_a_patch_that_does_not_apply_is_named_with_its_hunk(self):
		with tempfile.TemporaryDirectory() as d:
			top = Path(d)
			shutil.copytree(LAYOUT.common, top / 'common')
			(top / 'common' / 'patches' / 'series').write_text('0001-other.patch\n')
			(top / 'common' / 'patches' / '0001-other.patch').write_text(FAILING)
			(top / 'linux').mkdir()
			(top / 'linux' / 'Makefile').write_text(
				'VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 111\n')
			tarball = top / 'linux.tar.xz'
			subprocess.run(['tar', '-cJf', str(tarball), '-C', d, 'linux'], check=True)
			layout = Layout(top, top / 'out')
			cand = compare.Candidate('test-series', tarball)
			with self.assertRaisesRegex(GkiError, r'patch 0001-other.patch does not apply: '
						    r'hunk #1 of Makefile FAILED at line 1'):
				compare.build(layout, cand, 1)
			self.assertFalse((cand.root(layout) / 'tree').exists())
			out = io.StringIO()
			with contextlib.redirect_stdout(out):
				self.assertEqual(compare.NO_BUILD, compare.run(layout, cand, 1))
			self.assertIn('could not build: patch 0001-other.patch', out.getvalue())


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
		cand = compare.Candidate('test-point-release', pin.tarball)
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
