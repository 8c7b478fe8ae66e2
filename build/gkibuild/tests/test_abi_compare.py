# SPDX-License-Identifier: GPL-2.0
"""abi compare's plumbing, without a kernel build: the version and
toolchain arguments, the exit status, and a series that does not apply to
the candidate (a tiny tarball: fails in seconds, naming the patch and the
hunk).  test_abi_compare_build.py builds a candidate; the real comparisons
(6.12.111, 6.12.117, clang-16) are documented commands: BUILD.md."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from gkibuild import archive
from gkibuild.abi import breaks, compare
from gkibuild.abi.changes import Change, Result
from gkibuild.layout import Layout
from gkibuild.util import GkiError

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


class ArgumentsTest(unittest.TestCase):
	def test_versions_resolve_exactly_or_by_upstream_version(self):
		self.assertEqual('6.12.111-1~deb12u1', archive.resolve('6.12.111', OFFERED))
		self.assertEqual('6.12.117-1~deb12u1', archive.resolve('6.12.117-1~deb12u1', OFFERED))
		with self.assertRaisesRegex(GkiError, 'matches several versions'):
			archive.resolve('6.12.115', OFFERED)
		with self.assertRaisesRegex(GkiError, 'is not in the archive; the archive offers: '
					    '6.12.111-1~deb12u1, '):
			archive.resolve('6.12.99', OFFERED)

	def test_toolchain_is_a_debian_clang(self):
		self.assertEqual(16, compare.parse_toolchain('clang-16'))
		for bad in ('gcc-12', 'clang', 'clang-16.0'):
			with self.subTest(bad), self.assertRaisesRegex(GkiError, 'expected clang-N'):
				compare.parse_toolchain(bad)


class VerdictTest(unittest.TestCase):
	"""The exit status from the gate's decision on the check's changes: an
	addition alone, or a recorded break, is compatible; a break, an enum
	change or a report the gate cannot read is not."""

	def status(self, *changes: Change, allowed: tuple[str, ...] = ()) -> int:
		rec = breaks.Record('2026-12-03', 'why', 'r', allowed)
		return compare.verdict(Result(list(changes), Path('report.txt'),
					      allowed={k: rec for k in allowed}))

	def test_exit_status(self):
		crc = Change('crc', 'f', 'CRC 0x1 -> 0x2', ('f',))
		self.assertEqual(compare.COMPATIBLE, self.status())
		self.assertEqual(compare.COMPATIBLE, self.status(Change('added', 'g', 'newly exported')))
		self.assertEqual(compare.COMPATIBLE, self.status(crc, allowed=(crc.key,)))
		self.assertEqual(compare.BREAKS, self.status(crc))
		self.assertEqual(compare.BREAKS, self.status(Change('enum', 'enum e', 'insertion')))
		unread = Change('unclassified', 'report', 'x')
		self.assertEqual(compare.BREAKS, self.status(unread))
		# Recorded or not: the gate fails closed, the build as abi compare.
		self.assertEqual(compare.BREAKS, self.status(unread, allowed=(unread.key,)))


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


if __name__ == '__main__':
	unittest.main()
