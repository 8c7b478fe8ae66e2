# SPDX-License-Identifier: GPL-2.0
"""report.short: the ABI check a person reads in a minute.

One line per changed type (what changed, how many KMI symbols it reaches)
and per changed symbol, types first and the widest-reaching first, so the
cause of a break leads and the CRC changes it explains follow; then, per
vendor list in symbol_lists/, the KMI symbols the breaks reach: whom the
break hurts.  A tracepoint's symbol says which tracepoint it is
(__traceiter_android_vh_X: vendor hook android_vh_X); a type whose name
another changed type shares says where it is defined (struct foo at
foo.h:12:1).  abidiff's whole report stays in report.txt.
"""

from __future__ import annotations

from typing import Mapping

from gkibuild.abi.changes import APPROVAL, BREAK, NO_SITE, TYPE_KINDS, Change, Result
from gkibuild.abi.kmi import tracepoint_of

SHOWN = 8	# names listed per vendor list before "and N more"
VENDOR_HOOKS = ('android_vh_', 'android_rvh_')	# tracepoints that are vendor hooks


def _lists_of(symbols: tuple[str, ...], lists: Mapping[str, set[str]]) -> str:
	hit = {name: len(set(symbols) & syms) for name, syms in sorted(lists.items())}
	if len(symbols) == 1:
		return ', '.join(n for n, k in hit.items() if k) or 'no list'
	return ', '.join(f'{n} {k}' for n, k in hit.items() if k) or 'no list'


def _stands_for(symbol: str) -> str:
	"""What a tracepoint's symbol is, in plain words: __traceiter_X and
	__tracepoint_X are vendor hook X (or tracepoint X); '' for others."""
	tp = tracepoint_of(symbol)
	if tp is None:
		return ''
	return f' ({"vendor hook" if tp.startswith(VENDOR_HOOKS) else "tracepoint"} {tp})'


def _shared_names(res: Result) -> set[str]:
	"""The names of types that more than one changed type has."""
	names = [c.name for c in res.of(*TYPE_KINDS)]
	return {n for n in names if names.count(n) > 1}


def _line(c: Change, res: Result, lists: Mapping[str, set[str]], shared: set[str]) -> str:
	rec = res.allowed.get(c.key)
	label = 'ALLOWED' if rec else c.severity
	if c.kind in TYPE_KINDS:
		about = f' at {c.site or NO_SITE}' if c.name in shared else ''
	else:
		about = _stands_for(c.name)
	text = f'  {label:<9} {c.name}{about}: {c.shown}'
	if c.kind in TYPE_KINDS:
		n = len(c.reaches)
		text += f' [reaches {n} KMI symbol{"s" if n != 1 else ""}: {_lists_of(c.reaches, lists)}]'
	elif c.reaches:
		text += f' [{_lists_of(c.reaches, lists)}]'
	if c.cause:
		text += f' ({c.cause})'
	if rec:
		text += f' (recorded {rec.when}: {rec.why})'
	return text


def _order(c: Change) -> tuple[int, int, str, str]:
	rank = {BREAK: 0, APPROVAL: 1}.get(c.severity, 2)
	return (rank, -len(c.reaches), c.name, c.site)


def _hurt(res: Result, lists: Mapping[str, set[str]]) -> list[str]:
	"""Per list, the KMI symbols an unrecorded break or enum change reaches."""
	reached: set[str] = set()
	for c in res.blocking():
		reached |= set(c.reaches)
	out = []
	for name, syms in sorted(lists.items()):
		hit = sorted(reached & syms)
		if hit:
			more = f' and {len(hit) - SHOWN} more' if len(hit) > SHOWN else ''
			out.append(f'  {name}: {len(hit)} symbol(s): {", ".join(hit[:SHOWN])}{more}')
	return out


def render(res: Result, lists: Mapping[str, set[str]], title: str) -> str:
	"""The short report of res; lists: symbol_lists/ by name."""
	types = sorted(res.of(*TYPE_KINDS), key=_order)
	symbols = sorted((c for c in res.changes if c.kind not in (*TYPE_KINDS, 'unclassified')),
			 key=_order)
	shared = _shared_names(res)
	n = {s: len(res.pending(s)) for s in (BREAK, APPROVAL)}
	allowed = sum(1 for c in res.changes if c.key in res.allowed)
	lines = [f'{title}: {len(types)} type change(s), {len(symbols)} symbol change(s): '
		 f'{n[BREAK]} break(s), {n[APPROVAL]} needing approval, {len(res.added)} '
		 f'addition(s), {allowed} recorded in abi/allowed_breaks']
	if types:
		lines += ['types:'] + [_line(c, res, lists, shared) for c in types]
	if symbols:
		lines += ['symbols:'] + [_line(c, res, lists, shared) for c in symbols]
	if res.unclassified:
		lines += ['not classified (the gate fails closed; read report.txt):']
		lines += [f'  {u}' for u in res.unclassified]
	if (hurt := _hurt(res, lists)):
		lines += ['vendor lists reached by the breaks:'] + hurt
	return '\n'.join(lines) + '\n'
