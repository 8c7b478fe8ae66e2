# SPDX-License-Identifier: GPL-2.0
"""The KMI: the symbol lists in symbol_lists/ (Android's format), their
union (union(), the one place it is computed), flattened for the kernel
build to trim its exports to, the strict check of the result, what modules
need (llvm-nm), and 'symbols update'."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from gkibuild.abi.symvers import read_symvers
from gkibuild.util import GkiError, write_if_changed

HEADER = '[abi_symbol_list]'
CORE = 'core'	# the list of what the GKI's own in-tree modules need
WHITELIST = 'gki-kmi-symbols'	# in the obj folder; named by the config
# Needed by the kernel itself, not by a module's undefined symbols: with
# MODVERSIONS the loader checks every module against module_layout's CRC.
LOADER_SYMBOLS = {'module_layout': 'the module loader (MODVERSIONS)'}
_SYMBOL = re.compile(r'^[A-Za-z_][A-Za-z0-9_.$]*$')
_REQUIRED_BY = re.compile(r'#\s*required by\s+(\S+)$')
_TRACEPOINT_FORMS = ('__traceiter_', '__tracepoint_', '__SCK__tp_func_', '__SCT__tp_func_')
_TRACEPOINT = re.compile('^(?:' + '|'.join(_TRACEPOINT_FORMS) + ')(.+)$')
_UNDEFINED = re.compile(r'ERROR: modpost: "([^"]+)" \[([^\]]+)\] undefined!')


def sort_key(symbol: str) -> tuple[str, str]:
	"""Android's sort order of a list: case-insensitive."""
	return symbol.lower(), symbol


@dataclass
class _Line:
	text: str		# as read, without its newline
	symbol: str | None	# on a symbol line
	block: int		# its section or '# required by' group; -1 before the first header


class SymbolList:
	"""A list file as its lines, each with the block it is in: a header
	starts a section, a '# required by M.ko' line M's group, which runs to
	the next group or header.  add() and remove() insert and delete lines
	and leave every other byte as it was, so a vendor's list (sections,
	indentation, comments) diffs only by the symbols that changed."""

	def __init__(self, lines: list[_Line], modules: list[str | None]) -> None:
		self.lines = lines
		self.modules = modules	# per block: the group's module, None for a section

	@classmethod
	def new(cls, name: str) -> SymbolList:
		comment = f'# KMI symbols needed by {name}; see BUILD.md, "Requesting a symbol".'
		return cls([_Line(comment, None, -1), _Line(HEADER, None, 0)], [None])

	@classmethod
	def read(cls, path: Path) -> SymbolList:
		"""Every malformed line is an error naming it."""
		lines: list[_Line] = []
		modules: list[str | None] = []
		seen: set[str] = set()
		errors = []
		raw = path.read_text().split('\n')
		if not raw[-1]:
			raw.pop()
		for n, text in enumerate(raw, 1):
			line = text.strip()
			symbol = None
			group = _REQUIRED_BY.match(line)
			if group and modules:
				modules.append(group[1])
			elif not line or line.startswith('#'):
				pass
			elif line == HEADER or not modules:
				if line != HEADER:
					errors.append(f'{path}:{n}: expected the header {HEADER}')
				modules.append(None)
			elif not _SYMBOL.match(line):
				errors.append(f'{path}:{n}: not a symbol name: {line!r}')
			elif line in seen:
				errors.append(f'{path}:{n}: {line} is listed twice')
			else:
				symbol = line
				seen.add(line)
			lines.append(_Line(text, symbol, len(modules) - 1))
		if not modules:
			errors.append(f'{path}: empty; a list starts with {HEADER}')
		if errors:
			raise GkiError('\n'.join(errors))
		return cls(lines, modules)

	@property
	def symbols(self) -> list[str]:
		return [line.symbol for line in self.lines if line.symbol]

	def text(self) -> str:
		"""Every line ends in a newline, the last one too."""
		return ''.join(line.text + '\n' for line in self.lines)

	def add(self, symbol: str, needed_by: set[str]) -> None:
		"""Into the group of the first module needing it; a module that
		has none gets one if the list uses groups; else (a list without
		groups, or a symbol only the loader needs) the last section."""
		mods = sorted(m for m in needed_by if m.endswith('.ko'))
		groups = [b for b, m in enumerate(self.modules) if m is not None]
		block = next((b for m in mods for b in groups if self.modules[b] == m), None)
		if block is None and mods and groups:
			block = self._new_group(mods[0])
		elif block is None:
			block = max(b for b, m in enumerate(self.modules) if m is None)
		self._insert(block, symbol)

	def remove(self, symbols: set[str]) -> None:
		self.lines = [line for line in self.lines if line.symbol not in symbols]

	def _new_group(self, module: str) -> int:
		"""A '# required by' group after the last line with content."""
		block = len(self.modules)
		self.modules.append(module)
		at = max(i for i, line in enumerate(self.lines) if line.text.strip()) + 1
		self.lines[at:at] = [_Line('', None, block),
				     _Line(f'# required by {module}', None, block)]
		return block

	def _insert(self, block: int, symbol: str) -> None:
		"""Before the first symbol of the block sorting after it (a sorted
		block stays sorted, an unsorted one is not re-sorted), indented
		like that neighbour."""
		members = [i for i, line in enumerate(self.lines) if line.block == block]
		syms = [(i, s) for i in members if (s := self.lines[i].symbol)]
		later = [i for i, s in syms if sort_key(s) > sort_key(symbol)]
		like: int | None
		if later:
			at = like = later[0]
		elif syms:
			like = syms[-1][0]
			at = like + 1
		else:	# no symbol yet: after the header or '# required by' line
			at = max(i for i in members if self.lines[i].text.strip()) + 1
			like = next((i for i, line in enumerate(self.lines) if line.symbol), None)
		text = '' if like is None else self.lines[like].text
		indent = text[:len(text) - len(text.lstrip())]
		self.lines.insert(at, _Line(indent + symbol, symbol, block))


def parse(path: Path) -> list[str]:
	"""The symbols of one list, all sections; every malformed line is an
	error naming it."""
	return SymbolList.read(path).symbols


def load_all(lists_dir: Path) -> dict[str, set[str]]:
	"""Every list by name (its file name)."""
	if not lists_dir.is_dir():
		raise GkiError(f'{lists_dir} is missing')
	return {p.name: set(parse(p)) for p in sorted(lists_dir.iterdir())
		if p.is_file() and not p.name.startswith('.')}


def union(lists: Mapping[str, set[str]]) -> set[str]:
	"""The KMI: every symbol of the lists (lists: by name, as load_all)."""
	return set().union(*lists.values())


def write_whitelist(path: Path, symbols: set[str]) -> None:
	"""The flattened KMI for CONFIG_UNUSED_KSYMS_WHITELIST (one per line);
	rewritten only on a change, so an unchanged KMI relinks nothing."""
	write_if_changed(path, ''.join(s + '\n' for s in sorted(symbols)).encode())


def nm(path: Path, env: Mapping[str, str], *flags: str) -> list[str]:
	res = subprocess.run(['llvm-nm', *flags, str(path)], env=dict(env),
			     capture_output=True, text=True)
	if res.returncode:
		raise GkiError(f'llvm-nm {path}: {res.stderr.strip()}')
	return res.stdout.splitlines()


def undefined(path: Path, env: Mapping[str, str]) -> set[str]:
	return {line.split()[-1] for line in nm(path, env, '--undefined-only') if line.strip()}


def exported(ko: Path, env: Mapping[str, str]) -> set[str]:
	"""What a built module exports: modpost's generated code (its .mod.c)
	defines a local __ksymtab_NAME for each EXPORT_SYMBOL it keeps."""
	marker = '__ksymtab_'
	names = (line.split()[-1] for line in nm(ko, env, '--defined-only') if line.strip())
	return {n[len(marker):] for n in names if n.startswith(marker)}


def exportable(obj: Path, env: Mapping[str, str]) -> set[str]:
	"""Every symbol the kernel and its in-tree modules export before
	trimming: the __export_symbol_ markers modpost reads from vmlinux.o and
	from the modules' objects (modules.order)."""
	objs = [obj / 'vmlinux.o']
	order = obj / 'modules.order'
	if order.exists():
		objs += [obj / line.strip() for line in order.read_text().splitlines() if line.strip()]
	marker = '__export_symbol_'
	found = set()
	for o in objs:
		for line in nm(o, env, '--defined-only'):
			name = line.split()[-1]
			if name.startswith(marker):
				found.add(name[len(marker):])
	return found


def needs(kos: list[Path], env: Mapping[str, str], own: bool = True) -> dict[str, set[str]]:
	"""symbol -> the modules needing it: undefined in a module and, with
	own, not exported by another module of the same set (a vendor's modules
	may use each other; the GKI's in-tree modules export to vendors too).
	Only exports count: a module's static function named like a kernel
	symbol meets no other module's need."""
	own_syms = set().union(*(exported(k, env) for k in kos)) if own and kos else set()
	out: dict[str, set[str]] = {}
	for k in kos:
		for s in undefined(k, env) - own_syms:
			out.setdefault(s, set()).add(k.name)
	return out


def strict(symvers: Path, lists: Mapping[str, set[str]], lists_dir: Path) -> None:
	"""The exports of the build must be the KMI (the union of lists, by
	name), one for one.  The error names the list to fix and the command:
	an export in no list is one the GKI's in-tree modules use (core's);
	a listed symbol the kernel does not export is in the lists naming it."""
	exports = set(read_symvers(symvers))
	listed = union(lists)
	extra = sorted(exports - listed)
	missing = sorted(listed - exports)
	if not extra and not missing:
		return
	msg = [f'KMI strict mode: the exports in {symvers} differ from the union of {lists_dir}/*']
	if extra:
		msg.append(f'  exported but in no list ({len(extra)}): ' + ' '.join(extra[:20]))
		msg.append(f'    the GKI\'s in-tree modules use them: {lists_dir / CORE} is stale; '
			   f'run ./build/gki symbols update {CORE}')
	if missing:
		msg.append(f'  listed but not exported ({len(missing)}; a typo, or a symbol the '
			   'kernel no longer has): ' + ' '.join(missing[:20]))
		for name, syms in sorted(lists.items()):
			if (gone := sorted(syms - exports)):
				msg.append(f'    {lists_dir / name} lists {" ".join(gone[:20])}: '
					   f'run ./build/gki symbols update {name} --remove')
	raise GkiError('\n'.join(msg))


def explain_undefined(log_text: str, exportable_syms: set[str], list_path: Path,
		      list_name: str) -> str | None:
	"""modpost's 'undefined!' for symbols the kernel could export, as one
	message naming the symbol, the module and the list to add it to."""
	hits = [(s, Path(m).name) for s, m in _UNDEFINED.findall(log_text) if s in exportable_syms]
	if not hits:
		return None
	lines = [f'{m} uses {s}, which the GKI does not export: it is in no symbol list'
		 for s, m in hits]
	lines.append(f'add the symbols to {list_path} (or run ./build/gki symbols update '
		     f'{list_name}), then build again')
	return '\n'.join(lines)


def stale(need: Mapping[str, Mapping[str, set[str]]], lists: Mapping[str, set[str]],
	  allowed: set[str]) -> list[str]:
	"""Each list stands alone: per list, the symbols its modules need
	(need: list name -> symbol -> the modules needing it) that a list could
	hold (allowed) but that list does not, one line each naming the
	module, the symbol, the list and the command that fixes it."""
	out = []
	for name, syms in sorted(need.items()):
		for sym, mods in sorted(syms.items()):
			if sym in allowed and sym not in lists.get(name, set()):
				out.append(f'{", ".join(sorted(mods))} needs {sym}, missing from '
					   f'symbol_lists/{name} (./build/gki symbols update {name})')
	return out


def tracepoint_of(symbol: str) -> str | None:
	"""X, when symbol is one of tracepoint X's exported forms
	(__traceiter_X, __tracepoint_X, its static-call key or trampoline)."""
	tp = _TRACEPOINT.match(symbol)
	return tp[1] if tp else None


def with_tracepoints(need: Mapping[str, set[str]], allowed: set[str]) -> dict[str, set[str]]:
	"""need plus, for each tracepoint X needed in any form, every form the
	kernel exports, needed by the same modules.  A module registering a
	vendor hook uses only __tracepoint_X, whose type says nothing of the
	hook's arguments; __traceiter_X's prototype does, so listing both (as
	Android's lists do) brings the hook's signature into the KMI."""
	out = {s: set(mods) for s, mods in need.items()}
	for s, mods in need.items():
		tp = tracepoint_of(s)
		if not tp:
			continue
		for name in (form + tp for form in _TRACEPOINT_FORMS):
			if name in allowed:
				out.setdefault(name, set()).update(mods)
	return out


@dataclass
class Update:
	"""What 'symbols update' did to a list, and the needs no list can meet."""
	added: dict[str, set[str]]		# symbol -> the modules needing it
	removed: list[str]
	unexportable: dict[str, set[str]]	# needed, but exported by no part of the GKI


def update(list_path: Path, need: Mapping[str, set[str]], allowed: set[str],
	   remove: bool) -> Update:
	"""Add every needed symbol the kernel can export; with remove, drop
	those no module needs.  Only those lines change (a list is created if
	missing); a need the kernel cannot export is returned, not listed."""
	need = with_tracepoints(need, allowed)
	lst = SymbolList.read(list_path) if list_path.exists() else SymbolList.new(list_path.name)
	old = set(lst.symbols)
	wanted = {s for s in need if s in allowed}
	added = {s: need[s] for s in sorted(wanted - old, key=sort_key)}
	removed = sorted(old - wanted) if remove else []
	for s, mods in added.items():
		lst.add(s, mods)
	lst.remove(set(removed))
	write_if_changed(list_path, lst.text().encode())
	return Update(added, removed, {s: need[s] for s in sorted(set(need) - allowed)})
