# SPDX-License-Identifier: GPL-2.0
"""Bring a built tree up to date with a freshly prepared one so that make
sees exactly what changed.

make compares timestamps, not contents.  A re-extracted tarball restores
the archive's timestamps, so a file a dropped patch had touched would come
back *older* than the objects built from the patched version and nothing
would be rebuilt.  sync() therefore compares contents: a file whose bytes
and mode are unchanged is left alone (its inode and timestamp stay), every
other file is replaced by the new one stamped with the current time, and
what the new tree lacks is removed.

Files of the old tree are never written in place: they may be hard links
shared with scratch copies (scratch.py), so a change is always a new inode
renamed over the old path.  The new tree may be hard-linked too (to the
pristine extraction, source.py): a file linked elsewhere is copied before
it is stamped, so no other tree's timestamps move.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from pathlib import Path

_CHUNK = 1 << 20


@dataclasses.dataclass
class Stats:
	kept: int = 0
	changed: list[str] = dataclasses.field(default_factory=list)
	added: list[str] = dataclasses.field(default_factory=list)
	removed: list[str] = dataclasses.field(default_factory=list)

	def summary(self) -> str:
		return (f'{len(self.changed)} changed, {len(self.added)} added, '
			f'{len(self.removed)} removed, {self.kept} unchanged')


def same_file(a: Path, b: Path, sa: os.stat_result, sb: os.stat_result) -> bool:
	"""Same kind, permission bits and bytes (symlinks: same target)."""
	if (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino):
		return True	# one file, linked into both trees
	if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode):
		return False
	if stat.S_ISLNK(sa.st_mode):
		return os.readlink(a) == os.readlink(b)
	if stat.S_IMODE(sa.st_mode) != stat.S_IMODE(sb.st_mode) or sa.st_size != sb.st_size:
		return False
	with a.open('rb') as fa, b.open('rb') as fb:
		while True:
			ca = fa.read(_CHUNK)
			if ca != fb.read(_CHUNK):
				return False
			if not ca:
				return True


def _entries(root: Path) -> dict[str, os.stat_result]:
	"""Every path under root (relative, '/'-separated) with its lstat."""
	out = {}
	for dirpath, dirnames, filenames in os.walk(root):
		base = Path(dirpath)
		for name in dirnames + filenames:
			p = base / name
			out[str(p.relative_to(root))] = p.lstat()
	return out


def _remove(path: Path) -> None:
	if path.is_dir() and not path.is_symlink():
		shutil.rmtree(path)
	else:
		path.unlink(missing_ok=True)


def _install(src: Path, dst: Path, st: os.stat_result) -> None:
	"""Move src over dst, stamped now unless it is a symlink."""
	if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
		private = src.with_name(src.name + '.treesync-tmp')
		shutil.copy2(src, private)
		os.replace(private, src)
	if not stat.S_ISLNK(st.st_mode):
		os.utime(src)
	if dst.is_dir() and not dst.is_symlink():
		shutil.rmtree(dst)
	os.replace(src, dst)


def sync(new: Path, old: Path) -> Stats:
	"""Make old hold what new holds, touching only what differs.  new is
	consumed: the files that move into old leave it."""
	stats = Stats()
	have = _entries(old)
	want = _entries(new)
	for rel in sorted(set(have) - set(want), reverse=True):
		p = old / rel
		if p.is_symlink() or p.exists():
			_remove(p)
			stats.removed.append(rel)
	# Parents sort before their children, so folders exist before files.
	for rel in sorted(want):
		st = want[rel]
		src, dst = new / rel, old / rel
		if stat.S_ISDIR(st.st_mode):
			if rel in have and stat.S_ISDIR(have[rel].st_mode):
				continue
			if rel in have:
				_remove(dst)
			dst.mkdir()
			continue
		if rel in have and same_file(src, dst, st, have[rel]):
			stats.kept += 1
			continue
		(stats.changed if rel in have else stats.added).append(rel)
		_install(src, dst, st)
	return stats


def touch_all(root: Path) -> None:
	"""Stamp every file of a tree now: a tree that has no predecessor to
	compare with must be newer than any object built before it."""
	for dirpath, _, filenames in os.walk(root):
		for name in filenames:
			p = os.path.join(dirpath, name)
			if not os.path.islink(p):
				os.utime(p)
