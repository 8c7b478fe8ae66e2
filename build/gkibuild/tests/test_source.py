# SPDX-License-Identifier: GPL-2.0
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock
from pathlib import Path

from gkibuild import source
from gkibuild.layout import TOP
from gkibuild.util import GkiError, sha256_file


NEW = '6.12.120-1~deb12u1'
PINNED = '6.12.118-1~deb12u1'


class FakeArchive:
	"""Debian's archive as a test sets it: the versions its lists show
	before and after a refresh, and what each download writes."""

	def __init__(self, listed, after_refresh=None, content=b'x'):
		self.listed = list(listed)
		self.after_refresh = after_refresh
		self.content = content
		self.downloads = []
		self.refreshes = 0

	def versions(self, package):
		return list(self.listed)

	def refresh(self):
		self.refreshes += 1
		if self.after_refresh is not None:
			self.listed = list(self.after_refresh)

	def download(self, package, version, member, dest):
		if version not in self.listed:
			raise GkiError(f'apt-get download {package}={version} failed')
		self.downloads.append(version)
		dest.write_bytes(self.content)


class PinTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.dir = Path(self.tmp.name)
		self.cache = self.dir / 'cache'
		self.tarball = self.dir / 'linux.tar.xz'
		self.tarball.write_bytes(b'x')
		self.pin = source.Pin('linux-source-6.12', PINNED, self.tarball, sha256_file(self.tarball))

	def tearDown(self):
		self.tmp.cleanup()

	def obtain(self, arch, installed=None, accept=False):
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			s = source.obtain(self.pin, accept, arch, self.cache, lambda pkg: installed)
		return s, out.getvalue()

	def test_load_pin(self):
		f = self.dir / 'source.pin'
		f.write_text(f'# c\npackage=p\nversion=1\ntarball={self.tarball}\nsha256=00\n')
		self.assertEqual(source.Pin('p', '1', self.tarball, '00'), source.load_pin(f))

	def test_load_pin_missing_key(self):
		f = self.dir / 'source.pin'
		f.write_text('package=p\nversion=1\n')
		with self.assertRaisesRegex(GkiError, "missing key 'tarball'"):
			source.load_pin(f)

	def test_installed_pinned_version_is_used_without_download(self):
		arch = FakeArchive([NEW, PINNED])
		s, _ = self.obtain(arch, installed=PINNED)
		self.assertEqual((True, PINNED, self.tarball), (s.pinned, s.version, s.tarball))
		self.assertEqual([], arch.downloads)

	def test_pinned_version_is_fetched_when_another_is_installed(self):
		arch = FakeArchive([NEW, PINNED])
		s, _ = self.obtain(arch, installed=NEW)
		self.assertEqual((True, PINNED), (s.pinned, s.version))
		self.assertEqual([PINNED], arch.downloads)
		self.assertEqual(self.cache / f'linux-source-6.12_{PINNED}.tar.xz', s.tarball)

	def test_fetched_source_is_cached(self):
		arch = FakeArchive([PINNED])
		first, _ = self.obtain(arch)
		second, _ = self.obtain(arch)
		self.assertEqual(first, second)
		self.assertEqual([PINNED], arch.downloads)

	def test_stale_lists_are_refreshed_once(self):
		arch = FakeArchive([], after_refresh=[NEW, PINNED])
		s, _ = self.obtain(arch)
		self.assertTrue(s.pinned)
		self.assertEqual(1, arch.refreshes)

	def test_pin_gone_from_the_archive_stops_with_the_versions_and_the_way_on(self):
		arch = FakeArchive(['6.12.121-1~deb12u1', NEW])
		with self.assertRaises(GkiError) as cm:
			self.obtain(arch)
		msg = str(cm.exception)
		self.assertIn(f'{PINNED}, which common/source.pin names, is not in Debian\'s archive, '
			      f'which offers: 6.12.121-1~deb12u1, {NEW}', msg)
		self.assertIn('./build/gki source pin VERSION', msg)
		self.assertNotIn('\n', msg)
		self.assertEqual([], arch.downloads)
		self.assertFalse(any(self.cache.glob('*.tar.xz')))

	def test_accepted_update_builds_the_newest_unpinned(self):
		arch = FakeArchive(['6.12.121-1~deb12u1', NEW], content=b'y')
		s, out = self.obtain(arch, accept=True)
		self.assertIn('building 6.12.121-1~deb12u1 because the update was accepted', out)
		self.assertEqual((False, '6.12.121-1~deb12u1'), (s.pinned, s.version))

	def test_changed_tarball_stops_the_build(self):
		arch = FakeArchive([PINNED], content=b'changed')
		with self.assertRaisesRegex(GkiError, 'common/source.pin says .*--accept-source-update'):
			self.obtain(arch)

	def test_accepted_changed_tarball_is_unpinned(self):
		arch = FakeArchive([PINNED], content=b'changed')
		s, out = self.obtain(arch, accept=True)
		self.assertIn('building it because the update was accepted', out)
		self.assertFalse(s.pinned)

	def test_failed_download_of_an_offered_version_is_not_a_moved_pin(self):
		class Broken(FakeArchive):
			def download(self, *args):
				raise GkiError('apt-get download linux-source-6.12 failed: 503')
		with self.assertRaisesRegex(GkiError, '503'):
			self.obtain(Broken([PINNED]))

	def test_write_pin_changes_version_and_sha256_only(self):
		f = self.dir / 'source.pin'
		f.write_text(f'# version=keep\npackage=p\nversion={PINNED}\ntarball=/t.tar.xz\n'
			     'sha256=00\n')
		source.write_pin(f, NEW, 'ff')
		self.assertEqual(f'# version=keep\npackage=p\nversion={NEW}\ntarball=/t.tar.xz\n'
				 'sha256=ff\n', f.read_text())
		self.assertEqual([], list(self.dir.glob('*.tmp')))


class CommandLineTest(unittest.TestCase):
	GKI = str(TOP / 'build' / 'gki')

	def test_unknown_command_is_one_clear_line(self):
		r = subprocess.run([self.GKI, 'frobnicate'], capture_output=True, text=True)
		self.assertEqual(2, r.returncode)
		self.assertEqual("gki: unknown command 'frobnicate' (try: ./build/gki help)\n",
				 r.stderr)

	def test_help_installs_nothing(self):
		with tempfile.TemporaryDirectory() as out:
			for argv in (['build', '--help'], ['test', '-h'], ['source', '--help']):
				r = subprocess.run([self.GKI, *argv], capture_output=True, text=True,
						   env={**os.environ, 'GKI_OUT': out})
				self.assertEqual(0, r.returncode, r.stderr)
				self.assertIn(f'usage: gki {argv[0]}', r.stdout)
			# build/deps.sh writes its log there before anything else.
			self.assertEqual([], list(Path(out).iterdir()))

	def gki(self, *argv: str, out: str) -> subprocess.CompletedProcess:
		"""The Python half alone (no build/deps.sh), with its own out/."""
		env = {**os.environ, 'GKI_OUT': out, 'PYTHONPATH': f'{TOP}/build:{TOP}/qemu'}
		return subprocess.run([sys.executable, '-B', '-P', '-m', 'gkibuild', *argv],
				      capture_output=True, text=True, env=env, cwd=TOP, timeout=60)

	def test_exit_status_2_for_a_command_line_that_cannot_run(self):
		with tempfile.TemporaryDirectory() as out:
			for argv in (['abi', 'check', '--accept-break', 'x'], ['bench', '--icount'],
				     ['build', '--frobnicate'], ['qemu', '--add', '/nonexistent']):
				with self.subTest(argv=argv):
					r = self.gki(*argv, out=out)
					self.assertEqual(2, r.returncode, r.stderr)
					self.assertEqual(1, len(r.stderr.strip().splitlines()[-1:]))

	def test_exit_status_3_when_the_job_cannot_be_done(self):
		with tempfile.TemporaryDirectory() as out:
			r = self.gki('qemu', '--prebuilt', out=out)
		self.assertEqual(3, r.returncode, r.stderr)
		self.assertRegex(r.stderr, r'^gki: error: --prebuilt: .*Image not built\n$')

	def test_exit_status_130_when_interrupted(self):
		from gkibuild import main
		with mock.patch.object(main, 'cmd_programs', side_effect=KeyboardInterrupt), \
		     contextlib.redirect_stderr(io.StringIO()) as err, \
		     self.assertRaises(SystemExit) as cm:
			main.main(['programs'])
		self.assertEqual(130, cm.exception.code)
		self.assertEqual('gki: error: interrupted\n', err.getvalue())

	def test_help_lists_the_commands(self):
		r = subprocess.run([self.GKI, 'help'], capture_output=True, text=True)
		self.assertEqual(0, r.returncode)
		for cmd in ('build', 'test', 'qemu', 'bench', 'repro'):
			self.assertRegex(r.stdout, rf'\n  {cmd}\b')


if __name__ == '__main__':
	unittest.main()
