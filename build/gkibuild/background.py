# SPDX-License-Identifier: GPL-2.0
"""Variants built, then guest suites run, by child `gki` processes while
this process goes on.

`gki test` builds the release GKI first, then runs the host tests, which
use only that build, while the other variants build in a child process:
the host tests leave a core idle much of the time (one-threaded Python,
abidw, copies, waits), and the child's compiles take it.  Once the builds
are done the child's place is taken by the guest suites of every variant
(`gki qemu --prebuilt --results FILE`), which need no core the host tests
use: they finish before the host tests do, instead of after them.

A child's output goes to a log that is printed whole when it is waited
for, so it never interleaves with this process's.  They are processes,
not threads, because host tests patch process-wide state (os.environ,
sys.stdout, print) that a guest run in a thread would see.  A child left
running when this process stops early is terminated.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from gkibuild.layout import Layout, Variant, python_path
from gkibuild.util import GkiError, info, tail

# build/gki's Python half, run by module name from the tree's import root.
MAIN = [sys.executable, '-B', '-P', '-m', 'gkibuild']


class Background:
	"""vs: the variants to build; guests: the --variant argument of the
	guest run after them ('' for none)."""

	def __init__(self, layout: Layout, vs: list[Variant], jobs: int | None,
		     accept_update: bool, guests: str = '') -> None:
		self.layout = layout
		self.vs = vs
		self.guests = guests
		self.args = [*(['-j', str(jobs)] if jobs else []),
			     *(['--accept-source-update'] if accept_update else [])]
		self.log = layout.log(None, 'background-build')
		self.guest_log = layout.log(None, 'background-guests')
		# The guest run's outcomes (gkiqemu.runner.write_results).
		self.results = layout.out / 'background-guests.json'
		self.failed: str | None = None		# the variant whose build failed
		self.rc = 0
		self.guest_rc: int | None = None	# None: the guest run did not start
		self._built = threading.Event()
		self._lock = threading.Lock()	# orders _proc and _stopping
		self._proc: subprocess.Popen | None = None
		self._stopping = False
		self._thread = threading.Thread(target=self._run, name='gki-background',
						daemon=True)

	def __enter__(self) -> 'Background':
		self.log.parent.mkdir(parents=True, exist_ok=True)
		for log in (self.log, self.guest_log):
			log.write_text('')
		self.results.unlink(missing_ok=True)
		info(f'building {", ".join(v.name for v in self.vs)} meanwhile (log: {self.log})')
		self._thread.start()
		return self

	def __exit__(self, *exc: object) -> None:
		with self._lock:
			self._stopping = True
			if self._proc is not None and self._proc.poll() is None:
				self._proc.terminate()
		self._thread.join()

	def _child(self, cmd: list[str], log: Path) -> int | None:
		"""Run one child into log; None when stopping."""
		env = dict(os.environ, PYTHONPATH=python_path(self.layout.top))
		with log.open('ab') as f, self._lock:
			if self._stopping:
				return None
			self._proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT,
						      stdin=subprocess.DEVNULL, env=env)
		return self._proc.wait()

	def _run(self) -> None:
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
		if self.guests:
			self.guest_rc = self._child(
				[*MAIN, 'qemu', '--variant', self.guests, '--prebuilt',
				 '--results', str(self.results)], self.guest_log)

	def wait(self) -> None:
		"""Wait for the builds (not the guest run); print their output;
		raise if one failed."""
		self._built.wait()
		print(self.log.read_text(errors='replace'), end='', flush=True)
		if self.failed:
			raise GkiError(f'the {self.failed} build (run meanwhile) failed (exit '
				       f'{self.rc}); last lines:\n{tail(self.log, 15)}\n'
				       f'full log: {self.log}')

	def wait_guests(self) -> int | None:
		"""Wait for the guest run; print its output; its exit status, or
		None if it did not run (a build failed)."""
		self._thread.join()
		if self.guest_rc is not None:
			print(self.guest_log.read_text(errors='replace'), end='', flush=True)
		return self.guest_rc
