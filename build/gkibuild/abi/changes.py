# SPDX-License-Identifier: GPL-2.0
"""What differs between the KMI baseline and a build, change by change.

Two sources see the KMI: libabigail's report (types; abidiff.py) and
Module.symvers (each KMI symbol's CRC, export kind and namespace; it also
covers in-tree modules, which libabigail cannot read here; symvers.py).
Both become one list of Change records, each counted once: a break, a
change that needs approval (an enum's enumerators), or an addition.  A
change recorded in abi/allowed_breaks (breaks.py) no longer blocks, but
for one the gate could not classify.  What the gate makes of the list is
decided in gate.py (decide).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path
from typing import Mapping, Sequence

from gkibuild.abi import abidiff
from gkibuild.abi.breaks import Record
from gkibuild.abi.symvers import Export

BREAK, APPROVAL, ADDITION = 'BREAK', 'APPROVAL', 'ADDED'
SEVERITY = {'type': BREAK, 'symbol': BREAK, 'crc': BREAK, 'removed': BREAK,
	    'export': BREAK, 'unclassified': BREAK, 'enum': APPROVAL, 'added': ADDITION}


@dataclasses.dataclass(frozen=True)
class Change:
	"""One difference between the baseline and a build.  key is what
	abi/allowed_breaks records, so it holds no count that moves when the
	lists grow and no line number that moves when a header does."""
	kind: str			# a key of SEVERITY
	name: str			# the type ('struct foo') or the symbol
	what: str			# one line, whole: what changed, old -> new
	reaches: tuple[str, ...] = ()	# KMI symbols it reaches (a type's interfaces)
	cause: str = ''			# why, when the change itself does not say
	site: str = ''			# a type's definition, as abidiff gives it: 'foo.h:12:1'

	@property
	def severity(self) -> str:
		return SEVERITY[self.kind]

	@property
	def shown(self) -> str:
		"""what, cut to WHAT_MAX characters for the short report."""
		return shorten(self.what)

	@property
	def key(self) -> str:
		"""kind, name, a type's definition file (two types may share a
		name) and the whole of what changed; a description longer than
		WHAT_MAX is recorded cut, with the sha256 of the whole, so a record
		matches its own change and no other."""
		where = f' at {self.site.split(":")[0] or NO_SITE}' if self.kind in TYPE_KINDS else ''
		what = self.what
		if len(what) > WHAT_MAX:
			what = f'{self.shown} (sha256 {hashlib.sha256(what.encode()).hexdigest()})'
		return f'{self.kind} {self.name}{where}: {what}'


# The first line of a leaf block: a type, a function or a variable.
_TYPE_HEAD = re.compile(r"'(?P<decl>.+?)(?: at (?P<site>[^']*))?' changed:")
_FUNC_HEAD = re.compile(r"\[C\] 'function [^']*?(?P<name>[\w.$]+)\(.*' (?:at \S+ )?"
			r'has some sub-type changes:')
_VAR_HEAD = re.compile(r"\[C\] '[^']*?(?P<name>[\w.$]+)(?:\[\d*\])*' (?:was changed|.* at )")
_CRC = re.compile(r'CRC \(modversions\) changed from (\S+) to (\S+)')
_NAMESPACE = re.compile(r'namespace changed from .+ to .+')
_IMPACT = re.compile(r'(?:(\d+)|one) impacted interfaces?:')
_LOCATION = re.compile(r' at [\w./+-]+:\d+(?::\d+)?')
_NOISE = ('details were reported earlier', "type size hasn't changed")
WHAT_MAX = 160		# characters of a description shown (and recorded, with a digest)
TYPE_KINDS = ('type', 'enum')
NO_SITE = 'no location'	# a type's key when abidiff gives no definition site
CAUSES_SHOWN = 2	# a CRC change names this many of the changes reaching it
# A type block whose details abidiff gave with the symbol of that type.
ELSEWHERE = 'changed (details under another entry of report.txt)'


def interface_symbol(decl: str) -> str | None:
	"""The symbol of an impacted-interface line: 'function int f(int)' or
	'kmem_buckets kmalloc_caches[3]'."""
	if decl.startswith('function '):
		m = re.search(r'([\w.$]+)\(', decl)
	else:
		m = re.search(r'([\w.$]+)(?:\[\d*\])*$', decl)
	return m.group(1) if m else None


def _split_block(block: str) -> tuple[str, list[str], list[str]]:
	"""(head, detail lines, impacted interfaces) of one leaf block."""
	lines = block.splitlines()
	details: list[str] = []
	impacted: list[str] = []
	depth = None
	for line in lines[1:]:
		indent = len(line) - len(line.lstrip(' '))
		if depth is not None and indent > depth:
			impacted.append(line.strip())
			continue
		depth = None
		if _IMPACT.fullmatch(line.strip()):
			depth = indent
		elif line.strip() and line.strip() not in _NOISE:
			details.append(line.strip())
	return lines[0].strip(), details, impacted


def _what(details: list[str]) -> str:
	"""One line of details, whole, without source locations: a recorded
	break must still match when an unrelated change moves a header's lines."""
	return '; '.join(_LOCATION.sub('', d).rstrip(':') for d in details) or ELSEWHERE


def shorten(text: str) -> str:
	"""text as the short report shows it: WHAT_MAX characters at most."""
	return text if len(text) <= WHAT_MAX else text[:WHAT_MAX - 3] + '...'


def block_change(block: str) -> Change:
	"""The Change of one of abidiff's leaf blocks.  A [C] block that only
	says the CRC or the namespace changed is a 'crc' or 'export' change
	(Module.symvers has it too, so it is counted once); an unknown first
	line is 'unclassified'."""
	head, details, impacted = _split_block(block)
	reaches = tuple(sorted({s for d in impacted if (s := interface_symbol(d))}))
	if m := _TYPE_HEAD.fullmatch(head):
		decl = m.group('decl')
		return Change('enum' if decl.startswith('enum ') else 'type', decl,
			      _what(details), reaches, site=m.group('site') or '')
	m = _FUNC_HEAD.fullmatch(head) or _VAR_HEAD.match(head)
	if not m:
		return Change('unclassified', head, 'a leaf change the gate cannot name')
	name = m.group('name')
	crcs = [c for d in details if (c := _CRC.fullmatch(d))]
	namespaces = [d for d in details if _NAMESPACE.fullmatch(d)]
	rest = [d for d in details if not (_CRC.fullmatch(d) or _NAMESPACE.fullmatch(d))]
	if rest:
		return Change('symbol', name, _what(rest), tuple(sorted({name, *reaches})))
	if crcs:
		return Change('crc', name, f'CRC {crcs[0].group(1)} -> {crcs[0].group(2)}')
	return Change('export', name, _what(namespaces))


def _export_what(old: Export, new: Export) -> str | None:
	parts = []
	if old.kind != new.kind:
		parts.append(f'{old.kind} -> {new.kind}')
	if old.namespace != new.namespace:
		parts.append(f"namespace '{old.namespace}' -> '{new.namespace}'")
	return '; '.join(parts) or None


def changes(rep: abidiff.Report, old: Mapping[str, Export], new: Mapping[str, Export],
	    defined: Sequence[Mapping[str, set[str]]] = ()) -> list[Change]:
	"""Every change, once: abidiff's leaf blocks and entries merged with the
	Module.symvers tables (either alone catches a removal or an addition;
	only the tables see in-tree modules' CRCs, kinds and namespaces).  A
	type is its name and its definition site: two types of one name
	(struct foo in two headers) are two changes.  defined: per dump,
	abidiff.definitions (for _hidden)."""
	out: dict[tuple[str, ...], Change] = {}
	for block in rep.changed:
		c = block_change(block)
		out.setdefault((c.kind, c.name, c.site), c)
	for s in sorted((set(old) - set(new)) | set(rep.removed)):
		out[('removed', s, '')] = Change('removed', s, 'no longer exported', (s,))
	for s in sorted((set(new) - set(old)) | set(rep.added)):
		out[('added', s, '')] = Change('added', s, 'newly exported', (s,))
	for s in sorted(set(old) & set(new)):
		if old[s].crc != new[s].crc:
			out[('crc', s, '')] = Change('crc', s, f'CRC {old[s].crc} -> {new[s].crc}', (s,))
		if (what := _export_what(old[s], new[s])):
			out[('export', s, '')] = Change('export', s, what, (s,))
	for why in rep.unclassified + _hidden(list(out.values()), defined):
		out[('unclassified', why, '')] = Change('unclassified', 'report', why)
	return _with_causes(list(out.values()))


def _hidden(found: list[Change], defined: Sequence[Mapping[str, set[str]]]) -> list[str]:
	"""libabigail 2.2's leaf report keeps one change per type name: when a
	dump defines a changed type's name at more sites than the report shows
	changes of it, a change of another definition may be hidden, and the
	check fails closed naming them."""
	out = []
	for name in sorted({c.name for c in found if c.kind in TYPE_KINDS}):
		shown = {c.site for c in found if c.kind in TYPE_KINDS and c.name == name}
		sites = [d.get(name, set()) for d in defined]
		if len(shown) < max((len(s) for s in sites), default=0):
			others = sorted(set().union(*sites) - shown)
			out.append(f'{name} has several definitions in the KMI and abidiff shows a change '
				   f'of {", ".join(sorted(shown))} only; libabigail reports one change per '
				   f'type name, so a change at {", ".join(others)} may be hidden (compare '
				   'the dumps with abidiff without --leaf-changes-only)')
	return out


def _with_causes(found: list[Change]) -> list[Change]:
	"""A CRC change's cause: the type and symbol changes that reach the
	symbol, or, when none does, a declaration only genksyms sees."""
	reached: dict[str, list[str]] = {}
	for c in found:
		if c.kind in (*TYPE_KINDS, 'symbol'):
			for s in c.reaches:
				own = c.kind == 'symbol' and s == c.name
				reached.setdefault(s, []).append('its own signature' if own else c.name)
	out = []
	for c in found:
		if c.kind == 'crc':
			causes = sorted(set(reached.get(c.name, ())))
			more = f' and {len(causes) - CAUSES_SHOWN} more' if len(causes) > CAUSES_SHOWN else ''
			cause = (f'reached by {", ".join(causes[:CAUSES_SHOWN])}{more}' if causes else
				 'no type change reaches it: genksyms hashed other declaration '
				 'text (an attribute such as __counted_by, or a type defined or '
				 'made opaque where the symbol is exported)')
			c = dataclasses.replace(c, reaches=(c.name,), cause=cause)
		out.append(c)
	return out


@dataclasses.dataclass
class Result:
	changes: list[Change]
	report: Path			# report.txt
	abidiff_report: str = ''	# printed whole when some of it is unclassified
	allowed: dict[str, Record] = dataclasses.field(default_factory=dict)
	short: str = ''			# report.short's text (short.py)

	def of(self, *kinds: str) -> list[Change]:
		return [c for c in self.changes if c.kind in kinds]

	@property
	def removed(self) -> list[str]:
		return sorted(c.name for c in self.of('removed'))

	@property
	def added(self) -> list[str]:
		return sorted(c.name for c in self.of('added'))

	@property
	def crc_changed(self) -> list[str]:
		return sorted(c.name for c in self.of('crc'))

	@property
	def unclassified(self) -> list[str]:
		return [c.what for c in self.of('unclassified')]

	def pending(self, severity: str) -> list[Change]:
		"""Changes of that severity abi/allowed_breaks does not record."""
		return [c for c in self.changes if c.severity == severity and c.key not in self.allowed]

	def blocking(self) -> list[Change]:
		"""What fails the gate whatever the lists do, so that abi update
		takes it only with a reason (gate.decide): unrecorded breaks and
		enum changes, and every change the gate could not classify,
		recorded or not (it fails closed)."""
		return [c for c in self.changes if c.severity == BREAK
			and (c.kind == 'unclassified' or c.key not in self.allowed)] + self.pending(APPROVAL)

	@property
	def breaks(self) -> bool:
		return bool(self.pending(BREAK))

