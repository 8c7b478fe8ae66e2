# SPDX-License-Identifier: GPL-2.0
"""treesync.sync and the source stage on small trees: only what changed
becomes newer, in both directions, and hard-linked copies are never
written through."""

import io
import json
import os
import subprocess
import tarfile
import tempfile
import time
import unittest
import unittest.mock
from pathlib import Path

from gkibuild import source, treesync
from gkibuild.layout import Layout

OLD = 1_000_000_000	# a timestamp long before any test runs


def write(root: Path, files: dict[str, str], mtime: int = OLD) -> None:
	for rel, text in files.items():
		p = root / rel
		p.parent.mkdir(parents=True, exist_ok=True)
		p.write_text(text)
		os.utime(p, (mtime, mtime))


def mtimes(root: Path) -> dict[str, int]:
	return {str(p.relative_to(root)): int(p.stat().st_mtime) for p in root.rglob('*')
		if p.is_file()}


class SyncTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.old = Path(self.tmp.name) / 'old'
		self.new = Path(self.tmp.name) / 'new'
		base = {'Makefile': 'all:\n', 'include/a.h': '#define A 1\n',
			'include/b.h': '#define B 2\n', 'lib/c.c': 'int c;\n',
			'gone/d.c': 'int d;\n'}
		write(self.old, base)
		# A re-extraction: same archive times, one header patched, one
		# file added, one folder dropped.
		write(self.new, {**base, 'include/a.h': '#define A 10\n', 'lib/e.c': 'int e;\n'})
		(self.new / 'gone' / 'd.c').unlink()
		(self.new / 'gone').rmdir()

	def tearDown(self):
		self.tmp.cleanup()

	def test_only_what_changed_is_newer(self):
		start = time.time() - 1
		stats = treesync.sync(self.new, self.old)
		t = mtimes(self.old)
		self.assertEqual(['include/a.h'], stats.changed)
		self.assertEqual(['lib/e.c'], stats.added)
		self.assertEqual(['gone', 'gone/d.c'], sorted(stats.removed))
		self.assertEqual(3, stats.kept)
		self.assertGreaterEqual(t['include/a.h'], start)
		self.assertGreaterEqual(t['lib/e.c'], start)
		for rel in ('Makefile', 'include/b.h', 'lib/c.c'):
			self.assertEqual(OLD, t[rel], rel)
		self.assertFalse((self.old / 'gone').exists())
		self.assertEqual('#define A 10\n', (self.old / 'include/a.h').read_text())

	def test_reverted_file_is_newer_again(self):
		"""The case of the issue: a patch dropped restores the archive's
		(older) timestamp in the new tree; the synced file must be newer
		than what was built from the patched one."""
		treesync.sync(self.new, self.old)
		built = time.time()
		back = Path(self.tmp.name) / 'back'
		write(back, {'Makefile': 'all:\n', 'include/a.h': '#define A 1\n',
			     'include/b.h': '#define B 2\n', 'lib/c.c': 'int c;\n'})
		stats = treesync.sync(back, self.old)
		self.assertEqual(['include/a.h'], stats.changed)
		self.assertEqual(['lib/e.c'], stats.removed)
		self.assertGreaterEqual((self.old / 'include/a.h').stat().st_mtime, built - 1)

	def test_same_size_edit_is_a_change(self):
		# A patch need not change a file's size: 2 -> 3.
		write(self.new, {'include/b.h': '#define B 3\n'})
		stats = treesync.sync(self.new, self.old)
		self.assertIn('include/b.h', stats.changed)
		self.assertEqual('#define B 3\n', (self.old / 'include/b.h').read_text())

	def test_mode_change_is_a_change(self):
		(self.new / 'lib/c.c').chmod(0o755)
		stats = treesync.sync(self.new, self.old)
		self.assertIn('lib/c.c', stats.changed)
		self.assertEqual(0o755, (self.old / 'lib/c.c').stat().st_mode & 0o777)

	def test_hard_linked_copy_is_never_written_through(self):
		copy = Path(self.tmp.name) / 'copy'
		subprocess.run(['cp', '-al', str(self.old), str(copy)], check=True)
		(self.new / 'lib/c.c').chmod(0o700)
		treesync.sync(self.new, self.old)
		self.assertEqual('#define A 1\n', (copy / 'include/a.h').read_text())
		self.assertEqual(OLD, int((copy / 'include/a.h').stat().st_mtime))
		self.assertNotEqual(0o700, (copy / 'lib/c.c').stat().st_mode & 0o777)
		self.assertTrue((copy / 'gone/d.c').exists())

	def test_new_file_linked_elsewhere_is_copied_before_its_stamp(self):
		"""A new tree hard-linked to another (the pristine extraction):
		the file that moves in is a copy, and the other tree's file
		keeps its timestamp."""
		other = Path(self.tmp.name) / 'other'
		write(other, {'include/a.h': '#define A 10\n'})
		(self.new / 'include/a.h').unlink()
		os.link(other / 'include/a.h', self.new / 'include/a.h')
		stats = treesync.sync(self.new, self.old)
		self.assertEqual(['include/a.h'], stats.changed)
		self.assertEqual(OLD, int((other / 'include/a.h').stat().st_mtime))
		self.assertEqual(1, (other / 'include/a.h').stat().st_nlink)
		self.assertEqual('#define A 10\n', (self.old / 'include/a.h').read_text())
		self.assertGreater(int((self.old / 'include/a.h').stat().st_mtime), OLD)

	def test_file_linked_into_both_trees_is_kept_unread(self):
		(self.new / 'lib/c.c').unlink()
		os.link(self.old / 'lib/c.c', self.new / 'lib/c.c')
		opened = []
		real_open = Path.open

		def spy(path, *a, **k):
			opened.append(path.name)
			return real_open(path, *a, **k)
		with unittest.mock.patch.object(Path, 'open', spy):
			stats = treesync.sync(self.new, self.old)
		self.assertNotIn('lib/c.c', stats.changed)
		self.assertIn('b.h', opened)		# same size: compared
		self.assertNotIn('c.c', opened)		# one file: not read

	def test_file_becomes_folder_and_back(self):
		(self.new / 'lib/c.c').unlink()
		write(self.new, {'lib/c.c/inner.c': 'x\n'})
		treesync.sync(self.new, self.old)
		self.assertEqual('x\n', (self.old / 'lib/c.c/inner.c').read_text())
		back = Path(self.tmp.name) / 'back'
		write(back, {'lib/c.c': 'int c;\n'})
		stats = treesync.sync(back, self.old)
		self.assertEqual('int c;\n', (self.old / 'lib/c.c').read_text())
		self.assertIn('Makefile', stats.removed)

	def test_symlink_target_change(self):
		os.symlink('a.h', self.old / 'include/l.h')
		os.symlink('b.h', self.new / 'include/l.h')
		stats = treesync.sync(self.new, self.old)
		self.assertIn('include/l.h', stats.changed)
		self.assertEqual('b.h', os.readlink(self.old / 'include/l.h'))


PATCH = '''From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: GKI test <gki@localhost>
Subject: [PATCH] ANDROID: test: A is 10

---
diff --git a/include/a.h b/include/a.h
--- a/include/a.h
+++ b/include/a.h
@@ -1 +1 @@
-#define A 1
+#define A 10
'''


class SourceStageTest(unittest.TestCase):
	"""source.prepare with a tiny tarball: a patch added then dropped
	leaves the header newer each time, the rest untouched."""

	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		top = Path(self.tmp.name)
		self.layout = Layout(top, top / 'out')
		(top / 'common' / 'patches').mkdir(parents=True)
		self.tarball = top / 'linux.tar'
		self.src = self.archive({'linux/include/a.h': '#define A 1\n',
					 'linux/lib/c.c': 'int c;\n'}, 'ab' * 32)
		self.log = top / 'source.log'

	def archive(self, files: dict[str, str], sha256: str) -> source.Source:
		"""(Re)write the tarball, every member with the same old mtime."""
		with tarfile.open(self.tarball, 'w') as tar:
			for rel, text in files.items():
				ti = tarfile.TarInfo(rel)
				data = text.encode()
				ti.size, ti.mtime = len(data), OLD
				tar.addfile(ti, io.BytesIO(data))
		return source.Source('p', '1', sha256, True, self.tarball)

	def tearDown(self):
		self.tmp.cleanup()

	def series(self, *names: str) -> None:
		pdir = self.layout.common / 'patches'
		(pdir / 'a.patch').write_text(PATCH)
		(pdir / 'series').write_text(''.join(n + '\n' for n in names))

	def test_fresh_tree_is_newer_than_the_archive(self):
		self.series()
		source.prepare(self.layout, self.src, self.log)
		self.assertGreater(int((self.layout.src / 'lib/c.c').stat().st_mtime), OLD)

	def test_patch_added_then_dropped(self):
		self.series()
		source.prepare(self.layout, self.src, self.log)
		a = self.layout.src / 'include/a.h'
		c = self.layout.src / 'lib/c.c'
		c_mtime = c.stat().st_mtime_ns
		os.utime(a, (OLD, OLD))

		self.series('a.patch')
		self.assertEqual('ANDROID: test: A is 10',
				 source.prepare(self.layout, self.src, self.log)[0]['subject'])
		self.assertEqual('#define A 10\n', a.read_text())
		self.assertGreater(int(a.stat().st_mtime), OLD)
		self.assertEqual(c_mtime, c.stat().st_mtime_ns)

		os.utime(a, (OLD, OLD))
		self.series()
		self.assertEqual([], source.prepare(self.layout, self.src, self.log))
		self.assertEqual('#define A 1\n', a.read_text())
		self.assertGreater(int(a.stat().st_mtime), OLD)
		self.assertEqual(c_mtime, c.stat().st_mtime_ns)
		stamp = json.loads((self.layout.src.parent / 'stamp.json').read_text())
		self.assertEqual([], stamp['patches'])

	def test_series_change_reuses_the_pristine_tree(self):
		"""The tarball is extracted once; a series change copies the
		pristine tree by hard links, and neither the patch nor the
		drop changes a pristine file or its timestamp."""
		self.series()
		source.prepare(self.layout, self.src, self.log)
		pristine = self.layout.src.parent / 'pristine' / self.src.sha256 / 'linux'
		a = pristine / 'include/a.h'
		self.assertTrue(os.path.samefile(a, self.layout.src / 'include/a.h'))
		os.utime(a, (OLD, OLD))
		self.tarball.rename(self.tarball.with_suffix('.away'))	# not read again
		self.series('a.patch')
		source.prepare(self.layout, self.src, self.log)
		self.series()
		source.prepare(self.layout, self.src, self.log)
		self.assertEqual('#define A 1\n', a.read_text())
		self.assertEqual(OLD, int(a.stat().st_mtime))
		self.assertEqual('#define A 1\n', (self.layout.src / 'include/a.h').read_text())
		self.assertGreater(int((self.layout.src / 'include/a.h').stat().st_mtime), OLD)
		self.assertTrue(os.path.samefile(pristine / 'lib/c.c', self.layout.src / 'lib/c.c'))

	def test_new_tarball_point_release(self):
		"""A new point release: only the files it changed are newer."""
		self.series()
		source.prepare(self.layout, self.src, self.log)
		a = self.layout.src / 'include/a.h'
		c = self.layout.src / 'lib/c.c'
		a_mtime = a.stat().st_mtime_ns
		os.utime(c, (OLD, OLD))
		update = self.archive({'linux/include/a.h': '#define A 1\n',
				       'linux/lib/c.c': 'int c = 1;\n',
				       'linux/lib/new.c': 'int n;\n'}, 'cd' * 32)
		source.prepare(self.layout, update, self.log)
		self.assertEqual('int c = 1;\n', c.read_text())
		self.assertGreater(int(c.stat().st_mtime), OLD)
		self.assertEqual(a_mtime, a.stat().st_mtime_ns)
		self.assertTrue((self.layout.src / 'lib/new.c').exists())
		# One pristine tree: the new tarball's.
		self.assertEqual(['cd' * 32],
				 os.listdir(self.layout.src.parent / 'pristine'))


if __name__ == '__main__':
	unittest.main()
