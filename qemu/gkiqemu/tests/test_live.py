# SPDX-License-Identifier: GPL-2.0
"""Suites streamed as a boot runs: recorded consoles fed in pieces to
ktap.Stream give each suite once, when its result line arrives, as parse()
reads it from the whole console; on a (fake) terminal live.py prints a
line per suite and clears its live line, elsewhere it watches nothing."""

import io
import sys
import tempfile
import unittest
from pathlib import Path

from gkiqemu import boot, ktap, live

LOGS = Path(__file__).parent / 'logs'
S = ktap.Status
CLEAR = '\r\033[K'


class FakeTty(io.StringIO):
	def isatty(self) -> bool:
		return True


def pieces(data: bytes, size: int) -> list[bytes]:
	return [data[i:i + size] for i in range(0, len(data), size)]


def finished(data: bytes) -> int:
	"""Suites finished in a console so far: its complete top-level result
	lines (the recorded consoles have no such line before the document)."""
	lines = data.decode(errors='replace').split('\n')[:-1]
	return sum(1 for l in lines if l.startswith(('ok ', 'not ok ')))


class StreamTest(unittest.TestCase):
	def stream(self, log: str, size: int) -> list[tuple[int, int, ktap.Test]]:
		"""The suites the stream gives, each with how many bytes of the
		console had come before and after the piece that gave it."""
		data = (LOGS / log).read_bytes()
		s = ktap.Stream()
		out, fed = [], 0
		for p in pieces(data, size):
			out.extend((fed, fed + len(p), t) for t in s.feed(p))
			fed += len(p)
		return out

	def test_each_suite_comes_once_when_its_result_line_completes(self):
		for log in ('pass.log', 'fail_skip.log', 'kunit.log', 'exit_status.log'):
			data = (LOGS / log).read_bytes()
			for size in (1, 7, 64, len(data)):
				with self.subTest(log=log, size=size):
					got = self.stream(log, size)
					whole = ktap.parse(data.decode())
					self.assertEqual([t.name for t in whole.subtests],
							 [t.name for _, _, t in got])
					for n, (before, after, _) in enumerate(got, 1):
						# Not before its line was complete, nor a piece later.
						self.assertLess(finished(data[:before]), n)
						self.assertLessEqual(n, finished(data[:after]))

	def test_a_suite_reads_as_parse_reads_it_from_the_whole_console(self):
		for log in ('fail_skip.log', 'kunit.log', 'exit_status.log', 'todo.log'):
			with self.subTest(log=log):
				whole = ktap.parse((LOGS / log).read_text())
				streamed = ktap.Test('', S.PASS, subtests=[t for *_, t in self.stream(log, 5)])
				self.assertEqual(ktap.leaves(whole), ktap.leaves(streamed))

	def test_a_crashed_suite_never_comes_and_stays_the_running_one(self):
		s = ktap.Stream()
		got = [t.name for p in pieces((LOGS / 'crash.log').read_bytes(), 3) for t in s.feed(p)]
		self.assertEqual(['suite_a'], got)
		self.assertEqual('suite_b', s.running)
		self.assertEqual((1, 3), (s.done, s.plan))

	def test_before_the_document_nothing_counts(self):
		s = ktap.Stream()
		self.assertEqual([], s.feed(b'[    0.1] Booting Linux\nok 1 console text\n'))
		self.assertFalse(s.started)
		self.assertEqual([], s.feed(b'KTAP version 1\n1..1\n# gki: running /tests/x\n'))
		self.assertEqual(('x', 1), (s.running, s.plan))
		self.assertEqual(['x'], [t.name for t in s.feed(b'ok 1 x\n')])
		self.assertEqual('', s.running)

	def test_a_character_cut_between_pieces(self):
		s = ktap.Stream()
		data = 'KTAP version 1\n1..1\nok 1 caf\u00e9\n'.encode()
		cut = data.index(b'\xa9')
		self.assertEqual([], s.feed(data[:cut]))
		self.assertEqual(['caf\u00e9'], [t.name for t in s.feed(data[cut:])])


class LiveTest(unittest.TestCase):
	def test_a_line_per_suite_then_the_live_line_cleared(self):
		out = FakeTty()
		with live.watching('release boot 1', out) as watch:
			for p in pieces((LOGS / 'fail_skip.log').read_bytes(), 16):
				watch(p)
			watch(b'')
		text = out.getvalue()
		printed = [l.rsplit('\r', 1)[-1].replace('\033[K', '') for l in text.split('\n')]
		self.assertIn('gki: release boot 1: suite_a: 1 passed, 1 failed, 1 skipped; '
			      'failed: global.two', printed)
		self.assertIn('gki: release boot 1: suite_b: 1 passed', printed)
		self.assertIn('gki: release boot 1: 1/2 suites, running suite_b, 0:00', text)
		self.assertTrue(text.endswith(CLEAR), repr(text[-60:]))

	def test_the_suites_own_failure_is_named_by_its_reason(self):
		exit_status = ktap.parse((LOGS / 'exit_status.log').read_text()).subtests
		self.assertEqual('suite_a: 1 passed, 1 failed; failed: exit status 124',
				 live.suite_line(exit_status[0]))
		crash = ktap.parse((LOGS / 'crash.log').read_text()).subtests
		self.assertEqual('suite_b: 1 passed, 2 failed; failed: test 2, no result line',
				 live.suite_line(crash[1]))

	def test_many_failures_are_cut_short(self):
		cases = [ktap.Test(f'c{n}', S.FAIL) for n in range(5)]
		self.assertEqual('s: 5 failed; failed: c0, c1, c2 and 2 more',
				 live.suite_line(ktap.Test('s', S.FAIL, subtests=cases)))

	def test_not_a_terminal_watches_nothing(self):
		out = io.StringIO()
		with live.watching('release boot 1', out) as watch:
			self.assertIsNone(watch)
		with live.watching('release boot 1', None) as watch:
			self.assertIsNone(watch)
		self.assertEqual('', out.getvalue())

	def test_a_failing_display_stops_and_the_boot_goes_on(self):
		out = FakeTty()
		shown = live.Live('release boot 1', out)
		shown.stream.feed = lambda data: 1 / 0
		shown.feed(b'KTAP version 1\n')
		shown.feed(b'1..1\n')
		self.assertEqual(1, out.getvalue().count('live display stopped (ZeroDivisionError'))

	def test_watching_leaves_the_boot_as_it_was(self):
		# The console, as QEMU would print it, from a program standing in.
		log = LOGS / 'two_boot_pass_boot1.log'
		cmd = [sys.executable, '-c', 'import sys, time\n'
		       f'for l in open({str(log)!r}, "rb"):\n'
		       '    sys.stdout.buffer.write(l); sys.stdout.buffer.flush(); time.sleep(0.002)']
		seen = []
		with tempfile.TemporaryDirectory() as tmp:
			plain = boot.run(cmd, Path(tmp) / 'a.log', 30)
			watched = boot.run(cmd, Path(tmp) / 'b.log', 30, seen.append)
		self.assertEqual(plain.console, watched.console)
		self.assertEqual(log.read_text(), watched.console)
		self.assertEqual(watched.console.encode(), b''.join(seen))
		self.assertTrue(watched.finished and watched.wants_next_boot)


if __name__ == '__main__':
	unittest.main()
