# SPDX-License-Identifier: GPL-2.0
"""Tests that need what only a built tree and root give (scratch and
sandbox builds, QEMU): skipped where that is missing, except under CI,
which runs as root after a build, where not being able to run is a
failure, never a silent skip."""

import os
import unittest


def require(why: str | None, what: str) -> None:
	"""Return when why is None; otherwise skip, or fail under CI."""
	if why is None:
		return
	if os.environ.get('CI'):
		raise AssertionError(f'{what} cannot run under CI: {why}')
	raise unittest.SkipTest(why)
