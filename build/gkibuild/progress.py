# SPDX-License-Identifier: GPL-2.0
"""A live line for a person watching a long stage on a terminal.

make's output goes to a log, so a kernel build would show nothing for
minutes.  On a terminal, Compiled follows that log while make runs and
redraws one line in place (gkiqemu.live.Line): the stage, the objects
kbuild reported compiling, how many a clean build compiles when that is
known, the elapsed time and kbuild's latest step.  When stdout is not a
terminal (CI, a pipe) nothing is redrawn: a heartbeat line is printed
instead, once a minute while make runs ('[kernel-release (release)]
812/2690 objects (30%), 5:00'), so a CI log or a redirected build is never
silent for long.  The objects are counted either way, for the record a
clean build leaves in its obj folder.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Iterable, TextIO

from gkiqemu.live import Line, elapsed

# kbuild's quiet lines for an object compiled from a source file: 'CC' for
# C, 'AS' for assembly, with '[M]' when the object is part of a module
# ('  CC [M]  fs/x.o').  'CC kernel/bounds.s' makes no object; host
# programs are 'HOSTCC'.
_OBJECT = re.compile(rb'^  (?:CC|AS)(?: \[M\])? +\S+\.o$')
# Any quiet line ('  LD      vmlinux.o'): what make is doing now, which
# tells a long link from a hang.
_STEP = re.compile(rb'^  ([A-Z][A-Z0-9_-]*(?: \[M\])?) +(\S+)$')

# In the obj folder: how many objects the last clean build there compiled.
RECORD = 'gki-objects.json'

# Seconds between heartbeat lines when stdout is not a terminal.
HEARTBEAT = 60.0


def fresh(objects: Iterable[str], obj: Path) -> bool:
	"""Does a build into obj start from scratch, given the objects in it
	(util.mtimes)?  Configuring builds host programs under scripts/ and
	nothing else; any other object means make will skip some, and its
	count is not a clean build's."""
	scripts = str(obj / 'scripts') + os.sep
	return all(p.startswith(scripts) for p in objects)


def expected(obj: Path) -> int | None:
	"""The objects the last clean build in obj compiled; None when no
	clean build recorded it (or the record is unreadable)."""
	try:
		n = json.loads((obj / RECORD).read_text())['clean']
	except (OSError, ValueError, KeyError, TypeError):
		return None
	return n if isinstance(n, int) and n > 0 else None


def remember(obj: Path, count: int) -> None:
	"""Record a clean build's count for the next clean build's total."""
	(obj / RECORD).write_text(json.dumps({'clean': count}) + '\n')


class Compiled:
	"""Count the objects make reports compiling into log from where the
	log ends on entry; on a terminal, a thread polls the log's size and
	redraws the live line about twice a second.  The line is cleared on
	exit, whether make succeeded, failed or was interrupted, so the
	stage's closing line prints on a clean line.

	total is how many objects the build is expected to compile: the last
	clean build's count for a clean build, None for an incremental one
	(which compiles what changed: no count known before predicts it)."""

	def __init__(self, label: str, log: Path, total: int | None,
		     out: TextIO | None = None, interval: float = 0.5,
		     heartbeat: float = HEARTBEAT) -> None:
		self.label = label
		self.log = log
		self.total = total
		self.out = out if out is not None else sys.stdout
		self.interval = interval
		self.heartbeat = heartbeat
		self.count = 0
		self.step = ''
		self._pos = 0
		self._rest = b''
		self._start = 0.0
		self._line = Line(self.out)
		self._stop = threading.Event()
		self._thread: threading.Thread | None = None

	def __enter__(self) -> 'Compiled':
		try:
			self._pos = self.log.stat().st_size
		except OSError:
			self._pos = 0
		self._start = time.monotonic()
		follow = self._follow if self.out.isatty() else self._beat
		self._thread = threading.Thread(target=follow, name='gki-progress', daemon=True)
		self._thread.start()
		return self

	def __exit__(self, *exc: object) -> None:
		self._stop.set()
		if self._thread:
			self._thread.join()
		self._read()
		self._line.clear()

	def text(self, step: bool = True) -> str:
		"""The live line: '[kernel-release (release)   ] 4711/9123
		objects (51%), 1:23  CC fs/ext4/inode.o'."""
		n = self.count
		if self.total and n <= self.total:
			done = f'{n}/{self.total} objects ({100 * n // self.total}%)'
		else:
			done = f'{n} objects compiled'
		now = f'  {self.step}' if self.step and step else ''
		return f'[{self.label:<28}] {done}, {elapsed(time.monotonic() - self._start)}{now}'

	def _follow(self) -> None:
		while True:
			self._read()
			self._line.draw(self.text())
			if self._stop.wait(self.interval):
				return

	def _beat(self) -> None:
		"""Off a terminal: one line of its own every heartbeat seconds
		(none for a make that ends sooner), without kbuild's step,
		which is stale by the time a log is read."""
		while not self._stop.wait(self.heartbeat):
			self._read()
			print(self.text(step=False), file=self.out, flush=True)

	def _read(self) -> None:
		"""Count the complete lines make appended since the last read."""
		try:
			if self.log.stat().st_size <= self._pos:
				return
			with self.log.open('rb') as f:
				f.seek(self._pos)
				data = f.read()
		except OSError:
			return
		self._pos += len(data)
		*lines, self._rest = (self._rest + data).split(b'\n')
		for line in lines:
			m = _STEP.match(line)
			if m:
				self.step = b' '.join(m.groups()).decode(errors='replace')
				if _OBJECT.match(line):
					self.count += 1
