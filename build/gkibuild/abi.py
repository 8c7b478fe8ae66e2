# SPDX-License-Identifier: GPL-2.0
"""The ABI gate: a libabigail dump of vmlinux restricted to the KMI, the
checked-in baseline in abi/, and the check that compares a build with it.

Two workarounds for Debian's abigail-tools 2.2 (BUILD.md, "The KMI"): it
reads a symbol list only under an [abi_whitelist] header, so the lists are
translated; and it aborts on 6.12 .ko files, so vmlinux is dumped alone and
the exports of in-tree modules are covered by their MODVERSIONS CRCs.
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
class Result:
	removed: list[str]
	added: list[str]
	crc_changed: list[str]
	type_changes: list[str]		# abidiff's leaf changes, one entry each
	report: Path

	@property
	def breaks(self) -> bool:
		return bool(self.removed or self.crc_changed or self.type_changes)

	def summary(self) -> str:
		lines = [f'ABI check: {len(self.removed)} removed, {len(self.type_changes)} '
			 f'type change(s), {len(self.crc_changed)} CRC change(s), '
			 f'{len(self.added)} added symbol(s)']
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
		lines.append(f'  report: {self.report}')
		return '\n'.join(lines)


# abidiff --leaf-changes-only prints one block per leaf change, each starting
# with a line like "'struct foo at foo.h:12:1' changed:" or
# "[C] 'function int f(int)' at f.c:1:1 has some sub-type changes:".
_LEAF = re.compile(r"^(?:\[C\] )?'[^']+'.*(?:changed|sub-type changes).*:$")


def leaf_changes(report: str) -> list[str]:
	blocks: list[list[str]] = []
	for line in report.splitlines():
		if _LEAF.match(line.strip()) and not line.startswith('    '):
			blocks.append([line])
		elif blocks and line.strip():
			blocks[-1].append(line)
	return ['\n'.join(b) for b in blocks]


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
	result = Result(
		removed=sorted(set(old_crcs) - set(new_crcs)),
		added=sorted(set(new_crcs) - set(old_crcs)),
		crc_changed=sorted(s for s in set(old_crcs) & set(new_crcs)
				   if old_crcs[s][0] != new_crcs[s][0]),
		# Only a removed symbol sets the "incompatible" bit; a changed
		# struct sets "changed", so the report itself is read.
		type_changes=leaf_changes(text) if rc & ABIDIFF_CHANGE else [],
		report=report)
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
