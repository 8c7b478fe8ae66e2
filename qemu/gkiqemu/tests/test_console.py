# SPDX-License-Identifier: GPL-2.0
import io
import unittest

from gkiqemu import console, runner


class KernelErrorsTest(unittest.TestCase):
	def kinds(self, text: str) -> list[str]:
		return [e.split(':', 1)[0] for e in console.kernel_errors(text)]

	def test_clean_boot(self):
		self.assertEqual([], self.kinds(
			'[    0.000000] Booting Linux\n'
			'[    0.300000] gki_test_module: loading out-of-tree module taints kernel.\n'
			'    # WARNING: user text without a timestamp is not a kernel report\n'))

	def test_reports(self):
		cases = {
			'[   2.1] BUG: KASAN: slab-use-after-free in foo+0x10/0x20': 'BUG',
			'[   2.1] WARNING: CPU: 1 PID: 7 at fs/x.c:10 f+0x1/0x2': 'WARN',
			'[   2.1] WARNING: possible circular locking dependency detected': 'WARN',
			'[   2.1] Unable to handle kernel paging request at virtual address 0': 'oops',
			'[   2.1] Internal error: Oops: 0000000096000005 [#1] SMP': 'oops',
			'[   2.1] Kernel panic - not syncing: Attempted to kill init!': 'panic',
			'[  60.1] INFO: task cat:77 blocked for more than 30 seconds.': 'hung task',
			'[   2.1] UBSAN: array-index-out-of-bounds in fs/x.c:10:5': 'UBSAN',
			'[   2.1] Call trace:': 'call trace',
			'unreferenced object 0xffff000004a1b000 (size 64):': 'kmemleak',
			'[   2.1] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:': 'RCU stall',
		}
		for line, kind in cases.items():
			with self.subTest(line=line):
				self.assertEqual([kind], self.kinds(line + '\n'))

	def test_kernel_line_inside_a_user_line(self):
		self.assertEqual(['BUG'], self.kinds(
			'    ok 1 glob[   3.2] BUG: sleeping function called from invalid context\n'))


class BenchRecordsTest(unittest.TestCase):
	def test_records(self):
		text = ('    BENCH {"name": "a", "value": 2.0, "unit": "us"}\r\n'
			'BENCH {broken\nBENCH {"name": "b", "value": 1.0, "baseline": "a"}\n')
		self.assertEqual([{'name': 'a', 'value': 2.0, 'unit': 'us'},
				  {'name': 'b', 'value': 1.0, 'baseline': 'a'}],
				 runner.bench_records(text))


class TallyTest(unittest.TestCase):
	def test_counts_and_exit(self):
		t = runner.Tally(io.StringIO())
		from gkiqemu.ktap import Status
		for s in (Status.PASS, Status.PASS, Status.SKIP, Status.MISSING):
			t.add('x', s)
		self.assertEqual(1, t.close())
		t = runner.Tally(io.StringIO())
		t.add('x', Status.PASS)
		self.assertEqual(0, t.close())

	def test_nothing_ran_fails(self):
		self.assertEqual(1, runner.Tally(io.StringIO()).close())


if __name__ == '__main__':
	unittest.main()
