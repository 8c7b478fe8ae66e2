# SPDX-License-Identifier: GPL-2.0
import unittest
from pathlib import Path

import context  # noqa: F401 (sets the import path)
from gkiqemu import ktap

LOGS = Path(__file__).parent / 'logs'
S = ktap.Status


def results(name: str) -> list[tuple[str, ktap.Status]]:
	doc = ktap.parse((LOGS / name).read_text())
	assert doc is not None
	return [(l.name, l.status) for l in ktap.leaves(doc)]


class KtapTest(unittest.TestCase):
	def test_all_pass(self):
		self.assertEqual([('boot_smoke: global.release_matches_build', S.PASS),
				  ('boot_smoke: global.two_cpus_online', S.PASS),
				  ('module_load: loaded.logs_release_on_load', S.PASS)],
				 results('pass.log'))

	def test_failure_and_skip(self):
		self.assertEqual([('suite_a: global.one', S.PASS),
				  ('suite_a: global.two', S.FAIL),
				  ('suite_a: global.three', S.SKIP),
				  ('suite_b: global.only', S.PASS)],
				 results('fail_skip.log'))

	def test_missing_results_against_the_plan(self):
		self.assertEqual([('suite_a: global.one', S.PASS),
				  ('suite_a: test 2', S.MISSING),
				  ('suite_a: test 3', S.MISSING)],
				 results('missing.log'))

	def test_crash_mid_suite(self):
		# The guest panicked inside suite_b: no result lines after it.
		self.assertEqual([('suite_a: global.one', S.PASS),
				  ('suite_b: global.first', S.PASS),
				  ('suite_b: test 2', S.MISSING),
				  ('suite_b', S.CRASHED),
				  ('test 3', S.MISSING)],
				 results('crash.log'))

	def test_nonzero_exit_after_passing_cases_fails(self):
		self.assertEqual([('suite_a: global.one', S.PASS),
				  ('suite_a', S.FAIL)],
				 results('exit_status.log'))

	def test_kernel_lines_and_carriage_returns_ignored(self):
		text = ('[    0.1] Booting Linux\r\nKTAP version 1\r\n1..1\r\n'
			'[    1.0] random: crng init done\r\n    TAP version 13\r\n    1..1\r\n'
			'[    1.1] kernel noise\r\n    ok 1 global.x\r\nok 1 suite\r\n')
		doc = ktap.parse(text)
		self.assertEqual([('suite: global.x', S.PASS)],
				 [(l.name, l.status) for l in ktap.leaves(doc)])

	def test_no_ktap_at_all(self):
		self.assertIsNone(ktap.parse('[    0.1] Booting Linux\nKernel panic\n'))

	def test_kunit_nesting(self):
		# qemu/suites/kunit: module, suite, case, parameterised case.
		self.assertEqual([('kunit: fmt_test: fmt: encode: case 0', S.PASS),
				  ('kunit: fmt_test: fmt: encode: case 1', S.FAIL),
				  ('kunit: fmt_test: fmt: decode', S.PASS),
				  ('kunit: fmt_test: chain: walk', S.SKIP)],
				 results('kunit.log'))

if __name__ == '__main__':
	unittest.main()
