# SPDX-License-Identifier: GPL-2.0
"""User-space C programs: where each kind is found, and the one compiler
driver that builds them with the pinned clang, for the guest (arm64,
static, against a variant's UAPI headers) or for the build machine.

KINDS is the declaration the build, the host tests and the READMEs go by:

  kind        found in                                           targets
  suites      qemu/tests/, vendor_modules/*/tests/               guest
  bench       qemu/bench/, vendor_modules/*/bench/               guest
  tools       qemu/tools/NAME/, vendor_modules/*/tools/NAME/     guest, host
  host-tests  qemu/tools/tests/, vendor_modules/*/tools/tests/   host-asan

A tests/ folder holds the tests of the folder it is in, and a file's name
says its kind (BUILD.md, "Where tests live"): test_*.py a Python unittest
module, test_*.c a host C test, *_kunit.c a KUnit test that the module's
Kbuild builds, any other .c file or executable script a guest suite.

and each Target's command line is made in one place, Target.command();
`./build/gki programs [NAME]...` prints them (listing()).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
from pathlib import Path

from gkibuild import toolchain
from gkibuild.layout import Layout, Variant
from gkibuild.util import GkiError, run_logged, write_if_changed


@dataclasses.dataclass(frozen=True)
class Program:
	name: str
	srcs: tuple[Path, ...]	# .c files, or one executable script copied as is

	@property
	def is_script(self) -> bool:
		return self.srcs[0].suffix != '.c'


@dataclasses.dataclass(frozen=True)
class Target:
	"""How a program is compiled and linked, in one clang run:
	clang CFLAGS INCLUDES [-MD -MF DEP] -o OUT SOURCES LIB_DIRS LIBS.
	includes and lib_dirs name entries of include_sets() and
	lib_folders(); the libraries come after the sources, since a static
	link only takes what earlier objects need.  Compiles are logged to
	out/logs/LOG.log."""
	name: str
	log: str
	cflags: tuple[str, ...]
	includes: tuple[str, ...]
	libs: tuple[str, ...]
	lib_dirs: tuple[str, ...] = ()

	def command(self, layout: Layout, srcs: list[Path] | tuple[Path, ...], out: Path,
		    uapi: Path | None = None, dep: Path | None = None) -> list[str]:
		"""The compiler's argument list; 'clang' is the pinned one on the
		hermetic PATH (toolchain.hermetic_env())."""
		if 'uapi' in self.includes and uapi is None:
			raise GkiError(f'{self.name} programs build against a variant\'s UAPI headers')
		inc = include_sets(layout, uapi)
		dirs = lib_folders(layout)
		return ['clang', *self.cflags, *(f for n in self.includes for f in inc[n]),
			*(['-MD', '-MF', str(dep)] if dep else []), '-o', str(out), *map(str, srcs),
			*(f for n in self.lib_dirs for f in ('-L', str(dirs[n]))), *self.libs]

	def depend_command(self, layout: Layout, src: Path, uapi: Path | None = None) -> list[str]:
		"""What src depends on, as make rules on stdout (clang -M), with
		the flags it is compiled with; the link flags go unused."""
		inc = include_sets(layout, uapi)
		return ['clang', *self.cflags, *(f for n in self.includes for f in inc[n]),
			'-Qunused-arguments', '-M', str(src)]


# clang finds the sysroot of libc6-dev-arm64-cross and the gcc runtime of
# libgcc-12-dev-arm64-cross by the target triple.
GUEST = Target('guest', 'guest-programs',
	       cflags=('--target=aarch64-linux-gnu', '-fuse-ld=lld', '-static', '-O2', '-g',
		       '-Wall', '-Werror', '-D_GNU_SOURCE', '-pthread'),
	       includes=('uapi', 'selftests', 'qemu', 'vendor-uapi', 'tools-lib', 'lz4'),
	       lib_dirs=('lz4',), libs=('-llz4',))
# Device tools also build for the machine that runs the build, with its
# liblz4 (liblz4-dev); --as-needed: only the tools that use it depend on it.
HOST = Target('host', 'host-programs',
	      cflags=('-O2', '-g', '-Wall', '-Werror', '-D_GNU_SOURCE'),
	      includes=('tools-lib', 'vendor-uapi'), libs=('-Wl,--as-needed', '-llz4'))
# The vendors' C tests of their tool libraries: kselftest-harness programs
# for the build machine, with AddressSanitizer and UBSan (libclang-rt-19-dev).
HOST_ASAN = Target('host-asan', 'host-test-programs',
		   cflags=('-O1', '-g', '-Wall', '-Werror', '-D_GNU_SOURCE',
			   '-fsanitize=address,undefined', '-fno-sanitize-recover=all'),
		   includes=('selftests', 'tools-lib', 'vendor-uapi'), libs=('-llz4',))

KINDS: dict[str, tuple[Target, ...]] = {
	'suites': (GUEST,),
	'bench': (GUEST,),
	'tools': (GUEST, HOST),
	'host-tests': (HOST_ASAN,),
}


# Where programs are ----------------------------------------------------------

def host_folder(layout: Layout) -> Path:
	"""Where the build puts the tools built for the build machine."""
	return layout.out / 'host' / 'bin'


def guest_folder(layout: Layout, kind: str, v: Variant) -> Path:
	"""Where the build puts variant v's guest programs of a kind."""
	return layout.programs(v) / ('tools' if kind == 'tools' else 'tests')


def discover(layout: Layout, kind: str) -> list[Program]:
	"""Programs of a kind: 'suites' (qemu/tests/ and each vendor module's
	tests/, but their host C tests and KUnit tests), 'bench' (qemu/bench/
	and each vendor's bench/): one program per .c file or executable
	script; 'tools' (qemu/tools/<name>/ and each vendor's tools/<name>/):
	one program per folder (see _tools); 'host-tests': one per
	tools/tests/test_*.c (see _host_tests)."""
	if kind not in KINDS:
		raise GkiError(f'no kind of program named {kind}')
	if kind == 'tools':
		return _tools(layout)
	if kind == 'host-tests':
		return _host_tests(layout)
	sub = 'tests' if kind == 'suites' else kind
	dirs = [layout.qemu / sub]
	if layout.vendor_modules.is_dir():
		dirs += sorted(d / sub for d in layout.vendor_modules.iterdir())
	progs = []
	for d in dirs:
		if not d.is_dir():
			continue
		for p in sorted(d.iterdir()):
			if test_kind(p) not in ('guest suite', 'guest program'):
				continue
			progs.append(Program(p.stem if p.suffix == '.c' else p.name, (p,)))
	names = [p.name for p in progs]
	dups = sorted({n for n in names if names.count(n) > 1})
	if dups:
		raise GkiError(f'guest programs with the same name: {", ".join(dups)}')
	return progs


def test_kind(p: Path) -> str | None:
	"""What a file of a tests/ (or bench/) folder is, by its name:
	'python', 'host C test', 'KUnit', 'guest suite' (a .c file or an
	executable script of tests/), 'guest program' (of bench/); None
	for anything else (headers, data)."""
	if p.name.startswith('test_') and p.suffix == '.py':
		return 'python'
	if p.name.startswith('test_') and p.suffix == '.c':
		return 'host C test'
	if p.name.endswith('_kunit.c'):
		return 'KUnit'
	if p.suffix == '.c' or (p.is_file() and os.access(p, os.X_OK)):
		return 'guest suite' if p.parent.name == 'tests' else 'guest program'
	return None


def tool_dirs(layout: Layout) -> list[Path]:
	"""qemu/tools/ and each vendor's tools/."""
	dirs = [layout.qemu / 'tools']
	if layout.vendor_modules.is_dir():
		dirs += sorted(d / 'tools' for d in layout.vendor_modules.iterdir())
	return [d for d in dirs if d.is_dir()]


def _lib(d: Path) -> tuple[Path, ...]:
	"""The .c files of a tools/ folder's lib/: a library its tools share."""
	return tuple(sorted((d / 'lib').glob('*.c')))


def _tools(layout: Layout) -> list[Program]:
	"""One program per folder of a tools/ folder, from its .c files plus
	those of the tools/lib/ beside it; tools/tests/ holds host tests."""
	progs = []
	for d in tool_dirs(layout):
		for t in sorted(d.iterdir()):
			if t.name in ('lib', 'tests') or not list(t.glob('*.c')):
				continue
			progs.append(Program(t.name, tuple(sorted(t.glob('*.c'))) + _lib(d)))
	return progs


def _host_tests(layout: Layout) -> list[Program]:
	"""One program per tools/tests/test_*.c, with its tools/lib/."""
	return [Program(t.stem, (t, *_lib(d)))
		for d in tool_dirs(layout) for t in sorted((d / 'tests').glob('test_*.c'))]


# Include folders and libraries ------------------------------------------------

def lib_flags(layout: Layout) -> list[str]:
	"""The tools' shared libraries' headers, for tools and guest tests."""
	flags = []
	for d in tool_dirs(layout):
		if (d / 'lib').is_dir():
			flags += ['-I', str(d / 'lib')]
	return flags


def vendor_uapi_flags(layout: Layout) -> list[str]:
	flags = []
	if layout.vendor_modules.is_dir():
		for d in sorted(layout.vendor_modules.glob('*/include/uapi')):
			flags += ['-isystem', str(d)]
	return flags


def _lz4(layout: Layout) -> Path:
	"""Debian's liblz4-dev for arm64, unpacked by build/deps.sh."""
	return layout.out / 'guest-pkgs' / 'liblz4-dev'


def include_sets(layout: Layout, uapi: Path | None) -> dict[str, list[str]]:
	"""The include flags a Target names; 'uapi' only with uapi (a
	variant's headers_install folder)."""
	sets = {'selftests': ['-I', str(layout.src / 'tools' / 'testing' / 'selftests')],
		'qemu': ['-I', str(layout.qemu / 'include')],
		'vendor-uapi': vendor_uapi_flags(layout),
		'tools-lib': lib_flags(layout),
		'lz4': ['-isystem', str(_lz4(layout) / 'usr' / 'include')]}
	if uapi is not None:
		sets['uapi'] = ['-isystem', str(uapi)]
	return sets


def lib_folders(layout: Layout) -> dict[str, Path]:
	"""The library folders a Target names (the host's are the compiler's own)."""
	return {'lz4': _lz4(layout) / 'usr' / 'lib' / 'aarch64-linux-gnu'}


# Building --------------------------------------------------------------------

def _write_deps(layout: Layout, target: Target, srcs: tuple[Path, ...], uapi: Path | None,
		dep: Path, env: dict[str, str]) -> None:
	"""Every source's dependencies in dep.  A compile-and-link run writes
	its -MF file once per source, each over the last: alone, it would
	miss a change to any source but the last and to what that includes."""
	rules = []
	for src in srcs:
		res = subprocess.run(target.depend_command(layout, src, uapi), env=env,
				     capture_output=True, text=True)
		if res.returncode:
			raise GkiError(f'the dependencies of {src}: {res.stderr.strip()[-2000:]}')
		rules.append(res.stdout)
	dep.write_text(''.join(rules))


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


def compile_programs(layout: Layout, target: Target, progs: list[Program], dest: Path,
		     uapi: Path | None = None) -> dict[str, Path]:
	"""Compile (or copy) each program into the folder dest for target,
	skipping what is up to date; returns name -> path."""
	env = toolchain.hermetic_env(use_ccache=False)
	dest.mkdir(parents=True, exist_ok=True)
	log = layout.log(None, target.log)
	built = {}
	for p in progs:
		out = dest / p.name
		if p.is_script:
			write_if_changed(out, p.srcs[0].read_bytes())
			out.chmod(0o755)
		else:
			dep = dest / f'{p.name}.d'
			# One dependency file for all sources: compile and link at once.
			cmd = target.command(layout, p.srcs, out, uapi, dep)
			cmd_file = dest / f'{p.name}.cmd'
			stamp = f'{_compiler_id()}\n{shlex.join(cmd)}\n'
			if _stale(out, dep, cmd_file, stamp):
				cmd_file.unlink(missing_ok=True)
				run_logged(cmd, log, env=env, what=f'compiling {p.name}')
				if len(p.srcs) > 1:
					_write_deps(layout, target, p.srcs, uapi, dep, env)
				cmd_file.write_text(stamp)
		built[p.name] = out
	return built


def _listed_output(layout: Layout, kind: str, target: Target, v: Variant, name: str) -> Path:
	if target == GUEST:
		return guest_folder(layout, kind, v) / name
	if target == HOST:
		return host_folder(layout) / name
	return Path(name)	# a host test: its test builds it in a folder of its own


def listing(layout: Layout, v: Variant, names: list[str]) -> list[str]:
	"""Each program's command lines, as the build runs them with the
	pinned clang named in full (guest programs: variant v's), a comment
	line before each; a host test's output goes to the current folder.
	names: only those programs (all when empty)."""
	uapi = layout.obj(v) / 'uapi' / 'include'
	clang = str(toolchain.LLVM_BIN / 'clang')
	lines: list[str] = []
	found = set()
	for kind, targets in KINDS.items():
		for p in discover(layout, kind):
			if names and p.name not in names:
				continue
			found.add(p.name)
			if p.is_script:
				lines.append(f'# {p.name}: {kind}, copied as is from {p.srcs[0]}')
				continue
			for t in targets:
				cmd = t.command(layout, p.srcs, _listed_output(layout, kind, t, v, p.name),
						uapi)
				lines += [f'# {p.name}: {kind}, {t.name}', shlex.join([clang, *cmd[1:]])]
	unknown = sorted(set(names) - found)
	if unknown:
		raise GkiError(f'no program named {", ".join(unknown)}')
	return lines
