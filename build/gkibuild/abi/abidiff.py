# SPDX-License-Identifier: GPL-2.0
"""libabigail for the ABI gate: abidw and abidiff run hermetically, and
abidiff's report sorted into what the gate decides on.

Hermetic: both run with --no-default-suppression and an environment of
their own, so a personal ~/.abignore or LIBABIGAIL_DEFAULT_USER_SUPPRESSION_FILE
cannot hide a change; --harmless shows what libabigail 2.2 otherwise files
away as harmless (an added enumerator).  A summary that still counts
filtered-out changes is not classified: nothing may be filtered.

Two workarounds for Debian's abigail-tools 2.2 (BUILD.md, "The KMI"): it
reads a symbol list only under an [abi_whitelist] header, so the lists are
translated; and it aborts on 6.12 .ko files, so vmlinux is dumped alone and
the exports of in-tree modules are covered by their MODVERSIONS CRCs.

abidiff's exit status does not say what changed (a changed struct sets only
"changed"), so the gate classifies its report; a report, or an exit status,
it cannot account for fails the gate with the raw report: it fails closed.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from gkibuild.util import GkiError, sha256_file, sha256_text

ABIDW_FLAGS = ['--no-corpus-path', '--no-comp-dir-path', '--type-id-style', 'hash']
ABIDIFF_FLAGS = ['--no-default-suppression', '--harmless', '--leaf-changes-only',
		 '--impacted-interfaces']
# Dumps kept by dump(cache=...): each variant's build, its revert, the
# tests' scratch builds and a few more.
DUMP_CACHE_KEEP = 16
# abidiff's exit status bits
ABIDIFF_ERROR, ABIDIFF_USAGE, ABIDIFF_CHANGE, ABIDIFF_INCOMPATIBLE = 1, 2, 4, 8
# Nothing of the caller's: no HOME (~/.abignore), no LIBABIGAIL_* variables.
TOOL_ENV = {'PATH': '/usr/bin:/bin', 'LC_ALL': 'C', 'HOME': '/nonexistent'}


def write_abidw_list(path: Path, symbols: set[str]) -> Path:
	"""2.2 reads a list only under [abi_whitelist]; with [abi_symbol_list]
	it silently dumps every export."""
	path.write_text('[abi_whitelist]\n' + ''.join(f'  {s}\n' for s in sorted(symbols)))
	return path


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
	return subprocess.run(cmd, env=TOOL_ENV, capture_output=True, text=True)


def dump(vmlinux: Path, symbols: set[str], out: Path, cache: Path | None = None) -> None:
	"""abidw of vmlinux restricted to symbols, into out.  With cache (a
	folder), a dump of the same vmlinux bytes and list by the same abidw is
	copied from there instead: abidw takes half a minute, and most builds
	leave vmlinux as it was (a vendor module or a revert)."""
	out.parent.mkdir(parents=True, exist_ok=True)
	key = dump_key(vmlinux, symbols) if cache else ''
	if key and (cache / key).is_file():
		shutil.copyfile(cache / key, out)
		os.utime(cache / key)
		return
	wl = write_abidw_list(out.with_suffix('.list'), symbols)
	res = _run(['abidw', *ABIDW_FLAGS, '--kmi-whitelist', str(wl), '--out-file', str(out),
		    str(vmlinux)])
	wl.unlink()
	if res.returncode:
		raise GkiError(f'abidw {vmlinux} failed ({res.returncode}): {res.stderr.strip()[-500:]}')
	if key:
		remember(cache, key, out)


@functools.cache
def abidw_version() -> str:
	res = _run(['abidw', '--version'])
	if res.returncode:
		raise GkiError(f'abidw --version failed ({res.returncode}): {res.stderr.strip()[-500:]}')
	return res.stdout.strip()


def dump_key(vmlinux: Path, symbols: set[str]) -> str:
	"""What a dump is a function of: the tool, its flags, the list and
	the bytes of vmlinux."""
	return sha256_text(abidw_version(), *ABIDW_FLAGS, *sorted(symbols),
			   sha256_file(vmlinux)) + '.xml'


def remember(cache: Path, key: str, dump_file: Path) -> None:
	"""Keep a dump under its key (written whole, then renamed: a dump cut
	short is never found) and the DUMP_CACHE_KEEP newest."""
	cache.mkdir(parents=True, exist_ok=True)
	tmp = cache / f'.{key}.{os.getpid()}'
	shutil.copyfile(dump_file, tmp)
	tmp.rename(cache / key)
	old = sorted(cache.glob('*.xml'), key=lambda p: p.stat().st_mtime, reverse=True)
	for p in old[DUMP_CACHE_KEEP:]:
		p.unlink(missing_ok=True)


def diff(base: Path, new: Path, symbols: set[str], report: Path) -> tuple[int, str]:
	"""abidiff's exit status and report; an error of abidiff itself raises."""
	wl = write_abidw_list(report.with_suffix('.list'), symbols)
	res = _run(['abidiff', *ABIDIFF_FLAGS, '--kmi-whitelist', str(wl), str(base), str(new)])
	wl.unlink()
	if res.returncode & (ABIDIFF_ERROR | ABIDIFF_USAGE):
		raise GkiError(f'abidiff failed ({res.returncode}): {res.stderr.strip()[-500:]}')
	return res.returncode, res.stdout


@dataclasses.dataclass
class Report:
	"""abidiff's report sorted into what the gate decides on.  What the
	parser cannot place lands in unclassified, which fails the gate: a
	report the gate does not understand must never read as no change."""
	changed: list[str] = dataclasses.field(default_factory=list)	# one block per leaf change
	removed: list[str] = dataclasses.field(default_factory=list)	# symbol names
	added: list[str] = dataclasses.field(default_factory=list)	# symbol names
	unclassified: list[str] = dataclasses.field(default_factory=list)	# why, one line each

	def lists_nothing(self) -> bool:
		return not (self.changed or self.removed or self.added or self.unclassified)


# abidiff --leaf-changes-only (libabigail's leaf reporter) writes summary
# lines, then sections "N <heading>:" whose entries start at indent 2 with
# [D] (removed), [A] (added) or [C] (changed), then one block per changed
# leaf type, "'struct foo at foo.h:12:1' changed:", at column 0.  Deeper
# lines belong to the entry or block above them.
_SUMMARY = re.compile(r'(Leaf changes|Changed leaf types|Removed/Changed/Added functions|'
		      r'Removed/Changed/Added variables|Function symbols changes|'
		      r'Variable symbols changes) summary: (.*)')
_LEAF_COUNT = re.compile(r'(\d+) artifacts? changed(?: \(\d+ filtered out\))?')
_TYPE_COUNT = re.compile(r'(\d+)(?: \(\d+ filtered out\))? leaf types? changed')
_SECTIONS = (	# heading, the entries' marker, where they go
	(re.compile(r'(\d+) Removed (?:function|variable)s?:'), '[D]', 'removed'),
	(re.compile(r'(\d+) Added (?:function|variable)s?:'), '[A]', 'added'),
	(re.compile(r'(\d+) functions? with some sub-type change:'), '[C]', 'changed'),
	(re.compile(r'(\d+) Changed variables?:'), '[C]', 'changed'),
	(re.compile(r'(\d+) Removed (?:function|variable) symbols? not referenced by debug info:'),
	 '[D]', 'removed'),
	(re.compile(r'(\d+) Added (?:function|variable) symbols? not referenced by debug info:'),
	 '[A]', 'added'),
)
_TYPE = re.compile(r"'.+' changed:")
_NAMED = re.compile(r"\[[AD]\] '.+'\s+\{(.+)\}")	# a declaration: {symbol, aliases}
_BARE = re.compile(r'\[[AD]\] ([^\s\',]+(?:, [^\s\',]+)*)')	# a symbol without debug info


def _indent(line: str) -> int:
	return len(line) - len(line.lstrip(' '))


def _units(text: str) -> list[list[str]]:
	"""Each unindented line with the indented lines under it.  Blank lines
	only space the report out; the structure is in the indentation."""
	units: list[list[str]] = []
	for line in text.splitlines():
		if not line.strip():
			continue
		if _indent(line) == 0 or not units:
			units.append([line])
		else:
			units[-1].append(line)
	return units


def _entries(body: list[str]) -> list[list[str]] | None:
	"""A section's entries: each starts at indent 2, deeper lines are its
	details; None when the body has another shape."""
	entries: list[list[str]] = []
	for line in body:
		if _indent(line) == 2:
			entries.append([line])
		elif _indent(line) > 2 and entries:
			entries[-1].append(line)
		else:
			return None
	return entries


def _symbols(entry: str) -> list[str] | None:
	"""The symbol names of an [A] or [D] entry (the gate compares names
	with Module.symvers); None when the entry names none."""
	m = _NAMED.fullmatch(entry) or _BARE.fullmatch(entry)
	return m.group(1).split(', ') if m else None


def _section(rep: Report, head: str, body: list[str]) -> int | None:
	"""Sort one section's entries into rep; the number of entries, or None
	when head is no section heading the parser knows."""
	for heading, marker, kind in _SECTIONS:
		m = heading.fullmatch(head)
		if m:
			break
	else:
		return None
	entries = _entries(body)
	if entries is None or len(entries) != int(m.group(1)):
		rep.unclassified.append(f'{head!r} is followed by {len(body)} line(s) the parser '
					'cannot split into that many entries')
		return len(entries or [])
	for entry in entries:
		first = entry[0].strip()
		if not first.startswith(marker + ' '):
			rep.unclassified.append(f'unknown entry under {head!r}: {first}')
		elif kind == 'changed':
			rep.changed.append('\n'.join(entry))
		elif (names := _symbols(first)) is None:
			rep.unclassified.append(f'no symbol name in {first!r}')
		else:
			getattr(rep, kind).extend(names)
	return len(entries)


def _filtered(summary: str) -> list[str]:
	"""With no suppression at all, abidiff has nothing to filter; a change
	it filtered anyway is one the gate cannot see."""
	n = sum(int(k) for k in re.findall(r'(\d+) filtered out', summary))
	return [f'abidiff filtered {n} change(s) out of its report: {summary}'] if n else []


def _count(pattern: re.Pattern[str], rest: str) -> int | None:
	m = pattern.fullmatch(rest)
	return int(m.group(1)) if m else None


def parse_report(text: str) -> Report:
	"""Sort abidiff's --leaf-changes-only report into the gate's categories.
	The summary's counts are checked against what was sorted, so an entry
	the parser skipped cannot vanish silently."""
	rep = Report()
	summary: dict[str, int | None] = {}
	types = entries = 0
	for unit in _units(text):
		head, body = unit[0], unit[1:]
		m = _SUMMARY.fullmatch(head)
		if m and not body:
			rep.unclassified += _filtered(head)
			summary[m.group(1)] = _count(_LEAF_COUNT if m.group(1) == 'Leaf changes'
						     else _TYPE_COUNT, m.group(2))
		elif _TYPE.fullmatch(head):
			rep.changed.append('\n'.join(unit))
			types += 1
		elif (n := _section(rep, head, body)) is not None:
			entries += n
		else:
			rep.unclassified.append(f'unknown line: {head}')
	if text.strip():
		_check_counts(rep, summary, types, entries)
	return rep


def _check_counts(rep: Report, summary: dict[str, int | None], types: int, entries: int) -> None:
	"""abidiff counts every leaf change it lists; the parser must have
	found as many."""
	if summary.get('Leaf changes') != types + entries:
		rep.unclassified.append(f'the summary counts {summary.get("Leaf changes")} leaf '
					f'change(s), the parser found {types + entries}')
	if summary.get('Changed leaf types') != types:
		rep.unclassified.append(f'the summary counts {summary.get("Changed leaf types")} '
					f'changed leaf type(s), the parser found {types}')


# A struct, union or enum of a dump, and the attributes of its definition.
_TYPE_DECL = re.compile(r"<(class|union|enum)-decl name='([^']+)'([^>]*)>")
_SITE = re.compile(r"filepath='([^']*)' line='(\d+)' column='(\d+)'")
_KEYWORD = {'class': 'struct', 'union': 'union', 'enum': 'enum'}


def definitions(dump_file: Path) -> dict[str, set[str]]:
	"""Type name ('struct foo') -> where a dump defines it, as abidiff
	writes a site ('foo.h:12:1').  Declarations, and anonymous types (their
	names are libabigail's numbering), are left out."""
	out: dict[str, set[str]] = {}
	for kind, name, attrs in _TYPE_DECL.findall(dump_file.read_text()):
		site = _SITE.search(attrs)
		if not site or name.startswith('__anonymous_') or "is-declaration-only='yes'" in attrs:
			continue
		path, line, col = site.groups()
		out.setdefault(f'{_KEYWORD[kind]} {name}', set()).add(f'{Path(path).name}:{line}:{col}')
	return out


def classify(text: str, rc: int) -> Report:
	"""parse_report, held against abidiff's exit status: a change the status
	signals but the report does not show is not classified, and fails."""
	rep = parse_report(text)
	if rc & (ABIDIFF_CHANGE | ABIDIFF_INCOMPATIBLE) and rep.lists_nothing():
		rep.unclassified.append(f'abidiff exit status {rc} signals a change the '
					'report does not list')
	elif rc & ABIDIFF_INCOMPATIBLE and not (rep.removed or rep.changed):
		rep.unclassified.append(f'abidiff exit status {rc} signals an incompatible change, '
					'the report lists no removal or change')
	return rep
