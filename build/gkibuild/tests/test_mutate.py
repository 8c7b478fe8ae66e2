# SPDX-License-Identifier: GPL-2.0
"""The mutation check's own machinery (mutate.py): the list loader refuses
what it cannot use, the outcome of a test run is read or refused, and the
fast sample of build/mutants.toml, run for real, is killed: a campaign
whose kill detection broke would report those mutants as survivors."""

import io
import tempfile
import textwrap
import unittest
from pathlib import Path

from gkibuild import mutate
from gkibuild.layout import Layout
from gkibuild.sandbox import Run
from gkibuild.tests import prereq
from gkibuild.util import GkiError
from gkiqemu import runner
from gkiqemu.ktap import Status

LAYOUT = Layout.default()


class ListTest(unittest.TestCase):
	"""Small lists against a small tree: a module, its host test, a
	harness suite and a vendor suite."""

	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		top = Path(tmp.name)
		self.layout = Layout(top, top / 'out')
		files = {'tool/mod.py': 'LIMIT = 10\nTWICE = 1\nTWICE = 1\n',
			 'tool/tests/test_mod.py': '',
			 'qemu/tests/quick.c': '',
			 'vendor_modules/v/code.c': 'if (n >= LIMIT)\n',
			 'vendor_modules/v/tests/v_suite.c': ''}
		for rel, text in files.items():
			(top / rel).parent.mkdir(parents=True, exist_ok=True)
			(top / rel).write_text(text)
		self.list = top / 'mutants.toml'

	def load(self, text: str) -> list[mutate.Mutant]:
		self.list.write_text(textwrap.dedent(text))
		return mutate.load(self.list, self.layout)

	def refused(self, text: str) -> str:
		with self.assertRaises(GkiError) as e:
			self.load(text)
		return str(e.exception)

	HOST = '''
		[[mutant]]
		name = "limit"
		file = "tool/mod.py"
		find = "LIMIT = 10"
		replace = "LIMIT = 11"
		host = ["tool/tests/test_mod.py"]
		'''
	GUEST = '''
		[[mutant]]
		name = "bound"
		file = "vendor_modules/v/code.c"
		find = "n >= LIMIT"
		replace = "n > LIMIT"
		suites = ["v_suite", "quick"]
		fast = true
		note = "why"
		'''

	def test_list_loads(self):
		host, guest = self.load(self.HOST + self.GUEST)
		self.assertEqual(mutate.Mutant('limit', 'tool/mod.py', 'LIMIT = 10', 'LIMIT = 11',
					       host=('tool/tests/test_mod.py',)), host)
		self.assertEqual((('v_suite', 'quick'), True, 'why'),
				 (guest.suites, guest.fast, guest.note))

	def test_stale_find_is_an_error(self):
		msg = self.refused(self.HOST.replace('LIMIT = 10', 'LIMIT = 12'))
		self.assertIn('find occurs 0 times in tool/mod.py, not once: the list is stale', msg)
		msg = self.refused(self.HOST.replace('LIMIT = 10', 'TWICE = 1'))
		self.assertIn('find occurs 2 times', msg)

	def test_duplicate_name_is_an_error(self):
		msg = self.refused(self.HOST + self.GUEST.replace('"bound"', '"limit"'))
		self.assertIn("mutant name 'limit' is used 2 times", msg)

	def test_unknown_suite_and_host_file_are_errors(self):
		msg = self.refused(self.HOST.replace('test_mod.py', 'test_other.py')
				   + self.GUEST.replace('"quick"', '"slow"'))
		self.assertIn('no host test file tool/tests/test_other.py', msg)
		self.assertIn('no guest suite named slow', msg)

	def test_unknown_or_missing_keys_are_errors(self):
		# A misspelt key would otherwise leave a mutant that nothing checks.
		msg = self.refused(self.HOST.replace('host =', 'hosts ='))
		self.assertIn("unknown key 'hosts'", msg)
		msg = self.refused(self.HOST.replace('replace = "LIMIT = 11"', ''))
		self.assertIn("lacks 'replace'", msg)

	def test_mutant_nothing_could_catch_is_an_error(self):
		msg = self.refused(self.HOST.replace('host = ["tool/tests/test_mod.py"]', ''))
		self.assertIn('nothing could catch it', msg)

	def test_guest_suites_see_only_the_sandbox_inputs(self):
		msg = self.refused(self.HOST.replace('host = ["tool/tests/test_mod.py"]',
						     'suites = ["quick"]'))
		self.assertIn('guest suites see only common, symbol_lists, vendor_modules', msg)

	def test_checked_in_list(self):
		mutants = mutate.load(LAYOUT.top / mutate.LIST, LAYOUT)
		self.assertGreaterEqual(len(mutants), 30)
		fast = mutate.select(mutants, [], fast=True)
		self.assertGreaterEqual(sum(bool(m.host) for m in fast), 2)
		self.assertGreaterEqual(sum(bool(m.suites) for m in fast), 1)
		self.assertFalse([m.name for m in fast if m.note], 'a fast mutant must be killed')


RAN_OK = 'test_a ... ok\n\n' + '-' * 70 + '\nRan 3 tests in 0.01s\n\nOK\n'
RAN_FAILED = ('=' * 70 + '\nFAIL: test_b (test_x.Case.test_b)\n' + '-' * 70
	      + '\nAssertionError\n\nRan 3 tests in 0.01s\n\nFAILED (failures=1)\n')
GUEST_OUTPUT = '[kernel-release (release)    ] 0 objects rebuilt in 8.1 s\n'
GUEST_FAILED = ('  FAIL  release: kunit: m: s: test_crc  (fail: x)\n'
		'2 passed, 1 failed, 0 skipped\n')
GUEST_NO_BUILD = ('[modules-release (release)   ] FAILED in     2.0 s\n'
		  'gki: error: make failed (exit 2)\n')
OK = [('release: kunit: m: s: a', Status.PASS), ('release: boot_smoke: b', Status.PASS),
	('release: kernel log clean', Status.PASS)]
CRC = [('release: kunit: m: s: test_a', Status.PASS), ('release: boot2: c', Status.PASS),
	('release: kunit: m: s: test_crc', Status.FAIL)]


class OutcomeTest(unittest.TestCase):
	"""What a test run said, or that it said nothing the campaign can read."""

	def kind(self, o: mutate.Outcome) -> tuple[str, str]:
		return o.kind, o.detail

	def test_host_verdicts(self):
		self.assertEqual(('pass', '3 tests'), self.kind(mutate.host_outcome('t', 0, RAN_OK)))
		self.assertEqual(('fail', 'Case.test_b'),
				 self.kind(mutate.host_outcome('t', 1, RAN_FAILED)))
		self.assertEqual(2, mutate.host_outcome(
			't', 0, RAN_OK.replace('OK\n', 'OK (skipped=2)\n')).skipped)

	def test_host_run_without_a_verdict_is_unclassified(self):
		for rc, text in ((0, 'Ran 0 tests in 0.000s\n\nOK\n'), (1, RAN_OK), (0, RAN_FAILED),
				 (5, 'NO TESTS RAN\n'), (-9, '')):
			with self.subTest(rc=rc, text=text[-20:]):
				self.assertEqual('unclassified', mutate.host_outcome('t', rc, text).kind)

	def results(self, outcomes: list[tuple[str, Status]] | None) -> Path:
		"""A results file as `gki qemu --results` writes it; none for None."""
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		path = Path(tmp.name) / 'results.json'
		if outcomes is not None:
			tally = runner.Tally(io.StringIO())
			for name, status in outcomes:
				tally.add(name, status)
			runner.write_results(tally, path)
		return path

	def guest(self, rc: int, outcomes: list[tuple[str, Status]] | None,
		  output: str = GUEST_OUTPUT) -> mutate.Outcome:
		return mutate.guest_outcome('s', rc, output, self.results(outcomes))

	def test_guest_verdicts(self):
		self.assertEqual(('pass', '3 passed'), self.kind(self.guest(0, OK)))
		self.assertEqual(('fail', 'kunit: m: s: test_crc'), self.kind(self.guest(1, CRC)))
		self.assertEqual(('fail', 'no test ran'),
				 self.kind(self.guest(1, [('release: x', Status.SKIP)])))
		self.assertEqual(('no-build', 'modules-release failed'),
				 self.kind(self.guest(1, None, GUEST_NO_BUILD)))

	def test_guest_run_that_disagrees_with_itself_is_unclassified(self):
		for rc, outcomes, text in ((1, OK, GUEST_OUTPUT), (0, CRC, GUEST_OUTPUT),
					   (1, None, 'Traceback ...\n'), (0, None, GUEST_NO_BUILD),
					   (0, [], GUEST_OUTPUT)):
			with self.subTest(rc=rc, outcomes=outcomes, text=text[-30:]):
				self.assertEqual('unclassified', self.guest(rc, outcomes, text).kind)

	def test_guest_run_without_readable_results_is_unclassified(self):
		"""The console is not read for a verdict: a failed test it shows
		is no kill without the results file."""
		self.assertEqual('unclassified', self.guest(1, None, GUEST_FAILED).kind)
		bad = self.results(None)
		for text in ('', '[{"name": "release: a"}]', '{"release: a": "FAIL"}'):
			with self.subTest(text=text):
				bad.write_text(text)
				o = mutate.guest_outcome('s', 1, GUEST_FAILED, bad)
				self.assertEqual('unclassified', o.kind)

	def test_guest_copy_reads_only_its_own_runs_results(self):
		"""Each run's results, read where the sandbox's out/ holds them;
		one that wrote none is not judged by the run before."""
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		layout = Layout(Path(tmp.name), Path(tmp.name) / 'out')
		copy = mutate.GuestCopy(layout, Path(tmp.name) / 'box')
		copy.box.out.mkdir(parents=True)
		runs = [(0, OK, GUEST_OUTPUT), (1, None, GUEST_NO_BUILD)]
		args = []

		def run(*a: str) -> Run:
			"""What `gki qemu` does in the sandbox, whose out/ is mounted
			at the real out/'s path."""
			args.append(a)
			rc, outcomes, output = runs[len(args) - 1]
			at = Path(a[a.index('--results') + 1])
			if outcomes is not None:
				self.results(outcomes).replace(copy.box.out / at.relative_to(layout.out))
			return Run(rc, output, Path('log'))
		copy.box.run = run
		self.assertEqual(('pass', '3 passed'), self.kind(copy.test(['kunit', 'boot_smoke'])))
		self.assertEqual('no-build', copy.test(['kunit']).kind)
		self.assertEqual(['--only', 'kunit', '--only', 'boot_smoke'], list(args[0][-4:]))

	def test_judgement(self):
		m = mutate.Mutant('m', 'f', 'a', 'b', host=('t',))
		out = {k: mutate.Outcome(k, 'x', '', '') for k in
		       ('pass', 'fail', 'no-build', 'unclassified')}
		cases = ((['pass', 'fail'], mutate.Status.KILLED),
			 (['pass', 'pass'], mutate.Status.SURVIVED),
			 (['no-build'], mutate.Status.DID_NOT_BUILD),
			 (['pass', 'unclassified'], mutate.Status.UNCLASSIFIED),
			 ([], mutate.Status.UNCLASSIFIED))
		for kinds, status in cases:
			with self.subTest(kinds=kinds):
				r = mutate.judge(m, [out[k] for k in kinds], 0.0)
				self.assertEqual(status, r.status)

	def test_only_a_noted_survivor_passes_the_campaign(self):
		plain = mutate.Mutant('m', 'f', 'a', 'b', host=('t',))
		noted = mutate.Mutant('m', 'f', 'a', 'b', host=('t',), note='why')
		R, S = mutate.Result, mutate.Status
		self.assertTrue(R(plain, S.SURVIVED, '', '', 0).fails_campaign)
		self.assertFalse(R(noted, S.SURVIVED, '', '', 0).fails_campaign)
		self.assertFalse(R(plain, S.KILLED, '', '', 0).fails_campaign)
		self.assertTrue(R(noted, S.KILLED, '', '', 0).fails_campaign)	# a stale note
		self.assertTrue(R(plain, S.DID_NOT_BUILD, '', '', 0).fails_campaign)
		self.assertTrue(R(plain, S.UNCLASSIFIED, '', '', 0).fails_campaign)


class FastSampleTest(unittest.TestCase):
	"""The fast mutants, applied and tested for real (host mutants in a copy
	of the tree, the guest one in a sandbox of the release build, booted):
	each must be KILLED."""

	@classmethod
	def setUpClass(cls):
		prereq.require(mutate.guest_ready(LAYOUT), 'the mutation check')
		mutants = mutate.load(LAYOUT.top / mutate.LIST, LAYOUT)
		cls.sample = mutate.select(mutants, [], fast=True)
		cls.out = io.StringIO()
		cls.results = mutate.Campaign(LAYOUT, LAYOUT.out / 'mutate' / 'selftest',
					      cls.out).run(cls.sample)

	def test_every_fast_mutant_is_killed(self):
		self.assertEqual(sorted(m.name for m in self.sample),
				 sorted(r.mutant.name for r in self.results))
		for r in self.results:
			with self.subTest(r.mutant.name):
				self.assertEqual(mutate.Status.KILLED, r.status, r.line())
		self.assertIn(f'mutants: {len(self.sample)} killed, 0 survived, 0 did not build, '
			      f'of {len(self.sample)} (100% killed)', mutate.summary(self.results))


if __name__ == '__main__':
	unittest.main()
