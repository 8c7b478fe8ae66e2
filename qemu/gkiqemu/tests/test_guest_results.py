# SPDX-License-Identifier: GPL-2.0
"""The outcomes of a guest run made by a child process (the one `gki
test` starts beside its host tests): they join the parent's tally, and
whatever the parent cannot read or believe fails the run."""

import io
import tempfile
import unittest
from pathlib import Path

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


if __name__ == '__main__':
	unittest.main()
