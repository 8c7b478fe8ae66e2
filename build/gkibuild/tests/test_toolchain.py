# SPDX-License-Identifier: GPL-2.0
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

from gkibuild import toolchain
from gkibuild.util import GkiError


class ToolchainTest(unittest.TestCase):
	def fake_llvm(self, dir: Path, major: int) -> dict[str, str]:
		banners = {'clang': f'Debian clang version {major}.1.7 (++20250114)',
			   'ld.lld': f'Debian LLD {major}.1.7 (compatible with GNU linkers)',
			   'llvm-objcopy': f'llvm-objcopy, compatible with GNU objcopy\n'
					   f'Debian LLVM version {major}.1.7'}
		for tool, banner in banners.items():
			p = dir / tool
			p.write_text(f'#!/bin/sh\necho "{banner}"\n')
			p.chmod(0o755)
		return {**toolchain.hermetic_env(use_ccache=False), 'PATH': str(dir)}

	def test_pinned_major_passes(self):
		with tempfile.TemporaryDirectory() as d:
			versions = toolchain.check(self.fake_llvm(Path(d), toolchain.LLVM_MAJOR))
		self.assertEqual({'clang': '19.1.7', 'ld.lld': '19.1.7', 'llvm-objcopy': '19.1.7'},
				 versions)

	def test_other_major_stops_the_build(self):
		with tempfile.TemporaryDirectory() as d:
			with self.assertRaisesRegex(GkiError, r'clang is LLVM 18, the build is pinned '
						    r'to LLVM 19'):
				toolchain.check(self.fake_llvm(Path(d), 18))

	def test_environment_is_sanitized(self):
		env = toolchain.hermetic_env()
		self.assertEqual({'PATH', 'LC_ALL', 'TZ', 'HOME', 'LOCALVERSION', 'KBUILD_BUILD_USER',
				  'KBUILD_BUILD_HOST', 'KBUILD_BUILD_TIMESTAMP', 'KBUILD_BUILD_VERSION',
				  'GKI_GENKSYMS_CACHE'},
				 {k for k in env if not k.startswith('CCACHE_')})
		self.assertEqual(str(toolchain.ccache_dir() / 'genksyms'), env['GKI_GENKSYMS_CACHE'])
		self.assertTrue(env['PATH'].startswith('/usr/lib/llvm-19/bin:'))

	def test_prefix_maps_have_no_trailing_slash(self):
		flags = toolchain.make_vars({'CCACHE_DIR': '/c'}, Path('/o/src/linux'),
					    Path('/o/release/obj'))
		maps = '-ffile-prefix-map=/o/src/linux=/gki/src -ffile-prefix-map=/o/release/obj=/gki/obj'
		self.assertIn(f'KCFLAGS={maps} -fdebug-compilation-dir=/gki/obj ', ' '.join(flags))
		self.assertIn(f'KAFLAGS={maps} -fdebug-compilation-dir=/gki/obj -Qunused-arguments',
			      flags)

	def test_maps_are_relative_to_the_obj_folder_under_the_checkout(self):
		"""Under ccache's base_dir the maps name the folders as ccache
		rewrites them, the same in every clone; outside, absolutely."""
		def maps(top: str) -> str:
			flags = toolchain.make_vars(
				{'CCACHE_DIR': '/c', 'CCACHE_BASEDIR': top}, Path(f'{top}/out/src/linux'),
				Path(f'{top}/out/release/obj'),
				[(Path(f'{top}/out/release/ext/vendor/m'), '/gki/vendor/m')])
			return next(f for f in flags if f.startswith('KAFLAGS='))
		want = ('KAFLAGS=-ffile-prefix-map=../../src/linux=/gki/src '
			'-ffile-prefix-map=../ext/vendor/m=/gki/vendor/m '
			'-fmacro-prefix-map=../../src/linux/= '
			'-ffile-prefix-map=/work/main/out/src/linux=/gki/src '
			'-ffile-prefix-map=/work/main/out/release/ext/vendor/m=/gki/vendor/m '
			'-ffile-prefix-map=/work/main/out/release/obj=/gki/obj '
			'-fdebug-compilation-dir=/gki/obj')
		self.assertTrue(maps('/work/main').startswith(want), maps('/work/main'))
		# What ccache hashes: the absolute maps are ignored (hermetic_env).
		hashed = [re.sub(r' -ffile-prefix-map=/\S+', '', maps(top))
			  for top in ('/work/main', '/tmp/ci/clone')]
		self.assertEqual(hashed[0], hashed[1])
		self.assertEqual('-ffile-prefix-map=/*', toolchain.hermetic_env()['CCACHE_IGNOREOPTIONS'])
		outside = toolchain.make_vars({'CCACHE_DIR': '/c', 'CCACHE_BASEDIR': '/work/main'},
					      Path('/o/src/linux'), Path('/o/release/obj'))
		self.assertIn('-ffile-prefix-map=/o/src/linux=/gki/src '
			      '-ffile-prefix-map=/o/release/obj=/gki/obj', ' '.join(outside))

	def test_every_compile_goes_through_cc_unit(self):
		env = toolchain.hermetic_env()
		self.assertEqual(str(toolchain.CC_UNIT), env['CCACHE_PREFIX'])
		self.assertEqual(str(toolchain.CC_UNIT), env['CCACHE_EXTRAFILES'])
		self.assertNotIn('CCACHE_RECACHE', env)
		self.assertEqual('1', toolchain.hermetic_env(use_ccache=False)['CCACHE_RECACHE'])
		flags = toolchain.make_vars(env, Path('/s'), Path('/o'))
		self.assertIn('CC=ccache clang', flags)
		kcflags = next(f for f in flags if f.startswith('KCFLAGS='))
		self.assertIn(' -gno-column-info ', kcflags)

	def test_no_ccache_stops_the_build(self):
		with self.assertRaisesRegex(GkiError, 'ccache not found'):
			toolchain.make_vars({'PATH': '/nonexistent'}, Path('/s'), Path('/o'))


# Code after a macro call that spans lines: a compile of the source puts
# the '-' on line 5, the preprocessed text (the call expanded on line 4)
# on line 4 (the kernel's fs/jbd2/transaction.c has one).
MACRO_CALL = """#include "div.h"
int div_diff(int a, int b, int c)
{
	return DIV(a,
		   b) -
		DIV(c, b);
}
"""


class CloneTest(unittest.TestCase):
	"""Two clones of a checkout, each with a kernel-shaped out/ (a tree in
	out/src/linux, compiles in out/release/obj, absolute paths on the
	command line as kbuild's), compile the same file through ccache with
	the build's environment: the second clone is a cache hit, and both
	objects are the bits of a compile that does not read the cache (as
	'gki repro' builds)."""

	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.dir = Path(tmp.name)
		self.cache = self.dir / 'ccache'

	def clone(self, name: str) -> tuple[Path, Path, Path]:
		top = self.dir / name / 'checkout'
		src, obj = top / 'out' / 'src' / 'linux', top / 'out' / 'release' / 'obj'
		(src / 'include').mkdir(parents=True)
		obj.mkdir(parents=True)
		(src / 'include' / 'div.h').write_text('#define DIV(n, d) (((n) + (d) - 1) / (d))\n')
		(src / 'div.c').write_text(MACRO_CALL.replace('"div.h"', '<div.h>') +
					   'const char *where(void) { return __FILE__; }\n')
		return top, src, obj

	def compile(self, name: str, cache: bool = True) -> tuple[bytes, str]:
		top, src, obj = self.clone(name)
		env = {**toolchain.hermetic_env(use_ccache=cache, base=top),
		       'CCACHE_DIR': str(self.cache)}
		flags = next(f for f in toolchain.make_vars(env, src, obj)
			     if f.startswith('KCFLAGS='))[len('KCFLAGS='):].split()
		cmd = ['ccache', 'clang', '--target=aarch64-linux-gnu', '-O2', '-g', '-gdwarf-4',
		       f'-I{src}/include', f'-fmacro-prefix-map={src}/=', *flags,
		       '-Wp,-MMD,.div.o.d', '-c', '-o', 'div.o', f'{src}/div.c']
		r = subprocess.run(cmd, cwd=obj, env=env, capture_output=True, text=True)
		self.assertEqual(0, r.returncode, r.stderr)
		stats = subprocess.run(['ccache', '--print-stats'], env=env, capture_output=True,
				       text=True).stdout
		return (obj / 'div.o').read_bytes(), stats

	def hits(self, stats: str) -> int:
		counts = dict(l.split('\t') for l in stats.splitlines() if '\t' in l)
		return int(counts['direct_cache_hit']) + int(counts['preprocessed_cache_hit'])

	def test_a_clone_in_another_folder_hits_the_cache(self):
		first, stats = self.compile('a')
		self.assertEqual(0, self.hits(stats))
		second, stats = self.compile('elsewhere/b')
		self.assertEqual(1, self.hits(stats))
		self.assertEqual(first, second)
		uncached, _ = self.compile('c', cache=False)
		self.assertEqual(first, uncached)
		self.assertIn(b'\0div.c\0', first)		# __FILE__, as kbuild makes it
		self.assertFalse(str(self.dir).encode() in first, 'a build path in the object')

	def test_a_compile_ccache_does_not_cache_is_mapped_too(self):
		"""A C file with an .incbin (kernel/configs.c): ccache does not
		cache it and runs it as it came, absolute paths and all, and the
		absolute maps apply."""
		top, src, obj = self.clone('a')
		(obj / 'blob.bin').write_bytes(b'gki')	# beside the objects, as config_data.gz
		(src / 'data.c').write_text('#include <div.h>\nint f(int a) { return DIV(a, 3); }\n'
					    'asm(".incbin \\"blob.bin\\"");\n')
		env = {**toolchain.hermetic_env(base=top), 'CCACHE_DIR': str(self.cache)}
		flags = next(f for f in toolchain.make_vars(env, src, obj)
			     if f.startswith('KCFLAGS='))[len('KCFLAGS='):].split()
		r = subprocess.run(['ccache', 'clang', '--target=aarch64-linux-gnu', '-g', '-O2',
				    f'-I{src}/include', f'-I{src}', *flags, '-c', '-o', 'data.o',
				    f'{src}/data.c'], cwd=obj, env=env, capture_output=True, text=True)
		self.assertEqual(0, r.returncode, r.stderr)
		self.assertFalse(str(self.dir).encode() in (obj / 'data.o').read_bytes(),
				 'a build path in the object')


class CcUnitTest(unittest.TestCase):
	"""build/cc-unit, ccache's prefix command: a C compile from the
	preprocessed text, as a distcc host compiles."""

	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.dir = Path(tmp.name)
		(self.dir / 'div.h').write_text('#define DIV(n, d) (((n) + (d) - 1) / (d))\n')
		(self.dir / 'div.c').write_text(MACRO_CALL)
		self.env = toolchain.hermetic_env(use_ccache=False)
		self.flags = ['--target=aarch64-linux-gnu', '-O2', '-g', '-gdwarf-4',
			      '-gno-column-info', '-Qunused-arguments', '-DUNUSED=1']

	def cc(self, *args: str, unit: bool = True) -> subprocess.CompletedProcess:
		prefix = [str(toolchain.CC_UNIT)] if unit else []
		return subprocess.run([*prefix, str(toolchain.LLVM_BIN / 'clang'), *args],
				      cwd=self.dir, env=self.env, capture_output=True, text=True)

	def compile(self, out: str, unit: bool = True) -> bytes:
		r = self.cc(*self.flags, '-Wp,-MMD,.dep', '-c', '-o', out, 'div.c', unit=unit)
		self.assertEqual(0, r.returncode, r.stderr)
		return (self.dir / out).read_bytes()

	def test_a_compile_is_of_the_preprocessed_text(self):
		r = self.cc(*self.flags, '-E', '-o', 'div.i', 'div.c', unit=False)
		self.assertEqual(0, r.returncode, r.stderr)
		r = self.cc(*self.flags, '-c', '-o', 'by-hand.o', 'div.i', unit=False)
		self.assertEqual(0, r.returncode, r.stderr)
		by_hand = (self.dir / 'by-hand.o').read_bytes()
		self.assertEqual(by_hand, self.compile('unit.o'))
		self.assertTrue(by_hand != self.compile('source.o', unit=False),
				'the source compile no longer differs: is cc-unit needed?')

	def test_the_dependency_file_names_the_headers(self):
		self.compile('unit.o')
		self.assertIn('div.h', (self.dir / '.dep').read_text())
		self.assertEqual([], list(self.dir.glob('*.i')))

	def test_a_probe_answers_as_without_it(self):
		"""kbuild's probes (CONFIG_CC_HAS_INT128's among them) run
		unchanged: -Werror still sees the redefined macro."""
		probe = ['-Werror', '-D__SIZEOF_INT128__=0', '-c', '-x', 'c', '/dev/null',
			 '-o', '/dev/null']
		self.assertNotEqual(0, self.cc(*probe, unit=False).returncode)
		self.assertNotEqual(0, self.cc(*probe).returncode)
		(self.dir / 'redef.c').write_text('int x;\n')
		redef = ['-Werror', '-D__SIZEOF_INT128__=0', '-c', '-o', 'r.o', 'redef.c']
		self.assertNotEqual(0, self.cc(*redef).returncode)

	def test_with_a_farm_the_unit_goes_through_distcc(self):
		"""DISTCC_HOSTS set: the compile of the unit goes through
		distcc (here a stand-in that logs and compiles), named by the
		object's path; the result is the local compile's."""
		local = self.compile('local.o')
		bin = self.dir / 'bin'
		bin.mkdir()
		(bin / 'distcc').write_text('#!/bin/sh\necho "$@" >> "$DISTCC_LOG"\nexec "$@"\n')
		(bin / 'distcc').chmod(0o755)
		self.env = {**self.env, 'PATH': f'{bin}:{self.env["PATH"]}',
			    'DISTCC_HOSTS': '127.0.0.2', 'DISTCC_LOG': str(self.dir / 'log')}
		(self.dir / 'sub').mkdir()
		self.assertEqual(local, self.compile('sub/farm.o'))
		line = (self.dir / 'log').read_text().split()
		self.assertEqual(str(toolchain.LLVM_BIN / 'clang'), line[0])
		self.assertTrue(line[-1].endswith('/sub/farm.i'), line)
		self.assertNotIn('-Wp,-MMD,.dep', line)

	def test_a_failed_compile_fails(self):
		(self.dir / 'bad.c').write_text('int f(void) { return missing; }\n')
		r = self.cc(*self.flags, '-c', '-o', 'bad.o', 'bad.c')
		self.assertNotEqual(0, r.returncode)
		self.assertIn("use of undeclared identifier 'missing'", r.stderr)
		self.assertFalse((self.dir / 'bad.o').exists())


if __name__ == '__main__':
	unittest.main()
