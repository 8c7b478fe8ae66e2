# SPDX-License-Identifier: GPL-2.0
"""'abi update' refuses while a list lacks a symbol its own modules use,
even when another list has it (so the build itself passes), on the built
release tree."""

import shutil
import tempfile
import unittest
from pathlib import Path

from gkibuild import main, toolchain
from gkibuild.kernel import Kernel
from gkibuild.layout import VARIANTS, Layout
from gkibuild.tests import prereq

LAYOUT = Layout.default()
RELEASE = VARIANTS['release']


class AbiUpdateTest(unittest.TestCase):
	@classmethod
	def setUpClass(cls):
		prereq.require(None if (LAYOUT.ext(RELEASE) / 'vendor' / 'incfs').is_dir() else
			       'release GKI and its vendor modules not built', 'the abi update tests')

	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		top = Path(self.tmp.name)
		for d in ('vendor_modules', 'qemu'):
			(top / d).symlink_to(LAYOUT.top / d)
		shutil.copytree(LAYOUT.symbol_lists, top / 'symbol_lists')
		self.layout = Layout(top, LAYOUT.out)
		self.env = toolchain.hermetic_env()
		self.kernel = Kernel(self.layout, RELEASE, self.env, 1)

	def tearDown(self):
		self.tmp.cleanup()

	def test_lists_in_step_with_the_modules(self):
		self.assertEqual([], main.stale_lists(self.layout, self.kernel, self.env))

	def test_symbol_only_in_another_list_is_stale(self):
		path = self.layout.symbol_lists / 'incfs'
		lines = path.read_text().splitlines()
		self.assertIn('kfree', lines)
		self.assertIn('kfree', (self.layout.symbol_lists / 'core').read_text().split())
		path.write_text(''.join(line + '\n' for line in lines if line != 'kfree'))
		stale = main.stale_lists(self.layout, self.kernel, self.env)
		# One line: incfs's modules that call kfree (incrementalfs.ko among
		# them), the list to fix and the command that fixes it.
		self.assertEqual(1, len(stale), stale)
		self.assertRegex(stale[0], r'^(\S+\.ko, )*incrementalfs\.ko(, \S+\.ko)* needs kfree, '
				 r'missing from symbol_lists/incfs \(\./build/gki symbols update incfs\)$')


if __name__ == '__main__':
	unittest.main()
