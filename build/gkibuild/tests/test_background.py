# SPDX-License-Identifier: GPL-2.0
"""background.Background with a stand-in for gkibuild: the child's output
is printed only when waited for, a failed build names its variant, a later
variant is not built after a failure, a built variant's guest run starts
at once and another's follows its build (both waited for apart from the
builds), the entering thread steps back and the children do not, and a
child still running when the caller stops early is terminated."""

import contextlib
import io
import sys
import os
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

from gkibuild import background
from gkibuild.layout import VARIANTS, Layout
from gkibuild.util import GkiError

# Prints its arguments and its nice value; fails for the variant named in
# fail; sleeps for the one named in sleep.  Waits for a file named
# go-VARIANT beside it (30 s at most) first: as `qemu` always, as `build`
# for the variant named in hold.  As `qemu`, then writes a result.
FAKE_MAIN = '''import json, os, sys, time
variant = sys.argv[sys.argv.index('--variant') + 1]
def wait_go():
	go = os.path.join(os.path.dirname(sys.argv[0]), 'go-' + variant)
	for _ in range(3000):
		if os.path.exists(go):
			return
		time.sleep(0.01)
	sys.exit(4)
if sys.argv[1] == 'qemu':
	wait_go()
	print('booted', ' '.join(sys.argv[1:]), 'nice', os.nice(0), flush=True)
	results = sys.argv[sys.argv.index('--results') + 1]
	with open(results, 'w') as f:
		json.dump([{{'name': variant + ': a', 'status': 'PASS', 'detail': ''}}], f)
	sys.exit(0)
if variant == {hold!r}:
	wait_go()
print('built', ' '.join(sys.argv[1:]), 'nice', os.nice(0), flush=True)
if variant == {fail!r}:
	sys.exit(3)
if variant == {sleep!r}:
	time.sleep(60)
'''
RELEASE, DEBUG = VARIANTS['release'], VARIANTS['debug']


class BackgroundTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		top = Path(self.tmp.name)
		self.layout = Layout(top, top / 'out')

	def tearDown(self):
		self.tmp.cleanup()

	def fake(self, fail: str = '', sleep: str = '', hold: str = '') -> None:
		main = Path(self.tmp.name) / 'main.py'
		main.write_text(FAKE_MAIN.format(fail=fail, sleep=sleep, hold=hold))
		patcher = mock.patch.object(background, 'MAIN', [sys.executable, str(main)])
		patcher.start()
		self.addCleanup(patcher.stop)

	def run_waited(self, vs, jobs=None) -> str:
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			with background.Background(self.layout, vs, jobs, False) as b:
				b.wait()
		return out.getvalue()

	def test_output_is_printed_when_waited_for(self):
		self.fake()
		out = self.run_waited([DEBUG], jobs=3)
		self.assertIn('building debug meanwhile', out)
		self.assertTrue(out.endswith(f'built build --variant debug -j 3 nice {os.nice(0)}\n'),
				out)

	def test_a_failed_build_names_its_variant_and_stops_the_rest(self):
		self.fake(fail='release')
		with self.assertRaisesRegex(GkiError, r'the release build \(run meanwhile\) failed '
					    r'\(exit 3\)'):
			self.run_waited([RELEASE, DEBUG])
		self.assertNotIn('--variant debug', self.layout.log(None, 'background-build')
				 .read_text())

	def go(self, variant: str) -> None:
		(Path(self.tmp.name) / f'go-{variant}').touch()

	def until(self, cond, timeout_s: float = 30) -> None:
		end = time.monotonic() + timeout_s
		while not cond():
			if time.monotonic() > end:
				self.fail(f'not within {timeout_s} s')
			time.sleep(0.01)

	def guests(self, b: background.Background) -> dict[str, background.GuestRun]:
		return {g.variant: g for g in b.guests}

	def test_a_built_variant_boots_at_once_and_the_others_after_their_build(self):
		self.fake(hold='debug')
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			with background.Background(self.layout, [DEBUG], None, False,
						   guests=[RELEASE, DEBUG]) as b:
				runs = self.guests(b)
				# The release run ends while the debug build waits.
				self.go('release')
				self.until(lambda: runs['release'].rc is not None)
				self.assertEqual('', b.log.read_text())
				self.assertFalse(runs['debug'].results.exists())
				self.go('debug')
				b.wait()
				self.assertIn('built build --variant debug', out.getvalue())
				self.assertEqual([0, 0], [g.rc for g in b.wait_guests()])
		for v in ('release', 'debug'):
			g = runs[v]
			self.assertIn(f'booted qemu --variant {v} --prebuilt --results {g.results} '
				      f'nice {os.nice(0)}\n', out.getvalue())
			self.assertIn(f'{v}: a', g.results.read_text())

	def test_guests_are_not_waited_for_with_the_builds(self):
		self.fake()
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			with background.Background(self.layout, [DEBUG], None, False,
						   guests=[RELEASE, DEBUG]) as b:
				b.wait()
				# The guest runs wait for their go: wait() did not.
				self.assertEqual([None, None], [g.rc for g in b.guests])
				self.go('release')
				self.go('debug')
				self.assertEqual([0, 0], [g.rc for g in b.wait_guests()])

	def test_the_entering_thread_steps_back_and_the_children_do_not(self):
		self.fake()
		self.go('release')
		self.go('debug')
		seen: list[tuple[int, int]] = []

		def enter() -> None:	# a thread of its own: nice stays in it
			before = os.nice(0)
			with background.Background(self.layout, [DEBUG], None, False,
						   guests=[RELEASE, DEBUG], nice=3) as b:
				seen.append((before, os.nice(0)))
				b.wait()
				b.wait_guests()

		with contextlib.redirect_stdout(io.StringIO()):
			t = threading.Thread(target=enter)
			t.start()
			t.join()
		(before, after), = seen
		self.assertEqual(before + 3, after)
		logs = self.layout.log(None, 'background-build').read_text() + ''.join(
			self.layout.log(None, f'background-guests-{v}').read_text()
			for v in ('release', 'debug'))
		self.assertEqual(3, logs.count(f' nice {before}\n'), logs)

	def test_no_guest_run_after_a_failed_build(self):
		self.fake(fail='debug')
		self.go('release')
		self.go('debug')
		with contextlib.redirect_stdout(io.StringIO()):
			with background.Background(self.layout, [DEBUG], None, False,
						   guests=[RELEASE, DEBUG]) as b:
				with self.assertRaisesRegex(GkiError, 'the debug build'):
					b.wait()
				runs = self.guests(b)
				b.wait_guests()
		self.assertEqual(0, runs['release'].rc)
		self.assertIsNone(runs['debug'].rc)
		self.assertFalse(runs['debug'].results.exists())
		self.assertEqual('', runs['debug'].log.read_text())

	def test_results_of_an_earlier_run_are_removed_first(self):
		self.fake(fail='debug')
		stale = self.layout.out / 'background-guests-debug.json'
		stale.parent.mkdir(parents=True)
		stale.write_text('[]')
		with contextlib.redirect_stdout(io.StringIO()):
			with background.Background(self.layout, [DEBUG], None, False,
						   guests=[DEBUG]) as b:
				self.assertEqual(stale, b.guests[0].results)
				self.assertFalse(stale.exists())
				with self.assertRaises(GkiError):
					b.wait()

	def test_a_child_still_running_is_terminated_on_early_exit(self):
		self.fake(sleep='debug')
		start = time.monotonic()
		with contextlib.redirect_stdout(io.StringIO()):
			with self.assertRaisesRegex(RuntimeError, 'host tests broke'):
				with background.Background(self.layout, [DEBUG], None, False,
							   guests=[RELEASE]) as b:
					self.until(lambda: len(b._procs) == 2)
					raise RuntimeError('host tests broke')
		self.assertLess(time.monotonic() - start, 30)
		self.assertEqual([False, False], [p.poll() is None for p in b._procs])


if __name__ == '__main__':
	unittest.main()
