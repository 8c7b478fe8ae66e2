# SPDX-License-Identifier: GPL-2.0
"""Modules stage: build every external module (each folder of
vendor_modules/ with a Kbuild file, and the harness's test module) with
M= against the GKI's Module.symvers.  Sources are mirrored into the output
folder first because a 6.12 M= build writes its objects beside them.

A folder may also hold:

  tree-sources     kernel tree paths (files or folders) mirrored from the
                   extracted tree at the same paths, so that a vendor builds
                   the tree's own drivers out of tree without copying them
                   into the repository (vendor_modules/virtual_device/)
  requires.config  the GKI options its modules need: a variant whose
                   configuration lacks one does not build them, and the
                   whole GKI (the release) must have them all
  modules.load     the order its modules load in, dependencies first: the
                   dist ships it with a modules.dep, and the guest loads
                   the set at boot (as a device's init loads vendor_dlkm)
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import tempfile
from pathlib import Path, PurePosixPath
from typing import Mapping

from gkibuild import gkimodules, kconfig, progress, toolchain
from gkibuild.abi import kmi
from gkibuild.kernel import Kernel
from gkibuild.util import GkiError, info, mtimes, run_logged, write_if_changed

TREE_SOURCES = 'tree-sources'
REQUIRES = 'requires.config'
LOAD = 'modules.load'
DEP = 'modules.dep'
# The mirror's record of the files it copied (util.sync_tree's name, so a
# mirror an older build made is cleaned the same way).
MARKER = '.gki-sources'


@dataclasses.dataclass(frozen=True)
class ExtModule:
	name: str
	kind: str	# 'vendor' or 'test'
	src: Path

	@property
	def symbol_list(self) -> str:
		"""The name of its list in symbol_lists/."""
		return self.name

	@property
	def dist_dir(self) -> str:
		"""Its folder under the dist's modules/ (and the guest's /modules)."""
		return f'{self.kind}/{self.name}'


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
	"""Build one external module; returns its .ko files, none when the
	variant's configuration lacks what the folder requires.  A symbol the
	GKI does not export fails the build with the list to add it to, unless
	allow_undefined (for 'symbols update', which needs the .ko files)."""
	if not wanted(kernel, mod):
		return []
	dest = kernel.layout.ext(kernel.variant) / mod.kind / mod.name
	mirror(sources(mod, kernel.layout.src), dest)
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
	names = [k.name for k in kos]
	twice = sorted({n for n in names if names.count(n) > 1})
	if twice:
		# The dist ships a folder's modules flat.
		raise GkiError(f'{dest}: modules of one name in two folders: {", ".join(twice)}')
	return sorted(kos)


# What a folder requires of the GKI ----------------------------------------

def requirements(mod: ExtModule) -> dict[str, str]:
	"""The options of the folder's requires.config (a config fragment:
	CONFIG_X=y, CONFIG_X=m, '# CONFIG_X is not set'); none without one.  A
	line that is neither an option nor a comment is an error, so that a typo
	cannot drop a requirement."""
	path = mod.src / REQUIRES
	if not path.exists():
		return {}
	for n, line in enumerate(path.read_text().splitlines(), 1):
		line = line.strip()
		if line and not kconfig.parse(line) and not line.startswith('#'):
			raise GkiError(f'{path}:{n}: expected CONFIG_NAME=VALUE or a comment, got {line!r}')
	return kconfig.parse(path.read_text())


def wanted(kernel: Kernel, mod: ExtModule) -> bool:
	"""Is mod built for the kernel's variant?  One that builds only part of
	the GKI (the small debug kernel has no DRM) skips a folder whose
	requirements its configuration does not meet, saying so; the whole GKI
	must meet them, or the folder's modules could never ship."""
	wants = requirements(mod)
	if not wants:
		return True
	missing = kconfig.unmet(wants, kconfig.parse((kernel.obj / '.config').read_text()))
	if not missing:
		return True
	where = mod.src / REQUIRES
	if kernel.variant.whole:
		raise GkiError(f'the {kernel.variant.name} GKI lacks options {where} requires: '
			       f'{", ".join(missing)}; set them in common/ (BUILD.md, "Configuration")')
	more = f' and {len(missing) - 2} more' if len(missing) > 2 else ''
	info(f'{mod.kind} module {mod.name}: not built for {kernel.variant.name}, whose '
	     f'configuration lacks {", ".join(missing[:2])}{more} ({where})')
	return False


# Sources: the folder's, and kernel tree files -----------------------------

def tree_paths(listing: Path, tree: Path) -> list[str]:
	"""The paths a tree-sources file lists, one per line relative to the
	kernel tree's top, '#' comments; a path the tree lacks is an error
	naming the line (a driver the pinned source does not have, or a typo)."""
	out: list[str] = []
	for n, line in enumerate(listing.read_text().splitlines(), 1):
		line = line.split('#', 1)[0].strip()
		if not line:
			continue
		path = PurePosixPath(line)
		if path.is_absolute() or '..' in path.parts or str(path) == '.':
			raise GkiError(f'{listing}:{n}: {line!r}: expected a path inside the kernel tree, '
				       'relative to its top, like drivers/net/virtio_net.c')
		rel = str(path)
		if rel in out:
			raise GkiError(f'{listing}:{n}: {rel} is listed twice')
		if not (tree / rel).exists():
			raise GkiError(f'{listing}:{n}: {rel} is not in the kernel tree {tree}: the '
				       'pinned source lacks it, or the path is wrong')
		out.append(rel)
	return out


def sources(mod: ExtModule, tree: Path) -> dict[Path, Path]:
	"""Every file of the module's build mirror, by its path in the mirror,
	and where it comes from: the folder's own files, and the tree files
	its tree-sources lists (a folder with everything under it), at their
	paths in the tree, so that their relative includes resolve as in the
	tree.  A tree file where the folder has one of its own is an error: the
	mirror would build one of them silently."""
	files = {p.relative_to(mod.src): p for p in sorted(mod.src.rglob('*')) if p.is_file()}
	listing = mod.src / TREE_SOURCES
	if not listing.exists():
		return files
	own = set(files)
	for rel in tree_paths(listing, tree):
		top = tree / rel
		found = [top] if top.is_file() else sorted(p for p in top.rglob('*') if p.is_file())
		for p in found:
			at = p.relative_to(tree)
			if at in own:
				raise GkiError(f'{mod.src / at} is also the tree\'s {at} ({listing}): '
					       'rename the folder\'s file, or drop the path from the list')
			files[at] = p
	return files


def mirror(files: Mapping[Path, Path], dest: Path) -> None:
	"""Make dest hold files (path in dest -> source): a file is written
	only when its content changed, so make rebuilds only what did, and a
	file an earlier mirror copied that is no source any more is removed
	(build outputs stay)."""
	dest.mkdir(parents=True, exist_ok=True)
	for rel, src in sorted(files.items()):
		if write_if_changed(dest / rel, src.read_bytes()):
			shutil.copymode(src, dest / rel)
	marker = dest / MARKER
	old = {Path(l) for l in marker.read_text().splitlines()} if marker.exists() else set()
	for rel in sorted(old - set(files)):
		# An older marker lists folders too: they stay.
		if not (dest / rel).is_dir():
			(dest / rel).unlink(missing_ok=True)
	write_if_changed(marker, ''.join(f'{r}\n' for r in sorted(map(str, files))).encode())


# Load order ---------------------------------------------------------------

def read_load(path: Path) -> list[str]:
	"""A modules.load: one module file name per line ('#' comments), in the
	order they load."""
	out: list[str] = []
	for n, line in enumerate(path.read_text().splitlines(), 1):
		line = line.split('#', 1)[0].strip()
		if not line:
			continue
		if not line.endswith('.ko') or '/' in line:
			raise GkiError(f'{path}:{n}: expected a module file name, like virtio_net.ko, '
				       f'got {line!r}')
		if line in out:
			raise GkiError(f'{path}:{n}: {line} is listed twice')
		out.append(line)
	return out


def check_load(path: Path, listed: list[str], built: list[str],
	       deps: Mapping[str, list[str]]) -> None:
	"""listed (path's modules.load) against the set's built modules (file
	names) and their dependencies within the set (deps: name -> names):
	each built module listed, nothing else, and each after those it needs."""
	problems = []
	extra = [m for m in listed if m not in built]
	missing = sorted(set(built) - set(listed))
	if missing:
		problems.append(f'built but not listed: {" ".join(missing)}')
	if extra:
		problems.append(f'listed but not built: {" ".join(extra)}')
	for i, m in enumerate(listed):
		late = [d for d in deps.get(m, []) if d in listed[i + 1:]]
		if late:
			problems.append(f'{m} loads before {" ".join(late)}, which it needs')
	if problems:
		raise GkiError(f'{path}: ' + '; '.join(problems))


def module_name(path: str) -> str:
	"""The kernel's name of a module file: virtio_gpu for x/virtio-gpu.ko."""
	return Path(path).name.removesuffix('.ko').replace('-', '_')


def closure(roots: list[str], deps: Mapping[str, list[str]]) -> dict[str, list[str]]:
	"""The lines of deps for roots and every module they need: what a
	loader needs to load roots."""
	out: dict[str, list[str]] = {}
	todo = list(roots)
	while todo:
		m = todo.pop()
		if m not in out:
			out[m] = list(deps.get(m, []))
			todo.extend(out[m])
	return out


_UNKNOWN = re.compile(r'WARNING: (\S+) needs unknown symbol (\S+)')


def depmod(kos: Mapping[str, Path], release: str,
	   system_map: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
	"""depmod's dependencies of kos (path under the module folder -> the
	.ko), and the symbols each needs that neither the kernel (its
	System.map's exports) nor another of kos defines, by path."""
	with tempfile.TemporaryDirectory() as tmp:
		top = Path(tmp) / 'lib' / 'modules' / release
		# Links, not copies: the GKI modules' DWARF is a hundred megabytes,
		# and depmod follows them.
		for rel, ko in kos.items():
			(top / rel).parent.mkdir(parents=True, exist_ok=True)
			(top / rel).symlink_to(ko.resolve())
		res = subprocess.run(['depmod', '-e', '-F', str(system_map), '-b', tmp, release],
				     capture_output=True, text=True,
				     env={'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LC_ALL': 'C'})
		if res.returncode:
			raise GkiError(f'depmod failed: {res.stderr.strip()[-500:]}')
		unknown: dict[str, list[str]] = {}
		for path, sym in _UNKNOWN.findall(res.stderr):
			rel = path.removeprefix(f'{top}/')
			unknown.setdefault(rel, []).append(sym)
		return gkimodules.parse_dep((top / 'modules.dep').read_text()), unknown


def stage_load(mod: ExtModule, mods: Path, release: str, system_map: Path) -> None:
	"""For a folder with a modules.load, its set shipped flat in
	mods/<kind>/<name>/ beside the GKI modules in mods/gki/: check the
	order against the set's modules and their dependencies, and ship it
	with the set's modules.dep, depmod's lines for the set's modules and
	every module they need, GKI modules included, as paths under mods
	(vendor/NAME/x.ko, gki/y.ko): what the guest's /init loads each
	module after."""
	listing = mod.src / LOAD
	dest = mods / mod.dist_dir
	if not listing.exists():
		return
	listed = read_load(listing)
	own = {f'{mod.dist_dir}/{ko.name}': ko for ko in sorted(dest.glob('*.ko'))}
	gki = {f'gki/{ko.name}': ko for ko in sorted((mods / 'gki').glob('*.ko'))}
	both = sorted({module_name(m) for m in own} & {module_name(m) for m in gki})
	if both:
		# One module name is one module to the kernel and to depmod.
		raise GkiError(f'{mod.src}: modules named as GKI modules: {", ".join(both)}')
	deps, unknown = depmod({**gki, **own}, release, system_map)
	prefix = f'{mod.dist_dir}/'
	unmet = [f'{m} needs {" ".join(sorted(syms))}' for m, syms in sorted(unknown.items())
		 if m.startswith(prefix)]
	if unmet:
		# modpost passed: the symbols are a GKI module's that the dist lacks.
		raise GkiError('modules need symbols that neither the kernel nor the GKI modules in '
			       'modules/gki/ export: ' + '; '.join(unmet))
	check_load(listing, listed, [Path(m).name for m in own],
		   {Path(m).name: [Path(d).name for d in ds if d.startswith(prefix)]
		    for m, ds in deps.items() if m.startswith(prefix)})
	(dest / LOAD).write_text(''.join(f'{m}\n' for m in listed))
	lines = closure([prefix + m for m in listed], deps)
	(dest / DEP).write_text(''.join(f'{m}:' + ''.join(f' {d}' for d in ds) + '\n'
					for m, ds in sorted(lines.items())))
