# SPDX-License-Identifier: GPL-2.0
"""The KMI: the symbol lists in symbol_lists/ (Android's format), the
flattened union the kernel build trims its exports to, the strict check of
the result, and 'symbols update'."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Iterable, Mapping

from util import GkiError, write_if_changed

HEADER = '[abi_symbol_list]'
CORE = 'core'	# the list of what the GKI's own in-tree modules need
WHITELIST = 'gki-kmi-symbols'	# in the obj folder; named by the config
# Needed by the kernel itself, not by a module's undefined symbols: with
# MODVERSIONS the loader checks every module against module_layout's CRC.
LOADER_SYMBOLS = {'module_layout': 'the module loader (MODVERSIONS)'}
_SYMBOL = re.compile(r'^[A-Za-z_][A-Za-z0-9_.$]*$')
_UNDEFINED = re.compile(r'ERROR: modpost: "([^"]+)" \[([^\]]+)\] undefined!')


def parse(path: Path) -> list[str]:
	"""The symbols of one list; every malformed line is an error naming it."""
	symbols: list[str] = []
	seen_header = False
	errors = []
	for n, raw in enumerate(path.read_text().splitlines(), 1):
		line = raw.strip()
		if not line or line.startswith('#'):
			continue
		if not seen_header:
			if line != HEADER:
				errors.append(f'{path}:{n}: expected the header {HEADER}')
			seen_header = True
			continue
		if not _SYMBOL.match(line):
			errors.append(f'{path}:{n}: not a symbol name: {line!r}')
		elif line in symbols:
			errors.append(f'{path}:{n}: {line} is listed twice')
		else:
			symbols.append(line)
	if not seen_header:
		errors.append(f'{path}: empty; a list starts with {HEADER}')
	if errors:
		raise GkiError('\n'.join(errors))
	return symbols


def render(symbols: Iterable[str], comments: list[str]) -> str:
	"""A list file: the leading comments, the header, the sorted symbols."""
	return ''.join(c + '\n' for c in comments) + HEADER + '\n' + \
		''.join(s + '\n' for s in sorted(set(symbols)))


def leading_comments(path: Path) -> list[str]:
	if not path.exists():
		return []
	out = []
	for line in path.read_text().splitlines():
		if line.strip() == HEADER:
			break
		out.append(line)
	return out


def load_all(lists_dir: Path) -> dict[str, set[str]]:
	"""Every list by name (its file name)."""
	if not lists_dir.is_dir():
		raise GkiError(f'{lists_dir} is missing')
	return {p.name: set(parse(p)) for p in sorted(lists_dir.iterdir())
		if p.is_file() and not p.name.startswith('.')}


def union(lists: Mapping[str, set[str]]) -> set[str]:
	return set().union(*lists.values()) if lists else set()


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


def symvers_exports(symvers: Path) -> dict[str, tuple[str, str]]:
	"""symbol -> (CRC, module) from a Module.symvers."""
	out = {}
	for line in symvers.read_text().splitlines():
		parts = line.split('\t')
		if len(parts) >= 3:
			out[parts[1]] = (parts[0], parts[2])
	return out


def strict(symvers: Path, kmi: set[str], lists_dir: Path) -> None:
	"""The exports of the build must be the KMI, one for one."""
	exports = set(symvers_exports(symvers))
	extra = sorted(exports - kmi)
	missing = sorted(kmi - exports)
	if not extra and not missing:
		return
	msg = [f'KMI strict mode: the exports in {symvers} differ from the union of {lists_dir}/*']
	if extra:
		msg.append(f'  exported but in no list ({len(extra)}): ' + ' '.join(extra[:20]))
	if missing:
		msg.append(f'  listed but not exported ({len(missing)}; a typo, or a symbol the '
			   'kernel no longer has): ' + ' '.join(missing[:20]))
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


def update(list_path: Path, need: Mapping[str, set[str]], allowed: set[str],
	   remove: bool) -> tuple[dict[str, set[str]], list[str]]:
	"""Add every needed symbol the kernel can export; with remove, drop
	those no module needs.  Returns (added -> modules, removed)."""
	old = set(parse(list_path)) if list_path.exists() else set()
	wanted = {s for s in need if s in allowed}
	added = {s: need[s] for s in sorted(wanted - old)}
	removed = sorted(old - wanted) if remove else []
	new = (old | wanted) - set(removed)
	list_path.parent.mkdir(parents=True, exist_ok=True)
	comments = leading_comments(list_path) or [
		f'# KMI symbols needed by {list_path.name}; see BUILD.md, "Requesting a symbol".']
	list_path.write_text(render(new, comments))
	return added, removed
