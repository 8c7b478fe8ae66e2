# SPDX-License-Identifier: GPL-2.0
"""Config stage: merge the fragments over the variant's base (alldefconfig
or allnoconfig: its .config is resolved, an olddefconfig after it would
write the same bytes), and verify that every option of the fragments took
effect."""

from __future__ import annotations

import re
from pathlib import Path

from gkibuild.util import GkiError

_SET = re.compile(r'^(CONFIG_[A-Za-z0-9_]+)=(.*)$')
_UNSET = re.compile(r'^# (CONFIG_[A-Za-z0-9_]+) is not set$')


def parse(text: str) -> dict[str, str]:
	"""Map each option of a .config or fragment to its value; 'n' for
	'# CONFIG_X is not set'.  Later lines win, as in Kconfig."""
	opts = {}
	for line in text.splitlines():
		line = line.strip()
		m = _SET.match(line) or _UNSET.match(line)
		if m:
			opts[m.group(1)] = m.group(2) if m.re is _SET else 'n'
	return opts


def merge(fragments: list[Path]) -> str:
	"""Concatenate fragments, each headed by its name for the log."""
	return ''.join(f'# --- {f.name}\n{f.read_text()}\n' for f in fragments)


def unmet(wanted: dict[str, str], config: dict[str, str]) -> list[str]:
	"""Describe each wanted option whose value is not in config."""
	bad = []
	for opt, want in wanted.items():
		got = config.get(opt, 'n')
		if got != want:
			shown = 'not set' if got == 'n' else got
			bad.append(f'{opt}={want} (got {shown})')
	return bad


def verify(fragment_text: str, config_path: Path) -> None:
	bad = unmet(parse(fragment_text), parse(config_path.read_text()))
	if bad:
		raise GkiError('config options that did not take effect (a missing '
			       'dependency, or an option without a prompt):\n    ' +
			       '\n    '.join(bad))
