# SPDX-License-Identifier: GPL-2.0
"""Small helpers shared by every stage: errors, progress lines, commands."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Iterator, Mapping, Sequence


class GkiError(Exception):
	"""A failure the user can act on; main.py prints it as one line.  The
	exit status is EXIT_BUILD: a build, the ABI gate or the harness could
	not do its job."""


class UsageError(GkiError):
	"""A command line that cannot be carried out as given: EXIT_USAGE."""


# Exit statuses of build/gki (BUILD.md, "Exit status").
EXIT_OK = 0		# everything asked for passed
EXIT_FAILED = 1		# a test failed (or, for abi compare, the KMI breaks)
EXIT_USAGE = 2		# a command line that cannot be carried out
EXIT_BUILD = 3		# a build, the ABI gate or the harness failed
EXIT_INTERRUPTED = 130	# interrupted (SIGINT), as a shell reports it


def ccache_dir() -> Path:
	"""ccache's folder, shared by every clone on the machine; the build's
	other caches of derived files sit in it too."""
	default = Path(os.environ.get('HOME') or '/root') / '.cache' / 'gki-ccache'
	return Path(os.environ.get('GKI_CCACHE_DIR') or default)


def info(msg: str) -> None:
	print(f'gki: {msg}', flush=True)


class Stage:
	"""What a running stage may say about itself on its closing line."""

	def __init__(self) -> None:
		self.note = ''


class StageTimer:
	"""Prints one progress line per stage with its duration (and what the
	stage did, when it says: '412 objects rebuilt') and keeps the durations
	for the dist manifest."""

	def __init__(self) -> None:
		self.timings: dict[str, float] = {}

	@contextlib.contextmanager
	def stage(self, name: str, what: str = '') -> Iterator[Stage]:
		start = time.monotonic()
		st = Stage()
		ok = False
		try:
			yield st
			ok = True
		finally:
			secs = time.monotonic() - start
			self.timings[name] = round(secs, 2)
			state = 'FAILED' if not ok else st.note or 'done'
			label = f'{name} ({what})' if what else name
			print(f'[{label:<28}] {state} in {secs:7.1f} s', flush=True)


def mtimes(root: Path, suffix: str) -> dict[str, int]:
	"""The st_mtime_ns of every file under root named *suffix."""
	out = {}
	for dirpath, _, filenames in os.walk(root):
		for name in filenames:
			if name.endswith(suffix):
				p = os.path.join(dirpath, name)
				out[p] = os.stat(p).st_mtime_ns
	return out


def rebuilt(before: Mapping[str, int], after: Mapping[str, int]) -> list[str]:
	"""Objects compiled from a source file (not linked, like vmlinux.o)
	that are new or rewritten between two mtimes() snapshots."""
	return sorted(p for p, t in after.items() if before.get(p) != t and compiled(p))


def compiled(obj: str) -> bool:
	"""Did kbuild compile obj from a source file?  Its .cmd file then
	names the source (source_<obj> := ...); a linked or generated object
	(vmlinux.o, the kallsyms passes) has no such line."""
	head, name = os.path.split(obj)
	try:
		with open(os.path.join(head, f'.{name}.cmd'), errors='replace') as f:
			return any(line.startswith('source_') for line in f)
	except OSError:
		return False


def run_logged(cmd: Sequence[str], log: Path, env: Mapping[str, str] | None = None,
	       cwd: Path | None = None, what: str = '') -> None:
	"""Run cmd with stdout and stderr appended to log; on failure raise a
	GkiError that quotes the last lines and names the log."""
	log.parent.mkdir(parents=True, exist_ok=True)
	with log.open('ab') as f:
		f.write(('\n$ ' + ' '.join(cmd) + '\n').encode())
		f.flush()
		rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT,
				     stdin=subprocess.DEVNULL, env=env, cwd=cwd)
	if rc != 0:
		raise GkiError(f'{what or cmd[0]} failed (exit {rc}); last lines:\n'
			       f'{tail(log, 15)}\nfull log: {log}')


def tail(path: Path, lines: int) -> str:
	try:
		data = path.read_bytes()[-16384:].decode(errors='replace')
	except OSError:
		return ''
	return '\n'.join('    ' + l for l in data.splitlines()[-lines:])


def capture(cmd: Sequence[str], env: Mapping[str, str] | None = None) -> str:
	try:
		return subprocess.run(cmd, check=True, capture_output=True, text=True,
				      env=env).stdout
	except (OSError, subprocess.CalledProcessError) as e:
		raise GkiError(f'cannot run {cmd[0]}: {e}') from e


def sha256_file(path: Path) -> str:
	h = hashlib.sha256()
	with path.open('rb') as f:
		for chunk in iter(lambda: f.read(1 << 20), b''):
			h.update(chunk)
	return h.hexdigest()


def sha256_text(*parts: str | bytes) -> str:
	h = hashlib.sha256()
	for p in parts:
		h.update(p.encode() if isinstance(p, str) else p)
		h.update(b'\0')
	return h.hexdigest()


def write_tarball(root: Path, prefix: str, dest: Path, hidden: bool = True) -> None:
	"""root's tree as a reproducible .tar.gz, its names under prefix:
	sorted names, no owners, fixed times.  hidden False: names starting
	with '.' are left out."""
	buf = io.BytesIO()
	with tarfile.open(fileobj=buf, mode='w', format=tarfile.PAX_FORMAT) as tar:
		for p in sorted(root.rglob('*')):
			rel = p.relative_to(root)
			if not hidden and any(part.startswith('.') for part in rel.parts):
				continue
			ti = tar.gettarinfo(str(p), arcname=str(Path(prefix) / rel))
			ti.uid = ti.gid = 0
			ti.uname = ti.gname = ''
			ti.mtime = 0
			if ti.isreg():
				with p.open('rb') as f:
					tar.addfile(ti, f)
			else:
				tar.addfile(ti)
	with dest.open('wb') as raw, gzip.GzipFile(fileobj=raw, mode='wb', mtime=0,
						   filename='') as gz:
		gz.write(buf.getvalue())


def write_if_changed(path: Path, data: bytes) -> bool:
	"""Write data unless path already holds it; keeps mtimes stable so make
	does not rebuild what did not change."""
	try:
		if path.read_bytes() == data:
			return False
	except OSError:
		pass
	path.parent.mkdir(parents=True, exist_ok=True)
	tmp = path.with_name(path.name + '.tmp')
	tmp.write_bytes(data)
	os.replace(tmp, path)
	return True


def die(msg: str, status: int = EXIT_BUILD) -> None:
	print(f'gki: error: {msg}', file=sys.stderr, flush=True)
	sys.exit(status)
