# SPDX-License-Identifier: GPL-2.0
"""Protected exports: the list is what the GKI modules export, by
Module.symvers; a list that differs fails the build naming both sides and
the command; a line that is not a symbol name is refused."""

import tempfile
import unittest
from pathlib import Path

from gkibuild.abi import protected
from gkibuild.util import GkiError

SYMVERS = ''.join(f'0x1234abcd\t{s}\t{m}\tEXPORT_SYMBOL_GPL\t\n' for s, m in (
	('kfree', 'vmlinux'),
	('wiphy_register', 'net/wireless/cfg80211'),
	('l2tp_tunnel_put', 'net/l2tp/l2tp_core'),
	('vendor_thing', 'vendor/foo'),
))


class ProtectedTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.addCleanup(self.tmp.cleanup)
		self.dir = Path(self.tmp.name)
		(self.dir / 'Module.symvers').write_text(SYMVERS)

	def built(self):
		return protected.of_build(self.dir / 'Module.symvers',
					  ['net/wireless/cfg80211.ko', 'net/l2tp/l2tp_core.ko'])

	def test_the_gki_modules_exports_only(self):
		self.assertEqual({'wiphy_register', 'l2tp_tunnel_put'}, self.built())

	def test_written_list_reads_back_and_matches(self):
		path = self.dir / protected.FILE
		protected.write(path, self.built())
		self.assertEqual(self.built(), protected.read(path))
		protected.check(path, self.built())

	def test_a_list_that_differs_names_both_sides_and_the_command(self):
		path = self.dir / protected.FILE
		protected.write(path, {'wiphy_register', 'gone_symbol'})
		with self.assertRaises(GkiError) as cm:
			protected.check(path, self.built())
		msg = str(cm.exception)
		self.assertIn('exported by a GKI module but not listed: l2tp_tunnel_put', msg)
		self.assertIn('listed but no GKI module exports them: gone_symbol', msg)
		self.assertIn('./build/gki abi update', msg)

	def test_a_missing_list_fails(self):
		with self.assertRaisesRegex(GkiError, 'missing: run ./build/gki abi update'):
			protected.check(self.dir / protected.FILE, self.built())

	def test_a_line_that_is_not_a_symbol_name_is_refused(self):
		path = self.dir / protected.FILE
		for bad in ('two names', '"quoted"', '9starts_with_a_digit'):
			with self.subTest(line=bad):
				path.write_text(f'# comment\nok_name\n{bad}\n')
				with self.assertRaisesRegex(GkiError, f'{protected.FILE}:3: not a symbol'):
					protected.read(path)

	def test_install_copies_the_list_for_the_kernel(self):
		path = self.dir / protected.FILE
		protected.write(path, self.built())
		obj = self.dir / 'obj'
		obj.mkdir()
		protected.install(path, obj)
		self.assertEqual(path.read_bytes(), (obj / protected.INSTALLED).read_bytes())

	def test_without_a_list_the_kernel_gets_an_empty_one(self):
		obj = self.dir / 'obj'
		obj.mkdir()
		protected.install(self.dir / protected.FILE, obj)
		self.assertEqual(set(), protected.read(obj / protected.INSTALLED))

	def test_the_checked_in_list_reads(self):
		top = Path(__file__).resolve().parents[3]
		self.assertLess(100, len(protected.read(top / 'abi' / protected.FILE)))


if __name__ == '__main__':
	unittest.main()
