# SPDX-License-Identifier: GPL-2.0
"""The guest runs' judge: the tally of outcomes, one line per test and a
closing count line; a variant's boots, until the guest stops asking for
another; their judging (KTAP, two-boot tests across boots, power-off,
the kernel log); and the results file a child run leaves its parent.
What to boot, and where its files go, the caller says."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Callable, Protocol, TextIO

from gkiqemu import boot, console, initramfs, ktap, live

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


class Machine(Protocol):
	"""What the harness needs of a variant (gkibuild's Variant is one):
	its name, which begins its outcomes' names, its guest memory and the
	time a boot may take."""

	@property
	def name(self) -> str: ...

	@property
	def qemu_mem_mb(self) -> int: ...

	@property
	def qemu_timeout_s(self) -> int: ...


# Guest runs ---------------------------------------------------------------

def boots(v: Machine, image: Path, initrd: Path, mode: str, scratch: Path,
	  log: Callable[[int], Path], out: TextIO | None = None,
	  env: tuple[str, ...] = ()) -> list[boot.Boot]:
	"""Boot image until the guest stops asking for another boot, at most
	MAX_BOOTS times (evaluate() fails a run that asked for more); the
	scratch disk, made anew at scratch, is kept across the run's boots,
	and boot n's console is saved in log(n).  When out is a terminal,
	each boot's suites show there as they finish (live.Live).  env:
	NAME=VALUE words the suites find in their environment."""
	disk = initramfs.scratch_disk(scratch)
	runs = []
	for n in range(1, MAX_BOOTS + 1):
		cmdline = ' '.join((f'gki.mode={mode} gki.boot={n} '
				    f'gki.suite_timeout={v.qemu_timeout_s * 2 // 3}',) + env)
		cmd = boot.command(image, initrd, v.qemu_mem_mb, cmdline, disk)
		with live.watching(f'{v.name} boot {n}', out) as watch:
			b = boot.run(cmd, log(n), v.qemu_timeout_s, watch)
		runs.append(b)
		if b.timed_out or not b.wants_next_boot:
			break
	return runs


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


def _boot_prefix(v: Machine, n: int) -> str:
	"""'release: ' for boot 1, 'release: boot2: ' for a later boot."""
	return f'{v.name}: ' + (f'boot{n}: ' if n > 1 else '')


def evaluate(v: Machine, runs: list[boot.Boot], tally: Tally, bench: bool = False) -> None:
	"""Judge one variant's boots: their KTAP, with the halves of two-boot
	tests as one test across boots, their power-off and their kernel log.
	With bench, the programs are benchmarks: one passes when it passed and
	printed figures (bench_leaves())."""
	docs = [ktap.parse(b.console) for b in runs]
	two = TwoBoot([(bench_leaves(d, b.console) if bench else ktap.leaves(d)) if d else []
		       for b, d in zip(runs, docs)])
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


def _judge_boot(v: Machine, n: int, b: boot.Boot, has_ktap: bool, tally: Tally) -> None:
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


# The results file ---------------------------------------------------------

def write_results(tally: Tally, path: Path) -> None:
	path.write_text(json.dumps([{'name': o.name, 'status': o.status.value, 'detail': o.detail}
				    for o in tally.outcomes], indent=1) + '\n')


# What load_results() raises for a file it cannot read.
UNREADABLE = (OSError, ValueError, KeyError, TypeError)
# The statuses of a test that failed (Tally.close() counts them as FAIL).
FAILING = (ktap.Status.FAIL, ktap.Status.MISSING, ktap.Status.CRASHED)


def load_results(path: Path) -> list[Outcome]:
	"""The outcomes write_results wrote to path; one of UNREADABLE when
	there is no such file or it is not one write_results writes."""
	return [Outcome(r['name'], ktap.Status(r['status']), r['detail'])
		for r in json.loads(path.read_text())]


def read_results(tally: Tally, path: Path, rc: int | None, what: str) -> None:
	"""Add the outcomes a child run wrote (write_results) to tally, not
	printed again (the child's output shows them).  Fails closed: no
	readable results, none at all, or a failed exit without a failed test
	is a failure of what."""
	try:
		outcomes = load_results(path)
	except UNREADABLE as e:
		tally.add(what, ktap.Status.FAIL, f'exit {rc}; no results in {path}: {e}')
		return
	tally.outcomes.extend(outcomes)
	if not outcomes:
		tally.add(what, ktap.Status.FAIL, f'exit {rc}; no test ran')
	elif rc != 0 and not any(o.status in FAILING for o in outcomes):
		tally.add(what, ktap.Status.FAIL, f'exit {rc} with no failed test')


# Benchmarks ---------------------------------------------------------------

_BENCH = re.compile(r'BENCH (\{.*\})\s*$')


_TOP_RESULT = re.compile(r'^(?:not )?ok \d+ (\S+)')


def bench_leaves(doc: ktap.Test, text: str) -> list[ktap.Leaf]:
	"""A boot of benchmark programs, one leaf each.  A benchmark prints
	'BENCH {...}' records, not KTAP cases: one that passed passes when it
	printed at least one record before its result line, and fails when it
	printed none; one that failed, crashed or broke KTAP is judged as a
	test."""
	counts: dict[str, int] = {}
	seen = 0
	for line in text.replace('\r', '').splitlines():
		if _BENCH.search(line):
			seen += 1
		m = _TOP_RESULT.match(line)
		if m:
			counts[m.group(1)] = seen
			seen = 0
	out = []
	for leaf in ktap.leaves(doc, suites=False):
		if leaf.status == ktap.Status.PASS and not counts.get(leaf.name.split(': ')[0]):
			leaf = ktap.Leaf(leaf.name, ktap.Status.FAIL, 'printed no BENCH figures')
		out.append(leaf)
	return out


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
