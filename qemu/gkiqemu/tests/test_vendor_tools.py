# SPDX-License-Identifier: GPL-2.0
"""The C unit tests of vendors' tool libraries (vendor_modules/*/tools/
tests/test_*.c), built for the build machine with the library's sources,
AddressSanitizer and UBSan (the pinned clang; libclang-rt-19-dev), and run: each must exit 0 and report no
failure."""

import re
import subprocess
import tempfile
import unittest
from pathlib import Path

import context  # noqa: F401 (sets the import path)
import toolchain
from gkiqemu import initramfs
from layout import Layout

LAYOUT = Layout.default()
TESTS = sorted(LAYOUT.vendor_modules.glob('*/tools/tests/test_*.c'))
FLAGS = ['-O1', '-g', '-Wall', '-Werror', '-D_GNU_SOURCE',
	 '-fsanitize=address,undefined', '-fno-sanitize-recover=all']


class VendorToolTests(unittest.TestCase):
	def test_c_unit_tests_pass(self):
		if not TESTS:
			self.skipTest('no vendor tool tests')
		for src in TESTS:
			with self.subTest(test=str(src.relative_to(LAYOUT.top))):
				self.run_one(src)

	def run_one(self, src: Path) -> None:
		tools = src.parents[1]
		lib = sorted((tools / 'lib').glob('*.c'))
		with tempfile.TemporaryDirectory() as tmp:
			exe = Path(tmp) / src.stem
			build = subprocess.run([str(toolchain.LLVM_BIN / 'clang'), *FLAGS, *initramfs.lib_flags(LAYOUT),
						*initramfs.vendor_uapi_flags(LAYOUT), '-o', str(exe),
						str(src), *map(str, lib), '-llz4'],
					       capture_output=True, text=True)
			self.assertEqual(0, build.returncode, build.stderr[-3000:])
			res = subprocess.run([str(exe)], capture_output=True, text=True, cwd=tmp,
					     timeout=600)
		out = res.stdout + res.stderr
		self.assertEqual(0, res.returncode, out[-3000:])
		m = re.search(r'(\d+) passed, (\d+) failed', out)
		self.assertIsNotNone(m, out[-3000:])
		self.assertEqual('0', m.group(2), out[-3000:])
		self.assertNotEqual('0', m.group(1), out[-3000:])


if __name__ == '__main__':
	unittest.main()
