# SPDX-License-Identifier: GPL-2.0
"""Where everything lives: the repository's inputs and the output folder."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
# The folders holding the packages gkibuild and gkiqemu, relative to the
# top: the one import root (build/gki puts them on PYTHONPATH).
IMPORT_ROOT = ('build', 'qemu')


@dataclasses.dataclass(frozen=True)
class Variant:
	"""One kernel configuration, built into its own folder."""
	name: str
	fragments: tuple[str, ...]	# relative to common/
	qemu_mem_mb: int
	qemu_timeout_s: int
	whole: bool = True		# builds every GKI module of common/gki_modules
	base: str = 'allnoconfig'	# the make target the fragments merge over


VARIANTS = {
	# The GKI at real size (common/gki.config over alldefconfig).
	'release': Variant('release', ('gki.config',), 1024, 600, base='alldefconfig'),
	# A small kernel with KASAN and lockdep, for the vendor modules and the
	# suites (BUILD.md, "Variants"); its shadow memory and lockdep need
	# room and time under TCG.
	'debug': Variant('debug', ('gki-small.config', 'gki-debug.config'), 2048, 900,
			 whole=False),
}

# The variant whose built tree the scratch-build tests copy, change and
# rebuild (the ABI gate's, the vendor hooks', distcc's): the small one, where
# a relink and an ABI dump take seconds whatever the release's size.  Their
# baselines are dumped from that tree in the test, not read from abi/.
SCRATCH = VARIANTS['debug']


def python_path(top: Path) -> str:
	"""PYTHONPATH for a Python process of the tree at top: its gkibuild
	and gkiqemu, never another tree's."""
	return os.pathsep.join(str(top / d) for d in IMPORT_ROOT)


def test_root(folder: Path) -> Path:
	"""The folder unittest imports a folder of tests from (its -t): above
	every package the folder is in, so that build/gkibuild/tests/test_x.py
	is gkibuild.tests.test_x; a folder outside a package is its own."""
	while (folder / '__init__.py').exists():
		folder = folder.parent
	return folder


def variants(name: str) -> list[Variant]:
	if name == 'all':
		return list(VARIANTS.values())
	return [VARIANTS[name]]


@dataclasses.dataclass(frozen=True)
class Layout:
	top: Path
	out: Path

	@classmethod
	def default(cls) -> 'Layout':
		out = Path(os.environ.get('GKI_OUT') or TOP / 'out').resolve()
		return cls(TOP, out)

	# Inputs
	@property
	def common(self) -> Path:
		return self.top / 'common'

	@property
	def symbol_lists(self) -> Path:
		return self.top / 'symbol_lists'

	@property
	def abi(self) -> Path:
		return self.top / 'abi'

	@property
	def vendor_modules(self) -> Path:
		return self.top / 'vendor_modules'

	@property
	def qemu(self) -> Path:
		return self.top / 'qemu'

	# Outputs
	@property
	def src(self) -> Path:
		"""The extracted, patched kernel tree (shared by all variants)."""
		return self.out / 'src' / 'linux'

	@property
	def logs(self) -> Path:
		return self.out / 'logs'

	@property
	def junit(self) -> Path:
		"""`gki test`'s outcomes as JUnit XML (gkiqemu/junit.py)."""
		return self.out / 'test-results.xml'

	def obj(self, v: Variant) -> Path:
		return self.out / v.name / 'obj'

	def ext(self, v: Variant) -> Path:
		"""Build folders of external (vendor and test) modules."""
		return self.out / v.name / 'ext'

	def guest(self, v: Variant) -> Path:
		return self.out / v.name / 'guest'

	def programs(self, v: Variant) -> Path:
		"""Guest programs (suites, benchmarks, device tools): built
		against the variant's UAPI headers, so each variant has its own
		and building one does not recompile the other's."""
		return self.out / v.name / 'programs'

	def dist(self, v: Variant) -> Path:
		return self.out / ('dist' if v.name == 'release' else f'dist-{v.name}')

	def log(self, v: Variant | None, name: str) -> Path:
		return self.logs / (f'{v.name}-{name}.log' if v else f'{name}.log')
