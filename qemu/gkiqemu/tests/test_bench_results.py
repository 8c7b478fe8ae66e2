# SPDX-License-Identifier: GPL-2.0
"""Benchmark boots: a benchmark prints BENCH figures, not KTAP cases, so
one passes when it passed and printed figures, and fails when it printed
none or failed."""

import io
import unittest
from pathlib import Path

from gkiqemu import boot, ktap, runner

LOGS = Path(__file__).parent / 'logs'
S = ktap.Status


class Machine:
	"""A runner.Machine, as the build's release variant."""
	name = 'release'
	qemu_mem_mb = 1024
	qemu_timeout_s = 300


def judged(bench: bool) -> dict[str, tuple[S, str]]:
	log = LOGS / 'bench_figures.log'
	tally = runner.Tally(io.StringIO())
	runner.evaluate(Machine(), [boot.Boot(log.read_text(), log, 1.0, False, 0.5)], tally,
			bench=bench)
	return {o.name: (o.status, o.detail) for o in tally.outcomes}


class BenchVerdictTest(unittest.TestCase):
	def test_a_benchmark_with_figures_passes(self):
		self.assertEqual(S.PASS, judged(True)['release: incfs_bench'][0])

	def test_a_benchmark_without_figures_fails(self):
		self.assertEqual((S.FAIL, 'printed no BENCH figures'),
				 judged(True)['release: silent_bench'])

	def test_a_failed_benchmark_fails_though_it_printed_figures(self):
		self.assertEqual(S.FAIL, judged(True)['release: failing_bench'][0])

	def test_as_test_suites_they_ran_no_test(self):
		"""The same console judged as test suites: no case ran."""
		status, detail = judged(False)['release: incfs_bench']
		self.assertEqual(S.FAIL, status)
		self.assertIn('the suite ran no test', detail)

	def test_figures_are_read_from_the_console(self):
		log = (LOGS / 'bench_figures.log').read_text()
		self.assertEqual(['ext4_seq_read_ms', 'incfs_seq_read_ms', 'pipe_pingpong_us'],
				 [r['name'] for r in runner.bench_records(log)])


if __name__ == '__main__':
	unittest.main()
