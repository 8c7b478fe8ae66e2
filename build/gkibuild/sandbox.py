# SPDX-License-Identifier: GPL-2.0
"""A private copy of a whole build in which the real `gki build` runs at
the real paths: the inputs an engineer edits (common/, symbol_lists/,
vendor_modules/) and one variant's outputs under out/.

The incremental-build tests change an input here, build, revert it, build
again and compare the outputs' hashes with the first build.  Like
scratch.py, the copies are bind-mounted over the real paths in a private
mount namespace, so make sees the paths its dependency files recorded and
the real tree is never written.  The kernel source is copied with hard
links (the source stage replaces files, never writes through them).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import sys
from pathlib import Path

from gkibuild.layout import Layout, Variant, python_path
from gkibuild.scratch import copy, run_at_real_paths
from gkibuild.util import sha256_file

INPUTS = ('common', 'symbol_lists', 'vendor_modules')
# Output folders a build reads besides the variant's own; copied whole:
# the host tools, and the throwaway signing key (signing.py), without
# which the copy would make its own and sign, and so build, otherwise.
SHARED_OUT = ('host', 'keys')
# A variant's folders that only a guest run uses (initramfs, scratch
# disk): not copied, since the guest run `gki test` starts beside the host
# tests may be rewriting them.
GUEST_RUN = ('guest', 'qemu')


@dataclasses.dataclass
class Run:
	rc: int
	output: str	# stdout and stderr, interleaved
	log: Path	# where output was written


@dataclasses.dataclass
class Build:
	rc: int
	output: str
	rebuilt: set[str]	# kernel objects the kernel stage wrote
	hashes: dict[str, str]	# dist-relative path -> sha256 (Image, vmlinux, *.ko)

	@property
	def note(self) -> str:
		"""The kernel stage's closing line: its last, since a stage
		longer than a minute prints heartbeat lines before it
		(progress.Compiled)."""
		lines = re.findall(r'^\[kernel-\S+ .*\] (.*)$', self.output, re.M)
		return lines[-1] if lines else ''


def unavailable(layout: Layout, variant: Variant) -> str | None:
	"""Why scratch and sandbox builds cannot run here, or None."""
	if os.geteuid() != 0 or not shutil.which('unshare'):
		return 'copies are bind-mounted in a private mount namespace: root and unshare(1)'
	if not (layout.obj(variant) / 'vmlinux').exists():
		return f'the {variant.name} GKI is not built (./build/gki build --variant {variant.name})'
	return None


class Sandbox:
	def __init__(self, layout: Layout, variant: Variant, root: Path):
		self.layout = layout
		self.variant = variant
		self.root = root
		self.top = root / 'top'
		self.out = root / 'out'
		self.real = Layout(layout.top, self.out)	# the copy's paths, outside

	def create(self) -> 'Sandbox':
		self.remove()
		self.top.mkdir(parents=True)
		self.out.mkdir()
		for name in INPUTS:
			shutil.copytree(self.layout.top / name, self.top / name, symlinks=True)
		lo = self.layout.out
		vout = self.out / self.variant.name
		vout.mkdir()
		copies = [['cp', '-al', str(lo / 'src'), str(self.out / 'src')],
			  ['cp', '-al', str(lo / 'guest-pkgs'), str(self.out / 'guest-pkgs')]]
		copies += [['cp', '-a', str(d), str(vout / d.name)]
			   for d in sorted((lo / self.variant.name).iterdir()) if d.name not in GUEST_RUN]
		copies += [['cp', '-a', str(lo / d), str(self.out / d)]
			   for d in SHARED_OUT if (lo / d).is_dir()]
		copy(copies)
		return self

	def input(self, rel: str) -> Path:
		"""A path of the copy's inputs, e.g. 'common/patches/series'."""
		return self.top / rel

	def run(self, *gki_args: str, log_name: str = 'gki.log') -> Run:
		"""build/gki's Python half with gki_args (e.g. 'qemu', '--only',
		'kunit'), in the copy: the copy's inputs and out/ are bind-mounted
		over the real ones, so its stages rebuild only what the copy
		changed.  The copy's logs start empty, so they are this run's."""
		shutil.rmtree(self.real.logs, ignore_errors=True)
		binds = [(self.top / n, self.layout.top / n) for n in INPUTS]
		binds.append((self.out, self.layout.out))
		cmd = [sys.executable, '-B', '-P', '-m', 'gkibuild', *gki_args]
		env = dict(os.environ, PYTHONPATH=python_path(self.layout.top))
		log = self.root / log_name
		rc = run_at_real_paths(binds, cmd, env, log)
		return Run(rc, log.read_text(errors='replace'), log)

	def build(self, *args: str) -> Build:
		"""./build/gki build for the variant, in the copy."""
		res = self.run('build', '--variant', self.variant.name, *args, log_name='build.log')
		kernel_log = self.real.log(self.variant, 'kernel')
		rebuilt = set()
		if kernel_log.exists():
			rebuilt = set(re.findall(r'^gki: rebuilt (\S+)$', kernel_log.read_text(), re.M))
		return Build(res.rc, res.output, rebuilt, self.hashes())

	def hashes(self) -> dict[str, str]:
		dist = self.real.dist(self.variant)
		files = [dist / 'Image', dist / 'vmlinux', *sorted(dist.glob('modules/**/*.ko'))]
		return {str(p.relative_to(dist)): sha256_file(p) for p in files if p.exists()}

	def remove(self) -> None:
		shutil.rmtree(self.root, ignore_errors=True)
