# SPDX-License-Identifier: GPL-2.0
"""The test runner: host-side tests of the tooling, then the in-guest
suites on each variant, one line per test and a closing count line."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import json
import re
import sys
import time
import unittest
from pathlib import Path
from typing import Callable, Iterator, TextIO

from gkibuild import programs, progress, tools
from gkibuild.background import Background
from gkibuild.layout import Layout, Variant, test_root
from gkibuild.util import GkiError, info
from gkiqemu import boot, console, initramfs, junit, ktap

MAX_BOOTS = 3


@dataclasses.dataclass
class Outcome:
	name: str
	status: ktap.Status
	detail: str = ''


class Tally:
	"""Collects outcomes, printing one line per test to out."""

	def __init__(self, out: TextIO | None = None) -> None:
		self.outcomes: list[Outcome] = []
		self.out = out or sys.stdout

	def add(self, name: str, status: ktap.Status, detail: str = '') -> None:
		o = Outcome(name, status, detail)
		self.outcomes.append(o)
		shown = 'FAIL' if status in (ktap.Status.MISSING, ktap.Status.CRASHED) else status.value
		extra = f'  ({status.value.lower()}: {detail})' if detail and shown != 'PASS' else ''
		print(f'  {shown:<4}  {name}{extra}', file=self.out, flush=True)

	def count(self, *statuses: ktap.Status) -> int:
		return sum(o.status in statuses for o in self.outcomes)

	def close(self) -> int:
		passed = self.count(ktap.Status.PASS)
		failed = self.count(ktap.Status.FAIL, ktap.Status.MISSING, ktap.Status.CRASHED)
		skipped = self.count(ktap.Status.SKIP)
		if passed + failed == 0:
			failed += 1
			print('  FAIL  no test ran', file=self.out)
		print(f'{passed} passed, {failed} failed, {skipped} skipped', file=self.out,
		      flush=True)
		return 1 if failed else 0


# Host-side tests ----------------------------------------------------------

HOST_VERDICT = "host: unittest's own verdict"
# The packages of the host tests, left out of the names shown.
_TEST_PACKAGES = re.compile(r'\bgki(?:build|qemu)\.tests\.')


def _short(name: str) -> str:
	"""'test_x.Class.method' for 'gkibuild.tests.test_x.Class.method'."""
	return _TEST_PACKAGES.sub('', name)


def _host_name(test: unittest.TestCase) -> str:
	"""'host: Class.method', a subtest with its parameters.  A class or
	module whose set-up failed and a module that did not import are not
	tests of their own: unittest stands in for them with helper objects,
	whose ids are named here for what failed."""
	if isinstance(test, unittest.suite._ErrorHolder):
		return 'host: ' + _short(test.id())	# 'setUpClass (test_x.Class)'
	if isinstance(test, unittest.loader._FailedTest):
		return f'host: {_short(test._testMethodName)} (did not load)'
	return 'host: ' + _short(test.id()).split('.', 1)[-1]


class _HostResult(unittest.TestResult):
	"""unittest's result, told to the tally as it comes: one line per test,
	per failing subtest and per failed class or module set-up.  unittest's
	own record is kept as well, to be checked against the tally after the
	run (disagreement())."""

	def __init__(self, tally: Tally) -> None:
		super().__init__()
		self.tally = tally
		self.failed: list[str] = []	# the FAIL lines this result added
		# Wall time per test module, class and module set-ups included
		# (the time since the previous test ended): what CI's minutes go to.
		self.seconds: dict[str, float] = collections.Counter()
		self._mark = time.monotonic()

	def stopTest(self, test: unittest.TestCase) -> None:
		super().stopTest(test)
		now = time.monotonic()
		self.seconds[_short(test.id()).split('.', 1)[0]] += now - self._mark
		self._mark = now

	def _fail(self, test: unittest.TestCase, detail: str) -> None:
		name = _host_name(test)
		self.failed.append(name)
		self.tally.add(name, ktap.Status.FAIL, detail)

	def addSuccess(self, test: unittest.TestCase) -> None:
		super().addSuccess(test)
		self.tally.add(_host_name(test), ktap.Status.PASS)

	def addFailure(self, test, err) -> None:  # type: ignore[no-untyped-def]
		super().addFailure(test, err)
		self._fail(test, self._exc_info_to_string(err, test))

	def addError(self, test, err) -> None:  # type: ignore[no-untyped-def]
		super().addError(test, err)
		self._fail(test, self._exc_info_to_string(err, test))

	def addSubTest(self, test, subtest, err) -> None:  # type: ignore[no-untyped-def]
		"""A test with a failing subtest reaches neither addFailure nor
		addSuccess: without a line here its failure would vanish."""
		super().addSubTest(test, subtest, err)
		if err is not None:
			self._fail(subtest, self._exc_info_to_string(err, test))

	def addSkip(self, test: unittest.TestCase, reason: str) -> None:
		super().addSkip(test, reason)
		self.tally.add(_host_name(test), ktap.Status.SKIP, reason)

	def addExpectedFailure(self, test, err) -> None:  # type: ignore[no-untyped-def]
		"""A known bug: not a pass, because the behaviour the test states
		does not hold, and shown as a skip saying so."""
		super().addExpectedFailure(test, err)
		last = self._exc_info_to_string(err, test).strip().splitlines()[-1]
		self.tally.add(_host_name(test), ktap.Status.SKIP, f'expected failure: {last}')

	def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
		super().addUnexpectedSuccess(test)
		self._fail(test, 'unexpected success: marked expectedFailure, but it passed; '
			   'remove the mark')


def disagreement(result: _HostResult) -> str:
	"""Where unittest's own record (its failures, errors and unexpected
	successes, its wasSuccessful()) and the tally's FAIL lines differ,
	naming the tests; '' when they agree.  An outcome a later unittest adds,
	or a hook this class lacks, shows up here instead of vanishing."""
	theirs = collections.Counter(_host_name(t) for t, _ in result.failures + result.errors)
	theirs.update(_host_name(t) for t in result.unexpectedSuccesses)
	ours = collections.Counter(result.failed)
	problems = []
	if theirs - ours:
		problems.append('failed for unittest, not in the tally: ' +
				', '.join(sorted(theirs - ours)))
	if ours - theirs:
		problems.append('failed in the tally, not for unittest: ' +
				', '.join(sorted(ours - theirs)))
	if result.wasSuccessful() != (not ours):
		problems.append(f'unittest says {"success" if result.wasSuccessful() else "failure"}, '
				f'the tally has {sum(ours.values())} failure(s)')
	return '; '.join(problems)


def slowest(seconds: dict[str, float], shown: int = 6) -> str:
	"""'1234 s; slowest: test_incremental 612 s, test_abi_gate 201 s, ...'"""
	top = sorted(seconds.items(), key=lambda kv: -kv[1])[:shown]
	return (f'{sum(seconds.values()):.0f} s; slowest: '
		+ ', '.join(f'{name} {secs:.0f} s' for name, secs in top))


def host_run(suite: unittest.TestSuite, tally: Tally) -> None:
	"""Run suite into tally, then fail the run if unittest disagrees."""
	result = _HostResult(tally)
	suite.run(result)
	print(f'gki: host tests: {slowest(result.seconds)}', file=tally.out, flush=True)
	problem = disagreement(result)
	if problem:
		tally.add(HOST_VERDICT, ktap.Status.FAIL, problem)


def flatten(suite: unittest.TestSuite) -> Iterator[unittest.TestCase]:
	for t in suite:
		if isinstance(t, unittest.TestSuite):
			yield from flatten(t)
		else:
			yield t


def needs_every_variant(test: unittest.TestCase) -> bool:
	"""Does test's module say it needs every variant built (not only the
	release one)?"""
	module = sys.modules.get(type(test).__module__)
	return bool(getattr(module, 'NEEDS_EVERY_VARIANT', False))


def host_tests(layout: Layout, tally: Tally,
	       others_built: Callable[[], None] | None = None) -> None:
	"""Every host test.  others_built, when given, waits for the
	variants other than release (a build running meanwhile): the tests
	of modules that set NEEDS_EVERY_VARIANT run after it returns."""
	info('host tests')
	loader = unittest.TestLoader()
	suite = unittest.TestSuite()
	dirs = [layout.top / 'build' / 'gkibuild' / 'tests',
		layout.top / 'qemu' / 'gkiqemu' / 'tests',
		*sorted(layout.top.glob('qemu/tools/*/tests'))]
	for d in dirs:
		suite.addTests(loader.discover(str(d), pattern='test_*.py',
					       top_level_dir=str(test_root(d))))
	if others_built is None:
		host_run(suite, tally)
	else:
		host_run_split(suite, tally, others_built)


def host_run_split(suite: unittest.TestSuite, tally: Tally,
		   others_built: Callable[[], None]) -> None:
	"""host_run() of the tests that need only the release build, then
	others_built(), then host_run() of the rest."""
	tests = list(flatten(suite))
	host_run(unittest.TestSuite(t for t in tests if not needs_every_variant(t)), tally)
	others_built()
	host_run(unittest.TestSuite(t for t in tests if needs_every_variant(t)), tally)


# Guest runs ---------------------------------------------------------------

def prepare(layout: Layout, v: Variant, extra: list[Path],
	    bench_names: list[str] | None = None, only: list[str] | None = None,
	    gdir: Path | None = None) -> Path:
	"""Build the guest programs and the variant's initramfs; bench_names
	picks benchmarks (all when empty), only picks suites (all when empty).
	gdir: where the initramfs goes (default: the variant's guest folder,
	which a guest run started by `gki test` may be using)."""
	uapi = layout.obj(v) / 'uapi' / 'include'
	suites = programs.discover(layout, 'suites')
	if only:
		unknown = sorted(set(only) - {p.name for p in suites})
		if unknown:
			raise GkiError(f'no guest suite named {", ".join(unknown)}')
		suites = [p for p in suites if p.name in only]
	bench = programs.discover(layout, 'bench')
	if bench_names:
		bench = [p for p in bench if p.name in bench_names]
	tests = tools.guest_tests(layout, v, uapi, suites + bench)
	guest_tools = tools.guest(layout, v, uapi)
	for p in extra:
		if p.name in tests:
			raise GkiError(f'--add {p}: a guest program named {p.name} already exists')
		tests[p.name] = p
	lists = {
		'test': [f'/tests/{p.name}' for p in suites] + [f'/tests/{p.name}' for p in extra],
		'bench': [f'/tests/{p.name}' for p in bench],
	}
	return initramfs.write_cpio(layout, v, layout.dist(v), tests, guest_tools, lists, gdir)


# A guest environment variable: the kernel hands a command-line word
# NAME=VALUE it does not know, and whose NAME has no dot, to /init's
# environment, and the suites inherit it.
_ENV_WORD = re.compile(r'[A-Z_][A-Z0-9_]*=[^\s"\']*')


def guest_env(words: list[str]) -> tuple[str, ...]:
	"""Check `gki qemu --env` words (NAME=VALUE) for the kernel command line."""
	for w in words:
		if not _ENV_WORD.fullmatch(w):
			raise GkiError(f'--env {w!r}: want NAME=VALUE, NAME in capitals, '
				       'digits and _, VALUE without blanks or quotes')
	return tuple(words)


def boots(layout: Layout, v: Variant, initrd: Path, mode: str,
	  out: TextIO | None = None, env: tuple[str, ...] = ()) -> list[boot.Boot]:
	"""Boot until the guest stops asking for another boot, at most
	MAX_BOOTS times (evaluate() fails a run that asked for more); the
	scratch disk is new for the run and kept across its boots.  When out
	is a terminal, each boot's suites show there as they finish (Live).
	env: NAME=VALUE words the suites find in their environment."""
	scratch = initramfs.scratch_disk(layout.out / v.name / 'qemu' / 'scratch.ext4')
	image = layout.dist(v) / 'Image'
	runs = []
	for n in range(1, MAX_BOOTS + 1):
		cmdline = ' '.join((f'gki.mode={mode} gki.boot={n} '
				    f'gki.suite_timeout={v.qemu_timeout_s * 2 // 3}',) + env)
		cmd = boot.command(image, initrd, v.qemu_mem_mb, cmdline, scratch)
		with watching(f'{v.name} boot {n}', out) as watch:
			b = boot.run(cmd, layout.log(v, f'console-{mode}-boot{n}'), v.qemu_timeout_s,
				     watch)
		runs.append(b)
		if b.timed_out or not b.wants_next_boot:
			break
	return runs


class Live:
	"""A boot as it runs, for a person at a terminal: a line per suite as
	its result line arrives, and below them a live line with the suite
	running now.  Display only: the tally is taken after the boot from the
	whole console (evaluate()), which also judges the halves of two-boot
	tests across boots and drops their stand-in skips, so a line here may
	read differently from the tally's."""

	def __init__(self, label: str, out: TextIO) -> None:
		self.label = label
		self.stream = ktap.Stream()
		self.line = progress.Line(out)
		self.start = time.monotonic()
		self.shown = ('', 0.0)	# what the live line said, and when
		self.broken = False

	def feed(self, data: bytes) -> None:
		"""Take console output (b'' when none came): redraw when the
		state changed or twice a second.  A display that fails stops,
		saying why, and the boot goes on."""
		if self.broken:
			return
		try:
			for suite in self.stream.feed(data):
				self.line.print(f'gki: {self.label}: {suite_line(suite)}')
			what, now = self.state(), time.monotonic()
			if not self.line.shown or what != self.shown[0] or now - self.shown[1] >= 0.5:
				self.line.draw(f'gki: {self.label}: {what}, '
					       f'{progress.elapsed(now - self.start)}')
				self.shown = (what, now)
		except Exception as e:	# a display must not end a run
			self.broken = True
			self.line.print(f'gki: {self.label}: live display stopped ({e!r})')

	def state(self) -> str:
		"""'3/12 suites, running incfs_lifetime', or 'booting'."""
		s = self.stream
		if not s.started:
			return 'booting'
		plan = s.plan if s.plan is not None else '?'
		return f'{s.done}/{plan} suites' + (f', running {s.running}' if s.running else '')


def suite_line(suite: ktap.Test, names: int = 3) -> str:
	"""One suite in short: 'suite_a: 1 passed, 1 failed, 1 skipped;
	failed: global.two', naming up to names failed tests."""
	leaves = ktap.leaves(ktap.Test('', ktap.Status.PASS, subtests=[suite]))
	bad = [l for l in leaves if l.status in (ktap.Status.FAIL, ktap.Status.MISSING,
						 ktap.Status.CRASHED)]
	counts = [(sum(l.status == ktap.Status.PASS for l in leaves), 'passed'),
		  (len(bad), 'failed'),
		  (sum(l.status == ktap.Status.SKIP for l in leaves), 'skipped')]
	text = f'{suite.name}: ' + ', '.join(f'{n} {what}' for n, what in counts if n)
	if bad:
		# The suite's own leaf (a crash, an exit status) by its reason.
		said = [l.name[len(suite.name) + 2:] or l.detail or l.status.value.lower()
			for l in bad]
		more = f' and {len(said) - names} more' if len(said) > names else ''
		text += '; failed: ' + ', '.join(said[:names]) + more
	return text


@contextlib.contextmanager
def watching(label: str, out: TextIO | None) -> Iterator[Callable[[bytes], None] | None]:
	"""A Live display's feed for boot.run when out is a terminal, None
	otherwise (so CI's output stays what it was); its live line is
	cleared however the boot ends."""
	if out is None or not out.isatty():
		yield None
		return
	live = Live(label, out)
	try:
		yield live.feed
	finally:
		live.line.clear()


# Two-boot tests: a suite that needs data to survive a power-off runs in
# boot 1 and, queued in $GKI_NEXT_BOOT, again in boot 2.  Its half that
# writes skips in boot 2 saying so ('writes in the first boot'), its half
# that checks skips in boot 1 ('checks in the second boot').  Those skips
# are not results but stand-ins: they say which boot a half belongs to.

_ORDINALS = {'first': 1, 'second': 2, 'third': 3, 'fourth': 4, 'fifth': 5,
	     'sixth': 6, 'seventh': 7, 'eighth': 8, 'ninth': 9}
_BELONGS = re.compile(r'\bin the (' + '|'.join(_ORDINALS) + r') boot$', re.I)


def _belongs_to(leaf: ktap.Leaf) -> int | None:
	"""The boot a half of a two-boot test belongs to, read from the reason
	it skips with ('... in the second boot'); None for any other result."""
	m = _BELONGS.search(leaf.detail) if leaf.status == ktap.Status.SKIP else None
	return _ORDINALS[m.group(1).lower()] if m else None


def _suite(name: str) -> str:
	"""The suite of a leaf named 'suite: case', or of the suite's own leaf."""
	return name.split(': ', 1)[0]


def _said(leaf: ktap.Leaf) -> str:
	"""'suite: case: skip (reason)', for a detail that names another test."""
	why = f' ({leaf.detail})' if leaf.detail else ''
	return f'{leaf.name}: {leaf.status.value.lower()}{why}'


class TwoBoot:
	"""One variant's results, boot by boot, with the halves of each two-boot
	test judged as one test: a half that checks in boot N (N > 1) fails
	unless every half of its suite that belongs to boot N - 1 passed there,
	and fails when it skipped or never reported in boot N.  The stand-in
	skips are dropped, so no half can turn into a skip."""

	def __init__(self, found: list[list[ktap.Leaf]]) -> None:
		self.found = found	# boot N's leaves, unprefixed, at N - 1
		self.belongs: dict[str, int] = {}
		for leaves in found:
			for leaf in leaves:
				n = _belongs_to(leaf)
				if n is not None:
					self.belongs.setdefault(leaf.name, n)

	def _leaves(self, n: int) -> list[ktap.Leaf]:
		return self.found[n - 1] if 1 <= n <= len(self.found) else []

	def _own(self, n: int) -> list[ktap.Leaf]:
		"""Boot n's results without the stand-ins for other boots' halves."""
		return [l for l in self._leaves(n) if not (
			l.status == ktap.Status.SKIP and self.belongs.get(l.name, n) != n)]

	def judged(self, n: int) -> list[ktap.Leaf]:
		"""Boot n's results, each half that checks in boot n judged."""
		return [self._check(l, n) if n > 1 and self.belongs.get(l.name) == n else l
			for l in self._own(n)]

	def _check(self, leaf: ktap.Leaf, n: int) -> ktap.Leaf:
		"""A half that checks in boot n proves something only when what it
		checks was written: every half of its suite that belongs to boot
		n - 1 must have passed there, and it must have run itself."""
		writes = [w for w, b in self.belongs.items()
			  if b == n - 1 and _suite(w) == _suite(leaf.name)]
		if not writes:
			return ktap.Leaf(leaf.name, ktap.Status.FAIL,
					 f'checks in boot {n}, but no test of {_suite(leaf.name)} skips '
					 f'in boot {n} saying it belongs to boot {n - 1}: its first half '
					 'is unknown')
		before = {l.name: l for l in self._leaves(n - 1)}
		bad = [before.get(w, ktap.Leaf(w, ktap.Status.MISSING, 'not reported'))
		       for w in writes]
		bad = [l for l in bad if l.status != ktap.Status.PASS]
		if bad:
			return ktap.Leaf(leaf.name, ktap.Status.FAIL,
					 f'its first half did not pass in boot {n - 1}: ' +
					 ', '.join(_said(l) for l in bad))
		if leaf.status == ktap.Status.SKIP:
			return ktap.Leaf(leaf.name, ktap.Status.FAIL,
					 f'skipped in boot {n}, the boot it belongs to, after its '
					 f'first half passed: {leaf.detail}')
		return leaf

	def unjudged(self) -> list[tuple[int, ktap.Leaf]]:
		"""The halves that belong to a later boot and were never judged
		in it, each failed with the reason, and the boot it belongs to."""
		out = []
		for name, n in self.belongs.items():
			if n > 1 and name not in {l.name for l in self.judged(n)}:
				out.append((n, ktap.Leaf(name, ktap.Status.FAIL, self._why_unjudged(name, n))))
		return out

	def _why_unjudged(self, name: str, n: int) -> str:
		"""Why a half never reported in its boot, with what its suite's
		other tests said in the boot before (a skipped or failed write)."""
		if n > MAX_BOOTS:
			return f"belongs to boot {n}, beyond the runner's maximum of {MAX_BOOTS} boots"
		why = f'boot {n} never came' if n > len(self.found) else f'not reported in boot {n}'
		before = [l for l in self._own(n - 1)
			  if _suite(l.name) == _suite(name) and l.status != ktap.Status.PASS]
		if before:
			why += f'; in boot {n - 1}: ' + ', '.join(_said(l) for l in before)
		return why


def _boot_prefix(v: Variant, n: int) -> str:
	"""'release: ' for boot 1, 'release: boot2: ' for a later boot."""
	return f'{v.name}: ' + (f'boot{n}: ' if n > 1 else '')


def evaluate(v: Variant, runs: list[boot.Boot], tally: Tally) -> None:
	"""Judge one variant's boots: their KTAP, with the halves of two-boot
	tests as one test across boots, their power-off and their kernel log."""
	docs = [ktap.parse(b.console) for b in runs]
	two = TwoBoot([ktap.leaves(d) if d else [] for d in docs])
	for n, (b, doc) in enumerate(zip(runs, docs), 1):
		prefix = _boot_prefix(v, n)
		if doc is None:
			tally.add(prefix + 'KTAP output', ktap.Status.FAIL, f'none; see {b.log}')
		for leaf in two.judged(n):
			tally.add(prefix + leaf.name, leaf.status, leaf.detail)
		_judge_boot(v, n, b, doc is not None, tally)
	for n, leaf in two.unjudged():
		tally.add(_boot_prefix(v, n) + leaf.name, leaf.status, leaf.detail)
	if runs and runs[-1].wants_next_boot:
		n = len(runs)
		beyond = (f"beyond the runner's maximum of {MAX_BOOTS} boots" if n >= MAX_BOOTS
			  else 'which did not run')
		tally.add(_boot_prefix(v, n) + 'next boot', ktap.Status.FAIL,
			  f'boot {n} queued boot {n + 1}, {beyond}; see {runs[-1].log}')


def _judge_boot(v: Variant, n: int, b: boot.Boot, has_ktap: bool, tally: Tally) -> None:
	"""One boot's power-off and kernel log, and its timing line."""
	prefix = _boot_prefix(v, n)
	if b.timed_out:
		tally.add(prefix + 'power-off', ktap.Status.FAIL,
			  f'guest still running after {v.qemu_timeout_s} s, killed; see {b.log}')
	elif not b.finished:
		tally.add(prefix + 'power-off', ktap.Status.FAIL,
			  f'console ended before "{boot.DONE}" (crash or panic); see {b.log}')
	errors = console.kernel_errors(b.console)
	if errors:
		quoted = '\n'.join('      > ' + e for e in errors)
		tally.add(prefix + 'kernel log clean', ktap.Status.FAIL,
			  f'{len(errors)} kernel error line(s), see {b.log}:\n{quoted}')
	elif has_ktap:
		tally.add(prefix + 'kernel log clean', ktap.Status.PASS)
	first = 'never' if b.first_ktap_s is None else f'{b.first_ktap_s:.2f} s'
	print(f'gki: {v.name} boot {n}: {b.seconds:.1f} s, first KTAP line at {first}, '
	      f'console: {b.log}', file=tally.out, flush=True)


def guest(layout: Layout, vs: list[Variant], extra: list[Path], tally: Tally,
	  only: list[str] | None = None, env: tuple[str, ...] = ()) -> None:
	for v in vs:
		info(f'booting the {v.name} GKI in QEMU')
		initrd = prepare(layout, v, extra, only=only)
		evaluate(v, boots(layout, v, initrd, 'test', tally.out, env), tally)


def guest_suites(layout: Layout, vs: list[Variant], extra: list[Path],
		 only: list[str] | None = None, results: Path | None = None,
		 env: tuple[str, ...] = ()) -> int:
	"""results: where to write the outcomes for the process that runs
	this one (read_results); env: see boots()."""
	tally = Tally()
	guest(layout, vs, extra, tally, only, env)
	rc = tally.close()
	if results:
		write_results(tally, results)
	return rc


def write_results(tally: Tally, path: Path) -> None:
	path.write_text(json.dumps([{'name': o.name, 'status': o.status.value, 'detail': o.detail}
				    for o in tally.outcomes], indent=1) + '\n')


def read_results(tally: Tally, path: Path, rc: int | None, what: str) -> None:
	"""Add the outcomes a child run wrote (write_results) to tally, not
	printed again (the child's output shows them).  Fails closed: no
	readable results, none at all, or a failed exit without a failed test
	is a failure of what."""
	failing = (ktap.Status.FAIL, ktap.Status.MISSING, ktap.Status.CRASHED)
	try:
		outcomes = [Outcome(r['name'], ktap.Status(r['status']), r['detail'])
			    for r in json.loads(path.read_text())]
	except (OSError, ValueError, KeyError, TypeError) as e:
		tally.add(what, ktap.Status.FAIL, f'exit {rc}; no results in {path}: {e}')
		return
	tally.outcomes.extend(outcomes)
	if not outcomes:
		tally.add(what, ktap.Status.FAIL, f'exit {rc}; no test ran')
	elif rc != 0 and not any(o.status in failing for o in outcomes):
		tally.add(what, ktap.Status.FAIL, f'exit {rc} with no failed test')


def test_all(layout: Layout, vs: list[Variant], host: bool,
	     meanwhile: Background | None = None) -> int:
	"""Host tests, then the guest suites of every variant.  meanwhile:
	the children that build the variants other than release (waited for
	before any guest boot and before the host tests that need them) and,
	if they were asked to, run the guest suites of vs while the host tests
	go on."""
	tally = Tally()
	if host:
		host_tests(layout, tally, meanwhile.wait if meanwhile else None)
	elif meanwhile:
		meanwhile.wait()
	if meanwhile and meanwhile.guests:
		for g in meanwhile.wait_guests():
			read_results(tally, g.results, g.rc,
				     f'{g.variant}: guest suites (run meanwhile)')
	else:
		guest(layout, vs, [], tally)
	rc = tally.close()
	junit.write(tally.outcomes, layout.junit)
	info(f'JUnit XML: {layout.junit}')
	return rc


def shell(layout: Layout, v: Variant, extra: list[Path]) -> int:
	initrd = prepare(layout, v, extra)
	scratch = initramfs.scratch_disk(layout.out / v.name / 'qemu' / 'scratch.ext4')
	cmd = boot.command(layout.dist(v) / 'Image', initrd, v.qemu_mem_mb, 'gki.mode=shell',
			   scratch, interactive=True)
	return boot.interactive(cmd)


# Benchmarks ---------------------------------------------------------------

_BENCH = re.compile(r'BENCH (\{.*\})\s*$')


def bench_records(text: str) -> list[dict]:
	"""The JSON records benchmark programs print as 'BENCH {...}' lines."""
	out = []
	for line in text.replace('\r', '').splitlines():
		m = _BENCH.search(line)
		if m:
			try:
				out.append(json.loads(m.group(1)))
			except ValueError:
				continue
	return out


def bench(layout: Layout, v: Variant, names: list[str]) -> int:
	known = [p.name for p in programs.discover(layout, 'bench')]
	unknown = sorted(set(names) - set(known))
	if unknown:
		raise GkiError(f'unknown benchmark(s) {", ".join(unknown)}; known: '
			       f'{", ".join(known) or "none"}')
	initrd = prepare(layout, v, [], names)
	runs = boots(layout, v, initrd, 'bench')
	records = [r for b in runs for r in bench_records(b.console)]
	stamp = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')
	dest = layout.out / 'bench' / f'{v.name}-{stamp}.json'
	dest.parent.mkdir(parents=True, exist_ok=True)
	dest.write_text(json.dumps({'variant': v.name, 'time': stamp, 'records': records},
				   indent=2) + '\n')
	print_table(records)
	info(f'figures: {dest}; console: {runs[-1].log}')
	tally = Tally()
	evaluate(v, runs, tally)
	return tally.close() or (0 if records else 1)


def print_table(records: list[dict]) -> None:
	"""Figures, then ratios: a record with 'baseline' names the record it
	is compared with, both measured in the same run."""
	by_name = {r.get('name'): r for r in records}
	print(f'{"benchmark":<44} {"value":>14} unit')
	for r in records:
		print(f'{r.get("name", "?"):<44} {r.get("value", 0):>14.3f} {r.get("unit", "")}')
	ratios = [(r, by_name.get(r.get('baseline'))) for r in records if r.get('baseline')]
	if ratios:
		print(f'\n{"ratio":<60} {"value":>8}')
		for r, base in ratios:
			if base and base.get('value'):
				label = f'{r["name"]} / {base["name"]}'
				print(f'{label:<60} {r["value"] / base["value"]:>8.3f}')
