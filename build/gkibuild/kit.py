# SPDX-License-Identifier: GPL-2.0
"""The module kit: what a vendor needs to build modules against this GKI
outside this repository, and nothing more (docs/kmi-vendors.md).

The kernel's own scripts/package/install-extmod-build, which Debian's
linux-headers and Fedora's kernel-devel packages are made with, copies an
external module build's share of the tree: the top Makefile, arch/arm64's
Makefiles and headers, include/, scripts/ with its host programs (modpost,
genksyms, fixdep) and module linker script, include/config/auto.conf,
include/generated/ and Module.symvers (the KMI's CRCs, the GKI modules'
exports included).  The kit adds the .config, gki-kit.json naming the
compiler it needs, and GNUmakefile, which make reads before Makefile:
the kernel only warns when a module's compiler differs from the kernel's,
the kit refuses with one line.  A vendor builds with the kernel's
standard interface, as with linux-headers:

	make -C KIT M=DIR ARCH=arm64 LLVM=1 modules
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from gkibuild import kconfig
from gkibuild.util import GkiError, sha256_file, write_tarball

TARBALL = 'gki-kit.tar.gz'
MANIFEST = 'gki-kit.json'
TOP = 'gki-kit'		# the folder the tarball unpacks into

# GNUmakefile: {text} is the compiler's first --version line, as kbuild
# records it (CONFIG_CC_VERSION_TEXT), {major} clang's major version.  kit-cc is the compiler kbuild's
# Makefile will pick from CC or LLVM (LLVM=1, LLVM=/dir/, LLVM=-19).
GNUMAKEFILE = '''\
# SPDX-License-Identifier: GPL-2.0
# The GKI module kit (make reads GNUmakefile before Makefile).  Build
# modules with the kernel's interface for external modules:
#
#	make -C <kit> M=<module folder> ARCH=arm64 LLVM=1 modules
#
# kbuild only warns when a module's compiler differs from the one that
# built the kernel; this kit refuses: gki-kit.json names the one it needs.
kit-cc-text := {text}
pound := \\#

ifeq ($(origin CC),command line)
kit-cc := $(CC)
else ifneq ($(filter %/,$(LLVM)),)
kit-cc := $(LLVM)clang
else ifneq ($(filter -%,$(LLVM)),)
kit-cc := clang$(LLVM)
else ifneq ($(LLVM),)
kit-cc := clang
else
kit-cc := $(CROSS_COMPILE)gcc
endif
kit-cc-found := $(subst $(pound),,$(shell LC_ALL=C $(kit-cc) --version 2>/dev/null | head -n 1))

ifneq ($(ARCH),arm64)
$(error gki-kit: this kit builds arm64 modules: make -C <kit> M=<dir> ARCH=arm64 LLVM=1 modules)
endif
ifneq ($(kit-cc-found),$(kit-cc-text))
$(error gki-kit: the GKI was built by "$(kit-cc-text)", but $(kit-cc) is \
"$(kit-cc-found)": build with that compiler (LLVM=1 with clang {major} \
first in PATH, or LLVM=-{major}))
endif

include $(dir $(lastword $(MAKEFILE_LIST)))Makefile
'''


def toolchain(config: str) -> dict[str, object]:
	"""The compiler a .config was built with: clang's major version and
	the exact version string."""
	opts = kconfig.parse(config)
	number, text = opts.get('CONFIG_CLANG_VERSION', '0'), opts.get('CONFIG_CC_VERSION_TEXT')
	if not number.isdigit() or int(number) == 0 or not text:
		raise GkiError('the kit needs a kernel built by clang (CONFIG_CLANG_VERSION)')
	return {'clang_major': int(number) // 10000, 'version_text': text.strip('"')}


def stage(src: Path, obj: Path, dest: Path, env: dict[str, str]) -> dict[str, object]:
	"""Fill dest with the kit of the kernel built from src into obj;
	returns its manifest."""
	if dest.exists():
		shutil.rmtree(dest)
	script = src / 'scripts' / 'package' / 'install-extmod-build'
	# CC and HOSTCC the same: the host programs built for this machine
	# are copied, not rebuilt.
	run_env = {**env, 'srctree': str(src), 'SRCARCH': 'arm64', 'CC': 'clang',
		   'HOSTCC': 'clang', 'MAKE': 'make'}
	res = subprocess.run(['sh', str(script), str(dest)], cwd=obj, env=run_env,
			     capture_output=True, text=True)
	if res.returncode:
		raise GkiError(f'{script.name} failed: {res.stderr.strip()[-2000:]}')
	config = (obj / '.config').read_text()
	shutil.copy2(obj / '.config', dest / '.config')
	tools = toolchain(config)
	(dest / 'GNUmakefile').write_text(GNUMAKEFILE.format(text=tools['version_text'],
							    major=tools['clang_major']))
	manifest = {
		'arch': 'arm64',
		'kernel_release': (obj / 'include' / 'config' / 'kernel.release').read_text().strip(),
		'toolchain': tools,
		'module_symvers_sha256': sha256_file(dest / 'Module.symvers'),
		'build': 'make -C <kit> M=<module folder> ARCH=arm64 LLVM=1 modules',
	}
	(dest / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + '\n')
	return manifest


def write(src: Path, obj: Path, tarball: Path, env: dict[str, str]) -> dict[str, object]:
	"""The kit as a reproducible tarball whose files are under TOP/."""
	with tempfile.TemporaryDirectory(dir=tarball.parent) as tmp:
		dest = Path(tmp) / TOP
		manifest = stage(src, obj, dest, env)
		write_tarball(dest, TOP, tarball)
	return manifest
