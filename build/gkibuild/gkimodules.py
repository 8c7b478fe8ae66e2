# SPDX-License-Identifier: GPL-2.0
"""GKI modules: the GKI's own loadable modules, as Android's system_dlkm.

common/gki_modules lists them by their path in the kernel tree
(drivers/block/zram/zram.ko), the order they load in.  The build checks
the list against what kbuild built (modules.order): a module the
configuration builds and the list lacks fails the build, and so does, for
a variant that builds the whole GKI, a listed module it did not build.
The dist ships them flat in modules/gki/ with depmod's modules.dep and
modules.alias and a modules.load in which each module follows those it
depends on.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from gkibuild.util import GkiError

LIST = 'gki_modules'		# in common/
# depmod's outputs the dist keeps (text; the .bin indexes are caches).
DEPMOD_FILES = ('modules.dep', 'modules.alias', 'modules.softdep')
LOAD = 'modules.load'


def read_list(path: Path) -> list[str]:
	"""The listed modules, in order: one tree path per line, '#'
	comments; a duplicate or a name that is not a .ko is an error."""
	out: list[str] = []
	for n, line in enumerate(path.read_text().splitlines(), 1):
		line = line.split('#', 1)[0].strip()
		if not line:
			continue
		if not line.endswith('.ko') or line.startswith('/'):
			raise GkiError(f'{path}:{n}: expected a module path in the tree, like '
				       f'drivers/block/zram/zram.ko, got {line!r}')
		if line in out:
			raise GkiError(f'{path}:{n}: {line} is listed twice')
		out.append(line)
	return out


def check(built: list[str], listed: list[str], whole: bool, list_path: Path) -> None:
	"""built (tree paths, from modules.order) against the list: a built
	module must be listed; with whole (the variant builds the GKI's whole
	configuration), a listed one must be built."""
	extra = sorted(set(built) - set(listed))
	missing = sorted(set(listed) - set(built)) if whole else []
	msg = []
	if extra:
		msg.append(f'built but not in {list_path} (add them, or drop their options from '
			   f'the configuration): {" ".join(extra)}')
	if missing:
		msg.append(f'listed in {list_path} but not built (their options are off): '
			   f'{" ".join(missing)}')
	names = [Path(m).name for m in built]
	dups = sorted({n for n in names if names.count(n) > 1})
	if dups:
		msg.append(f'modules/gki/ is flat, and these names are built twice: {" ".join(dups)}')
	if msg:
		raise GkiError('GKI modules: ' + '; '.join(msg))


def parse_dep(text: str) -> dict[str, list[str]]:
	"""modules.dep: module -> the modules it needs, as depmod names
	them (relative to the module folder)."""
	deps = {}
	for line in text.splitlines():
		mod, sep, rest = line.partition(':')
		if sep:
			deps[mod.strip()] = rest.split()
	return deps


def load_order(listed: list[str], deps: dict[str, list[str]]) -> list[str]:
	"""Every listed module (by file name) after the modules it needs,
	otherwise in the list's order.  A dependency cycle, or one on a
	module that is not a GKI module, is an error."""
	names = [Path(m).name for m in listed]
	order: list[str] = []
	state: dict[str, str] = {}

	def visit(name: str, chain: list[str]) -> None:
		if state.get(name) == 'done':
			return
		if state.get(name) == 'open':
			raise GkiError(f'GKI modules: dependency cycle {" -> ".join(chain + [name])}')
		if name not in names:
			raise GkiError(f'GKI modules: {chain[-1]} needs {name}, which is not a GKI '
				       'module')
		state[name] = 'open'
		for dep in deps.get(name, []):
			visit(Path(dep).name, chain + [name])
		state[name] = 'done'
		order.append(name)

	for name in names:
		visit(name, [])
	return order


def stage(kos: list[Path], listed: list[str], release: str, dest: Path) -> None:
	"""Copy the modules flat into dest, with depmod's files and
	modules.load."""
	dest.mkdir(parents=True)
	by_name = {ko.name: ko for ko in kos}
	with tempfile.TemporaryDirectory() as tmp:
		moddir = Path(tmp) / 'lib' / 'modules' / release
		moddir.mkdir(parents=True)
		for name, ko in sorted(by_name.items()):
			shutil.copy2(ko, moddir / name)
			shutil.copy2(ko, dest / name)
		res = subprocess.run(['depmod', '-b', tmp, release], capture_output=True, text=True,
				     env={'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LC_ALL': 'C'})
		if res.returncode:
			raise GkiError(f'depmod failed: {res.stderr.strip()[-500:]}')
		for f in DEPMOD_FILES:
			shutil.copy2(moddir / f, dest / f)
		deps = parse_dep((moddir / 'modules.dep').read_text())
	order = load_order([m for m in listed if Path(m).name in by_name], deps)
	(dest / LOAD).write_text(''.join(f'{name}\n' for name in order))
