# SPDX-License-Identifier: GPL-2.0
"""abi compare: what an update would do to the KMI, before it is taken.

--source VERSION builds another linux-source-6.12 from Debian's archive
(downloaded, never installed; common/source.pin untouched) and --toolchain
clang-N the pinned source with another Debian LLVM (installed on demand,
used for that build only).  Either is built with today's series and
configuration in a scratch copy of the release tree (scratch.py): the copy
is seen at the real paths, so only what the update changes is rebuilt, and
the real tree is never written.  The result is checked against abi/ as the
gate checks a build; the copy is removed, its reports stay in
out/compare/NAME/abi/.

Exit status: 0 compatible, 1 the KMI breaks (or needs approval, or the
report cannot be classified), 2 the candidate could not be fetched,
patched, built or dumped.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path
from typing import Callable

from gkibuild import archive, source, toolchain, treesync
from gkibuild.abi import gate, kmi
from gkibuild.abi.changes import Result
from gkibuild.abi.symvers import write_symvers
from gkibuild.kernel import Kernel
from gkibuild.layout import VARIANTS, Layout, Variant
from gkibuild.scratch import Scratch
from gkibuild.util import GkiError, info

COMPATIBLE, BREAKS, NO_BUILD = 0, 1, 2
_CLANG = re.compile(r'clang-(\d+)')


@dataclasses.dataclass(frozen=True)
class Candidate:
	"""What is compared: a name for out/compare/, the source to build (None:
	the pinned tree) and the LLVM major to build it with."""
	name: str
	tarball: Path | None = None
	major: int = toolchain.LLVM_MAJOR

	def root(self, layout: Layout) -> Path:
		return layout.out / 'compare' / self.name


@dataclasses.dataclass(frozen=True)
class Against:
	"""The built tree a candidate is copied from and the baseline it is
	checked against: the release and abi/ (None), as the command does;
	tests take the small tree and a baseline dumped from it."""
	variant: Variant = VARIANTS['release']
	abi_dir: Path | None = None

	def baseline(self, layout: Layout) -> Path:
		return self.abi_dir or layout.abi

	def __str__(self) -> str:
		return 'abi/' if self.abi_dir is None else str(self.abi_dir)


def fetch_source(layout: Layout, pin: source.Pin, version: str) -> Path:
	"""pin.package=version's tarball (downloaded, never installed), from
	the source cache (archive.py)."""
	return archive.fetch(archive.Archive(), pin.package, version, pin.tarball,
			     archive.cache_dir())


def install_llvm(major: int) -> None:
	"""clang-N, lld-N and llvm-N from Debian, when missing."""
	if (toolchain.llvm_bin(major) / 'ld.lld').exists():
		return
	pkgs = [f'clang-{major}', f'lld-{major}', f'llvm-{major}']
	info(f'installing {" ".join(pkgs)} for the comparison')
	res = subprocess.run(['apt-get', 'install', '-y', '--no-install-recommends', *pkgs],
			     env={'PATH': '/usr/sbin:/usr/bin:/sbin:/bin',
				  'DEBIAN_FRONTEND': 'noninteractive'},
			     capture_output=True, text=True)
	if res.returncode:
		raise GkiError(f'apt-get install {" ".join(pkgs)} failed: {res.stderr.strip()[-300:]}')


def parse_toolchain(arg: str) -> int:
	m = _CLANG.fullmatch(arg)
	if not m:
		raise GkiError(f'--toolchain {arg}: expected clang-N (a Debian LLVM, e.g. clang-16)')
	return int(m.group(1))


def build(layout: Layout, cand: Candidate, jobs: int,
	  edit: Callable[[Path], None] | None = None, against: Against = Against()) -> Scratch:
	"""The candidate's kernel in a scratch copy of the built one (the
	release's, unless against says otherwise).
	edit, for tests, changes the candidate's tree before it is built; it
	must replace files, not write through them (the copy's sources are
	hard links to the real tree).  The series is applied before anything is copied: a patch that does not
	apply fails in seconds, naming the patch and the hunk."""
	root = cand.root(layout)
	env = toolchain.hermetic_env(major=cand.major)
	versions = toolchain.check(env, cand.major)
	log = layout.log(None, f'compare-{cand.name}')
	tree = None
	if cand.tarball is not None:
		info(f'compare: extracting {cand.tarball.name} and applying the series')
		tree = source.extract_patched(layout, cand.tarball, root / 'extract', log)
	s = Scratch(Kernel(layout, against.variant, env, jobs), root / 'tree').create()
	if edit:
		edit(tree or s.src)
	if tree is not None:
		info(f'compare: source {treesync.sync(tree, s.src).summary()}')
		shutil.rmtree(root / 'extract')
	info(f'compare: building {cand.name} with LLVM {versions["clang"]} (log: {log})')
	s.configure(log.with_suffix('.config.log'))
	s.build(log)
	return s


def check(layout: Layout, cand: Candidate, s: Scratch, against: Against = Against()) -> Result:
	"""The gate's check of the candidate's build.  A tree that does not
	trim its exports (the small one) is checked on the lines of its KMI in
	Module.symvers, which is what a release's holds."""
	lists = kmi.load_all(layout.symbol_lists)
	release = (s.obj / 'include' / 'config' / 'kernel.release').read_text().strip()
	out = cand.root(layout) / 'abi'
	out.mkdir(parents=True, exist_ok=True)
	symvers = s.obj / 'Module.symvers'
	if not s.kernel.trims_exports():
		kmi_lines = out / 'Module.symvers.kmi'
		write_symvers(kmi_lines, gate.kmi_exports(symvers, kmi.union(lists)))
		symvers = kmi_lines
	return gate.check(against.baseline(layout), s.obj / 'vmlinux', symvers, lists, out,
			  f'abi compare {cand.name} ({release})')


def verdict(res: Result) -> int:
	"""The exit status, from the gate's decision: an addition alone is
	compatible (the update would take it)."""
	return BREAKS if gate.decide(res).outcome == gate.BREAKS else COMPATIBLE


def run(layout: Layout, cand: Candidate, jobs: int,
	edit: Callable[[Path], None] | None = None, against: Against = Against()) -> int:
	"""Build, check, print the short report; the exit status."""
	try:
		s = build(layout, cand, jobs, edit, against)
	except GkiError as e:
		print(f'gki: abi compare {cand.name}: could not build: {e}', flush=True)
		return NO_BUILD
	try:
		res = check(layout, cand, s, against)
	except GkiError as e:
		print(f'gki: abi compare {cand.name}: could not check the build: {e}', flush=True)
		return NO_BUILD
	finally:
		s.remove()
	print(gate.summary(res), flush=True)
	status = verdict(res)
	word = 'compatible with' if status == COMPATIBLE else 'BREAKS'
	info(f'abi compare {cand.name}: {word} the KMI in {against} '
	     f'({len(res.crc_changed)} CRC change(s); reports in {cand.root(layout) / "abi"})')
	return status
