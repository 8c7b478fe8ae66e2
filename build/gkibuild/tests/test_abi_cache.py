# SPDX-License-Identifier: GPL-2.0
"""abidiff.dump's cache: a dump is reused only for the same vmlinux bytes,
symbol list and abidw, and a failed or unfinished dump is never reused.
abidw is replaced by a fake that writes a dump from its inputs and counts
its runs: no kernel build."""

from __future__ import annotations

import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from gkibuild.abi import abidiff
from gkibuild.util import GkiError


class FakeAbidw:
	"""abidw's command line in, a dump naming its inputs out."""

	def __init__(self, version: str = 'abidw: 2.2.0'):
		self.version = version
		self.dumps = 0
		self.fail = False

	def __call__(self, cmd: list[str]) -> subprocess.CompletedProcess[str]:
		if cmd[1:] == ['--version']:
			return subprocess.CompletedProcess(cmd, 0, self.version + '\n', '')
		self.dumps += 1
		out = Path(cmd[cmd.index('--out-file') + 1])
		wl = Path(cmd[cmd.index('--kmi-whitelist') + 1]).read_text()
		if self.fail:
			out.write_text('half a dump')
			return subprocess.CompletedProcess(cmd, 1, '', 'abidw: out of memory')
		out.write_text(f'{self.version}\n{wl}{Path(cmd[-1]).read_bytes()!r}\n')
		return subprocess.CompletedProcess(cmd, 0, '', '')


class DumpCacheTest(unittest.TestCase):
	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.dir = Path(tmp.name)
		self.vmlinux = self.dir / 'vmlinux'
		self.vmlinux.write_bytes(b'\x7fELF one')
		self.cache = self.dir / 'cache'
		self.abidw = FakeAbidw()
		patch = mock.patch.object(abidiff, '_run', self.abidw)
		patch.start()
		self.addCleanup(patch.stop)
		abidiff.abidw_version.cache_clear()
		self.addCleanup(abidiff.abidw_version.cache_clear)

	def dump(self, symbols: set[str], name: str = 'out.xml', cache: bool = True) -> str:
		out = self.dir / name
		abidiff.dump(self.vmlinux, symbols, out, self.cache if cache else None)
		return out.read_text()

	def test_the_same_inputs_are_dumped_once(self):
		first = self.dump({'a', 'b'}, 'first.xml')
		again = self.dump({'b', 'a'}, 'again.xml')
		self.assertEqual(1, self.abidw.dumps)
		self.assertEqual(first, again)

	def test_other_vmlinux_bytes_are_dumped_again(self):
		self.dump({'a'})
		self.vmlinux.write_bytes(b'\x7fELF two')
		self.assertIn("two", self.dump({'a'}))
		self.assertEqual(2, self.abidw.dumps)

	def test_another_list_is_dumped_again(self):
		self.dump({'a'})
		self.assertIn('  b\n', self.dump({'a', 'b'}))
		self.assertEqual(2, self.abidw.dumps)

	def test_another_abidw_is_dumped_again(self):
		self.dump({'a'})
		self.abidw.version = 'abidw: 2.4.0'
		abidiff.abidw_version.cache_clear()
		self.assertIn('2.4.0', self.dump({'a'}))
		self.assertEqual(2, self.abidw.dumps)

	def test_without_a_cache_abidw_always_runs(self):
		self.dump({'a'}, cache=False)
		self.dump({'a'}, cache=False)
		self.assertEqual(2, self.abidw.dumps)
		self.assertFalse(self.cache.exists())

	def test_a_failed_dump_is_not_kept(self):
		self.abidw.fail = True
		with self.assertRaisesRegex(GkiError, 'out of memory'):
			self.dump({'a'})
		self.assertEqual([], list(self.cache.glob('*')) if self.cache.exists() else [])
		self.abidw.fail = False
		self.assertNotIn('half a dump', self.dump({'a'}))
		self.assertEqual(2, self.abidw.dumps)

	def test_only_the_newest_dumps_are_kept(self):
		for i in range(abidiff.DUMP_CACHE_KEEP + 3):
			self.dump({f's{i}'})
		self.assertEqual(abidiff.DUMP_CACHE_KEEP, len(list(self.cache.glob('*.xml'))))
		self.assertEqual([], list(self.cache.glob('.*')), 'a temporary file left')
		newest = self.abidw.dumps
		self.dump({f's{abidiff.DUMP_CACHE_KEEP + 2}'})
		self.assertEqual(newest, self.abidw.dumps, 'the newest dump was evicted')
		self.dump({'s0'})
		self.assertEqual(newest + 1, self.abidw.dumps, 'the oldest dump was kept')


if __name__ == '__main__':
	unittest.main()
