# SPDX-License-Identifier: GPL-2.0
"""The guest userland: static arm64 test programs built with the pinned
clang and lld against Debian's arm64 sysroot, and the initramfs holding
them, busybox, /init and the modules from dist."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
from pathlib import Path

from gkibuild import toolchain
from gkibuild.layout import Layout, Variant
from gkibuild.util import GkiError, run_logged, write_if_changed

# clang finds the sysroot of libc6-dev-arm64-cross and the gcc runtime of
# libgcc-12-dev-arm64-cross by the target triple.
TARGET_CFLAGS = ['--target=aarch64-linux-gnu', '-fuse-ld=lld', '-static', '-O2', '-g',
		 '-Wall', '-Werror', '-D_GNU_SOURCE', '-pthread']
# Device tools also build for the machine that runs the build, with its
# liblz4 (liblz4-dev); --as-needed: only the tools that use it depend on it.
HOST_CFLAGS = ['-O2', '-g', '-Wall', '-Werror', '-D_GNU_SOURCE']
HOST_LIBS = ['-Wl,--as-needed', '-llz4']


@dataclasses.dataclass(frozen=True)
class Program:
	name: str
	srcs: tuple[Path, ...]	# .c files, or one executable script copied as is

	@property
	def is_script(self) -> bool:
		return self.srcs[0].suffix != '.c'


def discover(layout: Layout, kind: str) -> list[Program]:
	"""Programs of a kind: 'suites' (qemu/suites/ and each vendor module's
	tests/), 'bench' (qemu/bench/ and each vendor's bench/): one program
	per .c file or executable script; 'tools' (qemu/tools/<name>/ and each
	vendor's tools/<name>/): one program per folder (see _tools)."""
	if kind == 'tools':
		return _tools(layout)
	dirs = [layout.qemu / kind]
	sub = 'tests' if kind == 'suites' else kind
	if layout.vendor_modules.is_dir():
		dirs += sorted(d / sub for d in layout.vendor_modules.iterdir())
	progs = []
	for d in dirs:
		if not d.is_dir():
			continue
		for p in sorted(d.iterdir()):
			if p.suffix == '.c':
				progs.append(Program(p.stem, (p,)))
			elif p.is_file() and os.access(p, os.X_OK):
				progs.append(Program(p.name, (p,)))
	names = [p.name for p in progs]
	dups = sorted({n for n in names if names.count(n) > 1})
	if dups:
		raise GkiError(f'guest programs with the same name: {", ".join(dups)}')
	return progs


def tool_dirs(layout: Layout) -> list[Path]:
	"""qemu/tools/ and each vendor's tools/."""
	dirs = [layout.qemu / 'tools']
	if layout.vendor_modules.is_dir():
		dirs += sorted(d / 'tools' for d in layout.vendor_modules.iterdir())
	return [d for d in dirs if d.is_dir()]


def _tools(layout: Layout) -> list[Program]:
	"""One program per folder of a tools/ folder, from its .c files plus
	those of the tools/lib/ beside it (a library a vendor's tools share);
	tools/tests/ holds host tests."""
	progs = []
	for d in tool_dirs(layout):
		lib = tuple(sorted((d / 'lib').glob('*.c')))
		for t in sorted(d.iterdir()):
			if t.name in ('lib', 'tests') or not list(t.glob('*.c')):
				continue
			progs.append(Program(t.name, tuple(sorted(t.glob('*.c'))) + lib))
	return progs


def lib_flags(layout: Layout) -> list[str]:
	"""The tools' shared libraries' headers, for tools and guest tests."""
	flags = []
	for d in tool_dirs(layout):
		if (d / 'lib').is_dir():
			flags += ['-I', str(d / 'lib')]
	return flags


def _stale(out: Path, dep_file: Path, cmd_file: Path, cmd: str) -> bool:
	"""True unless out was built by cmd (the same command line and
	compiler) and is newer than every file the .d file lists."""
	if not out.exists() or not dep_file.exists():
		return True
	try:
		if cmd_file.read_text() != cmd:
			return True
	except OSError:
		return True
	deps = dep_file.read_text().replace('\\\n', ' ').split()
	deps = [d for d in deps if not d.endswith(':')]
	mtime = out.stat().st_mtime_ns
	return any(not Path(d).exists() or Path(d).stat().st_mtime_ns > mtime for d in deps)


def _compiler_id() -> str:
	"""The pinned clang's identity: an upgrade rebuilds every program."""
	clang = (toolchain.LLVM_BIN / 'clang').resolve()
	st = clang.stat()
	return f'{clang} {st.st_size} {st.st_mtime_ns}'


def vendor_uapi_flags(layout: Layout) -> list[str]:
	flags = []
	if layout.vendor_modules.is_dir():
		for d in sorted(layout.vendor_modules.glob('*/include/uapi')):
			flags += ['-isystem', str(d)]
	return flags


def include_flags(layout: Layout, uapi: Path) -> list[str]:
	flags = ['-isystem', str(uapi),
		 '-I', str(layout.src / 'tools' / 'testing' / 'selftests'),
		 '-I', str(layout.qemu / 'include'), *vendor_uapi_flags(layout)]
	return flags + lib_flags(layout) + ['-isystem', str(_lz4(layout) / 'usr' / 'include')]


def _lz4(layout: Layout) -> Path:
	"""Debian's liblz4-dev for arm64, unpacked by build/deps.sh."""
	return layout.out / 'guest-pkgs' / 'liblz4-dev'


def link_flags(layout: Layout) -> list[str]:
	"""Libraries guest programs may use; after the sources, since a
	static link only takes what earlier objects need."""
	return ['-L', str(_lz4(layout) / 'usr' / 'lib' / 'aarch64-linux-gnu'), '-llz4']


def compile_programs(layout: Layout, uapi: Path, progs: list[Program], dest: str | Path,
		     host: bool = False) -> dict[str, Path]:
	"""Compile (or copy) each program into dest (a folder, or a path
	relative to out/), for arm64 or, with host, for the build machine;
	returns name -> path."""
	env = toolchain.hermetic_env(use_ccache=False)
	outdir = layout.out / dest
	outdir.mkdir(parents=True, exist_ok=True)
	log = layout.log(None, 'host-programs' if host else 'guest-programs')
	if host:
		flags = HOST_CFLAGS + lib_flags(layout) + vendor_uapi_flags(layout)
		libs = HOST_LIBS
	else:
		flags = TARGET_CFLAGS + include_flags(layout, uapi)
		libs = link_flags(layout)
	built = {}
	for p in progs:
		out = outdir / p.name
		if p.is_script:
			write_if_changed(out, p.srcs[0].read_bytes())
			out.chmod(0o755)
		else:
			dep = outdir / f'{p.name}.d'
			# One dependency file for all sources: compile and link at once.
			cmd = ['clang', *flags, '-MD', '-MF', str(dep), '-o', str(out),
			       *map(str, p.srcs), *libs]
			cmd_file = outdir / f'{p.name}.cmd'
			stamp = f'{_compiler_id()}\n{shlex.join(cmd)}\n'
			if _stale(out, dep, cmd_file, stamp):
				cmd_file.unlink(missing_ok=True)
				run_logged(cmd, log, env=env, what=f'compiling {p.name}')
				cmd_file.write_text(stamp)
		built[p.name] = out
	return built


def busybox(layout: Layout) -> Path:
	path = layout.out / 'guest-pkgs' / 'busybox-static' / 'bin' / 'busybox'
	if not path.exists():
		raise GkiError(f'{path} is missing; build/deps.sh unpacks it (run ./build/gki build)')
	return path


def write_cpio(layout: Layout, v: Variant, dist: Path, programs: dict[str, Path],
	       tools: dict[str, Path], lists: dict[str, list[str]]) -> Path:
	"""Write the initramfs for variant v with gen_init_cpio: programs go
	to /tests, tools to /bin; lists maps /etc/gki/<mode> to the command
	lines /init runs in that mode."""
	gdir = layout.guest(v)
	gdir.mkdir(parents=True, exist_ok=True)
	spec = ['dir /dev 0755 0 0', 'nod /dev/console 0600 0 0 c 5 1']
	spec += [f'dir /{d} 0755 0 0' for d in
		 ('bin', 'sbin', 'proc', 'sys', 'tmp', 'mnt', 'mnt/scratch', 'etc', 'etc/gki',
		  'tests', 'modules', 'root')]
	spec += [f'file /bin/busybox {busybox(layout)} 0755 0 0',
		 f'file /init {layout.qemu / "init"} 0755 0 0']
	for name, path in sorted(programs.items()):
		spec.append(f'file /tests/{name} {path} 0755 0 0')
	for name, path in sorted(tools.items()):
		spec.append(f'file /bin/{name} {path} 0755 0 0')

	mods = dist / 'modules'
	for d in sorted(p for p in mods.rglob('*') if p.is_dir()):
		spec.append(f'dir /modules/{d.relative_to(mods)} 0755 0 0')
	kos = sorted(mods.rglob('*.ko'))
	for ko in kos:
		spec.append(f'file /modules/{ko.relative_to(mods)} {ko} 0644 0 0')

	etc = gdir / 'etc'
	release = json.loads((dist / 'manifest.json').read_text())['kernel_release']
	files = {'kernel.release': release + '\n', 'variant': v.name + '\n',
		 # What the build produced, so that a guest suite can tell a
		 # missing module or tool from one that was never built.
		 'modules': ''.join(f'{ko.relative_to(mods)}\n' for ko in kos),
		 'tools': ''.join(f'{name}\n' for name in sorted(tools))}
	files.update({mode: ''.join(c + '\n' for c in cmds) for mode, cmds in lists.items()})
	for name, text in files.items():
		write_if_changed(etc / name, text.encode())
		spec.append(f'file /etc/gki/{name} {etc / name} 0644 0 0')

	spec_file = gdir / 'initramfs.list'
	spec_file.write_text('\n'.join(spec) + '\n')
	return cpio_from_spec(layout, v)


def cpio_from_spec(layout: Layout, v: Variant) -> Path:
	"""(Re)write the variant's initramfs from its gen_init_cpio list."""
	gdir = layout.guest(v)
	out = gdir / 'initramfs.cpio'
	gen = layout.obj(v) / 'usr' / 'gen_init_cpio'
	if not gen.exists():
		raise GkiError(f'{gen} is missing (CONFIG_BLK_DEV_INITRD builds it)')
	with out.open('wb') as f:
		rc = subprocess.call([str(gen), '-t', '0', str(gdir / 'initramfs.list')], stdout=f)
	if rc:
		raise GkiError(f'gen_init_cpio failed on {gdir / "initramfs.list"}')
	return out


def scratch_disk(path: Path, size_mb: int = 256) -> Path:
	"""A fresh ext4 image for the guest's /mnt/scratch."""
	path.parent.mkdir(parents=True, exist_ok=True)
	path.unlink(missing_ok=True)
	with path.open('wb') as f:
		f.truncate(size_mb << 20)
	log = path.with_suffix('.mkfs.log')
	log.unlink(missing_ok=True)
	run_logged(['mkfs.ext4', '-q', '-F', '-E', 'root_owner=0:0', str(path)], log,
		   what='mkfs.ext4')
	return path
