# SPDX-License-Identifier: GPL-2.0
"""KTAP parsing for the serial console.

The guest's /init prints one KTAP document per boot; each suite's own KTAP
(kselftest harness or KUnit) is nested under it, indented by four spaces.
Kernel log lines ('[   1.234] ...') are dropped before parsing; they are
checked separately by console.py.

The parser fails closed: a result line that breaks KTAP's rules (no number,
a number other than the next, beyond its document's plan) fails whatever
it says, and so do 'not ok ... # TODO', a 'Bail out!' line, and a suite
that passed without running a test (it printed no KTAP, or planned 1..0).
"""

from __future__ import annotations

import codecs
import dataclasses
import enum
import re

_VERSION = re.compile(r'^(KTAP version 1|TAP version 1[34])$')
_PLAN = re.compile(r'^1\.\.(\d+)')
# 'ok' or 'not ok' as a word: 'okay, starting' is console text.
_RESULT = re.compile(r'^(ok|not ok)(?=\s|$)(?:\s+(\d+)(?=\s|$))?\s*(?:-\s*)?([^#]*?)\s*'
		     r'(?:#\s*(.*))?$')
_KERNEL_LINE = re.compile(r'^\[\s*\d+\.\d+\]')
_SKIP_WORD = re.compile(r'^SKIP\b\s*', re.I)
_RUNNING = '# gki: running '	# printed by qemu/init before each suite
_BAIL = 'Bail out!'		# KTAP: the test stopped early


class Status(enum.Enum):
	PASS = 'PASS'
	FAIL = 'FAIL'
	SKIP = 'SKIP'
	MISSING = 'MISSING'	# announced by a plan, never reported
	CRASHED = 'CRASHED'	# output started but its result line never came


@dataclasses.dataclass
class Test:
	name: str
	status: Status
	directive: str = ''
	subtests: list['Test'] = dataclasses.field(default_factory=list)
	plan: int | None = None
	diag: list[str] = dataclasses.field(default_factory=list)
	problem: str = ''	# why the line breaks KTAP's rules; the test then fails
	bail: str | None = None	# the reason of its document's 'Bail out!' line


def _lines(text: str) -> list[tuple[int, str]]:
	out = []
	for raw in text.replace('\r', '').split('\n'):
		if _KERNEL_LINE.match(raw.lstrip()):
			continue
		stripped = raw.lstrip(' ')
		out.append(((len(raw) - len(stripped)) // 4, stripped.rstrip()))
	return out


def _status(ok: str, directive: str) -> Status:
	"""'not ok # TODO' is a failure: a known bug is still a bug, and a TODO
	that would skip could hide any failure."""
	if directive.upper().startswith('SKIP'):
		return Status.SKIP
	return Status.PASS if ok == 'ok' else Status.FAIL


def _broken(t: Test, problem: str) -> None:
	"""Fail t for a breach of KTAP's rules, kept apart from its directive."""
	t.status, t.problem = Status.FAIL, problem


def _result(m: re.Match[str], due: int) -> Test:
	"""The test a result line reports, due to be number due: a line without
	its number, or with another one (a duplicate, out of order), fails."""
	directive = m.group(4) or ''
	t = Test(m.group(3) or f'test {due}', _status(m.group(1), directive), directive)
	if m.group(2) is None:
		_broken(t, f'result line without a number: "{m.group(0)}"')
	elif int(m.group(2)) != due:
		_broken(t, f'numbered {m.group(2)} where {due} was due: "{m.group(0)}"')
	return t


def _check_plan(doc: Test) -> None:
	"""Results beyond the plan fail; results the plan announced but that
	never came are added as missing."""
	if doc.plan is None:
		return
	for n, t in enumerate(doc.subtests[doc.plan:], doc.plan + 1):
		if t.status != Status.CRASHED:
			_broken(t, f'result {n} beyond the plan of {doc.plan}')
	for n in range(len(doc.subtests) + 1, doc.plan + 1):
		doc.subtests.append(Test(f'test {n}', Status.MISSING, 'not reported'))


def _block(lines: list[tuple[int, str]], depth: int) -> Test:
	"""Parse the lines of one KTAP document at depth, which may hold nested
	documents at depth + 1 before each result line."""
	doc = Test('', Status.PASS)
	pending: list[tuple[int, str]] = []
	running = 'unfinished test'
	for indent, text in lines:
		if indent > depth:
			pending.append((indent, text))
			continue
		if indent < depth:
			continue
		m = _RESULT.match(text)
		if m:
			t = _result(m, len(doc.subtests) + 1)
			if any(_VERSION.match(l) or _RESULT.match(l) or _PLAN.match(l) or
			       l.startswith(_BAIL) for _, l in pending):
				nested = _block(pending, depth + 1)
				t.subtests, t.plan, t.bail = nested.subtests, nested.plan, nested.bail
			t.diag = [l for _, l in pending if l.startswith('#')]
			doc.subtests.append(t)
			pending = []
		elif _PLAN.match(text) and doc.plan is None:
			doc.plan = int(_PLAN.match(text).group(1))
		elif text.startswith(_BAIL) and doc.bail is None:
			doc.bail = text[len(_BAIL):].strip() or 'no reason given'
		elif text.startswith('#'):
			doc.diag.append(text)
			if text.startswith(_RUNNING):
				running = text[len(_RUNNING):].split()[0].split('/')[-1]
	if pending:
		# Output began but no result line followed: the suite died.
		nested = _block(pending, depth + 1)
		doc.subtests.append(Test(running, Status.CRASHED, 'no result line',
					 nested.subtests, nested.plan, bail=nested.bail))
	_check_plan(doc)
	return doc


def parse(text: str) -> Test | None:
	"""Parse the first KTAP document in console text; None if there is none."""
	lines = _lines(text)
	for i, (indent, l) in enumerate(lines):
		if indent == 0 and _VERSION.match(l):
			return _block(lines[i + 1:], 0)
	return None


@dataclasses.dataclass
class Leaf:
	name: str
	status: Status
	detail: str = ''


def leaves(doc: Test, prefix: str = '', suites: bool = True) -> list[Leaf]:
	"""Flatten to the leaf tests, each named 'suite: case'.  A suite that
	crashed, broke KTAP's rules, bailed out, or whose verdict disagrees
	with its cases (a non-zero exit after passing cases), adds a failed
	leaf of its own.  With suites (the top document's tests are suites,
	as /init's are), one that passed without running a test fails too;
	without (one program's own document), they are its cases.  The top
	document's own 'Bail out!' is a failed leaf too."""
	out = []
	if not prefix and doc.bail is not None:
		out.append(Leaf('harness', Status.FAIL, f'{_BAIL} {doc.bail}'))
	for t in doc.subtests:
		name = f'{prefix}{t.name}'
		if not t.subtests:
			out.append(_leaf(t, name, suite=suites and not prefix))
			continue
		sub = leaves(t, name + ': ')
		out.extend(sub)
		if t.bail is not None:
			out.append(Leaf(name, Status.FAIL, f'{_BAIL} {t.bail}'))
		elif t.problem or t.status == Status.CRASHED or (t.status == Status.FAIL and all(
				l.status in (Status.PASS, Status.SKIP) for l in sub)):
			out.append(Leaf(name, t.status, t.problem or t.directive or 'suite failed'))
	return out


def _leaf(t: Test, name: str, suite: bool) -> Leaf:
	"""A test without cases of its own.  A suite that passed so is
	silent: it ran no test, which is a failure."""
	if t.bail is not None:
		return Leaf(name, Status.FAIL, f'{_BAIL} {t.bail}')
	if suite and t.status == Status.PASS and not t.problem:
		why = 'planned 1..0' if t.plan == 0 else 'printed no KTAP'
		return Leaf(name, Status.FAIL, f'{why}: the suite ran no test')
	return Leaf(name, t.status, t.problem or _SKIP_WORD.sub('', t.directive))


class Stream:
	"""The suites of a console's KTAP document as they finish, for a person
	watching the boot: display only, the verdict is taken from the whole
	console after the boot.  Each top-level result line parses the console
	so far again with parse(), so a suite reads here as it does there."""

	def __init__(self) -> None:
		self.started = False	# the document's version line came
		self.plan: int | None = None
		self.done = 0		# suites finished, and returned by feed()
		self.running = ''	# the suite /init announced and that has not finished
		self._text: list[str] = []	# complete lines, as they came
		self._partial = ''
		self._decode = codecs.getincrementaldecoder('utf-8')('replace').decode

	def feed(self, data: bytes) -> list[Test]:
		"""The suites whose result line data completed; data may cut a
		line, or a character, anywhere."""
		text = self._partial + self._decode(data)
		cut = text.rfind('\n') + 1
		self._partial = text[cut:]
		self._text.append(text[:cut])
		ended = False
		for indent, line in _lines(text[:cut]):
			if indent:
				continue
			if _VERSION.match(line):
				self.started = True
			elif not self.started:
				continue
			elif _RESULT.match(line):
				ended, self.running = True, ''
			elif _PLAN.match(line) and self.plan is None:
				self.plan = int(_PLAN.match(line).group(1))
			elif line.startswith(_RUNNING):
				self.running = line[len(_RUNNING):].split()[0].split('/')[-1]
		doc = parse(''.join(self._text)) if ended else None
		if doc is None:
			return []
		# parse() adds the suites its plan announced but that have not
		# come yet as missing; they are still to come.
		finished = [t for t in doc.subtests if t.status != Status.MISSING]
		new, self.done = finished[self.done:], len(finished)
		return new
