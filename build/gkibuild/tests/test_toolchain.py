# SPDX-License-Identifier: GPL-2.0
import tempfile
import unittest
from pathlib import Path

import context  # noqa: F401 (sets the import path)
import toolchain
from util import GkiError


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
				  'KBUILD_BUILD_HOST', 'KBUILD_BUILD_TIMESTAMP', 'KBUILD_BUILD_VERSION'},
				 {k for k in env if not k.startswith('CCACHE_')})
		self.assertTrue(env['PATH'].startswith('/usr/lib/llvm-19/bin:'))

	def test_prefix_maps_have_no_trailing_slash(self):
		flags = toolchain.make_vars({'CCACHE_DISABLE': '1'}, Path('/o/src/linux'),
					    Path('/o/release/obj'))
		maps = '-ffile-prefix-map=/o/src/linux=/gki/src -ffile-prefix-map=/o/release/obj=/gki/obj'
		self.assertIn(f'KCFLAGS={maps} -gno-column-info', flags)
		self.assertIn(f'KAFLAGS={maps}', flags)
		self.assertIn('CC=clang', flags)


if __name__ == '__main__':
	unittest.main()
