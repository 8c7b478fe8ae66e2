# SPDX-License-Identifier: GPL-2.0
"""background.Background with a stand-in for gkibuild: the child's output
is printed only when waited for, a failed build names its variant, a later
variant is not built after a failure, the guest run follows the builds
(and is waited for apart from them), and a child still running when the
caller stops early is terminated."""

import contextlib
import io
import sys
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

from gkibuild import background
from gkibuild.layout import VARIANTS, Layout
from gkibuild.util import GkiError

# Prints its arguments; fails for the variant named in FAIL_FOR; sleeps
# for the one named in SLEEP_FOR.  As `qemu`, waits for a file named go
# beside it (30 s at most), then writes a result.
FAKE_MAIN = '''import json, os, sys, time
variant = sys.argv[sys.argv.index('--variant') + 1]
if sys.argv[1] == 'qemu':
	go = os.path.join(os.path.dirname(sys.argv[0]), 'go')
	for _ in range(3000):
		if os.path.exists(go):
			break
		time.sleep(0.01)
	else:
		sys.exit(4)
	print('booted', ' '.join(sys.argv[1:]), flush=True)
	results = sys.argv[sys.argv.index('--results') + 1]
	with open(results, 'w') as f:
		json.dump([{{'name': 'release: a', 'status': 'PASS', 'detail': ''}}], f)
	sys.exit(0)
print('built', ' '.join(sys.argv[1:]), flush=True)
if variant == {fail!r}:
	sys.exit(3)
if variant == {sleep!r}:
	time.sleep(60)
'''


class BackgroundTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		top = Path(self.tmp.name)
		self.layout = Layout(top, top / 'out')

	def tearDown(self):
		self.tmp.cleanup()

	def fake(self, fail: str = '', sleep: str = '') -> None:
		main = Path(self.tmp.name) / 'main.py'
		main.write_text(FAKE_MAIN.format(fail=fail, sleep=sleep))
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
		out = self.run_waited([VARIANTS['debug']], jobs=3)
		self.assertIn('building debug meanwhile', out)
		self.assertTrue(out.endswith('built build --variant debug -j 3\n'), out)

	def test_a_failed_build_names_its_variant_and_stops_the_rest(self):
		self.fake(fail='release')
		with self.assertRaisesRegex(GkiError, r'the release build \(run meanwhile\) failed '
					    r'\(exit 3\)'):
			self.run_waited([VARIANTS['release'], VARIANTS['debug']])
		self.assertNotIn('--variant debug', self.layout.log(None, 'background-build')
				 .read_text())

	def go(self) -> None:
		(Path(self.tmp.name) / 'go').touch()

	def test_guests_run_after_the_builds_and_are_not_waited_for_with_them(self):
		self.fake()
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			with background.Background(self.layout, [VARIANTS['debug']], None, False,
						   guests='all') as b:
				b.wait()
				# The guest run waits for 'go': wait() did not wait for it.
				self.assertIsNone(b.guest_rc)
				self.assertIn('built build --variant debug', out.getvalue())
				self.go()
				self.assertEqual(0, b.wait_guests())
		self.assertIn(f'booted qemu --variant all --prebuilt --results {b.results}\n',
			      out.getvalue())
		self.assertIn('release: a', b.results.read_text())

	def test_no_guest_run_after_a_failed_build(self):
		self.fake(fail='debug')
		self.go()
		with contextlib.redirect_stdout(io.StringIO()):
			with background.Background(self.layout, [VARIANTS['debug']], None, False,
						   guests='all') as b:
				with self.assertRaisesRegex(GkiError, 'the debug build'):
					b.wait()
				self.assertIsNone(b.wait_guests())
		self.assertFalse(b.results.exists())
		self.assertEqual('', b.guest_log.read_text())

	def test_results_of_an_earlier_run_are_removed_first(self):
		self.fake(fail='debug')
		stale = self.layout.out / 'background-guests.json'
		stale.parent.mkdir(parents=True)
		stale.write_text('[]')
		with contextlib.redirect_stdout(io.StringIO()):
			with background.Background(self.layout, [VARIANTS['debug']], None, False,
						   guests='all') as b:
				self.assertEqual(stale, b.results)
				self.assertFalse(stale.exists())
				with self.assertRaises(GkiError):
					b.wait()

	def test_a_child_still_running_is_terminated_on_early_exit(self):
		self.fake(sleep='debug')
		start = time.monotonic()
		with contextlib.redirect_stdout(io.StringIO()):
			with self.assertRaisesRegex(RuntimeError, 'host tests broke'):
				with background.Background(self.layout, [VARIANTS['debug']], None,
							   False) as b:
					while b._proc is None:
						time.sleep(0.01)
					raise RuntimeError('host tests broke')
		self.assertLess(time.monotonic() - start, 30)
		self.assertIsNotNone(b._proc.poll())


if __name__ == '__main__':
	unittest.main()
