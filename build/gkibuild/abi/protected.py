# SPDX-License-Identifier: GPL-2.0
"""Protected exports: the symbols the GKI's signed modules export.

An unsigned (vendor) module that exports one of them is refused at load
(CONFIG_MODULE_SIG_PROTECT, common/patches/0008).  The list is checked in
as abi/protected_exports, part of the ABI baseline: `abi update` writes it
from the release build's Module.symvers, and a release build whose GKI
modules export another set fails, naming what differs.  The build gives
the kernel a copy of it at CONFIG_MODULE_SIG_PROTECT_LIST.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from gkibuild.abi.symvers import read_symvers
from gkibuild.util import GkiError, write_if_changed

FILE = 'protected_exports'		# in abi/
INSTALLED = 'gki-protected-exports'	# CONFIG_MODULE_SIG_PROTECT_LIST, in the object folder
HEADER = """\
# The exports of the GKI modules (common/gki_modules), which an unsigned
# module may not export (CONFIG_MODULE_SIG_PROTECT).  Written by
# ./build/gki abi update from the release build; do not edit.
"""
_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_.]*')


def of_build(symvers: Path, gki_modules: Iterable[str]) -> set[str]:
	"""The symbols Module.symvers says a GKI module (a tree path such as
	net/wireless/cfg80211.ko) exports."""
	mods = {m.removesuffix('.ko') for m in gki_modules}
	return {s for s, e in read_symvers(symvers).items() if e.module in mods}


def read(path: Path) -> set[str]:
	"""The names of a list: one per line, '#' comments; anything else is
	an error naming its line, as the kernel's build would refuse it."""
	names = set()
	for n, line in enumerate(path.read_text().splitlines(), 1):
		text = line.split('#', 1)[0].strip()
		if not text:
			continue
		if not _NAME.fullmatch(text):
			raise GkiError(f'{path}:{n}: not a symbol name: {line!r}')
		names.add(text)
	return names


def write(path: Path, names: set[str]) -> None:
	path.write_text(HEADER + ''.join(f'{s}\n' for s in sorted(names)))


def check(path: Path, built: set[str]) -> None:
	"""The checked-in list must be what the build's GKI modules export."""
	if not path.exists():
		raise GkiError(f'{path} is missing: run ./build/gki abi update to write it')
	listed = read(path)
	if listed == built:
		return
	parts = []
	for what, names in (('exported by a GKI module but not listed', built - listed),
			    ('listed but no GKI module exports them', listed - built)):
		if names:
			shown = ' '.join(sorted(names)[:10])
			more = f' and {len(names) - 10} more' if len(names) > 10 else ''
			parts.append(f'{what}: {shown}{more}')
	raise GkiError(f'{path} does not match the GKI modules\' exports ({"; ".join(parts)}): '
		       'run ./build/gki abi update and commit the list with the baseline')


def install(path: Path, obj: Path) -> None:
	"""Give the kernel's build the list, at CONFIG_MODULE_SIG_PROTECT_LIST
	(left alone when unchanged, so that nothing rebuilds).  Without a
	list (a tree before its first `abi update`) the kernel protects
	nothing, and the release build's check fails, naming the command."""
	data = path.read_bytes() if path.exists() else HEADER.encode()
	if path.exists():
		read(path)
	write_if_changed(obj / INSTALLED, data)
