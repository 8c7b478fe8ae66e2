# SPDX-License-Identifier: GPL-2.0
"""Scratch builds: a copy of the built release tree in which a change is
made and rebuilt in seconds, for the ABI gate's own tests and for 'abi
compare' (another source or compiler, built beside the real tree).

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

from gkibuild import kconfig, toolchain
from gkibuild.abi import kmi
from gkibuild.kernel import Kernel
from gkibuild.util import GkiError


class Scratch:
	def __init__(self, kernel: Kernel, root: Path):
		self.kernel = kernel
		self.root = root
		self.src = root / 'src'
		self.obj = root / 'obj'

	def create(self) -> 'Scratch':
		shutil.rmtree(self.root, ignore_errors=True)
		self.root.mkdir(parents=True)
		copy([['cp', '-al', str(self.kernel.layout.src), str(self.src)],
		      ['cp', '-a', '--reflink=auto', str(self.kernel.obj), str(self.obj)]])
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

	def revert(self, rel: str) -> None:
		"""Give a source file of the copy back the real tree's content,
		as a new file: newer than the objects built from the edit."""
		path = self.src / rel
		path.unlink()
		path.write_bytes((self.kernel.layout.src / rel).read_bytes())

	def add_kmi_symbols(self, symbols: set[str]) -> None:
		wl = self.obj / kmi.WHITELIST
		kmi.write_whitelist(wl, set(wl.read_text().split()) | symbols)

	def make(self, log: Path, *targets: str) -> None:
		"""make targets in the copy, seen at the real paths."""
		k = self.kernel
		make = ['make', '-C', str(k.layout.src), f'O={k.obj}', f'-j{k.jobs}',
			*toolchain.make_vars(k.env, k.layout.src, k.obj), *targets]
		rc = run_at_real_paths([(self.src, k.layout.src), (self.obj, k.obj)], make,
				       k.env, log)
		if rc:
			raise GkiError(f'scratch make {" ".join(targets)} failed; see {log}')

	def build(self, log: Path) -> None:
		"""make Image and modules in the copy."""
		self.make(log, 'Image', 'modules')

	def configure(self, log: Path) -> None:
		"""The variant's configuration again, for a changed tree: the
		copy's fragment over the variant's base (allnoconfig,
		alldefconfig), and every option of the fragment verified, as
		kernel.py does."""
		fragment = self.obj / 'gki.fragment'
		self.make(log, f'KCONFIG_ALLCONFIG={self.kernel.obj / fragment.name}',
			  self.kernel.variant.base)
		kconfig.verify(fragment.read_text(), self.obj / '.config')

	def remove(self) -> None:
		shutil.rmtree(self.root, ignore_errors=True)


def copy(cmds: list[list[str]]) -> None:
	"""Run cp commands in order; the first that fails is an error."""
	for cmd in cmds:
		res = subprocess.run(cmd, capture_output=True, text=True)
		if res.returncode:
			raise GkiError(f'{" ".join(cmd)}: {res.stderr.strip()}')


def run_at_real_paths(binds: list[tuple[Path, Path]], cmd: list[str],
		      env: dict[str, str] | None, log: Path) -> int:
	"""Run cmd in a private mount namespace where each copy is bind-mounted
	over its real path; output to log; returns the exit status."""
	mounts = [f'mount --bind {shlex.quote(str(copy))} {shlex.quote(str(real))}'
		  for copy, real in binds]
	script = ' && '.join(mounts + ['exec ' + shlex.join(cmd)])
	log.parent.mkdir(parents=True, exist_ok=True)
	with open(log, 'w') as f:
		return subprocess.run(['unshare', '--mount', '--propagation', 'private',
				       'sh', '-c', script], env=env, stdout=f,
				      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
