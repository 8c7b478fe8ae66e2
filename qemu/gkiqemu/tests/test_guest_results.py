# SPDX-License-Identifier: GPL-2.0
"""The outcomes of a guest run made by a child process (the one `gki
test` starts beside its host tests): they join the parent's tally, and
whatever the parent cannot read or believe fails the run."""

import io
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

from gkibuild.background import GuestRun
from gkibuild.layout import VARIANTS, Layout
from gkiqemu import runner
from gkiqemu.ktap import Status as S

WHAT = 'all: guest suites (run meanwhile)'


class ResultsTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.addCleanup(self.tmp.cleanup)
		self.path = Path(self.tmp.name) / 'results.json'

	def child(self, *outcomes: tuple[str, S, str]) -> None:
		"""What a child's guest_suites(results=...) writes."""
		t = runner.Tally(io.StringIO())
		for o in outcomes:
			t.add(*o)
		runner.write_results(t, self.path)

	def read(self, rc: int | None) -> runner.Tally:
		t = runner.Tally(io.StringIO())
		runner.read_results(t, self.path, rc, WHAT)
		return t

	def states(self, t: runner.Tally) -> list[tuple[str, S, str]]:
		return [(o.name, o.status, o.detail) for o in t.outcomes]

	def test_outcomes_come_back_whole_and_are_not_printed_twice(self):
		sent = [('release: a', S.PASS, ''), ('debug: b', S.FAIL, 'crc'),
			('debug: c', S.SKIP, 'no lz4'), ('debug: d', S.CRASHED, 'oops')]
		self.child(*sent)
		t = self.read(1)
		self.assertEqual(sent, self.states(t))
		self.assertEqual('', t.out.getvalue())

	def test_no_results_file_fails(self):
		t = self.read(1)
		self.assertEqual([(WHAT, S.FAIL)], [(o.name, o.status) for o in t.outcomes])
		self.assertIn('exit 1; no results', t.outcomes[0].detail)

	def test_a_run_that_did_not_start_fails(self):
		self.assertEqual(S.FAIL, self.read(None).outcomes[0].status)

	def test_unreadable_results_fail(self):
		for text in ('', '{"name": 1}', '[{"name": "a", "status": "GOOD", "detail": ""}]',
			     '[{"status": "PASS"}]'):
			with self.subTest(text=text):
				self.path.write_text(text)
				t = self.read(0)
				self.assertEqual([(WHAT, S.FAIL)],
						 [(o.name, o.status) for o in t.outcomes])

	def test_no_test_at_all_fails(self):
		self.child()
		self.assertEqual([(WHAT, S.FAIL, 'exit 0; no test ran')], self.states(self.read(0)))

	def test_a_failed_exit_without_a_failed_test_fails(self):
		self.child(('release: a', S.PASS, ''))
		t = self.read(2)
		self.assertEqual((WHAT, S.FAIL, 'exit 2 with no failed test'), self.states(t)[-1])
		self.assertEqual(1, t.close())

	def test_a_clean_run_passes(self):
		self.child(('release: a', S.PASS, ''), ('debug: a', S.PASS, ''))
		t = self.read(0)
		self.assertEqual(2, t.count(S.PASS))
		self.assertEqual(0, t.close())


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
		real = runner.Tally

		def tally(*a):
			tallies.append(real(io.StringIO()))
			return tallies[-1]

		with mock.patch.object(runner, 'guest', lambda *a: booted.append(a)), \
		     mock.patch.object(runner, 'Tally', tally), \
		     mock.patch('sys.stdout', io.StringIO()):
			self.rc = runner.test_all(self.layout, self.vs, host=False, meanwhile=m)
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

	def test_without_a_guest_run_meanwhile_the_guests_boot_here(self):
		m = FakeMeanwhile([])
		booted = []
		self.run_all(m, booted)
		self.assertEqual(1, len(booted))
		self.assertEqual(['wait'], m.calls)


if __name__ == '__main__':
	unittest.main()
