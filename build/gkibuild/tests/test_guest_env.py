# SPDX-License-Identifier: GPL-2.0
"""`gki qemu --env NAME=VALUE`: words on the kernel command line that the
kernel hands to /init's environment, so a long campaign's size reaches
its suite; anything the kernel would not hand on is refused."""

import tempfile
import unittest
from pathlib import Path
from unittest import mock

from gkibuild import testrun
from gkibuild.layout import VARIANTS, Layout
from gkibuild.util import GkiError
from gkiqemu import runner


class GuestEnvTest(unittest.TestCase):
	def test_capital_names_with_plain_values_pass(self):
		words = ['INCFS_FUZZ_IMAGES=10000', 'CRASH_POINTS=all', 'EMPTY=']
		self.assertEqual(tuple(words), testrun.guest_env(words))

	def test_words_the_kernel_would_not_hand_on_are_refused(self):
		# A dot makes a module parameter, a blank a second word, no '='
		# a kernel parameter; lower case is kept for the kernel's own.
		for bad in ('incfs.images=1', 'A=1 2', 'A="1"', 'NOVALUE', 'lower=1', '1A=1'):
			with self.subTest(bad=bad), self.assertRaises(GkiError) as cm:
				testrun.guest_env([bad])
			self.assertIn(repr(bad), str(cm.exception))

	def test_boots_put_the_words_on_every_boots_command_line(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		layout = Layout(Path(tmp.name), Path(tmp.name) / 'out')
		lines = []

		def command(image, initrd, mem, cmdline, scratch):
			lines.append(cmdline)
			return ['qemu']

		done = mock.Mock(timed_out=False, wants_next_boot=False)
		with mock.patch.object(runner.initramfs, 'scratch_disk'), \
		     mock.patch.object(runner.boot, 'command', side_effect=command), \
		     mock.patch.object(runner.boot, 'run', return_value=done):
			testrun.boots(layout, VARIANTS['release'], Path('initrd'), 'test',
				     env=('A=1', 'B=two'))
		self.assertEqual(1, len(lines))
		self.assertTrue(lines[0].startswith('gki.mode=test gki.boot=1 '))
		self.assertTrue(lines[0].endswith(' A=1 B=two'), lines[0])


if __name__ == '__main__':
	unittest.main()
