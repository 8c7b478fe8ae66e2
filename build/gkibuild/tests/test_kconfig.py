# SPDX-License-Identifier: GPL-2.0
import tempfile
import unittest
from pathlib import Path

from gkibuild import kconfig, toolchain
from gkibuild.kernel import Kernel
from gkibuild.layout import Layout, Variant
from gkibuild.util import GkiError

REAL = Layout.default()


class ParseTest(unittest.TestCase):
	def test_set_unset_and_strings(self):
		opts = kconfig.parse('CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C="x y"\n'
				     '# a comment\nCONFIG_D=m\nCONFIG_A=n\n')
		self.assertEqual({'CONFIG_A': 'n', 'CONFIG_B': 'n', 'CONFIG_C': '"x y"',
				  'CONFIG_D': 'm'}, opts)

	def test_unmet_lists_each_difference(self):
		wanted = kconfig.parse('CONFIG_A=y\nCONFIG_B=m\n# CONFIG_C is not set\nCONFIG_D=4\n')
		have = kconfig.parse('CONFIG_A=y\nCONFIG_B=y\nCONFIG_D=8\n')
		self.assertEqual(['CONFIG_B=m (got y)', 'CONFIG_D=4 (got 8)'],
				 kconfig.unmet(wanted, have))

	def test_absent_option_is_not_set(self):
		self.assertEqual(['CONFIG_X=y (got not set)'],
				 kconfig.unmet({'CONFIG_X': 'y'}, {}))


@unittest.skipUnless((REAL.src / 'Makefile').exists(), 'kernel tree not extracted')
class RealKconfigTest(unittest.TestCase):
	"""Run the tree's own Kconfig on fragments, as the build does."""

	def configure(self, fragment: str) -> None:
		with tempfile.TemporaryDirectory() as tmp:
			top, out = Path(tmp) / 'top', Path(tmp) / 'out'
			(top / 'common').mkdir(parents=True)
			(top / 'common' / 'test.config').write_text(fragment)
			(out / 'src').mkdir(parents=True)
			(out / 'src' / 'linux').symlink_to(REAL.src)
			(out / 'src' / 'stamp.json').write_text('{}')
			v = Variant('hosttest', ('test.config',), 0, 0)
			Kernel(Layout(top, out), v, toolchain.hermetic_env(), 2).configure()

	def test_option_without_prompt_is_caught(self):
		# LZ4_COMPRESS has no prompt: only a select can set it.
		with self.assertRaisesRegex(GkiError, r'CONFIG_LZ4_COMPRESS=y \(got not set\)'):
			self.configure('CONFIG_LZ4_COMPRESS=y\n')

	def test_option_with_missing_dependency_is_caught(self):
		with self.assertRaisesRegex(GkiError, r'CONFIG_VIRTIO_BLK=y \(got not set\)'):
			self.configure('CONFIG_VIRTIO_MMIO=y\nCONFIG_VIRTIO_BLK=y\n')

	def test_satisfiable_fragment_passes(self):
		self.configure('CONFIG_BLOCK=y\nCONFIG_BLK_DEV=y\nCONFIG_VIRTIO_MENU=y\n'
			       'CONFIG_VIRTIO_MMIO=y\nCONFIG_VIRTIO_BLK=y\n')


if __name__ == '__main__':
	unittest.main()
