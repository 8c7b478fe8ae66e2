# SPDX-License-Identifier: GPL-2.0
"""The pinned LLVM toolchain and the sanitized build environment."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from gkibuild import genksyms_cache
from gkibuild.layout import TOP
from gkibuild.util import GkiError, capture, ccache_dir

LLVM_MAJOR = 19
LLVM_BIN = Path(f'/usr/lib/llvm-{LLVM_MAJOR}/bin')
# ccache's prefix command in every build: the compile a distcc host does.
CC_UNIT = Path(__file__).resolve().parent.parent / 'cc-unit'
# kbuild's symbol versions through a cache (genksyms_cache.py).
GENKSYMS_CACHE = Path(__file__).resolve().parent.parent / 'genksyms-cache'

# Fixed identity so two builds of the same inputs are bit-identical.
BUILD_IDENTITY = {
	'KBUILD_BUILD_USER': 'gki',
	'KBUILD_BUILD_HOST': 'gki-builder',
	'KBUILD_BUILD_TIMESTAMP': 'Thu Jan  1 00:00:00 UTC 2026',
	'KBUILD_BUILD_VERSION': '1',
}

# Debug info records paths; map the output-dependent ones to fixed names.
# No trailing '/' on the directories: the map must match the compile
# directory itself.
SRC_MAP = '/gki/src'
OBJ_MAP = '/gki/obj'


def llvm_bin(major: int) -> Path:
	return Path(f'/usr/lib/llvm-{major}/bin')


def hermetic_env(use_ccache: bool = True, major: int = LLVM_MAJOR,
		 base: Path = TOP) -> dict[str, str]:
	"""The whole environment of every compiler and make run: nothing from
	the caller's environment leaks in.  use_ccache False: the cache is
	written, never read, so every compile runs.  major: another Debian
	LLVM, for 'abi compare --toolchain' only.  base: ccache's base_dir,
	the checkout (make_vars says why)."""
	env = {
		'PATH': f'{llvm_bin(major)}:/usr/sbin:/usr/bin:/sbin:/bin',
		'LC_ALL': 'C',
		'TZ': 'UTC',
		'HOME': '/nonexistent',
		# setlocalversion appends '+' when LOCALVERSION is unset.
		'LOCALVERSION': '',
		**BUILD_IDENTITY,
	}
	if shutil.which('ccache', path=env['PATH']):
		env.update({
			'CCACHE_DIR': str(ccache_dir()),
			# Paths are mapped by -ffile-prefix-map, so the compile
			# directory need not be part of the hash.
			'CCACHE_NOHASHDIR': '1',
			# Absolute paths under the checkout (the tree and obj
			# folders in out/, the module mirrors) are rewritten
			# relative to the compile directory: a clone in another
			# folder hashes the same command lines (make_vars).
			'CCACHE_BASEDIR': str(base),
			# The absolute maps name the clone's own folder; the
			# relative ones, hashed, say the same (path_maps).
			'CCACHE_IGNOREOPTIONS': '-ffile-prefix-map=/*',
			# A re-extracted tree has new header mtimes.
			'CCACHE_SLOPPINESS': 'include_file_mtime,include_file_ctime',
			'CCACHE_MAXSIZE': '10G',
			# Each C file compiles from its preprocessed text, as on
			# a distcc host (make_vars); with DISTCC_HOSTS set
			# (distcc.build_env), through distcc.
			'CCACHE_PREFIX': str(CC_UNIT),
			'CCACHE_EXTRAFILES': str(CC_UNIT),
			# genksyms's output, cached beside the objects.
			genksyms_cache.ENV_DIR: str(ccache_dir() / 'genksyms'),
		})
		if not use_ccache:
			env['CCACHE_RECACHE'] = '1'
	return env


# Every C file of the kernel and the modules compiles from its
# preprocessed text, here (cc-unit, hermetic_env's CCACHE_PREFIX) as on a
# distcc host: a token in a macro argument that spans lines is on the
# macro's line in that text, and a compile of the source would put its own
# line in the line table.  The flags that go with it, local or farm:
#  - no column numbers in the debug info: columns count in the expanded
#    text (with DWARF 4, gki.config, the rest of the debug info is the same);
#  - the compile directory named: a distcc host compiles in its own;
#  - the kernel's preprocessor options (-fmacro-prefix-map) are unused by
#    that compile, which -Werror=unused-command-line-argument would make an
#    error;
#  - warnings that clang gives only outside macros would fire on every
#    expanded macro (no_printk's "({ if (0) ...; 0; })" alone, thousands):
#    off.  BUILD.md, "distcc", says what that costs.
PREPROCESSED_FLAGS = f'-fdebug-compilation-dir={OBJ_MAP} -Qunused-arguments'
PREPROCESSED_CFLAGS = ('-gno-column-info -Wno-unused-value -Wno-self-assign '
		       '-Wno-tautological-compare -Wno-parentheses-equality '
		       '-Wno-tautological-overlap-compare -Wno-constant-logical-operand '
		       '-Wno-misleading-indentation')


def prefix_map_flags(pairs: list[tuple[str | Path, str]]) -> str:
	return ' '.join(f'-ffile-prefix-map={src}={dst}' for src, dst in pairs)


def _under(path: Path, base: Path) -> bool:
	return path == base or base in path.parents


def path_maps(env: dict[str, str], src: Path, obj: Path,
	      extra: list[tuple[Path, str]]) -> str:
	"""The prefix maps of a build whose compiles run in obj.

	Where ccache's base_dir holds every folder, ccache hands the compiler
	each absolute path under it made relative to obj ('../../src/linux/
	mm/x.c'), so the maps name the folders that way too, and the command
	line it hashes is the same in every clone: a clone in another folder
	hits the cache.  The relative names also miss kbuild's absolute
	-fmacro-prefix-map=$(srctree)/, so ours gives __FILE__ its usual
	'mm/x.c'.  The absolute maps stay for the compiles ccache does not
	cache and runs as they came (an assembler file with .incbin, such as
	usr/initramfs_data.S); hermetic_env keeps them out of the hash."""
	base = env.get('CCACHE_BASEDIR')
	pairs = [(src, SRC_MAP), *extra]
	absolute = prefix_map_flags(pairs + [(obj, OBJ_MAP)])
	if base and all(_under(p, Path(base)) for p in (src, obj, *(p for p, _ in extra))):
		rel = [(os.path.relpath(p, obj), dst) for p, dst in pairs]
		return f'{prefix_map_flags(rel)} -fmacro-prefix-map={rel[0][0]}/= {absolute}'
	return absolute


def make_vars(env: dict[str, str], src: Path, obj: Path,
	      extra_maps: list[tuple[Path, str]] | None = None) -> list[str]:
	"""make command-line variables for a kernel or external-module build:
	every compile through ccache and its prefix command, cc-unit."""
	if 'CCACHE_DIR' not in env:
		raise GkiError('ccache not found: every kernel compile goes through it '
			       '(build/deps.sh installs it)')
	aflags = path_maps(env, src, obj, extra_maps or []) + ' ' + PREPROCESSED_FLAGS
	return ['ARCH=arm64', 'LLVM=1', 'CC=ccache clang',
		f'KCFLAGS={aflags} {PREPROCESSED_CFLAGS}', f'KAFLAGS={aflags}',
		genksyms_cache.make_var(GENKSYMS_CACHE)]


def _version(tool: str, env: dict[str, str]) -> str:
	out = capture([tool, '--version'], env=env)
	m = re.search(r'(?:LLD|version) (\d+)\.(\d+)\.(\d+)', out)
	if not m:
		raise GkiError(f'cannot read the version of {tool}')
	return '.'.join(m.groups())


def check(env: dict[str, str], major: int = LLVM_MAJOR) -> dict[str, str]:
	"""Return the toolchain versions; stop when the major is not pinned
	(or, for a comparison, not the one asked for)."""
	versions = {}
	for tool in ('clang', 'ld.lld', 'llvm-objcopy'):
		path = shutil.which(tool, path=env['PATH'])
		if not path:
			raise GkiError(f'{tool} not found in {llvm_bin(major)}; install clang-{major}, '
				       f'lld-{major} and llvm-{major}')
		versions[tool] = _version(path, env)
		found = int(versions[tool].split('.')[0])
		if found != major:
			want = 'the build is pinned to' if major == LLVM_MAJOR else 'expected'
			raise GkiError(f'{path} is LLVM {found}, {want} LLVM {major}')
	return versions
