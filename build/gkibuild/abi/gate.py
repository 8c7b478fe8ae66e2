# SPDX-License-Identifier: GPL-2.0
"""The ABI gate: the baseline in abi/, the check of a build against it, the
gate's decision on it, the reviewed baseline update, and abi.prop.

The check dumps vmlinux, runs abidiff (abidiff.py), merges its report with
the Module.symvers tables (symvers.py) into Change records (changes.py) and
writes report.txt (everything) and report.short (short.py).  decide() is
the one place that says whether the changes pass, need a new baseline or
break the KMI: the build, abi update and abi compare all ask it.  The
update diffs first: additions are taken, a break only with a reason, which
is recorded in abi/allowed_breaks (breaks.py).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Mapping

from gkibuild.abi import abidiff, breaks, kmi, short
from gkibuild.abi.changes import APPROVAL, Result, changes
from gkibuild.abi.symvers import Export, read_symvers, write_symvers
from gkibuild.util import GkiError, ccache_dir, info, sha256_text

BASELINE = 'gki.xml'		# abidw of vmlinux, KMI only
SYMVERS = 'gki.symvers'		# the KMI's lines of Module.symvers
META = 'gki.json'		# what the baseline came from
REPORT = 'report.txt'		# abidiff's whole report, after one line per change
SHORT = 'report.short'		# one line per change (short.py)
COMMIT_MSG = 'commit-message.txt'	# written by update for the change that commits abi/
PROP = 'abi.prop'		# Kleaf's summary of the KMI, in the dist folder
CONSOLE_LINES = 40		# of report.short printed by a build
# The gate's decisions (decide): the KMI is the baseline's; it grew, and
# only a new baseline may take the additions; it breaks, or the gate
# cannot tell.
PASS, NEEDS_UPDATE, BREAKS = 'pass', 'needs update', 'breaks'


def dump_cache() -> Path:
	"""Recent dumps (abidiff.dump), beside ccache's objects and shared by
	every clone: a dump is a function of vmlinux's bytes, which a clone in
	another folder builds bit for bit."""
	return ccache_dir() / 'abidw'


def kmi_exports(symvers: Path, symbols: set[str]) -> dict[str, Export]:
	return {s: e for s, e in read_symvers(symvers).items() if s in symbols}


def check(abi_dir: Path, vmlinux: Path, symvers: Path, lists: Mapping[str, set[str]],
	  out_dir: Path, title: str = 'ABI check') -> Result:
	"""Compare a build with the baseline; lists: the symbol lists by name
	(the KMI is their union).  report.txt and report.short go to out_dir."""
	base = abi_dir / BASELINE
	if not base.exists():
		raise GkiError(f'no ABI baseline {base}: run ./build/gki abi update and commit abi/')
	symbols = kmi.union(lists)
	new = out_dir / BASELINE
	abidiff.dump(vmlinux, symbols, new, dump_cache())
	report = out_dir / REPORT
	rc, text = abidiff.diff(base, new, symbols, report)
	old_exports = read_symvers(abi_dir / SYMVERS)
	new_exports = read_symvers(symvers)	# strict mode: the KMI, one for one
	found = changes(abidiff.classify(text, rc), old_exports, new_exports,
			(abidiff.definitions(base), abidiff.definitions(new)))
	res = Result(found, report, text, breaks.load(abi_dir))
	res.short = short.render(res, lists, title)
	(out_dir / SHORT).write_text(res.short)
	head = [f'baseline: {base}', f'new:      {new}', f'abidiff exit status: {rc}', '']
	report.write_text('\n'.join(head + [res.short, text]))
	return res


@dataclasses.dataclass(frozen=True)
class Decision:
	"""What the gate makes of a check: PASS, NEEDS_UPDATE or BREAKS, and
	why, the build's error (None when it passes)."""
	outcome: str
	why: str | None = None


def decide(res: Result) -> Decision:
	"""The gate's decision on a check, the one every command takes: a build
	fails unless it passes (main.abi_gate), abi update takes BREAKS only
	with a reason, and abi compare exits BREAKS on it.  A break breaks; so
	does an enum change until it is approved, and a report the gate could
	not read, recorded or not (it fails closed); a recorded break passes.
	An addition needs an update: a symbol list and the baseline move
	together in one change, so a grown list without a new baseline is not
	releasable."""
	if res.unclassified:
		return Decision(BREAKS, 'abidiff reported changes the ABI gate cannot classify, so '
				'it fails closed (the raw report is above)')
	if res.breaks:
		return Decision(BREAKS, 'the KMI differs from the baseline in abi/ (see above)')
	if res.pending(APPROVAL):
		return Decision(BREAKS, 'an enum of the KMI changed; that needs approval: if it is '
				'safe for every vendor, record it with ./build/gki abi update '
				'--accept-break "REASON"')
	if res.added:
		return Decision(NEEDS_UPDATE, 'the symbol lists grew but the baseline in abi/ did '
				'not: run ./build/gki abi update and commit abi/ with the lists')
	return Decision(PASS)


def summary(res: Result) -> str:
	"""What a build prints: the start of report.short, where the rest is,
	and abidiff's whole report when the gate could not classify it."""
	lines = res.short.splitlines()
	if len(lines) > CONSOLE_LINES:
		lines = lines[:CONSOLE_LINES] + [f'  ... {len(lines) - CONSOLE_LINES} more lines']
	lines.append(f'  short report: {res.report.with_name(SHORT)}')
	lines.append(f'  full report:  {res.report}')
	if res.unclassified:
		lines += ["  abidiff's report, as it came:"]
		lines += ['    | ' + ln for ln in res.abidiff_report.splitlines()]
	return '\n'.join(lines)


def write_baseline(abi_dir: Path, vmlinux: Path, symvers: Path, symbols: set[str],
		   meta: Mapping[str, object]) -> None:
	"""The baseline of this build: the dump, the KMI's Module.symvers lines
	and where it came from."""
	abi_dir.mkdir(parents=True, exist_ok=True)
	abidiff.dump(vmlinux, symbols, abi_dir / BASELINE, dump_cache())
	write_symvers(abi_dir / SYMVERS, kmi_exports(symvers, symbols))
	(abi_dir / META).write_text(json.dumps({**meta, 'symbols': len(symbols),
						 'symbol_list_sha256': list_digest(symbols)},
						indent=1, sort_keys=True) + '\n')


def list_digest(symbols: set[str]) -> str:
	return sha256_text(''.join(s + '\n' for s in sorted(symbols)))


def update(abi_dir: Path, vmlinux: Path, symvers: Path, lists: Mapping[str, set[str]],
	   meta: Mapping[str, str], out_dir: Path, accept_break: str | None,
	   today: str) -> Result | None:
	"""abi update, reviewed: compare with the current baseline first and
	print the short report.  Additions are taken; a break or an enum change
	only with accept_break (the reason), and then recorded in
	abi/allowed_breaks.  Writes the commit message template to out_dir."""
	if accept_break is not None and not accept_break.strip():
		raise GkiError('--accept-break needs a reason: why this break is safe to ship')
	symbols = kmi.union(lists)
	res = None
	if (abi_dir / BASELINE).exists():
		res = check(abi_dir, vmlinux, symvers, lists, out_dir, 'abi update')
		print(summary(res), flush=True)
		pending = res.blocking()
		if decide(res).outcome == BREAKS and accept_break is None:
			raise GkiError(
				f'not updating the baseline: {len(pending)} change(s) above break the KMI '
				'or need approval.  Fix them, or take them deliberately with\n'
				'  ./build/gki abi update --accept-break "REASON"\n'
				'which records them in abi/allowed_breaks (see BUILD.md, "The KMI")')
		if pending:
			path = breaks.append(abi_dir, breaks.Record(
				today, accept_break.strip(), meta['kernel_release'],
				tuple(c.key for c in pending)))
			info(f'{len(pending)} change(s) recorded in {path}')
		elif accept_break is not None:
			info('--accept-break given, but nothing breaks: nothing recorded')
	write_baseline(abi_dir, vmlinux, symvers, symbols, meta)
	out_dir.mkdir(parents=True, exist_ok=True)
	(out_dir / COMMIT_MSG).write_text(commit_message(res, accept_break, meta['kernel_release']))
	return res


def commit_message(res: Result | None, accept_break: str | None, release: str) -> str:
	"""A template for the change that commits abi/ (and the lists)."""
	if res is None:
		return f'ANDROID: GKI: add the KMI baseline\n\nFirst baseline, {release}.\n'
	body = []
	if res.added:
		body.append(f'Adds {len(res.added)} symbol(s) to the KMI: {", ".join(res.added)}.')
	if accept_break:
		body.append(f'Breaks the KMI deliberately: {accept_break.strip()}\n'
			    '(recorded in abi/allowed_breaks).')
	if not body:
		body.append('Refreshes the baseline; no KMI symbol added or broken.')
	quoted = ''.join(f'    {ln}\n' for ln in res.short.splitlines())
	return ('ANDROID: GKI: update the KMI baseline\n\n' + '\n\n'.join(body)
		+ f'\n\nShort report (./build/gki abi update, {release}):\n\n{quoted}')


def write_prop(dist: Path, lists: Mapping[str, set[str]], enforced: bool,
	       meta: Mapping[str, object]) -> Path:
	"""abi.prop, as Kleaf writes it, and the flattened list it names
	(abi_symbollist, Android's format; .raw: one symbol per line)."""
	symbols = kmi.union(lists)
	raw = ''.join(s + '\n' for s in sorted(symbols, key=lambda s: (s.lower(), s)))
	(dist / 'abi_symbollist.raw').write_text(raw)
	(dist / 'abi_symbollist').write_text(
		'[abi_symbol_list]\n' + ''.join('  ' + s + '\n' for s in raw.split()))
	tools = meta.get('toolchain', {})
	toolchain = ' '.join(f'{k}-{v}' for k, v in sorted(tools.items())) \
		if isinstance(tools, dict) else str(tools)
	props = {
		'KMI_DEFINITION': f'abi/{BASELINE}',
		'KMI_SYMVERS': f'abi/{SYMVERS}',
		'KMI_MONITORED': '1',
		'KMI_ENFORCED': '1' if enforced else '0',
		'KMI_SYMBOL_LIST': 'abi_symbollist',
		'KMI_SYMBOL_LISTS': ' '.join(f'symbol_lists/{n}' for n in sorted(lists)),
		'KMI_SYMBOL_LIST_SHA256': list_digest(symbols),
		'KERNEL_BINARY': 'vmlinux',
		'KERNEL_RELEASE': str(meta.get('kernel_release', '')),
		'TOOLCHAIN': toolchain,
	}
	path = dist / PROP
	path.write_text(''.join(f'{k}={v}\n' for k, v in props.items()))
	return path
