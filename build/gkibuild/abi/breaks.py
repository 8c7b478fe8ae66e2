# SPDX-License-Identifier: GPL-2.0
"""abi/allowed_breaks: the KMI breaks taken on purpose, with why and when.

'abi update --accept-break REASON' appends one [[break]] table listing the
changes it accepted (changes.Change.key: kind, name, a type's definition
file, what changed, old -> new, whole or with its digest).  The gate
passes a change listed here (but one it could not classify: it fails
closed), so a deliberate break recorded in one commit stays accepted when
that commit is rebased or cherry-picked onto a branch whose baseline
predates it; any other change still fails.  Written as TOML so a reviewer
reads it in the diff and tomllib parses it strictly.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path

from gkibuild.util import GkiError

FILE = 'allowed_breaks'
HEADER = ('# KMI breaks taken on purpose, recorded by ./build/gki abi update --accept-break.\n'
	  '# The ABI gate passes a change listed here; see BUILD.md, "The KMI".\n')
# A type's key names its definition file: 'type struct foo at foo.h: ...'.
_TYPE_WITHOUT_SITE = re.compile(r'(?:type|enum) (?:(?! at )[^:])*: ')


@dataclasses.dataclass(frozen=True)
class Record:
	when: str		# the day it was accepted, YYYY-MM-DD (UTC)
	why: str
	release: str		# the kernel release the break was taken on
	changes: tuple[str, ...]


def load(abi_dir: Path) -> dict[str, Record]:
	"""Change key -> the record accepting it; a file that does not parse
	as records fails (it would otherwise let breaks through unread)."""
	path = abi_dir / FILE
	if not path.exists():
		return {}
	try:
		tables = tomllib.loads(path.read_text()).get('break', [])
		records = [Record(t['when'], t['why'], t['release'], tuple(t['changes']))
			   for t in tables]
	except (tomllib.TOMLDecodeError, KeyError, TypeError) as e:
		raise GkiError(f'{path}: not a list of [[break]] records: {e}') from None
	old = [key for r in records for key in r.changes if old_format(key)]
	if old:
		raise GkiError(
			f'{path}: {len(old)} recorded change(s) in the old format, which could allow '
			'another change (a description cut short, or a type without its definition '
			'file):\n' + ''.join(f'  {key}\n' for key in old)
			+ 'delete them; a break still to take, take again with ./build/gki abi update '
			'--accept-break "REASON" (BUILD.md, "The KMI")')
	return {key: r for r in records for key in r.changes}


def old_format(key: str) -> bool:
	"""A key written before keys held the whole change and a type's site:
	cut to 160 characters without a digest ('...'), or a type's without
	' at FILE'."""
	return key.endswith('...') or bool(_TYPE_WITHOUT_SITE.match(key))


def _string(s: str) -> str:
	"""A TOML basic string (JSON's escapes are TOML's)."""
	return json.dumps(s, ensure_ascii=False)


def render(r: Record) -> str:
	changes = ''.join(f'\t{_string(c)},\n' for c in r.changes)
	return (f'\n[[break]]\nwhen = {_string(r.when)}\nwhy = {_string(r.why)}\n'
		f'release = {_string(r.release)}\nchanges = [\n{changes}]\n')


def append(abi_dir: Path, r: Record) -> Path:
	path = abi_dir / FILE
	old = path.read_text() if path.exists() else HEADER
	path.write_text(old + render(r))
	load(abi_dir)	# what was written must read back
	return path
