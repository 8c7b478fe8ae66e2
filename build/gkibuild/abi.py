# SPDX-License-Identifier: GPL-2.0
"""The ABI gate: a libabigail dump of vmlinux restricted to the KMI (run
and read by abidiff.py), the checked-in baseline in abi/, and the check
that compares a build with it.

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
from pathlib import Path
from typing import Mapping

import kmi
from abidiff import classify, diff, dump
from util import GkiError, sha256_text

BASELINE = 'gki.xml'		# abidw of vmlinux, KMI only
SYMVERS = 'gki.symvers'		# the KMI's CRCs: "crc<TAB>symbol<TAB>module"
META = 'gki.json'		# what the baseline came from


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
