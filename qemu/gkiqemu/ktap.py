# SPDX-License-Identifier: GPL-2.0
"""KTAP parsing for the serial console.

The guest's /init prints one KTAP document per boot; each suite's own KTAP
(kselftest harness or KUnit) is nested under it, indented by four spaces.
Kernel log lines ('[   1.234] ...') are dropped before parsing; they are
checked separately by console.py.
"""

from __future__ import annotations

import dataclasses
import enum
import re

_VERSION = re.compile(r'^(KTAP version 1|TAP version 1[34])$')
_PLAN = re.compile(r'^1\.\.(\d+)')
_RESULT = re.compile(r'^(ok|not ok)(?:\s+(\d+))?\s*(?:-\s*)?([^#]*?)\s*(?:#\s*(.*))?$')
_KERNEL_LINE = re.compile(r'^\[\s*\d+\.\d+\]')
_SKIP_WORD = re.compile(r'^(SKIP|TODO)\b\s*', re.I)
_RUNNING = '# gki: running '	# printed by qemu/init before each suite


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


def _lines(text: str) -> list[tuple[int, str]]:
	out = []
	for raw in text.replace('\r', '').split('\n'):
		if _KERNEL_LINE.match(raw.lstrip()):
			continue
		stripped = raw.lstrip(' ')
		out.append(((len(raw) - len(stripped)) // 4, stripped.rstrip()))
	return out


def _status(ok: str, directive: str) -> Status:
	d = directive.upper()
	if d.startswith('SKIP'):
		return Status.SKIP
	if ok == 'ok':
		return Status.PASS
	return Status.SKIP if d.startswith('TODO') else Status.FAIL


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
			status = _status(m.group(1), m.group(4) or '')
			t = Test(m.group(3) or f'test {len(doc.subtests) + 1}', status,
				 m.group(4) or '')
			if any(_VERSION.match(l) or _RESULT.match(l) or _PLAN.match(l)
			       for _, l in pending):
				nested = _block(pending, depth + 1)
				t.subtests, t.plan = nested.subtests, nested.plan
			t.diag = [l for _, l in pending if l.startswith('#')]
			doc.subtests.append(t)
			pending = []
		elif _PLAN.match(text) and doc.plan is None:
			doc.plan = int(_PLAN.match(text).group(1))
		elif text.startswith('#'):
			doc.diag.append(text)
			if text.startswith(_RUNNING):
				running = text[len(_RUNNING):].split()[0].split('/')[-1]
	if pending:
		# Output began but no result line followed: the suite died.
		nested = _block(pending, depth + 1)
		doc.subtests.append(Test(running, Status.CRASHED, 'no result line',
					 nested.subtests, nested.plan))
	if doc.plan is not None:
		reported = len(doc.subtests)
		for n in range(reported + 1, doc.plan + 1):
			doc.subtests.append(Test(f'test {n}', Status.MISSING, 'not reported'))
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


def leaves(doc: Test, prefix: str = '') -> list[Leaf]:
	"""Flatten to the leaf tests, each named 'suite: case'.  A suite that
	crashed, or whose verdict disagrees with its cases (a non-zero exit
	after passing cases), adds a failed leaf of its own."""
	out = []
	for t in doc.subtests:
		name = f'{prefix}{t.name}'
		if not t.subtests:
			out.append(Leaf(name, t.status, _SKIP_WORD.sub('', t.directive)))
			continue
		sub = leaves(t, name + ': ')
		out.extend(sub)
		if t.status == Status.CRASHED or (t.status == Status.FAIL and all(
				l.status in (Status.PASS, Status.SKIP) for l in sub)):
			out.append(Leaf(name, t.status, t.directive or 'suite failed'))
	return out
