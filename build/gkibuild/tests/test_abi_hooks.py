# SPDX-License-Identifier: GPL-2.0
"""Vendor hooks in the KMI (common/patches/: include/trace/hooks/ and
drivers/android/vendor_hooks.c).  The short report's naming of hooks,
without a build."""

from __future__ import annotations

import unittest
from pathlib import Path

import context  # noqa: F401 (sets the import path)
import abi_short
from abi_changes import Change, Result

MEMINFO = 'android_vh_meminfo_proc_show'
ITER = f'__traceiter_{MEMINFO}'


class HookNamesTest(unittest.TestCase):
	"""report.short says which hook a tracepoint's symbol is: no build."""

	def render(self, *found: Change) -> str:
		res = Result(list(found), Path('report.txt'))
		return abi_short.render(res, {'vhooks': {c.name for c in found}}, 'ABI check')

	def test_hook_symbols_name_their_hook(self):
		rvh = '__tracepoint_android_rvh_set_user_nice'
		short = self.render(
			Change('symbol', ITER, "parameter 3 of type 'int' was added", (ITER,)),
			Change('added', rvh, 'newly exported', (rvh,)),
			Change('crc', '__SCK__tp_func_sched_switch', 'CRC 0x1 -> 0x2',
			       ('__SCK__tp_func_sched_switch',)))
		self.assertIn(f'  BREAK     {ITER} (vendor hook {MEMINFO}): parameter 3', short)
		self.assertIn(f'  ADDED     {rvh} (vendor hook android_rvh_set_user_nice): '
			      'newly exported', short)
		self.assertIn('  BREAK     __SCK__tp_func_sched_switch (tracepoint sched_switch): '
			      'CRC 0x1 -> 0x2', short)

	def test_other_symbols_and_types_keep_their_names(self):
		short = self.render(
			Change('crc', 'LZ4_decompress_safe', 'CRC 0x1 -> 0x2', ('LZ4_decompress_safe',)),
			Change('type', 'struct tracepoint', "1 data member insertion", (ITER,)))
		self.assertIn('  BREAK     LZ4_decompress_safe: CRC 0x1 -> 0x2', short)
		self.assertIn('  BREAK     struct tracepoint: 1 data member insertion', short)
		self.assertNotIn('(tracepoint', short)
		self.assertNotIn('(vendor hook', short)


if __name__ == '__main__':
	unittest.main()
