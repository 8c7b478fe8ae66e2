# SPDX-License-Identifier: GPL-2.0
"""Module.symvers, the kernel's table of its exports: one line per symbol,
its CRC, name, module, export kind and namespace, tab-separated (the
namespace may be empty).  The build's own, and the KMI's lines of it kept
in the baseline (abi/gki.symvers), are read here, strictly: a line of
another shape is an error naming it, never a symbol skipped.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping

from gkibuild.util import GkiError


@dataclasses.dataclass(frozen=True)
class Export:
	"""One symbol's line of Module.symvers."""
	crc: str
	module: str
	kind: str		# EXPORT_SYMBOL or EXPORT_SYMBOL_GPL
	namespace: str		# '' outside a symbol namespace

	def line(self, symbol: str) -> str:
		return f'{self.crc}\t{symbol}\t{self.module}\t{self.kind}\t{self.namespace}\n'


def read_symvers(path: Path) -> dict[str, Export]:
	"""symbol -> Export from a Module.symvers (or the baseline's copy)."""
	out = {}
	for n, line in enumerate(path.read_text().splitlines(), 1):
		cols = line.split('\t')
		if len(cols) != 5:
			raise GkiError(f'{path}:{n}: expected crc, symbol, module, export kind and '
				       'namespace (a baseline from before export kinds were kept: run '
				       './build/gki abi update)')
		out[cols[1]] = Export(cols[0], cols[2], cols[3], cols[4])
	return out


def write_symvers(path: Path, exports: Mapping[str, Export]) -> None:
	path.write_text(''.join(e.line(s) for s, e in sorted(exports.items())))
