# SPDX-License-Identifier: GPL-2.0
"""Scratch builds: a copy of the built release tree in which a change is
made and rebuilt in seconds, for the ABI gate's own tests.

The kernel's dependency files and command lines hold absolute paths, so a
copy built where it lies would rebuild everything.  Instead the copy is
bind-mounted over the original paths in a private mount namespace
(unshare(1), root only): make sees the same paths, rebuilds only what the
change touches, and the real tree is never written.  The source is copied
with hard links; an edit replaces a file rather than writing through the
link.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import kmi
import toolchain
from kernel import Kernel
from util import GkiError


class Scratch:
	def __init__(self, kernel: Kernel, root: Path):
		self.kernel = kernel
		self.root = root
		self.src = root / 'src'
		self.obj = root / 'obj'

	def create(self) -> 'Scratch':
		shutil.rmtree(self.root, ignore_errors=True)
		self.root.mkdir(parents=True)
		for cmd in (['cp', '-al', str(self.kernel.layout.src), str(self.src)],
			    ['cp', '-a', '--reflink=auto', str(self.kernel.obj), str(self.obj)]):
			res = subprocess.run(cmd, capture_output=True, text=True)
			if res.returncode:
				raise GkiError(f'{" ".join(cmd)}: {res.stderr.strip()}')
		return self

	def edit(self, rel: str, change: Callable[[str], str]) -> None:
		"""Change a source file of the copy; the change must change it."""
		path = self.src / rel
		old = path.read_text()
		new = change(old)
		if new == old:
			raise GkiError(f'scratch edit of {rel} changed nothing')
		path.unlink()		# a hard link to the real tree
		path.write_text(new)

	def add_kmi_symbols(self, symbols: set[str]) -> None:
		wl = self.obj / kmi.WHITELIST
		kmi.write_whitelist(wl, set(wl.read_text().split()) | symbols)

	def build(self, log: Path) -> None:
		"""make Image and modules in the copy, seen at the real paths."""
		k = self.kernel
		make = ['make', '-C', str(k.layout.src), f'O={k.obj}', f'-j{k.jobs}',
			*toolchain.make_vars(k.env, k.layout.src, k.obj), 'Image', 'modules']
		script = ' && '.join([
			f'mount --bind {shlex.quote(str(self.src))} {shlex.quote(str(k.layout.src))}',
			f'mount --bind {shlex.quote(str(self.obj))} {shlex.quote(str(k.obj))}',
			shlex.join(make)])
		with open(log, 'w') as f:
			res = subprocess.run(['unshare', '--mount', '--propagation', 'private',
					      'sh', '-c', script], env=k.env, stdout=f,
					     stderr=subprocess.STDOUT)
		if res.returncode:
			raise GkiError(f'scratch build failed; see {log}')

	def remove(self) -> None:
		shutil.rmtree(self.root, ignore_errors=True)
