# SPDX-License-Identifier: GPL-2.0
"""The mutation check (`./build/gki mutate`): do the tests catch bugs?

build/mutants.toml lists small deliberate bugs (mutants): a file, a text
that occurs in it exactly once, its replacement, and the tests that should
catch it: host test files (Python tooling) and/or guest suites (vendor
modules, run in QEMU).  Each mutant is applied alone, in a copy, and only
its tests run:

- host mutants in a copy of the working tree without out/ and .git, whose
  own test files are run with unittest;
- guest mutants in a Sandbox (sandbox.py) of the release build, where
  `gki qemu --only SUITE...` rebuilds the mutated module alone and boots
  with those suites; its outcomes are read from the results file it
  writes (--results), as `gki test` reads its guest runs'.

A mutant is KILLED when its tests fail, SURVIVED when they pass, and
DID-NOT-BUILD when the build stage failed.  The same tests run first on
the unmutated copies and must pass there, so that no mutant is 'killed'
by tests that fail anyway.  An outcome the campaign cannot read is
UNCLASSIFIED and fails the campaign: it fails closed.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Iterable, TextIO

from gkibuild import programs
from gkibuild.layout import VARIANTS, Layout, python_path, test_root
from gkibuild.sandbox import INPUTS, Sandbox, unavailable
from gkibuild.util import GkiError
from gkiqemu import ktap, runner

LIST = 'build/mutants.toml'
PYTHON = '/usr/bin/python3'
VARIANT = VARIANTS['release']
# A hung host test under a mutant counts as caught; unmutated, as broken.
HOST_TIMEOUT_S = 600
# The guest run's outcomes, in the sandbox's out/ (runner.write_results).
RESULTS = 'mutate-guest-results.json'
_NAME = re.compile(r'^[a-z0-9][a-z0-9_]*$')
_KEYS = {'name': str, 'file': str, 'find': str, 'replace': str, 'host': list,
	 'suites': list, 'fast': bool, 'note': str}
_REQUIRED = ('name', 'file', 'find', 'replace')


class Status(enum.Enum):
	KILLED = 'KILLED'
	SURVIVED = 'SURVIVED'
	DID_NOT_BUILD = 'DID-NOT-BUILD'
	UNCLASSIFIED = 'UNCLASSIFIED'	# an outcome the campaign cannot read


@dataclasses.dataclass(frozen=True)
class Mutant:
	name: str
	file: str			# repository-relative
	find: str			# occurs exactly once in file
	replace: str
	host: tuple[str, ...] = ()	# host test files, repository-relative
	suites: tuple[str, ...] = ()	# guest suites (gki qemu --only)
	fast: bool = False		# in the sample ./build/gki test runs
	note: str = ''			# why it survives, for a known survivor

	def checks(self) -> str:
		return ', '.join([Path(h).name for h in self.host] + list(self.suites))


# The list ------------------------------------------------------------------

def load(path: Path, layout: Layout) -> list[Mutant]:
	"""The mutants of a list, each checked against the tree: a list that
	no longer matches the code is an error naming every stale entry, never
	a mutant that 'did not build' or 'survived'."""
	try:
		data = tomllib.loads(path.read_text())
	except (OSError, tomllib.TOMLDecodeError) as e:
		raise GkiError(f'{path}: {e}') from e
	errors = [f'{path}: unknown table {k!r} (only [[mutant]])' for k in data if k != 'mutant']
	entries = data.get('mutant', [])
	if not isinstance(entries, list) or not entries:
		errors.append(f'{path}: no [[mutant]] entries')
		entries = []
	mutants = []
	for i, entry in enumerate(entries, 1):
		m, problems = _entry(entry)
		name = entry.get('name') if isinstance(entry, dict) else None
		errors += [f'{path}: mutant {i}{f" ({name})" if name else ""}: {p}' for p in problems]
		if m and not problems:
			mutants.append(m)
	errors += _duplicates(path, mutants)
	if not errors:
		suites = _suite_names(layout)
		for m in mutants:
			errors += [f'{path}: mutant {m.name}: {p}' for p in check(m, layout, suites)]
	if errors:
		raise GkiError('the mutant list is wrong:\n  ' + '\n  '.join(errors))
	return mutants


def _entry(entry: object) -> tuple[Mutant | None, list[str]]:
	"""A [[mutant]] table's keys and their types."""
	if not isinstance(entry, dict):
		return None, ['not a table']
	problems = [f'unknown key {k!r}' for k in entry if k not in _KEYS]
	problems += [f'lacks {k!r}' for k in _REQUIRED if k not in entry]
	for k, v in entry.items():
		want = _KEYS.get(k)
		if want and not isinstance(v, want):
			problems.append(f'{k!r} must be a {want.__name__}')
		elif want is list and not all(isinstance(x, str) for x in v):
			problems.append(f'{k!r} must be a list of strings')
	if problems:
		return None, problems
	m = Mutant(entry['name'], entry['file'], entry['find'], entry['replace'],
		   tuple(entry.get('host', ())), tuple(entry.get('suites', ())),
		   entry.get('fast', False), entry.get('note', '').strip())
	return m, []


def _duplicates(path: Path, mutants: list[Mutant]) -> list[str]:
	names = [m.name for m in mutants]
	return [f'{path}: mutant name {n!r} is used {names.count(n)} times'
		for n in sorted(set(names)) if names.count(n) > 1]


def _suite_names(layout: Layout) -> set[str]:
	return {p.name for p in programs.discover(layout, 'suites')}


def check(m: Mutant, layout: Layout, suites: set[str]) -> list[str]:
	"""What is wrong with one mutant against the tree; [] when nothing."""
	problems = []
	if not _NAME.match(m.name):
		problems.append('a name is lower-case letters, digits and _')
	path = layout.top / m.file
	if Path(m.file).is_absolute() or '..' in Path(m.file).parts or not path.is_file():
		return problems + [f'no file {m.file} in the repository']
	if m.find == m.replace:
		problems.append('replace is the same as find')
	n = read(path).count(m.find) if m.find else 0
	if n != 1:
		problems.append(f'find occurs {n} times in {m.file}, not once: the list is stale')
	if not m.host and not m.suites:
		problems.append('names no host test file and no suite: nothing could catch it')
	for h in m.host:
		if not re.fullmatch(r'test_\w+\.py', Path(h).name) or not (layout.top / h).is_file():
			problems.append(f'no host test file {h}')
	problems += [f'no guest suite named {s}' for s in m.suites if s not in suites]
	if m.suites and Path(m.file).parts[0] not in INPUTS:
		problems.append(f'guest suites see only {", ".join(INPUTS)}: not {m.file}')
	return problems


def select(mutants: list[Mutant], names: list[str], fast: bool) -> list[Mutant]:
	"""The named mutants (all when none are named), or the fast sample."""
	if names and fast:
		raise GkiError('name mutants or ask for --fast, not both')
	if fast:
		return [m for m in mutants if m.fast]
	if not names:
		return mutants
	known = {m.name for m in mutants}
	unknown = [n for n in names if n not in known]
	if unknown:
		raise GkiError(f'no mutant named {", ".join(unknown)} in {LIST}')
	return [m for m in mutants if m.name in names]


# Applying a mutant ---------------------------------------------------------

def read(path: Path) -> str:
	"""A source file as it is, line ends included (read_text() would
	turn CRLF into LF, and the revert would not give the file back)."""
	return path.read_bytes().decode()


def write_anew(path: Path, text: str) -> None:
	"""Replace path by a new file holding text, stamped now: make and the
	module stage's mirror see it as newer than anything built before."""
	mode = path.stat().st_mode
	tmp = path.with_name(path.name + '.mutate-tmp')
	tmp.write_bytes(text.encode())
	os.chmod(tmp, mode)
	os.replace(tmp, path)


class Applied:
	"""A mutant applied to one copy; revert() gives the file back."""

	def __init__(self, root: Path, m: Mutant) -> None:
		self.path = root / m.file
		self.old = read(self.path)
		if self.old.count(m.find) != 1:
			raise GkiError(f'mutant {m.name}: find does not occur once in the copy of {m.file}')
		write_anew(self.path, self.old.replace(m.find, m.replace))

	def revert(self) -> None:
		write_anew(self.path, self.old)


# Outcomes ------------------------------------------------------------------

@dataclasses.dataclass
class Outcome:
	"""What one run of tests says: 'pass', 'fail', 'no-build' or
	'unclassified', what failed, and the output."""
	kind: str
	what: str
	detail: str
	output: str
	skipped: int = 0


_RAN = re.compile(r'^Ran (\d+) tests? in ', re.M)
_OK = re.compile(r'^OK(?: \((.*)\))?$', re.M)
_FAILED = re.compile(r'^FAILED \((.*)\)$', re.M)
_FAILING = re.compile(r'^(?:FAIL|ERROR): (\S+) \(([^)]*)\)', re.M)


def host_outcome(what: str, rc: int, output: str) -> Outcome:
	"""unittest's verdict: rc 0 with 'OK' after running tests, or rc 1
	with 'FAILED'; anything else (no test ran, a crash) is unclassified."""
	ran = _RAN.search(output)
	ok = _OK.search(output)
	if rc == 0 and ran and int(ran.group(1)) > 0 and ok:
		skipped = re.search(r'skipped=(\d+)', ok.group(1) or '')
		return Outcome('pass', what, f'{ran.group(1)} tests', output,
			       int(skipped.group(1)) if skipped else 0)
	if rc == 1 and ran and _FAILED.search(output):
		failing = [_test_name(test, where) for test, where in _FAILING.findall(output)]
		return Outcome('fail', what, _few(failing) or _FAILED.search(output).group(0), output)
	return Outcome('unclassified', what, f'unittest exit status {rc} without a verdict the '
		       'campaign can read', output)


def _test_name(test: str, where: str) -> str:
	"""'Class.test' from unittest's 'test (module.Class.test)' (3.11) or
	'test (module.Class)'."""
	parts = where.split('.')
	if parts[-1] == test:
		parts = parts[:-1]
	return f'{parts[-1]}.{test}' if len(parts) > 1 else test


_STAGE_FAILED = re.compile(r'^\[(\S+)[^\]]*\] FAILED in', re.M)
_NOT_COMPILED = re.compile(r'^gki: error: compiling (\S+) failed', re.M)


def guest_outcome(what: str, rc: int, output: str, results: Path) -> Outcome:
	"""The outcomes the run wrote to results (runner.write_results, read
	as `gki test` reads its guest runs') decide, and the exit status must
	agree with them: a pass when something passed and nothing failed, a
	failure when a test failed or none ran.  Without them the run never
	got to boot: a failed build stage or guest program is 'no-build';
	anything else is unclassified."""
	try:
		outcomes = runner.load_results(results)
	except runner.UNREADABLE as e:
		stage = _STAGE_FAILED.search(output) or _NOT_COMPILED.search(output)
		if rc != 0 and stage:
			return Outcome('no-build', what, f'{stage.group(1)} failed', output)
		return Outcome('unclassified', what, f'exit status {rc}, no results ({e}) and no '
			       'failed build stage', output)
	passed = sum(o.status == ktap.Status.PASS for o in outcomes)
	failed = [o.name.split(': ', 1)[-1] for o in outcomes if o.status in runner.FAILING]
	if rc == 0 and not failed and passed:
		return Outcome('pass', what, f'{passed} passed', output)
	if rc != 0 and (failed or not passed):
		return Outcome('fail', what, _few(failed) or 'no test ran', output)
	return Outcome('unclassified', what, f'exit status {rc} with {passed} passed, '
		       f'{len(failed)} failed in {results}', output)


def _few(names: list[str], n: int = 2) -> str:
	"""The first n names (a test with failing subtests counts once)."""
	names = list(dict.fromkeys(names))
	more = f' and {len(names) - n} more' if len(names) > n else ''
	return ', '.join(names[:n]) + more


# The copies ----------------------------------------------------------------

class HostCopy:
	"""The working tree without out/ and .git: the host tests import the
	copy's own modules (PYTHONPATH names the copy's import root)."""

	def __init__(self, layout: Layout, root: Path) -> None:
		self.layout = layout
		self.root = root

	def create(self) -> 'HostCopy':
		shutil.rmtree(self.root, ignore_errors=True)
		top = self.layout.top
		skip = {'.git', 'out'} | ({self.layout.out.name} if self.layout.out.parent == top
					  else set())

		def ignore(folder: str, names: list[str]) -> set[str]:
			drop = {'__pycache__'}
			if Path(folder) == top:
				drop |= skip
			return drop & set(names)

		shutil.copytree(top, self.root, symlinks=True, ignore=ignore)
		return self

	def test(self, rel: str) -> Outcome:
		"""One host test file of the copy, run with unittest.  GKI_OUT is
		dropped so that no test of the copy finds the real out/."""
		f = self.root / rel
		cmd = [PYTHON, '-B', '-m', 'unittest', 'discover', '-s', str(f.parent),
		       '-t', str(test_root(f.parent)), '-p', f.name]
		env = {k: v for k, v in os.environ.items() if k != 'GKI_OUT'}
		env['PYTHONDONTWRITEBYTECODE'] = '1'
		env['PYTHONPATH'] = python_path(self.root)
		try:
			res = subprocess.run(cmd, cwd=self.root, env=env, capture_output=True, text=True,
					     stdin=subprocess.DEVNULL, timeout=HOST_TIMEOUT_S)
		except subprocess.TimeoutExpired as e:
			# Captured output is bytes here, whatever text= said.
			out = (e.stdout or b'').decode(errors='replace')
			return Outcome('fail', f.name, f'did not finish in {HOST_TIMEOUT_S} s', out)
		return host_outcome(f.name, res.returncode, res.stdout + res.stderr)

	def remove(self) -> None:
		shutil.rmtree(self.root, ignore_errors=True)


class GuestCopy:
	"""A Sandbox of the release build in which `gki qemu --only` runs."""

	def __init__(self, layout: Layout, root: Path) -> None:
		self.box = Sandbox(layout, VARIANT, root)

	@property
	def root(self) -> Path:
		return self.box.top

	def create(self) -> 'GuestCopy':
		self.box.create()
		return self

	def test(self, suites: Iterable[str]) -> Outcome:
		"""`gki qemu --only` in the copy, its outcomes written to a results
		file: the run sees the copy's out/ at the real out/'s path."""
		results = self.box.real.out / RESULTS
		results.unlink(missing_ok=True)	# a run that writes none must not read the last
		args = ['qemu', '--variant', VARIANT.name,
			'--results', str(self.box.layout.out / RESULTS)]
		for s in suites:
			args += ['--only', s]
		res = self.box.run(*args)
		return guest_outcome(', '.join(suites), res.rc, res.output, results)

	def remove(self) -> None:
		self.box.remove()


def guest_ready(layout: Layout) -> str | None:
	"""Why guest mutants cannot run here, or None."""
	return unavailable(layout, VARIANT)


# The campaign --------------------------------------------------------------

@dataclasses.dataclass
class Result:
	mutant: Mutant
	status: Status
	by: str			# the tests that caught it, or that it survived
	detail: str
	seconds: float

	def line(self) -> str:
		m = self.mutant
		if self.status == Status.KILLED:
			tail = f', by {self.by} ({self.detail})'
			if m.note:
				tail += '; its note says it survives: remove the note'
		elif self.status == Status.SURVIVED:
			tail = f', not caught by {self.by}'
			tail += f'; noted: {m.note.splitlines()[0]}' if m.note else '; NO NOTE'
		else:
			tail = f' ({self.by}: {self.detail})'
		return f'{self.status.value:<13} {m.name}: {m.file}{tail}'

	@property
	def fails_campaign(self) -> bool:
		"""A survivor without a written reason, a note that is no longer
		true, a mutant that tests nothing, an outcome not understood."""
		if self.status == Status.SURVIVED:
			return not self.mutant.note
		if self.status == Status.KILLED:
			return bool(self.mutant.note)
		return True


class Campaign:
	"""Runs mutants one at a time in copies under root; writes one line per
	mutant to out and keeps each mutant's test output in root/logs/."""

	def __init__(self, layout: Layout, root: Path, out: TextIO = sys.stdout) -> None:
		self.layout = layout
		self.root = root
		self.out = out
		self.host: HostCopy | None = None
		self.guest: GuestCopy | None = None

	def run(self, mutants: list[Mutant]) -> list[Result]:
		shutil.rmtree(self.root / 'logs', ignore_errors=True)
		(self.root / 'logs').mkdir(parents=True)
		try:
			self._prepare(mutants)
			# Host mutants first: seconds each, against minutes for guest ones.
			order = sorted(mutants, key=lambda m: bool(m.suites))
			return [self._one(m) for m in order]
		finally:
			for copy in (self.host, self.guest):
				if copy:
					copy.remove()

	def _prepare(self, mutants: list[Mutant]) -> None:
		"""Make the copies and run every named test on them unmutated: all
		must pass, and no host test may skip (a skipped test catches
		nothing)."""
		host = sorted({h for m in mutants for h in m.host})
		suites = sorted({s for m in mutants for s in m.suites})
		if host:
			self.host = HostCopy(self.layout, self.root / 'host').create()
			for h in host:
				self._baseline(self.host.test(h), 'host test file')
		if suites:
			why = guest_ready(self.layout)
			if why:
				raise GkiError(f'cannot run guest mutants: {why}')
			self._say(f'sandbox of the {VARIANT.name} build, then the unmutated suites')
			self.guest = GuestCopy(self.layout, self.root / 'guest').create()
			self._baseline(self.guest.test(suites), 'guest suites')

	def _baseline(self, o: Outcome, kind: str) -> None:
		log = self._log('baseline', o)
		if o.kind != 'pass':
			raise GkiError(f'the unmutated {kind} {o.what} did not pass ({o.kind}: {o.detail}); '
				       f'no mutant can be judged by them; output: {log}')
		if o.skipped:
			raise GkiError(f'the unmutated {kind} {o.what} skips {o.skipped} test(s) in the '
				       f'copy, where they cannot catch anything; output: {log}')
		self._say(f'unmutated {o.what}: pass ({o.detail})')

	def _say(self, msg: str) -> None:
		print(f'gki: mutate: {msg}', file=self.out, flush=True)

	def _log(self, name: str, o: Outcome) -> Path:
		log = self.root / 'logs' / f'{name}.log'
		with log.open('a') as f:
			f.write(f'===== {o.what}: {o.kind} ({o.detail})\n{o.output}\n')
		return log

	def _one(self, m: Mutant) -> Result:
		start = time.monotonic()
		outcomes = self._outcomes(m)
		for o in outcomes:
			self._log(m.name, o)
		r = judge(m, outcomes, time.monotonic() - start)
		print(r.line(), file=self.out, flush=True)
		return r

	def _outcomes(self, m: Mutant) -> list[Outcome]:
		"""Host files one by one, then the suites in one boot; the first
		failure ends it (the mutant is caught)."""
		outcomes: list[Outcome] = []
		if m.host:
			assert self.host
			applied = Applied(self.host.root, m)
			try:
				for h in m.host:
					outcomes.append(self.host.test(h))
					if outcomes[-1].kind != 'pass':
						return outcomes
			finally:
				applied.revert()
		if m.suites:
			assert self.guest
			# Reverted before the next mutant; its build rebuilds both.
			applied = Applied(self.guest.root, m)
			try:
				outcomes.append(self.guest.test(m.suites))
			finally:
				applied.revert()
		return outcomes


def judge(m: Mutant, outcomes: list[Outcome], seconds: float) -> Result:
	"""The mutant's status from its tests' outcomes, in the order run."""
	for o in outcomes:
		if o.kind == 'fail':
			return Result(m, Status.KILLED, o.what, o.detail, seconds)
		if o.kind == 'no-build':
			return Result(m, Status.DID_NOT_BUILD, o.what, o.detail, seconds)
		if o.kind != 'pass':
			return Result(m, Status.UNCLASSIFIED, o.what, o.detail, seconds)
	if not outcomes:
		return Result(m, Status.UNCLASSIFIED, 'nothing', 'no test ran', seconds)
	return Result(m, Status.SURVIVED, m.checks(), 'all passed', seconds)


def summary(results: list[Result]) -> str:
	n = len(results)
	count = {s: sum(r.status == s for r in results) for s in Status}
	killed = count[Status.KILLED]
	pct = 100.0 * killed / n if n else 0.0
	extra = (f', {count[Status.UNCLASSIFIED]} unclassified'
		 if count[Status.UNCLASSIFIED] else '')
	return (f'mutants: {killed} killed, {count[Status.SURVIVED]} survived, '
		f'{count[Status.DID_NOT_BUILD]} did not build{extra}, of {n} ({pct:.0f}% killed)')


def record(path: Path, results: list[Result], started: str, seconds: float) -> None:
	"""The campaign as JSON, for CI and for the figure in docs/figures.md."""
	path.parent.mkdir(parents=True, exist_ok=True)
	path.write_text(json.dumps({
		'started': started,
		'seconds': round(seconds, 1),
		'list': LIST,
		'summary': summary(results),
		'mutants': [{'name': r.mutant.name, 'file': r.mutant.file, 'status': r.status.value,
			     'checks': r.mutant.checks(), 'by': r.by, 'detail': r.detail,
			     'note': r.mutant.note, 'seconds': round(r.seconds, 1)}
			    for r in results],
	}, indent=1) + '\n')


def main(layout: Layout, names: list[str], fast: bool, root: Path | None = None,
	 out: TextIO = sys.stdout) -> tuple[int, list[Result]]:
	"""`gki mutate`: the exit status (non-zero when a mutant survived
	without a note, or any fails the campaign) and the results."""
	root = root or layout.out / 'mutate'
	mutants = select(load(layout.top / LIST, layout), names, fast)
	started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')
	t0 = time.monotonic()
	results = Campaign(layout, root, out).run(mutants)
	wall = time.monotonic() - t0
	record(root / 'result.json', results, started, wall)
	print(summary(results), file=out, flush=True)
	bad = [r.mutant.name for r in results if r.fails_campaign]
	print(f'gki: mutate: {wall:.0f} s; record: {root / "result.json"}; logs: {root / "logs"}',
	      file=out, flush=True)
	if bad:
		print(f'gki: mutate: failing the campaign: {", ".join(bad)}', file=out, flush=True)
	return (1 if bad else 0), results
