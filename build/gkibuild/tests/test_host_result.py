# SPDX-License-Identifier: GPL-2.0
"""The host tests' result class: every outcome unittest has becomes a line
of the tally, and unittest's own verdict is checked against the tally, so
that no failure can vanish from a green run.

The suites run here are built in memory (see case()), so that discovery
never runs them as tests of their own."""

import io
import sys
import time
import types
import tempfile
import unittest
from pathlib import Path
from typing import Callable

from gkibuild import testrun
from gkiqemu import ktap, runner

S = ktap.Status


def case(name: str, **methods: Callable) -> type[unittest.TestCase]:
	"""A TestCase class named demo.<name>, built in memory."""
	return type(name, (unittest.TestCase,), {'__module__': 'demo', **methods})


def run(suite: unittest.TestSuite) -> runner.Tally:
	"""Run a suite the way host_tests() does, into a tally of its own."""
	tally = runner.Tally(io.StringIO())
	testrun.host_run(suite, tally)
	return tally


def run_cases(*classes: type[unittest.TestCase]) -> runner.Tally:
	loader = unittest.TestLoader()
	return run(unittest.TestSuite(loader.loadTestsFromTestCase(c) for c in classes))


def lines(tally: runner.Tally) -> list[tuple[str, ktap.Status]]:
	return [(o.name, o.status) for o in tally.outcomes]


def detail(tally: runner.Tally, name: str) -> str:
	return next(o.detail for o in tally.outcomes if o.name == name)


def passes(self: unittest.TestCase) -> None:
	self.assertTrue(True)


def fails(self: unittest.TestCase) -> None:
	self.assertEqual(1, 2)


def raises(self: unittest.TestCase) -> None:
	raise RuntimeError('broken')


def skips(self: unittest.TestCase) -> None:
	self.skipTest('not here')


def expected_failure(test: Callable) -> Callable:
	"""test, marked as expected to fail (on a copy: the mark is an attribute
	of the function, which other cases share)."""
	return unittest.expectedFailure(lambda self: test(self))


def fails_for_two(self: unittest.TestCase) -> None:
	for n in (1, 2, 3):
		with self.subTest(n=n):
			self.assertNotEqual(2, n)


class OutcomeTest(unittest.TestCase):
	def test_pass_fail_error_skip_are_one_line_each(self) -> None:
		tally = run_cases(case('Plain', test_a=passes, test_b=fails, test_c=raises,
				       test_d=skips))
		self.assertEqual([('host: Plain.test_a', S.PASS), ('host: Plain.test_b', S.FAIL),
				  ('host: Plain.test_c', S.FAIL), ('host: Plain.test_d', S.SKIP)],
				 lines(tally))
		self.assertEqual(1, tally.close())

	def test_failing_subtest_is_a_failure_with_its_parameters(self) -> None:
		# unittest calls neither addFailure nor addSuccess for a test whose
		# subtest failed: the failure used to vanish and the run was green.
		tally = run_cases(case('Sub', test_params=fails_for_two, test_ok=passes))
		self.assertEqual([('host: Sub.test_ok', S.PASS),
				  ('host: Sub.test_params (n=2)', S.FAIL)], lines(tally))
		self.assertIn('AssertionError: 2 == 2', detail(tally, 'host: Sub.test_params (n=2)'))
		self.assertEqual(1, tally.close())

	def test_every_failing_subtest_is_a_line(self) -> None:
		def two_fail(self: unittest.TestCase) -> None:
			for n in (1, 2, 3):
				with self.subTest(n=n):
					if n != 2:
						raise OSError(f'case {n}')
		tally = run_cases(case('Sub', test_params=two_fail))
		self.assertEqual([('host: Sub.test_params (n=1)', S.FAIL),
				  ('host: Sub.test_params (n=3)', S.FAIL)], lines(tally))

	def test_passing_subtests_are_the_test_passing(self) -> None:
		def all_pass(self: unittest.TestCase) -> None:
			for n in (1, 2):
				with self.subTest(n=n):
					self.assertLess(0, n)
		self.assertEqual([('host: Sub.test_params', S.PASS)],
				 lines(run_cases(case('Sub', test_params=all_pass))))

	def test_error_in_set_up_class_is_a_failure_named_for_it(self) -> None:
		def set_up_class(cls: type) -> None:
			raise RuntimeError('no fixture')
		tally = run_cases(case('Fixture', setUpClass=classmethod(set_up_class),
				       test_a=passes))
		self.assertEqual([('host: setUpClass (demo.Fixture)', S.FAIL)], lines(tally))
		self.assertIn('no fixture', detail(tally, 'host: setUpClass (demo.Fixture)'))
		self.assertEqual(1, tally.close())

	def test_module_that_does_not_import_is_a_failure_named_for_it(self) -> None:
		with tempfile.TemporaryDirectory() as d:
			(Path(d) / 'test_gki_broken_import.py').write_text(
				"raise ImportError('no such helper')\n")
			suite = unittest.TestLoader().discover(d, pattern='test_*.py', top_level_dir=d)
			try:
				tally = run(suite)
			finally:
				sys.path.remove(d)
		name = 'host: test_gki_broken_import (did not load)'
		self.assertEqual([(name, S.FAIL)], lines(tally))
		self.assertIn('no such helper', detail(tally, name))

	def test_expected_failure_is_a_skip_saying_so(self) -> None:
		tally = run_cases(case('Known', test_bug=expected_failure(fails)))
		self.assertEqual([('host: Known.test_bug', S.SKIP)], lines(tally))
		self.assertIn('expected failure', detail(tally, 'host: Known.test_bug'))

	def test_unexpected_success_is_a_failure(self) -> None:
		tally = run_cases(case('Known', test_fixed=expected_failure(passes),
				       test_a=passes))
		self.assertEqual([('host: Known.test_a', S.PASS), ('host: Known.test_fixed', S.FAIL)],
				 lines(tally))
		self.assertIn('unexpected success', detail(tally, 'host: Known.test_fixed'))
		self.assertEqual(1, tally.close())


def unrecorded(self: unittest.TestCase, result: unittest.TestResult) -> None:
	"""A run() that records a failure with unittest while the result class
	never hears of it, as with an outcome a later unittest might add."""
	try:
		raise AssertionError('behind the tally')
	except AssertionError:
		unittest.TestResult.addFailure(result, self, sys.exc_info())


class CrossCheckTest(unittest.TestCase):
	def test_failure_unittest_records_but_the_tally_lacks_fails_the_run(self) -> None:
		suite = unittest.TestSuite([case('Unrecorded', run=unrecorded)('run'),
					    case('Plain', test_a=passes)('test_a')])
		tally = run(suite)
		self.assertIn((testrun.HOST_VERDICT, S.FAIL), lines(tally))
		self.assertIn('Unrecorded.run', detail(tally, testrun.HOST_VERDICT))
		self.assertEqual(1, tally.close())

	def test_failure_in_the_tally_that_unittest_calls_success_fails_the_run(self) -> None:
		result = testrun._HostResult(runner.Tally(io.StringIO()))
		result.failed.append('host: Ghost.test_a')
		self.assertIn('host: Ghost.test_a', testrun.disagreement(result))
		self.assertIn('unittest says success', testrun.disagreement(result))

	def test_agreeing_run_adds_no_verdict_line(self) -> None:
		tally = run_cases(case('Plain', test_a=passes, test_b=fails,
				       test_c=expected_failure(passes), test_d=fails_for_two))
		self.assertNotIn(testrun.HOST_VERDICT, [o.name for o in tally.outcomes])
		self.assertEqual(3, tally.count(S.FAIL))


class DurationTest(unittest.TestCase):
	def test_module_time_includes_its_class_set_up(self):
		slow = case('Slow', setUpClass=classmethod(lambda cls: time.sleep(0.3)),
			    test_a=passes, test_b=passes)
		quick = case('Quick', test_c=passes)
		result = testrun._HostResult(runner.Tally(io.StringIO()))
		quick.__module__ = 'other'
		loader = unittest.TestLoader()
		unittest.TestSuite([loader.loadTestsFromTestCase(slow),
				    loader.loadTestsFromTestCase(quick)]).run(result)
		self.assertGreaterEqual(result.seconds['demo'], 0.3)
		self.assertLess(result.seconds['other'], 0.3)

	def test_the_run_names_its_slowest_modules(self):
		self.assertEqual('70 s; slowest: b 40 s, c 20 s',
				 testrun.slowest({'a': 10.0, 'b': 40.0, 'c': 20.0}, shown=2))
		tally = run_cases(case('Quick', test_c=passes))
		self.assertRegex(tally.out.getvalue(), r'\ngki: host tests: \d+ s; slowest: demo 0 s\n$')


class SplitTest(unittest.TestCase):
	"""The tests of a module that needs every variant run only after the
	other variants' build is waited for; the rest before."""

	def late_case(self, **methods: Callable) -> type[unittest.TestCase]:
		"""A case of a module demo_all that says it needs every variant."""
		demo_all = types.ModuleType('demo_all')
		demo_all.NEEDS_EVERY_VARIANT = True
		sys.modules['demo_all'] = demo_all
		self.addCleanup(sys.modules.pop, 'demo_all')
		late = case('Late', **methods)
		late.__module__ = 'demo_all'
		return late

	def test_every_variant_modules_run_after_the_wait(self):
		events = []

		def record(self):
			events.append(self.id())
		late = self.late_case(test_b=record)
		early = case('Early', test_a=record, test_c=record)
		loader = unittest.TestLoader()
		suite = unittest.TestSuite([loader.loadTestsFromTestCase(late),
					    loader.loadTestsFromTestCase(early)])
		tally = runner.Tally(io.StringIO())
		testrun.host_run_split(suite, tally, lambda: events.append('wait'))
		self.assertEqual(['demo.Early.test_a', 'demo.Early.test_c', 'wait',
				  'demo_all.Late.test_b'], events)
		self.assertEqual(3, tally.count(S.PASS))

	def test_a_failed_wait_runs_no_late_test(self):
		ran = []
		late = self.late_case(test_b=lambda self: ran.append(1))

		def fail():
			raise RuntimeError('the debug build failed')
		suite = unittest.TestLoader().loadTestsFromTestCase(late)
		with self.assertRaisesRegex(RuntimeError, 'debug build failed'):
			testrun.host_run_split(suite, runner.Tally(io.StringIO()), fail)
		self.assertEqual([], ran)


if __name__ == '__main__':
	unittest.main()
