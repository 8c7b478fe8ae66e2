# SPDX-License-Identifier: GPL-2.0
"""Module signing's key: the release engineer's, else a throwaway key made
once under out/ and kept; a file that is not a key is refused, naming what
it lacks; the copy in the object folder is private and written only when
it changes."""

import os
import stat
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from gkibuild import signing
from gkibuild.util import GkiError


class KeyTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.out = Path(self.tmp.name) / 'out'
		env = {k: v for k, v in os.environ.items() if k != signing.ENV}
		patcher = mock.patch.dict(os.environ, env, clear=True)
		patcher.start()
		self.addCleanup(patcher.stop)
		self.addCleanup(self.tmp.cleanup)

	def test_a_throwaway_key_is_made_once_and_kept(self):
		first = signing.key(self.out)
		self.assertEqual(signing.throwaway(self.out), first)
		data = first.read_bytes()
		self.assertIn(signing.BEGIN_KEY, data)
		self.assertIn(signing.BEGIN_CERT, data)
		self.assertEqual(0o600, stat.S_IMODE(first.stat().st_mode))
		self.assertEqual(first, signing.key(self.out))
		self.assertEqual(data, first.read_bytes())

	def test_the_engineers_key_is_used_and_nothing_is_made(self):
		given = Path(self.tmp.name) / 'release.pem'
		given.write_bytes(signing.BEGIN_KEY + b'\n...\n' + signing.BEGIN_CERT + b'\n...\n')
		with mock.patch.dict(os.environ, {signing.ENV: str(given)}):
			self.assertEqual(given.resolve(), signing.key(self.out))
		self.assertFalse(signing.throwaway(self.out).exists())

	def test_a_file_without_a_key_or_certificate_is_refused(self):
		given = Path(self.tmp.name) / 'cert-only.pem'
		given.write_bytes(signing.BEGIN_CERT + b'\n...\n')
		with mock.patch.dict(os.environ, {signing.ENV: str(given)}):
			with self.assertRaisesRegex(GkiError, 'unencrypted private key'):
				signing.key(self.out)
		given.write_bytes(b'-----BEGIN ENCRYPTED PRIVATE KEY-----\n')
		with mock.patch.dict(os.environ, {signing.ENV: str(given)}):
			with self.assertRaisesRegex(GkiError, 'private key and a certificate'):
				signing.key(self.out)

	def test_a_missing_key_file_is_one_clear_error(self):
		with mock.patch.dict(os.environ, {signing.ENV: str(Path(self.tmp.name) / 'nope')}):
			with self.assertRaisesRegex(GkiError, f'{signing.ENV}=.*cannot read'):
				signing.key(self.out)

	def test_install_writes_a_private_copy_only_when_it_changes(self):
		key = signing.key(self.out)
		obj = Path(self.tmp.name) / 'obj'
		obj.mkdir()
		signing.install(key, obj)
		copy = obj / signing.KEY
		self.assertEqual(key.read_bytes(), copy.read_bytes())
		self.assertEqual(0o600, stat.S_IMODE(copy.stat().st_mode))
		os.utime(copy, ns=(1, 1))
		signing.install(key, obj)
		self.assertEqual(1, copy.stat().st_mtime_ns)


if __name__ == '__main__':
	unittest.main()
