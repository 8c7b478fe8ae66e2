# SPDX-License-Identifier: GPL-2.0
"""Debian's archive, for the kernel source: which versions of a package it
offers, and one version's tarball taken out of its .deb (downloaded with
apt-get download, never installed), kept in a cache outside out/.

The source stage fetches the version common/source.pin names, so a fresh
machine builds the same source however far Debian has moved on; 'abi
compare --source' and 'source pin' fetch others the same way."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from gkibuild.util import GkiError, info

# apt-get, apt-cache and dpkg-deb run with this environment only.
APT_ENV = {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LC_ALL': 'C',
	   'DEBIAN_FRONTEND': 'noninteractive'}


def cache_dir() -> Path:
	"""Downloaded source tarballs: outside out/, like ccache's, so that
	'rm -rf out' or a clone in another folder does not download again."""
	default = Path(os.environ.get('HOME') or '/root') / '.cache' / 'gki-source'
	return Path(os.environ.get('GKI_SOURCE_CACHE') or default)


def tarball_name(package: str, version: str, member: Path) -> str:
	"""linux-source-6.12_6.12.118-1~deb12u1.tar.xz for a package whose
	tarball is member (/usr/src/linux-source-6.12.tar.xz)."""
	return f'{package}_{version}.tar{member.name.rsplit(".tar", 1)[1]}'


class Archive:
	"""The real archive through apt.  Tests pass a fake with the same
	three methods."""

	def versions(self, package: str) -> list[str]:
		"""The versions the archive offers, newest first (apt-cache
		madison), from the package lists as they are."""
		res = subprocess.run(['apt-cache', 'madison', package], capture_output=True,
				     text=True, env=APT_ENV)
		return [cols[1].strip() for line in res.stdout.splitlines()
			if len(cols := line.split('|')) >= 3]

	def refresh(self) -> None:
		"""apt-get update, when allowed: a list older than the archive
		names versions it has dropped and misses new ones."""
		if os.geteuid() != 0:
			return
		info('apt-get update (the package lists may be older than the archive)')
		subprocess.run(['apt-get', 'update', '-qq', '-o=DPkg::Lock::Timeout=600'],
			       capture_output=True, env=APT_ENV)

	def download(self, package: str, version: str, member: Path, dest: Path) -> None:
		"""package=version's file member (an absolute path in the
		package) written to dest."""
		tmp = dest.parent / f'{dest.name}.download'
		shutil.rmtree(tmp, ignore_errors=True)
		tmp.mkdir(parents=True)
		try:
			res = subprocess.run(['apt-get', 'download', f'{package}={version}'], cwd=tmp,
					     capture_output=True, text=True, env=APT_ENV)
			debs = list(tmp.glob('*.deb'))
			if res.returncode or len(debs) != 1:
				raise GkiError(f'apt-get download {package}={version} failed: '
					       f'{res.stderr.strip()[-300:]}')
			part = tmp / dest.name
			with part.open('wb') as out:
				deb = subprocess.Popen(['dpkg-deb', '--fsys-tarfile', str(debs[0])],
						       stdout=subprocess.PIPE, env=APT_ENV)
				tar = subprocess.run(['tar', '-xO', f'.{member}'], stdin=deb.stdout,
						     stdout=out, stderr=subprocess.PIPE, env=APT_ENV)
				deb.wait()
			if deb.returncode or tar.returncode:
				raise GkiError(f'{debs[0].name} holds no {member}: '
					       f'{tar.stderr.decode(errors="replace")[-300:]}')
			part.rename(dest)
		finally:
			shutil.rmtree(tmp, ignore_errors=True)


def fetch(archive: Archive, package: str, version: str, member: Path, cache: Path) -> Path:
	"""package=version's tarball in cache, downloaded unless already
	there.  A version the lists do not know is tried again after one
	refresh of the lists; GkiError when the archive does not have it."""
	dest = cache / tarball_name(package, version, member)
	if dest.exists():
		return dest
	cache.mkdir(parents=True, exist_ok=True)
	if version not in archive.versions(package):
		archive.refresh()
		if version not in archive.versions(package):
			raise GkiError(f'{package} {version} is not in the archive')
	info(f'downloading {package} {version} into {cache}')
	archive.download(package, version, member, dest)
	return dest


def resolve(wanted: str, offered: list[str]) -> str:
	"""A full Debian version, or an upstream one (6.12.111) matching
	exactly one offered version."""
	if wanted in offered:
		return wanted
	hits = sorted({v for v in offered if v.split('-')[0] == wanted})
	if len(hits) == 1:
		return hits[0]
	known = ', '.join(sorted(set(offered))) or 'none (apt-get update?)'
	what = 'matches several versions' if hits else 'is not in the archive'
	raise GkiError(f'{wanted} {what}; the archive offers: {known}')
