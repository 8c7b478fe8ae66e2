# SPDX-License-Identifier: GPL-2.0
"""Running the tests (`gki test`, `gki qemu`, `gki bench`): the host-side
tests of the tooling, then the in-guest suites on each variant, one line
per test and a closing count line.  The harness (gkiqemu) boots and
judges; this module gives it the build's paths: the guest programs, the
variant's initramfs, its Image, logs and scratch disk."""

from __future__ import annotations

import collections
import datetime
import json
import os
import re
import sys
import time
import unittest
from pathlib import Path
from typing import Callable, Iterator, TextIO

from gkibuild import programs, signing, skips, tools
from gkibuild.background import Background
from gkibuild.layout import Layout, Variant, test_root
from gkibuild.util import GkiError, info
from gkiqemu import boot, initramfs, junit, ktap, runner
from gkiqemu.runner import Tally

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

def initramfs_inputs(layout: Layout, v: Variant) -> initramfs.Inputs:
	"""Where the build keeps what every initramfs of v is made with."""
	busybox = layout.out / 'guest-pkgs' / 'busybox-static' / 'bin' / 'busybox'
	if not busybox.exists():
		raise GkiError(f'{busybox} is missing; build/deps.sh unpacks it (run ./build/gki build)')
	return initramfs.Inputs(busybox, layout.qemu / 'init',
				layout.obj(v) / 'usr' / 'gen_init_cpio')


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
	gdir = gdir or layout.guest(v)
	return initramfs.write_cpio(initramfs_inputs(layout, v), gdir, v.name, layout.dist(v),
				    tests, guest_tools, lists, signed_test_modules(layout, v, gdir))


# Test modules the guest also gets signed with the variant's key, as
# /data/<name>.signed.ko: qemu/tests/module_sig.c loads both copies.  Only
# the harness signs them, never the dist: a release key must not sign a
# module that exports a GKI module's symbols.
SIGNED_TEST_MODULES = ('test_module/gki_protected_export.ko',)


def signed_test_modules(layout: Layout, v: Variant, gdir: Path) -> dict[str, Path]:
	"""/data name -> signed copy, when the variant signs its modules."""
	obj = layout.obj(v)
	if not (obj / signing.KEY).exists():
		return {}
	out = {}
	for rel in SIGNED_TEST_MODULES:
		ko = layout.dist(v) / 'modules' / 'test' / rel
		if ko.exists():
			name = ko.name.replace('.ko', '.signed.ko')
			out[name] = signing.sign(obj, ko, gdir / 'signed' / name)
	return out


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


def scratch(layout: Layout, v: Variant) -> Path:
	"""Where a guest run of v makes its scratch disk."""
	return layout.out / v.name / 'qemu' / 'scratch.ext4'


def boots(layout: Layout, v: Variant, initrd: Path, mode: str,
	  out: TextIO | None = None, env: tuple[str, ...] = ()) -> list[boot.Boot]:
	"""runner.boots() of v's Image, its consoles in
	out/logs/<variant>-console-<mode>-boot<N>.log."""
	return runner.boots(v, layout.dist(v) / 'Image', initrd, mode, scratch(layout, v),
			    lambda n: layout.log(v, f'console-{mode}-boot{n}'), out, env)


def guest(layout: Layout, vs: list[Variant], extra: list[Path], tally: Tally,
	  only: list[str] | None = None, env: tuple[str, ...] = ()) -> None:
	for v in vs:
		info(f'booting the {v.name} GKI in QEMU')
		initrd = prepare(layout, v, extra, only=only)
		runner.evaluate(v, boots(layout, v, initrd, 'test', tally.out, env), tally)


def guest_suites(layout: Layout, vs: list[Variant], extra: list[Path],
		 only: list[str] | None = None, results: Path | None = None,
		 env: tuple[str, ...] = ()) -> int:
	"""results: where to write the outcomes for the process that runs
	this one (runner.read_results); env: see boots()."""
	tally = Tally()
	guest(layout, vs, extra, tally, only, env)
	rc = tally.close()
	if results:
		runner.write_results(tally, results)
	return rc


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
			runner.read_results(tally, g.results, g.rc,
					    f'{g.variant}: guest suites (run meanwhile)')
	else:
		guest(layout, vs, [], tally)
	if os.environ.get('CI'):
		skips.enforce(tally, configs(layout, vs))
	rc = tally.close()
	junit.write(tally.outcomes, layout.junit)
	info(f'JUnit XML: {layout.junit}')
	return rc


def configs(layout: Layout, vs: list[Variant]) -> dict[str, str]:
	"""Variant name -> its .config, for the variants built."""
	paths = {v.name: layout.obj(v) / '.config' for v in vs}
	return {name: p.read_text() for name, p in paths.items() if p.exists()}


def shell(layout: Layout, v: Variant, extra: list[Path]) -> int:
	initrd = prepare(layout, v, extra)
	disk = initramfs.scratch_disk(scratch(layout, v))
	cmd = boot.command(layout.dist(v) / 'Image', initrd, v.qemu_mem_mb, 'gki.mode=shell',
			   disk, interactive=True)
	return boot.interactive(cmd)


# Benchmarks ---------------------------------------------------------------

def bench(layout: Layout, v: Variant, names: list[str]) -> int:
	known = [p.name for p in programs.discover(layout, 'bench')]
	unknown = sorted(set(names) - set(known))
	if unknown:
		raise GkiError(f'unknown benchmark(s) {", ".join(unknown)}; known: '
			       f'{", ".join(known) or "none"}')
	initrd = prepare(layout, v, [], names)
	runs = boots(layout, v, initrd, 'bench')
	records = [r for b in runs for r in runner.bench_records(b.console)]
	stamp = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')
	dest = layout.out / 'bench' / f'{v.name}-{stamp}.json'
	dest.parent.mkdir(parents=True, exist_ok=True)
	dest.write_text(json.dumps({'variant': v.name, 'time': stamp, 'records': records},
				   indent=2) + '\n')
	print_table(records)
	info(f'figures: {dest}; console: {runs[-1].log}')
	tally = Tally()
	runner.evaluate(v, runs, tally, bench=True)
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
