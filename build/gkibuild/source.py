# SPDX-License-Identifier: GPL-2.0
"""Source stage: the tarball common/source.pin names (installed, or fetched
from Debian's archive), checked against the pin, extracted under out/src/
with the patch series applied."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Callable

from gkibuild import archive, patches, treesync
from gkibuild.layout import Layout
from gkibuild.util import (
	GkiError, info, run_logged, sha256_file, sha256_text, write_if_changed)


@dataclasses.dataclass(frozen=True)
class Pin:
	package: str
	version: str
	tarball: Path
	sha256: str


def load_pin(path: Path) -> Pin:
	fields = {}
	for n, line in enumerate(path.read_text().splitlines(), 1):
		line = line.strip()
		if not line or line.startswith('#'):
			continue
		key, sep, value = line.partition('=')
		if not sep:
			raise GkiError(f'{path}:{n}: expected key=value, got {line!r}')
		fields[key.strip()] = value.strip()
	try:
		return Pin(fields['package'], fields['version'], Path(fields['tarball']),
			   fields['sha256'])
	except KeyError as e:
		raise GkiError(f'{path}: missing key {e}') from None


def installed_version(package: str) -> str | None:
	"""The installed version of package, None when it is not installed."""
	res = subprocess.run(['dpkg-query', '-W', '-f', '${db:Status-Status} ${Version}', package],
			     capture_output=True, text=True, env=archive.APT_ENV)
	status, _, version = res.stdout.partition(' ')
	return version if res.returncode == 0 and status == 'installed' else None


@dataclasses.dataclass(frozen=True)
class Source:
	"""What was actually built from: recorded in the manifest."""
	package: str
	version: str
	sha256: str
	pinned: bool
	tarball: Path


MOVE_PIN = ('move the pin in a reviewed change: ./build/gki abi compare --source VERSION, '
	    'then ./build/gki source pin VERSION (BUILD.md, "Moving the pin"); or build the '
	    "archive's newest once with --accept-source-update")


def obtain(pin: Pin, accept_update: bool, arch: archive.Archive | None = None,
	   cache: Path | None = None,
	   installed: Callable[[str], str | None] | None = None) -> Source:
	"""The tarball to build: the pinned version's, from the installed
	package when it is that version, else downloaded from Debian's archive
	into the source cache (archive.py).  Its sha256 must be the pin's.

	When the archive no longer has the pinned version, the build stops
	with the versions it has and the way to move the pin, unless the
	caller accepts an update: then it builds the newest, not pinned.
	arch, cache and installed (the installed version of a package) are
	the real ones unless a test passes its own."""
	arch = arch or archive.Archive()
	cache = cache or archive.cache_dir()
	if (installed or installed_version)(pin.package) == pin.version and pin.tarball.exists():
		tarball = pin.tarball
	else:
		try:
			tarball = archive.fetch(arch, pin.package, pin.version, pin.tarball, cache)
		except GkiError:
			offered = arch.versions(pin.package)
			if pin.version in offered:
				raise		# the download failed, not the archive
			return update(pin, accept_update, arch, cache, offered)
	sha256 = sha256_file(tarball)
	if sha256 != pin.sha256:
		msg = (f'{tarball} ({pin.package} {pin.version}) has sha256 {sha256[:16]}..., '
		       f'common/source.pin says {pin.sha256[:16]}...')
		if not accept_update:
			raise GkiError(f'{msg}; to build it anyway pass --accept-source-update or set '
				       'GKI_ACCEPT_SOURCE_UPDATE=1 (see BUILD.md)')
		info(msg + '; building it because the update was accepted')
		return Source(pin.package, pin.version, sha256, False, tarball)
	return Source(pin.package, pin.version, sha256, True, tarball)


def update(pin: Pin, accept_update: bool, arch: archive.Archive, cache: Path,
	   offered: list[str]) -> Source:
	"""The pinned version is gone from the archive: say what it has, or,
	the update accepted, build its newest (madison lists newest first)."""
	have = ', '.join(offered) or 'none (is the package list empty? apt-get update)'
	msg = (f'{pin.package} {pin.version}, which common/source.pin names, is not in '
	       f"Debian's archive, which offers: {have}")
	if not accept_update or not offered:
		raise GkiError(f'{msg}; {MOVE_PIN}')
	info(f'{msg}; building {offered[0]} because the update was accepted')
	tarball = archive.fetch(arch, pin.package, offered[0], pin.tarball, cache)
	return Source(pin.package, offered[0], sha256_file(tarball), False, tarball)


def write_pin(path: Path, version: str, sha256: str) -> None:
	"""Set version= and sha256= in the pin file, keeping the rest; the
	file is replaced whole or not at all."""
	lines = []
	for line in path.read_text().splitlines():
		key = line.partition('=')[0].strip()
		if not line.lstrip().startswith('#') and key in ('version', 'sha256'):
			line = f'{key}={version if key == "version" else sha256}'
		lines.append(line)
	tmp = path.with_name(path.name + '.tmp')
	tmp.write_text('\n'.join(lines) + '\n')
	tmp.rename(path)


def series(layout: Layout) -> list[patches.Entry]:
	"""The patch series, each patch checked for its subject tag."""
	pdir = layout.common / 'patches'
	entries = patches.read_series(pdir / 'series')
	for p in entries:
		patches.check_subject(pdir / p.name)
	return entries


def extract(tarball: Path, dest: Path, log: Path) -> Path:
	"""tarball extracted into the new folder dest; returns its one top
	folder."""
	shutil.rmtree(dest, ignore_errors=True)
	dest.mkdir(parents=True)
	run_logged(['tar', '-xf', str(tarball), '-C', str(dest)], log, what='tar')
	tops = [d for d in dest.iterdir() if d.is_dir()]
	if len(tops) != 1:
		raise GkiError(f'{tarball}: expected one top folder, found {len(tops)}')
	return tops[0]


def extract_patched(layout: Layout, tarball: Path, tmp: Path, log: Path) -> Path:
	"""tarball extracted into the empty folder tmp, with the series
	applied; returns the tree (tmp's one top folder)."""
	tree = extract(tarball, tmp, log)
	patches.apply_series(tree, layout.common / 'patches', series(layout))
	return tree


def pristine(layout: Layout, src: Source, log: Path) -> Path:
	"""The pinned tarball extracted once, under out/src/pristine/<sha256>:
	a change to the series then costs a hard-linked copy and the patches,
	not an extraction, and the sync that follows skips a file still
	linked to the one it replaces.  Nothing writes these files: a
	patched copy gets a new inode for each file a patch changes (GNU
	patch writes a new file), and treesync stamps only its own copies."""
	root = layout.src.parent / 'pristine'
	done = root / src.sha256
	if not done.is_dir():
		# Another tarball's tree is dropped; the rename marks completion.
		shutil.rmtree(root, ignore_errors=True)
		extract(src.tarball, root / 'extract.tmp', log)
		(root / 'extract.tmp').rename(done)
	return next(d for d in done.iterdir() if d.is_dir())


def patched_copy(layout: Layout, src: Source, tmp: Path, log: Path) -> Path:
	"""A hard-linked copy of the pristine tree in the empty folder tmp,
	with the series applied; returns the tree."""
	top = pristine(layout, src, log)
	shutil.rmtree(tmp, ignore_errors=True)
	tmp.mkdir(parents=True)
	tree = tmp / top.name
	run_logged(['cp', '-al', str(top), str(tree)], log, what='cp -al')
	patches.apply_series(tree, layout.common / 'patches', series(layout))
	return tree


def prepare(layout: Layout, src: Source, log: Path) -> list[dict[str, str]]:
	"""Extract a pristine tree and apply the series, unless the tree already
	matches the tarball and the series.  Returns the applied patches."""
	pdir = layout.common / 'patches'
	entries = series(layout)
	digest = sha256_text(src.sha256, *(p.name + (pdir / p.name).read_text() for p in entries))
	stamp = layout.src.parent / 'stamp.json'
	applied = [{'name': p.name, 'subject': patches.subject(pdir / p.name)} for p in entries]
	state = {'digest': digest, 'patches': applied}
	try:
		if json.loads(stamp.read_text())['digest'] == digest and layout.src.is_dir():
			return applied
	except (OSError, ValueError, KeyError):
		pass

	stamp.unlink(missing_ok=True)
	tmp = layout.src.parent / 'extract.tmp'
	tree = patched_copy(layout, src, tmp, log)
	if layout.src.is_dir():
		# The tree the objects were built from: only what differs
		# becomes newer than them (treesync.py says why).
		stats = treesync.sync(tree, layout.src)
		info(f'source: {stats.summary()}')
		with log.open('a') as f:
			f.write(''.join(f'{kind} {rel}\n' for kind, rels in
					(('changed', stats.changed), ('added', stats.added),
					 ('removed', stats.removed)) for rel in rels))
	else:
		treesync.touch_all(tree)
		tree.rename(layout.src)
	shutil.rmtree(tmp)
	write_if_changed(stamp, json.dumps(state, indent=1).encode())
	return applied
