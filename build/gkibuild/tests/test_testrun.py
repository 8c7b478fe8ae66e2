# SPDX-License-Identifier: GPL-2.0
"""testrun.test_all with the guest runs a child made meanwhile (the ones
`gki test` starts beside its host tests): their outcomes join the run's
tally and its JUnit XML, and a run that did not happen fails."""

import io
import os
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

from gkibuild import testrun
from gkibuild.background import GuestRun
from gkibuild.layout import VARIANTS, Layout
from gkiqemu import runner
from gkiqemu.ktap import Status as S


class FakeMeanwhile:
	"""background.Background's side that test_all uses."""

	def __init__(self, guests: list[GuestRun]) -> None:
		self.guests = guests
		self.calls: list[str] = []

	def wait(self) -> None:
		self.calls.append('wait')

	def wait_guests(self) -> list[GuestRun]:
		self.calls.append('wait_guests')
		return self.guests


class TestAllTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.addCleanup(self.tmp.cleanup)
		self.layout = Layout(Path(self.tmp.name), Path(self.tmp.name) / 'out')
		self.vs = list(VARIANTS.values())

	def run_all(self, m: FakeMeanwhile, booted: list) -> runner.Tally:
		tallies = []
		real = testrun.Tally

		def tally(*a):
			tallies.append(real(io.StringIO()))
			return tallies[-1]

		with mock.patch.object(testrun, 'guest', lambda *a: booted.append(a)), \
		     mock.patch.object(testrun, 'Tally', tally), \
		     mock.patch('sys.stdout', io.StringIO()):
			self.rc = testrun.test_all(self.layout, self.vs, host=False, meanwhile=m)
		return tallies[0]

	def run_of(self, variant: str, status: S | None, rc: int | None) -> GuestRun:
		"""A guest run that wrote one outcome of status (None: nothing)."""
		results = Path(self.tmp.name) / f'{variant}.json'
		if status is not None:
			t = runner.Tally(io.StringIO())
			t.add(f'{variant}: x', status, '')
			runner.write_results(t, results)
		return GuestRun(variant, Path(self.tmp.name) / f'{variant}.log', results, rc)

	def names(self, t: runner.Tally) -> list[tuple[str, S]]:
		return [(o.name, o.status) for o in t.outcomes]

	def test_guest_outcomes_come_from_every_run_meanwhile(self):
		m = FakeMeanwhile([self.run_of('release', S.PASS, 0), self.run_of('debug', S.FAIL, 1)])
		booted = []
		t = self.run_all(m, booted)
		self.assertEqual(1, self.rc)
		self.assertEqual([('release: x', S.PASS), ('debug: x', S.FAIL)], self.names(t))
		self.assertEqual([], booted)
		self.assertEqual(['wait', 'wait_guests'], m.calls)

	def test_outcomes_are_written_as_junit(self):
		m = FakeMeanwhile([self.run_of('release', S.PASS, 0), self.run_of('debug', S.FAIL, 1)])
		self.run_all(m, [])
		root = ET.parse(self.layout.junit).getroot()
		self.assertEqual(('2', '1'), (root.get('tests'), root.get('failures')))
		self.assertEqual(['release', 'debug'], [s.get('name') for s in root])

	def test_a_run_meanwhile_that_did_not_run_fails(self):
		m = FakeMeanwhile([self.run_of('release', S.PASS, 0), self.run_of('debug', None, None)])
		t = self.run_all(m, [])
		self.assertEqual(1, self.rc)
		self.assertIn(('debug: guest suites (run meanwhile)', S.FAIL), self.names(t))

	def skip_run(self, ci: str | None) -> runner.Tally:
		"""test_all of a release run that skipped one case for a reason
		naming no kernel option and a debug run that passed, with CI set
		to ci (None: unset)."""
		m = FakeMeanwhile([self.run_of('release', S.SKIP, 0), self.run_of('debug', S.PASS, 0)])
		env = {} if ci is None else {'CI': ci}
		with mock.patch.dict('os.environ', env, clear=False):
			if ci is None:
				os.environ.pop('CI', None)
			return self.run_all(m, [])

	def test_a_skip_passes_outside_ci(self):
		t = self.skip_run(None)
		self.assertEqual(0, self.rc)
		self.assertEqual([('release: x', S.SKIP), ('debug: x', S.PASS)], self.names(t))

	def test_a_skip_ci_does_not_accept_fails_under_ci(self):
		t = self.skip_run('true')
		self.assertEqual(1, self.rc)
		self.assertEqual([('debug: x', S.PASS), ('release: x', S.FAIL)], self.names(t))

	def test_without_a_guest_run_meanwhile_the_guests_boot_here(self):
		m = FakeMeanwhile([])
		booted = []
		self.run_all(m, booted)
		self.assertEqual(1, len(booted))
		self.assertEqual(['wait'], m.calls)


if __name__ == '__main__':
	unittest.main()
