# SPDX-License-Identifier: GPL-2.0
import unittest
from pathlib import Path

from gkiqemu import ktap

LOGS = Path(__file__).parent / 'logs'
S = ktap.Status


def results(name: str) -> list[tuple[str, ktap.Status]]:
	doc = ktap.parse((LOGS / name).read_text())
	assert doc is not None
	return [(l.name, l.status) for l in ktap.leaves(doc)]


def detail(log: str, name: str) -> str:
	doc = ktap.parse((LOGS / log).read_text())
	assert doc is not None
	return next(l.detail for l in ktap.leaves(doc) if l.name == name)


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

	def test_nonzero_exit_after_skipped_cases_fails(self):
		# Every case skipped, then the suite failed (in its teardown, say):
		# the failure is a line of the suite's own, not lost among skips.
		text = ('KTAP version 1\n1..1\n    TAP version 13\n    1..1\n'
			'    ok 1 global.one # SKIP no device\nnot ok 1 suite_a\n')
		self.assertEqual([('suite_a: global.one', S.SKIP), ('suite_a', S.FAIL)],
				 [(l.name, l.status) for l in ktap.leaves(ktap.parse(text))])

	def test_kernel_lines_and_carriage_returns_ignored(self):
		text = ('[    0.1] Booting Linux\r\nKTAP version 1\r\n1..1\r\n'
			'[    1.0] random: crng init done\r\n    TAP version 13\r\n    1..1\r\n'
			'[    1.1] kernel noise\r\n    ok 1 global.x\r\nok 1 suite\r\n')
		doc = ktap.parse(text)
		self.assertEqual([('suite: global.x', S.PASS)],
				 [(l.name, l.status) for l in ktap.leaves(doc)])

	def test_a_silent_suite_fails(self):
		"""A suite that exits 0 but printed no KTAP ran no test."""
		text = 'KTAP version 1\n1..2\n    hello\nok 1 quiet\nok 2 mute\n'
		leaves = ktap.leaves(ktap.parse(text))
		self.assertEqual([('quiet', S.FAIL), ('mute', S.FAIL)],
				 [(l.name, l.status) for l in leaves])
		self.assertEqual('printed no KTAP: the suite ran no test', leaves[0].detail)

	def test_a_suite_planning_nothing_fails(self):
		text = 'KTAP version 1\n1..1\n    TAP version 13\n    1..0\nok 1 empty\n'
		leaves = ktap.leaves(ktap.parse(text))
		self.assertEqual([('empty', S.FAIL)], [(l.name, l.status) for l in leaves])
		self.assertEqual('planned 1..0: the suite ran no test', leaves[0].detail)

	def test_a_programs_own_cases_are_not_silent_suites(self):
		"""One program's document (a host C test): its top-level tests
		are cases, which pass without nested KTAP."""
		text = 'TAP version 13\n1..2\nok 1 lw.one\nok 2 lw.two\n'
		self.assertEqual([('lw.one', S.PASS), ('lw.two', S.PASS)],
				 [(l.name, l.status)
				  for l in ktap.leaves(ktap.parse(text), suites=False)])

	def test_a_skipped_suite_stays_a_skip(self):
		text = 'KTAP version 1\n1..1\n    KTAP version 1\n    1..0\nok 1 kunit # SKIP\n'
		self.assertEqual([('kunit', S.SKIP)],
				 [(l.name, l.status) for l in ktap.leaves(ktap.parse(text))])

	def test_bail_out_fails_the_suite_named(self):
		"""Bail out! after passing cases, and an exit status of 0."""
		text = ('KTAP version 1\n1..1\n    TAP version 13\n    1..3\n    ok 1 global.one\n'
			'    Bail out! no scratch disk\nok 1 suite_a\n')
		leaves = ktap.leaves(ktap.parse(text))
		self.assertIn(('suite_a', S.FAIL, 'Bail out! no scratch disk'),
			      [(l.name, l.status, l.detail) for l in leaves])

	def test_bail_out_before_any_case_fails(self):
		text = 'KTAP version 1\n1..1\n    Bail out!\nok 1 suite_a\n'
		self.assertEqual([('suite_a', S.FAIL, 'Bail out! no reason given')],
				 [(l.name, l.status, l.detail) for l in ktap.leaves(ktap.parse(text))])

	def test_bail_out_of_the_top_document_fails(self):
		text = 'KTAP version 1\n1..2\nBail out! scratch disk did not mount\n'
		leaves = ktap.leaves(ktap.parse(text))
		self.assertEqual(('harness', S.FAIL, 'Bail out! scratch disk did not mount'),
				 (leaves[0].name, leaves[0].status, leaves[0].detail))

	def test_no_ktap_at_all(self):
		self.assertIsNone(ktap.parse('[    0.1] Booting Linux\nKernel panic\n'))

	def test_kunit_nesting(self):
		# qemu/tests/kunit: module, suite, case, parameterised case.
		self.assertEqual([('kunit: fmt_test: fmt: encode: case 0', S.PASS),
				  ('kunit: fmt_test: fmt: encode: case 1', S.FAIL),
				  ('kunit: fmt_test: fmt: decode', S.PASS),
				  ('kunit: fmt_test: chain: walk', S.SKIP)],
				 results('kunit.log'))


class KtapStrictTest(unittest.TestCase):
	"""Results the KTAP rules do not allow fail, whatever they say."""

	def test_result_beyond_the_plan_fails(self):
		self.assertEqual([('suite_a: global.one', S.PASS),
				  ('suite_a: global.two', S.FAIL)],
				 results('beyond_plan.log'))
		self.assertIn('beyond the plan of 1', detail('beyond_plan.log', 'suite_a: global.two'))

	def test_suite_beyond_the_plan_fails_with_a_line_of_its_own(self):
		# Its own case failed too: the plan's breach must still be named.
		self.assertEqual([('suite_a: global.one', S.PASS),
				  ('suite_b: global.only', S.FAIL),
				  ('suite_b', S.FAIL)],
				 results('suite_beyond_plan.log'))
		self.assertIn('beyond the plan of 1', detail('suite_beyond_plan.log', 'suite_b'))

	def test_duplicate_number_fails(self):
		self.assertEqual([('suite_a: global.one', S.PASS),
				  ('suite_a: global.two', S.FAIL)],
				 results('duplicate_number.log'))
		self.assertIn('numbered 1 where 2 was due',
			      detail('duplicate_number.log', 'suite_a: global.two'))

	def test_out_of_order_numbers_fail(self):
		self.assertEqual([('suite_a: global.two', S.FAIL),
				  ('suite_a: global.one', S.FAIL)],
				 results('out_of_order.log'))

	def test_result_without_its_number_fails(self):
		self.assertEqual([('suite_a: global.one', S.FAIL),
				  ('suite_a: global.two', S.PASS)],
				 results('no_number.log'))
		self.assertIn('without a number', detail('no_number.log', 'suite_a: global.one'))

	def test_not_ok_todo_fails(self):
		self.assertEqual([('suite_a: global.one', S.PASS),
				  ('suite_a: global.two', S.FAIL)],
				 results('todo.log'))
		self.assertEqual('TODO not implemented yet', detail('todo.log', 'suite_a: global.two'))

	def test_line_beginning_with_ok_is_console_text(self):
		self.assertEqual([('suite_a: global.one', S.PASS)], results('okay_text.log'))


if __name__ == '__main__':
	unittest.main()
