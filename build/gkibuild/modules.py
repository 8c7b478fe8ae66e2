# SPDX-License-Identifier: GPL-2.0
"""Modules stage: build every external module (each folder of
vendor_modules/ with a Kbuild file, and the harness's test module) with
M= against the GKI's Module.symvers.  Sources are mirrored into the output
folder first because a 6.12 M= build writes its objects beside them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gkibuild import kmi, progress, toolchain
from gkibuild.kernel import Kernel
from gkibuild.util import GkiError, mtimes, run_logged, sync_tree


@dataclasses.dataclass(frozen=True)
class ExtModule:
	name: str
	kind: str	# 'vendor' or 'test'
	src: Path

	@property
	def symbol_list(self) -> str:
		"""The name of its list in symbol_lists/."""
		return self.name


def discover(vendor_dir: Path, test_dirs: list[Path]) -> list[ExtModule]:
	found = []
	if vendor_dir.is_dir():
		for d in sorted(vendor_dir.iterdir()):
			if (d / 'Kbuild').exists():
				found.append(ExtModule(d.name, 'vendor', d))
	for d in test_dirs:
		if (d / 'Kbuild').exists():
			found.append(ExtModule(d.name, 'test', d))
	return found


def build(kernel: Kernel, mod: ExtModule, allow_undefined: bool = False) -> list[Path]:
	"""Build one external module; returns its .ko files.  A symbol the GKI
	does not export fails the build with the list to add it to, unless
	allow_undefined (for 'symbols update', which needs the .ko files)."""
	dest = kernel.layout.ext(kernel.variant) / mod.kind / mod.name
	sync_tree(mod.src, dest)
	log = kernel.layout.log(kernel.variant, f'module-{mod.name}')
	# On a terminal a live line follows make, as in the kernel stage; the
	# module's folder keeps its clean build's count.
	clean = progress.fresh(mtimes(dest, '.o'), dest)
	total = progress.expected(dest) if clean else None
	# The log grows across builds: only this build's lines explain it.
	start = log.stat().st_size if log.exists() else 0
	try:
		with progress.Compiled(f'module {mod.name} ({kernel.variant.name})', log,
				       total) as compiled:
			run_logged(make_command(kernel, mod, allow_undefined), log,
				   env=kernel.env, what=f'{mod.kind} module {mod.name}')
		if clean:
			progress.remember(dest, compiled.count)
	except GkiError:
		with log.open('rb') as f:
			f.seek(start)
			text = f.read().decode(errors='replace')
		why = kmi.explain_undefined(text,
					    kmi.exportable(kernel.obj, kernel.env),
					    kernel.layout.symbol_lists / mod.symbol_list,
					    mod.symbol_list)
		if why:
			raise GkiError(why) from None
		raise
	return built_modules(dest)


def make_command(kernel: Kernel, mod: ExtModule, allow_undefined: bool = False) -> list[str]:
	"""The M= make of mod, in its mirror under the output folder."""
	dest = kernel.layout.ext(kernel.variant) / mod.kind / mod.name
	maps = [(dest, f'/gki/{mod.kind}/{mod.name}')]
	return ['make', '-C', str(kernel.layout.src), f'O={kernel.obj}', f'M={dest}',
		f'-j{kernel.jobs}',
		*toolchain.make_vars(kernel.env, kernel.layout.src, kernel.obj, maps),
		*(['KBUILD_MODPOST_WARN=1'] if allow_undefined else []), 'modules']


def built_modules(dest: Path) -> list[Path]:
	"""The .ko files this build made, from kbuild's modules.order: a module
	dropped from the Kbuild file leaves its old .ko behind, which must not
	ship."""
	order = dest / 'modules.order'
	if not order.exists():
		raise GkiError(f'{order} is missing after the build')
	kos = [Path(l.strip()).with_suffix('.ko') for l in order.read_text().splitlines()
	       if l.strip()]
	missing = [str(k) for k in kos if not k.exists()]
	if missing:
		raise GkiError(f'modules.order names modules that were not built: {", ".join(missing)}')
	return sorted(kos)
