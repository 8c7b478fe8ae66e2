# SPDX-License-Identifier: GPL-2.0
"""Kernel errors in a guest console log.  Any of these fails a run: KASAN,
lockdep, kmemleak, hung tasks, BUG, WARN, oops, panic."""

from __future__ import annotations

import re

# Kernel lines carry a printk timestamp (CONFIG_PRINTK_TIME); search, not
# match, because a kernel line can start in the middle of a user line.
_KERNEL = re.compile(r'\[\s*\d+\.\d+\]\s?(.*)$')

_REPORTS = [
	('BUG', re.compile(r'\bBUG: |kernel BUG at')),	# KASAN, sleeping in atomic, lockups
	('WARN', re.compile(r'\bWARNING: ')),			# WARN_ON, lockdep splats
	('oops', re.compile(r'Internal error: |\bOops\b|Unable to handle kernel')),
	('panic', re.compile(r'Kernel panic')),
	('lockdep', re.compile(r'possible (circular|recursive) locking|inconsistent lock state'
				r'|suspicious RCU usage')),
	('hung task', re.compile(r'INFO: task .* blocked for more than')),
	('RCU stall', re.compile(r'rcu: INFO: .*detected stall')),
	('UBSAN', re.compile(r'UBSAN: ')),
	('call trace', re.compile(r'^Call trace:')),
]

# kmemleak's report is read from debugfs by /init, so it is a user line.
_KMEMLEAK = re.compile(r'unreferenced object 0x[0-9a-f]+')


def kernel_errors(text: str, limit: int = 20) -> list[str]:
	"""Return up to limit console lines that report a kernel error, each
	prefixed by the kind of report."""
	found = []
	for line in text.replace('\r', '').splitlines():
		m = _KERNEL.search(line)
		kind = None
		if m:
			kind = next((k for k, rx in _REPORTS if rx.search(m.group(1))), None)
		if kind is None and _KMEMLEAK.search(line):
			kind = 'kmemleak'
		if kind:
			found.append(f'{kind}: {line.strip()}')
			if len(found) >= limit:
				break
	return found
