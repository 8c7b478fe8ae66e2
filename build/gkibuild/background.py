# SPDX-License-Identifier: GPL-2.0
"""Variants built by a child `gki build` while this process goes on.

`gki test` builds the release GKI first, then runs the host tests, which
use only that build, while the other variants build in a child process:
the host tests leave a core idle much of the time (one-threaded Python,
abidw, copies, waits), and the child's compiles take it.  The child's
output goes to a log that is printed whole when the build is waited for,
so the two never interleave.  A child left running when this process
stops early is terminated.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from gkibuild.layout import Layout, Variant, python_path
from gkibuild.util import GkiError, info, tail

# build/gki's Python half, run by module name from the tree's import root.
MAIN = [sys.executable, '-B', '-P', '-m', 'gkibuild']


class Background:
	def __init__(self, layout: Layout, vs: list[Variant], jobs: int | None,
		     accept_update: bool) -> None:
		self.layout = layout
		self.vs = vs
		self.args = [*(['-j', str(jobs)] if jobs else []),
			     *(['--accept-source-update'] if accept_update else [])]
		self.log = layout.log(None, 'background-build')
		self.failed: str | None = None		# the variant whose build failed
		self.rc = 0
		self._lock = threading.Lock()	# orders _proc and _stopping
		self._proc: subprocess.Popen | None = None
		self._stopping = False
		self._thread = threading.Thread(target=self._run, name='gki-background',
						daemon=True)

	def __enter__(self) -> 'Background':
		self.log.parent.mkdir(parents=True, exist_ok=True)
		self.log.write_text('')
		info(f'building {", ".join(v.name for v in self.vs)} meanwhile (log: {self.log})')
		self._thread.start()
		return self

	def __exit__(self, *exc: object) -> None:
		with self._lock:
			self._stopping = True
			if self._proc is not None and self._proc.poll() is None:
				self._proc.terminate()
		self._thread.join()

	def _run(self) -> None:
		env = dict(os.environ, PYTHONPATH=python_path(self.layout.top))
		for v in self.vs:
			cmd = [*MAIN, 'build', '--variant', v.name, *self.args]
			with self.log.open('ab') as f, self._lock:
				if self._stopping:
					return
				self._proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT,
							      stdin=subprocess.DEVNULL, env=env)
			self.rc = self._proc.wait()
			if self.rc:
				self.failed = v.name
				return

	def wait(self) -> None:
		"""Wait for the builds; print their output; raise if one failed."""
		self._thread.join()
		print(self.log.read_text(errors='replace'), end='', flush=True)
		if self.failed:
			raise GkiError(f'the {self.failed} build (run meanwhile) failed (exit '
				       f'{self.rc}); last lines:\n{tail(self.log, 15)}\n'
				       f'full log: {self.log}')
