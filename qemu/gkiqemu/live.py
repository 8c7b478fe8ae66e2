# SPDX-License-Identifier: GPL-2.0
"""Live lines for a person at a terminal: Line, one line redrawn in place
(the build's progress line, gkibuild/progress.py, is one too), and Live,
a boot's suites shown as they finish, with the suite running now below
them."""

from __future__ import annotations

import contextlib
import shutil
import time
from typing import Callable, Iterator, TextIO

from gkiqemu import ktap

ERASE = '\033[K'	# erase from the cursor to the end of the line


def elapsed(secs: float) -> str:
	"""'1:05' for 65 seconds: a person reads minutes at a glance."""
	m, s = divmod(int(secs), 60)
	return f'{m}:{s:02d}'


class Line:
	"""One line redrawn in place on a terminal; lines printed through it
	go above it.  Cut to the terminal's width: a line that wraps cannot
	be erased with a carriage return."""

	def __init__(self, out: TextIO) -> None:
		self.out = out
		self.shown = False

	def draw(self, text: str) -> None:
		width = shutil.get_terminal_size().columns - 1
		self.out.write('\r' + text[:width] + ERASE)
		self.out.flush()
		self.shown = True

	def clear(self) -> None:
		if self.shown:
			self.out.write('\r' + ERASE)
			self.out.flush()
			self.shown = False

	def print(self, text: str) -> None:
		"""Print text as a line of its own; the next draw() puts the
		live line back below it."""
		self.clear()
		print(text, file=self.out, flush=True)


class Live:
	"""A boot as it runs, for a person at a terminal: a line per suite as
	its result line arrives, and below them a live line with the suite
	running now.  Display only: the tally is taken after the boot from the
	whole console (runner.evaluate()), which also judges the halves of
	two-boot tests across boots and drops their stand-in skips, so a line
	here may read differently from the tally's."""

	def __init__(self, label: str, out: TextIO) -> None:
		self.label = label
		self.stream = ktap.Stream()
		self.line = Line(out)
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
				self.line.draw(f'gki: {self.label}: {what}, {elapsed(now - self.start)}')
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
