# SPDX-License-Identifier: GPL-2.0
"""Module.symvers, read strictly (build/gkibuild/abi/symvers.py), by the
gate and by strict mode alike: a line other than CRC, symbol, module,
export kind and namespace (which may be empty), separated by tabs, is an
error naming the file and the line, never a symbol skipped."""

from __future__ import annotations

import re
import tempfile
import unittest
from pathlib import Path

from gkibuild.abi import kmi
from gkibuild.abi.symvers import Export, read_symvers, write_symvers
from gkibuild.util import GkiError

GOOD = ('0xc7c1107a\tLZ4_decompress_safe\tvmlinux\tEXPORT_SYMBOL\t\n'
	'0x12345678\tincfs_helper\tfs/incfs/incrementalfs\tEXPORT_SYMBOL_GPL\tINCFS\n')
EXPORTS = {'LZ4_decompress_safe': Export('0xc7c1107a', 'vmlinux', 'EXPORT_SYMBOL', ''),
	   'incfs_helper': Export('0x12345678', 'fs/incfs/incrementalfs', 'EXPORT_SYMBOL_GPL',
				  'INCFS')}
MALFORMED = {
	'no kind or namespace': '0x1\tkfree\tvmlinux',
	'a column too many': '0x1\tkfree\tvmlinux\tEXPORT_SYMBOL\t\textra',
	'spaces for tabs': '0x1 kfree vmlinux EXPORT_SYMBOL ',
	'a blank line': '',
}


class SymversTest(unittest.TestCase):
	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.path = Path(tmp.name) / 'Module.symvers'

	def test_a_good_file_reads_and_writes_back_byte_for_byte(self):
		self.path.write_text(GOOD)
		self.assertEqual(EXPORTS, read_symvers(self.path))
		write_symvers(self.path, EXPORTS)
		self.assertEqual(GOOD, self.path.read_text())

	def test_an_empty_file_exports_nothing(self):
		self.path.write_text('')
		self.assertEqual({}, read_symvers(self.path))

	def test_a_malformed_line_names_the_file_and_the_line(self):
		for why, line in MALFORMED.items():
			with self.subTest(why):
				self.path.write_text(GOOD + line + '\n' + GOOD)
				with self.assertRaisesRegex(GkiError, f'^{re.escape(str(self.path))}:3: '
							    'expected crc, symbol, module, export kind'):
					read_symvers(self.path)

	def test_strict_mode_reads_it_as_strictly(self):
		"""A short line fails strict mode as it fails the gate (strict mode
		once took what it could of such a line, or skipped it)."""
		self.path.write_text(GOOD + '0x1\tkfree\tvmlinux\n')
		lists = {'core': {'LZ4_decompress_safe', 'incfs_helper', 'kfree'}}
		with self.assertRaisesRegex(GkiError, f'^{re.escape(str(self.path))}:3: '):
			kmi.strict(self.path, lists, self.path.parent)


if __name__ == '__main__':
	unittest.main()
