# SPDX-License-Identifier: GPL-2.0
"""The patch series in common/patches: quilt's series format, git
format-patch files with Android subject tags, applied with GNU patch."""

from __future__ import annotations

import dataclasses
import email.header
import re
import subprocess
from pathlib import Path

from gkibuild.util import GkiError

TAGS = ('ANDROID', 'UPSTREAM', 'BACKPORT', 'FROMLIST')


@dataclasses.dataclass(frozen=True)
class Entry:
	name: str
	strip: int = 1


def read_series(path: Path) -> list[Entry]:
	"""Parse a quilt series file: one patch per line, optional -pN, '#'
	comments.  A missing or empty series is an empty list."""
	if not path.exists():
		return []
	entries = []
	for n, raw in enumerate(path.read_text().splitlines(), 1):
		line = raw.split('#', 1)[0].strip()
		if not line:
			continue
		words = line.split()
		strip = 1
		for opt in words[1:]:
			m = re.fullmatch(r'-p(\d)', opt)
			if not m:
				raise GkiError(f'{path}:{n}: unknown option {opt!r}')
			strip = int(m.group(1))
		entries.append(Entry(words[0], strip))
	return entries


def subject(path: Path) -> str:
	"""The Subject of a format-patch file, folded lines joined, [PATCH] cut."""
	lines = path.read_text(errors='replace').splitlines()
	for i, line in enumerate(lines):
		if line.startswith('Subject:'):
			text = line[len('Subject:'):]
			for cont in lines[i + 1:]:
				if not cont.startswith((' ', '\t')):
					break
				text += cont
			text = str(email.header.make_header(email.header.decode_header(text)))
			return re.sub(r'^\s*(\[[^]]*\]\s*)*', '', text).strip()
	raise GkiError(f'{path.name}: not a git format-patch file (no Subject: line)')


def check_subject(path: Path) -> None:
	if not path.exists():
		raise GkiError(f'patch {path.name} is listed in the series but missing')
	s = subject(path)
	if not re.match(rf'({"|".join(TAGS)}): ', s):
		raise GkiError(f'patch {path.name}: subject {s!r} lacks a tag '
			       f'({", ".join(t + ":" for t in TAGS)})')


def _patch(tree: Path, patch: Path, strip: int, dry_run: bool) -> subprocess.CompletedProcess:
	cmd = ['patch', f'-p{strip}', '--forward', '--batch', '--no-backup-if-mismatch',
	       '-s' if not dry_run else '--verbose', '-d', str(tree), '-i', str(patch)]
	if dry_run:
		cmd.append('--dry-run')
	return subprocess.run(cmd, capture_output=True, text=True)


def failure(output: str) -> str:
	"""Reduce GNU patch's output to the first failing hunk."""
	current = '?'
	for line in output.splitlines():
		m = re.match(r"(?:patching|checking) file '?([^']+)'?$", line)
		if m:
			current = m.group(1)
			continue
		m = re.match(r'Hunk #(\d+) FAILED at (\d+)', line)
		if m:
			return f'hunk #{m.group(1)} of {current} FAILED at line {m.group(2)}'
		if "can't find file to patch" in line:
			return f'file to patch not found ({line.strip()})'
		if 'Reversed (or previously applied) patch detected' in line:
			return f'{current}: already applied'
		if 'malformed patch' in line or 'Only garbage' in line:
			return line.strip()
	return output.strip().splitlines()[-1] if output.strip() else 'unknown error'


def apply_series(tree: Path, pdir: Path, series: list[Entry]) -> None:
	"""Apply each patch in order; stop at the first that does not apply,
	naming it and its failing hunk.  A dry run first keeps the tree clean."""
	for e in series:
		path = pdir / e.name
		dry = _patch(tree, path, e.strip, dry_run=True)
		if dry.returncode != 0:
			raise GkiError(f'patch {e.name} does not apply: '
				       f'{failure(dry.stdout + dry.stderr)}')
		real = _patch(tree, path, e.strip, dry_run=False)
		if real.returncode != 0:
			raise GkiError(f'patch {e.name}: {failure(real.stdout + real.stderr)}')
