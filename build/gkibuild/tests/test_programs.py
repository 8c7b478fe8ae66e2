# SPDX-License-Identifier: GPL-2.0
"""The declaration of user-space programs (programs.py): where each kind
is found in a small tree, and the command line each target gives: the
flags that matter (--target, -static, the sanitizers) and where the
libraries go (after the sources)."""

import os
import tempfile
import unittest
from pathlib import Path

from gkibuild import programs, toolchain
from gkibuild.layout import VARIANTS, Layout
from gkibuild.util import GkiError


class ProgramsTest(unittest.TestCase):
	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.top = Path(tmp.name)
		self.layout = Layout(self.top, self.top / 'out')
		for rel in ('qemu/tests/boot_smoke.c', 'qemu/bench/read_bench.c',
			    'qemu/tools/showmap/showmap.c',
			    'vendor_modules/v/include/uapi/linux/v.h', 'vendor_modules/v/tests/v_basic.c',
			    'vendor_modules/v/tools/v-image/main.c', 'vendor_modules/v/tools/v-image/io.c',
			    'vendor_modules/v/tools/lib/v_format.c', 'vendor_modules/v/tools/lib/v_format.h',
			    'vendor_modules/v/tools/tests/test_v_format.c',
			    'vendor_modules/v/tests/v_format_kunit.c', 'vendor_modules/v/tests/v_test.h'):
			(self.top / rel).parent.mkdir(parents=True, exist_ok=True)
			(self.top / rel).write_text('')

	def names(self, kind: str) -> list[str]:
		return [p.name for p in programs.discover(self.layout, kind)]

	def test_each_kind_is_found_where_declared(self):
		self.assertEqual(['boot_smoke', 'v_basic'], self.names('suites'))
		self.assertEqual(['read_bench'], self.names('bench'))
		self.assertEqual(['showmap', 'v-image'], self.names('tools'))
		self.assertEqual(['test_v_format'], self.names('host-tests'))
		self.assertEqual(set(programs.KINDS), {'suites', 'bench', 'tools', 'host-tests'})
		with self.assertRaisesRegex(GkiError, 'no kind of program named sweets'):
			programs.discover(self.layout, 'sweets')

	def test_a_files_name_says_its_kind(self):
		kinds = {rel: programs.test_kind(Path(rel)) for rel in (
			'build/gkibuild/tests/test_kmi.py', 'qemu/tools/tests/test_log_writes.c',
			'vendor_modules/incfs/tests/format_kunit.c', 'qemu/tests/boot_smoke.c',
			'qemu/bench/read_bench.c', 'vendor_modules/incfs/tests/incfs_test.h')}
		self.assertEqual({
			'build/gkibuild/tests/test_kmi.py': 'python',
			'qemu/tools/tests/test_log_writes.c': 'host C test',
			'vendor_modules/incfs/tests/format_kunit.c': 'KUnit',
			'qemu/tests/boot_smoke.c': 'guest suite',
			'qemu/bench/read_bench.c': 'guest program',
			'vendor_modules/incfs/tests/incfs_test.h': None}, kinds)

	def test_the_tree_follows_the_rule(self):
		"""Every test is where its kind lives (BUILD.md, "Where tests
		live"): Python tests beside their package, host C tests in a
		tools/tests/, KUnit and guest suites in a module's (or qemu/'s)
		tests/."""
		top = Path(__file__).resolve().parents[3]
		where = {'python': ('build/gkibuild/tests', 'qemu/gkiqemu/tests',
				    'qemu/tools/*/tests'),
			 'host C test': ('qemu/tools/tests', 'vendor_modules/*/tools/tests'),
			 'KUnit': ('vendor_modules/*/tests',),
			 'guest suite': ('qemu/tests', 'vendor_modules/*/tests')}
		found = 0
		dirs = sorted(d for sub in top.iterdir() if sub.is_dir() and sub.name not in
			      ('out', '.git') for d in sub.glob('**/tests'))
		for d in dirs:
			rel = d.relative_to(top)
			for f in sorted(d.iterdir()):
				kind = programs.test_kind(f)
				if kind is None:
					continue
				found += 1
				with self.subTest(file=str(f.relative_to(top))):
					self.assertTrue(any(rel.match(p) for p in where[kind]), kind)
		self.assertLess(50, found)
		self.assertFalse(list(top.glob('vendor_modules/*/*_kunit.c')))

	def test_a_tool_and_a_host_test_take_their_library(self):
		tools = {p.name: p.srcs for p in programs.discover(self.layout, 'tools')}
		lib = self.top / 'vendor_modules/v/tools/lib/v_format.c'
		tool = self.top / 'vendor_modules/v/tools/v-image'
		self.assertEqual((tool / 'io.c', tool / 'main.c', lib), tools['v-image'])
		[test] = programs.discover(self.layout, 'host-tests')
		self.assertEqual((self.top / 'vendor_modules/v/tools/tests/test_v_format.c', lib),
				 test.srcs)

	def test_guest_suite_command(self):
		suite = self.top / 'qemu/tests/boot_smoke.c'
		uapi = self.top / 'out/release/obj/uapi/include'
		out, dep = Path('/o/boot_smoke'), Path('/o/boot_smoke.d')
		lz4 = self.top / 'out/guest-pkgs/liblz4-dev/usr'
		self.assertEqual(
			['clang', '--target=aarch64-linux-gnu', '-fuse-ld=lld', '-static', '-O2', '-g',
			 '-Wall', '-Werror', '-D_GNU_SOURCE', '-pthread',
			 '-isystem', str(uapi),
			 '-I', str(self.top / 'out/src/linux/tools/testing/selftests'),
			 '-I', str(self.top / 'qemu/include'),
			 '-isystem', str(self.top / 'vendor_modules/v/include/uapi'),
			 '-I', str(self.top / 'vendor_modules/v/tools/lib'),
			 '-isystem', str(lz4 / 'include'),
			 '-MD', '-MF', str(dep), '-o', str(out), str(suite),
			 '-L', str(lz4 / 'lib/aarch64-linux-gnu'), '-llz4'],
			programs.GUEST.command(self.layout, [suite], out, uapi, dep))

	def test_guest_programs_need_the_uapi_headers(self):
		with self.assertRaisesRegex(GkiError, 'UAPI headers'):
			programs.GUEST.command(self.layout, [Path('a.c')], Path('/o/a'))

	def test_host_tool_command(self):
		srcs = [Path('/t/main.c'), Path('/t/lib.c')]
		cmd = programs.HOST.command(self.layout, srcs, Path('/o/v-image'),
					    dep=Path('/o/v-image.d'))
		self.assertEqual(
			['clang', '-O2', '-g', '-Wall', '-Werror', '-D_GNU_SOURCE',
			 '-I', str(self.top / 'vendor_modules/v/tools/lib'),
			 '-isystem', str(self.top / 'vendor_modules/v/include/uapi'),
			 '-MD', '-MF', '/o/v-image.d', '-o', '/o/v-image', '/t/main.c', '/t/lib.c',
			 '-Wl,--as-needed', '-llz4'], cmd)
		self.assertNotIn('-static', cmd)
		self.assertFalse([f for f in cmd if f.startswith('--target')])

	def test_host_c_test_command(self):
		cmd = programs.HOST_ASAN.command(self.layout, [Path('/t/test_v.c'), Path('/t/lib.c')],
						 Path('/o/test_v'))
		self.assertEqual(
			['clang', '-O1', '-g', '-Wall', '-Werror', '-D_GNU_SOURCE',
			 '-fsanitize=address,undefined', '-fno-sanitize-recover=all',
			 '-I', str(self.top / 'out/src/linux/tools/testing/selftests'),
			 '-I', str(self.top / 'vendor_modules/v/tools/lib'),
			 '-isystem', str(self.top / 'vendor_modules/v/include/uapi'),
			 '-o', '/o/test_v', '/t/test_v.c', '/t/lib.c', '-llz4'], cmd)

	def test_listing_prints_each_target_of_the_named_programs(self):
		lines = programs.listing(self.layout, VARIANTS['release'], ['v-image', 'test_v_format'])
		self.assertEqual(['# v-image: tools, guest', '# v-image: tools, host',
				  '# test_v_format: host-tests, host-asan'], lines[::2])
		guest, host, test = lines[1::2]
		self.assertIn(f' -o {self.top}/out/release/programs/tools/v-image ', guest)
		self.assertIn(f' -o {self.top}/out/host/bin/v-image ', host)
		self.assertTrue(test.startswith(f'{toolchain.LLVM_BIN}/clang -O1 '), test)
		self.assertIn(' -o test_v_format ', test)
		with self.assertRaisesRegex(GkiError, 'no program named nothing'):
			programs.listing(self.layout, VARIANTS['release'], ['nothing'])


class RebuildTest(unittest.TestCase):
	"""A program is built again when any of its sources, or anything one
	of them includes, changes (the pinned clang, for the host)."""

	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.top = Path(tmp.name)
		self.layout = Layout(self.top, self.top / 'out')
		tool = self.top / 'vendor_modules/v/tools/v-tool'
		lib = self.top / 'vendor_modules/v/tools/lib'
		tool.mkdir(parents=True)
		lib.mkdir(parents=True)
		(tool / 'main.c').write_text('#include "v_lib.h"\nint main(void) { return v(); }\n')
		(lib / 'v_lib.h').write_text('int v(void);\n')
		(lib / 'v_lib.c').write_text('#include "v_lib.h"\n#include "v_value.h"\n'
					     'int v(void) { return VALUE; }\n')
		(lib / 'v_value.h').write_text('#define VALUE 0\n')
		self.dest = self.top / 'out/bin'

	def build(self) -> int:
		"""Build the tool if stale; the mtime of its executable."""
		[tool] = programs.discover(self.layout, 'tools')
		self.assertEqual(2, len(tool.srcs))
		path = programs.compile_programs(self.layout, programs.HOST, [tool], self.dest)['v-tool']
		return path.stat().st_mtime_ns

	def touch_later(self, path: Path, than: int) -> None:
		os.utime(path, ns=(than + 10**9, than + 10**9))

	def test_each_source_and_its_headers_count(self):
		first = self.build()
		self.assertEqual(first, self.build(), 'an up-to-date tool was built again')
		for rel in ('v-tool/main.c', 'lib/v_lib.h', 'lib/v_value.h', 'lib/v_lib.c'):
			with self.subTest(changed=rel):
				before = self.build()
				self.touch_later(self.top / 'vendor_modules/v/tools' / rel, before)
				self.assertNotEqual(before, self.build(), f'{rel} changed: not rebuilt')


if __name__ == '__main__':
	unittest.main()
