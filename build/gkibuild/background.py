# SPDX-License-Identifier: GPL-2.0
"""Variants built, and guest suites run, by child `gki` processes while
this process goes on.

`gki test` builds the release GKI first, then runs the host tests, which
use only that build, while the other variants build in a child process:
the host tests leave a core idle much of the time (one-threaded Python,
abidw, copies, waits), and the child's compiles take it.  The release
guest suites (`gki qemu --prebuilt --results FILE`) start at once in a
second child; each other variant's start after the builds.  They need no
core the host tests use, and end inside them instead of after them.

The host tests have minutes of slack, the builds and guest runs beside
them none: they are the run's critical path.  So the thread that enters
a Background (the host tests and what they start) lowers its own
priority by `nice`; the children keep theirs, because they are started
from this module's threads, and Linux keeps the nice value per thread
(setpriority(2), "BUGS").

A child's output goes to a log that is printed whole when it is waited
for, so it never interleaves with this process's.  They are processes,
not threads, because host tests patch process-wide state (os.environ,
sys.stdout, print) that a guest run in a thread would see.  A child left
running when this process stops early is terminated.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from gkibuild.layout import Layout, Variant, python_path
from gkibuild.util import GkiError, info, tail

# build/gki's Python half, run by module name from the tree's import root.
MAIN = [sys.executable, '-B', '-P', '-m', 'gkibuild']


@dataclasses.dataclass
class GuestRun:
	"""One variant's guest suites, run by a child."""
	variant: str
	log: Path
	results: Path		# its outcomes (gkiqemu.runner.write_results)
	rc: int | None = None	# None: it did not run (a build failed)


class Background:
	"""vs: the variants to build; guests: the variants whose guest suites
	run meanwhile, at once for one not in vs (built already), after the
	builds for one in vs; nice: how much the entering thread lowers its
	priority."""

	def __init__(self, layout: Layout, vs: list[Variant], jobs: int | None,
		     accept_update: bool, guests: Sequence[Variant] = (), nice: int = 0) -> None:
		self.layout = layout
		self.vs = vs
		self.nice = nice
		self.args = [*(['-j', str(jobs)] if jobs else []),
			     *(['--accept-source-update'] if accept_update else [])]
		self.log = layout.log(None, 'background-build')
		self.guests = [GuestRun(g.name, layout.log(None, f'background-guests-{g.name}'),
					layout.out / f'background-guests-{g.name}.json')
			       for g in guests]
		built = {v.name for v in vs}
		self._now = [g for g in self.guests if g.variant not in built]
		self._later = [g for g in self.guests if g.variant in built]
		self.failed: str | None = None		# the variant whose build failed
		self.rc = 0
		self._built = threading.Event()
		self._lock = threading.Lock()	# orders _procs and _stopping
		self._procs: list[subprocess.Popen] = []
		self._stopping = False
		self._threads = [threading.Thread(target=self._build, name='gki-background',
						  daemon=True)]
		if self._now:
			self._threads.append(threading.Thread(target=self._guests, args=(self._now,),
							      name='gki-background-guests',
							      daemon=True))

	def __enter__(self) -> 'Background':
		self.log.parent.mkdir(parents=True, exist_ok=True)
		self.log.write_text('')
		for g in self.guests:
			g.log.write_text('')
			g.results.unlink(missing_ok=True)
		info(f'building {", ".join(v.name for v in self.vs)} meanwhile (log: {self.log})')
		for t in self._threads:
			t.start()
		if self.nice:
			os.nice(self.nice)	# this thread only: see the module's comment
		return self

	def __exit__(self, *exc: object) -> None:
		with self._lock:
			self._stopping = True
			for p in self._procs:
				if p.poll() is None:
					p.terminate()
		for t in self._threads:
			t.join()

	def _child(self, cmd: list[str], log: Path) -> int | None:
		"""Run one child into log; None when stopping."""
		env = dict(os.environ, PYTHONPATH=python_path(self.layout.top))
		with log.open('ab') as f, self._lock:
			if self._stopping:
				return None
			proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT,
						stdin=subprocess.DEVNULL, env=env)
			self._procs.append(proc)
		return proc.wait()

	def _guests(self, runs: list[GuestRun]) -> None:
		for g in runs:
			g.rc = self._child([*MAIN, 'qemu', '--variant', g.variant, '--prebuilt',
					    '--results', str(g.results)], g.log)

	def _build(self) -> None:
		try:
			for v in self.vs:
				rc = self._child([*MAIN, 'build', '--variant', v.name, *self.args],
						 self.log)
				if rc is None:
					return
				if rc:
					self.rc, self.failed = rc, v.name
					return
		finally:
			self._built.set()
		self._guests(self._later)

	def wait(self) -> None:
		"""Wait for the builds (not the guest runs); print their output;
		raise if one failed."""
		self._built.wait()
		print(self.log.read_text(errors='replace'), end='', flush=True)
		if self.failed:
			raise GkiError(f'the {self.failed} build (run meanwhile) failed (exit '
				       f'{self.rc}); last lines:\n{tail(self.log, 15)}\n'
				       f'full log: {self.log}')

	def wait_guests(self) -> list[GuestRun]:
		"""Wait for the guest runs; print the output of each that ran."""
		for t in self._threads:
			t.join()
		for g in self.guests:
			if g.rc is not None:
				print(g.log.read_text(errors='replace'), end='', flush=True)
		return self.guests
