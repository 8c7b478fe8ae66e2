# SPDX-License-Identifier: GPL-2.0
import contextlib
import io
import subprocess
import tempfile
import unittest
from pathlib import Path

from gkibuild import source
from gkibuild.layout import TOP
from gkibuild.util import GkiError


class PinTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.dir = Path(self.tmp.name)
		self.tarball = self.dir / 'linux.tar.xz'
		self.tarball.write_bytes(b'x')
		self.pin = source.Pin('linux-source-6.12', '6.12.118-1~deb12u1', self.tarball, 'ab' * 32)

	def tearDown(self):
		self.tmp.cleanup()

	def test_load_pin(self):
		f = self.dir / 'source.pin'
		f.write_text(f'# c\npackage=p\nversion=1\ntarball={self.tarball}\nsha256=00\n')
		self.assertEqual(source.Pin('p', '1', self.tarball, '00'), source.load_pin(f))

	def test_load_pin_missing_key(self):
		f = self.dir / 'source.pin'
		f.write_text('package=p\nversion=1\n')
		with self.assertRaisesRegex(GkiError, "missing key 'tarball'"):
			source.load_pin(f)

	def test_matching_source_is_pinned(self):
		s = source.check_pin(self.pin, False, self.pin.version, self.pin.sha256)
		self.assertTrue(s.pinned)

	def test_newer_point_release_stops_the_build(self):
		with self.assertRaisesRegex(GkiError, r'is 6\.12\.120-1~deb12u1 .*--accept-source-update'):
			source.check_pin(self.pin, False, '6.12.120-1~deb12u1', 'cd' * 32)

	def test_changed_tarball_stops_the_build(self):
		with self.assertRaisesRegex(GkiError, 'common/source.pin says'):
			source.check_pin(self.pin, False, self.pin.version, 'cd' * 32)

	def test_accepted_update_continues(self):
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			s = source.check_pin(self.pin, True, '6.12.120-1~deb12u1', 'cd' * 32)
		self.assertIn('building it because the update was accepted', out.getvalue())
		self.assertFalse(s.pinned)
		self.assertEqual('6.12.120-1~deb12u1', s.version)


class CommandLineTest(unittest.TestCase):
	GKI = str(TOP / 'build' / 'gki')

	def test_unknown_command_is_one_clear_line(self):
		r = subprocess.run([self.GKI, 'frobnicate'], capture_output=True, text=True)
		self.assertEqual(2, r.returncode)
		self.assertEqual("gki: unknown command 'frobnicate' (try: ./build/gki help)\n",
				 r.stderr)

	def test_help_lists_the_commands(self):
		r = subprocess.run([self.GKI, 'help'], capture_output=True, text=True)
		self.assertEqual(0, r.returncode)
		for cmd in ('build', 'test', 'qemu', 'bench', 'repro'):
			self.assertRegex(r.stdout, rf'\n  {cmd}\b')


if __name__ == '__main__':
	unittest.main()
