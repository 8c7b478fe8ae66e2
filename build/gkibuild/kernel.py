# SPDX-License-Identifier: GPL-2.0
"""Kernel stage: configure and build Image, Image.lz4, vmlinux, in-tree
modules and the UAPI headers in out/<variant>/obj."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from gkibuild import genksyms_cache, gkimodules, kconfig, progress, signing, toolchain, treesync
from gkibuild.abi import kmi, protected
from gkibuild.layout import Layout, Variant
from gkibuild.util import (
	GkiError, info, mtimes, rebuilt, run_logged, sha256_file, sha256_text, write_if_changed)


TOOLCHAIN_STAMP = 'gki-toolchain.json'


class Kernel:
	def __init__(self, layout: Layout, variant: Variant, env: dict[str, str], jobs: int,
		     signing_key: Path | None = None):
		self.layout = layout
		self.variant = variant
		self.env = env
		self.jobs = jobs
		# The key the GKI modules are signed with (signing.py); None:
		# the one the object folder has, else out/'s throwaway key.
		self.signing_key = signing_key
		self.obj = layout.obj(variant)
		self.log = layout.log(variant, 'kernel')
		self.rebuilt: list[str] = []	# objects the last build() wrote

	def make(self, *targets: str, extra: list[str] | None = None, what: str = 'make') -> None:
		cmd = ['make', '-C', str(self.layout.src), f'O={self.obj}', f'-j{self.jobs}',
		       *toolchain.make_vars(self.env, self.layout.src, self.obj), *(extra or []),
		       *targets]
		run_logged(cmd, self.log, env=self.env, what=what)

	def check_toolchain(self, versions: dict[str, str]) -> None:
		"""A different compiler or linker rebuilds everything: objects
		built by another toolchain are dropped rather than trusted to
		kbuild's CC_VERSION_TEXT tracking, which misses lld and objcopy.
		A change to build/cc-unit, which runs every C compile, counts."""
		stamp = self.obj / TOOLCHAIN_STAMP
		unit = sha256_file(toolchain.CC_UNIT)[:16]
		text = json.dumps({**versions, 'cc-unit': unit}, sort_keys=True)
		try:
			old = stamp.read_text()
		except OSError:
			old = None
		if old is not None and old != text:
			info(f'toolchain changed ({old} -> {text}): rebuilding {self.variant.name} '
			     'from scratch')
			# The clean build that follows compiles what the last one did.
			total = progress.expected(self.obj)
			for d in (self.obj, self.layout.ext(self.variant)):
				shutil.rmtree(d, ignore_errors=True)
			if total:
				self.obj.mkdir(parents=True)
				progress.remember(self.obj, total)
		self.obj.mkdir(parents=True, exist_ok=True)
		write_if_changed(stamp, text.encode())

	def configure(self) -> str:
		"""Write .config; returns its sha256.  Skipped when the fragments
		and the tree are unchanged since the last run and .config is the
		one that run wrote: a .config edited by hand is written again
		from common/, saying so."""
		self.obj.mkdir(parents=True, exist_ok=True)
		frags = [self.layout.common / f for f in self.variant.fragments]
		text = kconfig.merge(frags)
		fragment = self.obj / 'gki.fragment'
		config = self.obj / '.config'
		tree = (self.layout.src.parent / 'stamp.json').read_text()
		stamp = self.obj / 'gki.config.stamp'
		digest = sha256_text(text, tree, self.variant.base)
		old = stamp.read_text().split() if stamp.exists() else []
		have = sha256_text(config.read_bytes()) if config.exists() else None
		if old == [digest, have]:
			return have
		if len(old) == 2 and old[0] == digest and have:
			info(f'{config} is not the one common/ gives (edited by hand?): configured '
			     'again; lasting changes belong in common/ (BUILD.md, "Configuration")')
		stamp.unlink(missing_ok=True)
		write_if_changed(fragment, text.encode())
		# One make: base with the fragment writes a resolved .config
		# (an olddefconfig after it rewrote the same bytes and cost
		# each configure another 18 s of the Kconfig's compiler probes).
		base = self.variant.base
		self.make(base, extra=[f'KCONFIG_ALLCONFIG={fragment}'], what=f'make {base}')
		kconfig.verify(text, config)
		have = sha256_text(config.read_bytes())
		stamp.write_text(f'{digest} {have}\n')
		return have

	def build(self, kmi_symbols: set[str]) -> None:
		"""Build with the exports trimmed to kmi_symbols: the fragment's
		CONFIG_UNUSED_KSYMS_WHITELIST names this file, relative to the obj
		folder, so .config holds no absolute path.  On a terminal a live
		line follows make; a clean build records its object count as the
		next clean build's expected total (progress.py)."""
		kmi.write_whitelist(self.obj / kmi.WHITELIST, kmi_symbols)
		if self.signs_modules():
			self.install_signing_key()
		if self.config('MODULE_SIG_PROTECT') == 'y':
			self.install_protected_exports()
		if genksyms_cache.ENV_DIR in self.env:
			genksyms_cache.prune(Path(self.env[genksyms_cache.ENV_DIR]))
		before = mtimes(self.obj, '.o')
		clean = progress.fresh(before, self.obj)
		total = progress.expected(self.obj) if clean else None
		# Labelled as the stage's closing line, which takes its place.
		label = f'kernel-{self.variant.name} ({self.variant.name})'
		with progress.Compiled(label, self.log, total) as compiled:
			self.make('Image', 'Image.lz4', 'modules', what='kernel build')
		if clean:
			progress.remember(self.obj, compiled.count)
		self.rebuilt = rebuilt(before, mtimes(self.obj, '.o'))
		with self.log.open('a') as f:
			f.write(f'gki: {len(self.rebuilt)} objects rebuilt\n')
			f.write(''.join(f'gki: rebuilt {p}\n' for p in self.rebuilt))

	def headers(self) -> Path:
		"""Install the UAPI headers into obj/uapi.  headers_install
		copies with rsync without keeping times, so every run would
		restamp every header and rebuild every program that includes
		one: install beside, then sync by content."""
		dest = self.obj / 'uapi'
		tmp = self.obj / 'uapi.tmp'
		shutil.rmtree(tmp, ignore_errors=True)
		self.make('headers_install', extra=[f'INSTALL_HDR_PATH={tmp}'],
			  what='headers_install')
		if dest.is_dir():
			treesync.sync(tmp, dest)
			shutil.rmtree(tmp)
		else:
			tmp.rename(dest)
		return dest / 'include'

	def config(self, name: str) -> str | None:
		"""The value of CONFIG_<name> in .config (None: not set)."""
		return kconfig.parse((self.obj / '.config').read_text()).get(f'CONFIG_{name}')

	def trims_exports(self) -> bool:
		"""Does this variant trim its exports to the KMI?"""
		return self.config('TRIM_UNUSED_KSYMS') == 'y'

	def signs_modules(self) -> bool:
		"""Does this variant sign its modules as it installs them?"""
		return self.config('MODULE_SIG_ALL') == 'y'

	def install_signing_key(self) -> None:
		"""Put the signing key where CONFIG_MODULE_SIG_KEY points: the
		given key, else the one the object folder has (a scratch copy of
		a built tree keeps its own), else out/'s throwaway key."""
		if self.config('MODULE_SIG_KEY') != f'"{signing.KEY}"':
			raise GkiError(f'{self.obj}/.config: CONFIG_MODULE_SIG_KEY must be '
				       f'"{signing.KEY}", the key the build installs (signing.py)')
		if self.signing_key:
			signing.install(self.signing_key, self.obj)
		elif not (self.obj / signing.KEY).exists():
			signing.install(signing.key(self.layout.out), self.obj)

	def install_protected_exports(self) -> None:
		"""Put abi/'s protected exports where CONFIG_MODULE_SIG_PROTECT_LIST
		points."""
		if self.config('MODULE_SIG_PROTECT_LIST') != f'"{protected.INSTALLED}"':
			raise GkiError(f'{self.obj}/.config: CONFIG_MODULE_SIG_PROTECT_LIST must be '
				       f'"{protected.INSTALLED}", the list the build installs '
				       '(abi/protected.py)')
		protected.install(self.layout.abi / protected.FILE, self.obj)

	def install_modules(self, dest: Path) -> Path:
		"""kbuild's modules_install into dest: every in-tree module
		without its debug info and, when the variant signs, signed.
		Returns the folder that holds them as in the tree
		(dest/lib/modules/<release>/kernel)."""
		self.make('modules_install', extra=[f'INSTALL_MOD_PATH={dest}', 'INSTALL_MOD_STRIP=1',
						    'DEPMOD=true'], what='modules_install')
		return dest / 'lib' / 'modules' / self.release() / 'kernel'

	def release(self) -> str:
		return (self.obj / 'include' / 'config' / 'kernel.release').read_text().strip()

	def gki_modules(self) -> list[str]:
		"""The GKI modules of common/gki_modules, checked against what
		this build made: every built module listed, and, for a variant
		that builds the whole GKI, every listed module built."""
		path = self.layout.common / gkimodules.LIST
		listed = gkimodules.read_list(path)
		built = [str(p.relative_to(self.obj)) for p in self.in_tree_modules()]
		gkimodules.check(built, listed, self.variant.whole, path)
		return listed

	def in_tree_modules(self) -> list[Path]:
		"""The in-tree modules of this configuration, from kbuild's
		modules.order: one the config no longer builds leaves its old .ko
		in obj/, which must not ship."""
		order = self.obj / 'modules.order'
		return sorted(self.obj / Path(l.strip()).with_suffix('.ko')
			      for l in order.read_text().splitlines() if l.strip())


def default_jobs() -> int:
	return os.cpu_count() or 1
