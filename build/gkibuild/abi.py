# SPDX-License-Identifier: GPL-2.0
"""The ABI gate: a libabigail dump of vmlinux restricted to the KMI, the
checked-in baseline in abi/, and the check that compares a build with it.

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
import json
import re
import subprocess
from pathlib import Path
from typing import Mapping

import kmi
from util import GkiError, sha256_text

BASELINE = 'gki.xml'		# abidw of vmlinux, KMI only
SYMVERS = 'gki.symvers'		# the KMI's CRCs: "crc<TAB>symbol<TAB>module"
META = 'gki.json'		# what the baseline came from
ABIDW_FLAGS = ['--no-corpus-path', '--no-comp-dir-path', '--type-id-style', 'hash']
ABIDIFF_FLAGS = ['--leaf-changes-only', '--impacted-interfaces']
# abidiff's exit status bits
ABIDIFF_ERROR, ABIDIFF_USAGE, ABIDIFF_CHANGE, ABIDIFF_INCOMPATIBLE = 1, 2, 4, 8


def write_abidw_list(path: Path, symbols: set[str]) -> Path:
	"""2.2 reads a list only under [abi_whitelist]; with [abi_symbol_list]
	it silently dumps every export."""
	path.write_text('[abi_whitelist]\n' + ''.join(f'  {s}\n' for s in sorted(symbols)))
	return path


def dump(vmlinux: Path, symbols: set[str], out: Path) -> None:
	"""abidw of vmlinux restricted to symbols, into out."""
	out.parent.mkdir(parents=True, exist_ok=True)
	wl = write_abidw_list(out.with_suffix('.list'), symbols)
	res = subprocess.run(['abidw', *ABIDW_FLAGS, '--kmi-whitelist', str(wl),
			      '--out-file', str(out), str(vmlinux)], capture_output=True, text=True)
	wl.unlink()
	if res.returncode:
		raise GkiError(f'abidw {vmlinux} failed ({res.returncode}): {res.stderr.strip()[-500:]}')


def kmi_crcs(symvers: Path, symbols: set[str]) -> dict[str, tuple[str, str]]:
	return {s: v for s, v in kmi.symvers_exports(symvers).items() if s in symbols}


def write_symvers(path: Path, crcs: Mapping[str, tuple[str, str]]) -> None:
	path.write_text(''.join(f'{crc}\t{s}\t{mod}\n' for s, (crc, mod) in sorted(crcs.items())))


def read_symvers(path: Path) -> dict[str, tuple[str, str]]:
	out = {}
	for line in path.read_text().splitlines():
		crc, sym, mod = line.split('\t')
		out[sym] = (crc, mod)
	return out


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


@dataclasses.dataclass
class Result:
	removed: list[str]
	added: list[str]
	crc_changed: list[str]
	type_changes: list[str]		# abidiff's leaf changes, one entry each
	report: Path
	unclassified: list[str] = dataclasses.field(default_factory=list)
	abidiff_report: str = ''	# printed whole when some of it is unclassified

	@property
	def breaks(self) -> bool:
		return bool(self.removed or self.crc_changed or self.type_changes)

	def summary(self) -> str:
		unclassified = f', {len(self.unclassified)} unclassified' if self.unclassified else ''
		lines = [f'ABI check: {len(self.removed)} removed, {len(self.type_changes)} '
			 f'type change(s), {len(self.crc_changed)} CRC change(s), '
			 f'{len(self.added)} added symbol(s){unclassified}']
		for s in self.removed[:5]:
			lines.append(f'  BREAK removed: {s}')
		for c in self.type_changes[:5]:
			lines.append('  BREAK ' + c.splitlines()[0].strip())
			lines += ['        ' + ln.strip() for ln in c.splitlines()[1:4] if ln.strip()]
		for s in self.crc_changed[:5]:
			lines.append(f'  BREAK CRC changed: {s}')
		for s in self.added[:5]:
			lines.append(f'  added, not in the baseline: {s}')
		if self.added and not self.breaks:
			lines.append('  the symbol lists grew: update the baseline in the same change '
				     '(./build/gki abi update) so the list and the baseline move together')
		lines += self.unclassified_lines()
		lines.append(f'  report: {self.report}')
		return '\n'.join(lines)

	def unclassified_lines(self) -> list[str]:
		"""What the parser could not place, then abidiff's whole report: the
		gate cannot say what it means, so a person must read it."""
		if not self.unclassified:
			return []
		return ([f'  UNCLASSIFIED: {u}' for u in self.unclassified]
			+ ['  abidiff\'s report, as it came:']
			+ ['    | ' + ln for ln in self.abidiff_report.splitlines()])


def verdict(res: Result) -> str | None:
	"""Why the gate fails the build, or None when it passes.  A break fails;
	so does an addition: a symbol list and the baseline move together in
	one change, so a grown list without a new baseline is not releasable;
	and so does a report the gate could not read."""
	if res.unclassified:
		return ('abidiff reported changes the ABI gate cannot classify, so it fails closed '
			'(the raw report is above)')
	if res.breaks:
		return 'the KMI differs from the baseline in abi/ (see above)'
	if res.added:
		return ('the symbol lists grew but the baseline in abi/ did not: run '
			'./build/gki abi update and commit abi/ with the lists')
	return None


def diff(base: Path, new: Path, symbols: set[str], report: Path) -> tuple[int, str]:
	wl = write_abidw_list(report.with_suffix('.list'), symbols)
	res = subprocess.run(['abidiff', *ABIDIFF_FLAGS, '--kmi-whitelist', str(wl),
			      str(base), str(new)], capture_output=True, text=True)
	wl.unlink()
	if res.returncode & (ABIDIFF_ERROR | ABIDIFF_USAGE):
		raise GkiError(f'abidiff failed ({res.returncode}): {res.stderr.strip()[-500:]}')
	return res.returncode, res.stdout


def check(abi_dir: Path, vmlinux: Path, symvers: Path, symbols: set[str],
	  out_dir: Path) -> Result:
	"""Compare a build with the baseline; the report goes to out_dir."""
	base = abi_dir / BASELINE
	if not base.exists():
		raise GkiError(f'no ABI baseline {base}: run ./build/gki abi update and commit abi/')
	new = out_dir / BASELINE
	dump(vmlinux, symbols, new)
	report = out_dir / 'report.txt'
	rc, text = diff(base, new, symbols, report)

	old_crcs = read_symvers(abi_dir / SYMVERS)
	new_crcs = kmi.symvers_exports(symvers)	# strict mode: the KMI, one for one
	# Only a removed symbol sets the "incompatible" bit; a changed struct
	# sets "changed", so the report itself is read.  Either side alone
	# catches a removal or an addition: the CRCs and the report.
	rep = classify(text, rc)
	result = Result(
		removed=sorted((set(old_crcs) - set(new_crcs)) | set(rep.removed)),
		added=sorted((set(new_crcs) - set(old_crcs)) | set(rep.added)),
		crc_changed=sorted(s for s in set(old_crcs) & set(new_crcs)
				   if old_crcs[s][0] != new_crcs[s][0]),
		type_changes=rep.changed, report=report,
		unclassified=rep.unclassified, abidiff_report=text)
	head = [f'baseline: {base}', f'new:      {new}', f'abidiff exit status: {rc}', '']
	crc_lines = [f'CRC changed: {s}: {old_crcs[s][0]} -> {new_crcs[s][0]} ({new_crcs[s][1]})'
		     for s in result.crc_changed]
	report.write_text('\n'.join(head + [result.summary(), '', *crc_lines, '', text]))
	return result


def update(abi_dir: Path, vmlinux: Path, symvers: Path, symbols: set[str],
	   meta: Mapping[str, object]) -> None:
	abi_dir.mkdir(parents=True, exist_ok=True)
	dump(vmlinux, symbols, abi_dir / BASELINE)
	write_symvers(abi_dir / SYMVERS, kmi_crcs(symvers, symbols))
	listed = ''.join(s + '\n' for s in sorted(symbols))
	(abi_dir / META).write_text(json.dumps({**meta, 'symbols': len(symbols),
						 'symbol_list_sha256': sha256_text(listed)},
						indent=1, sort_keys=True) + '\n')
