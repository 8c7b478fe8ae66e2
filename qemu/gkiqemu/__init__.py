# SPDX-License-Identifier: GPL-2.0
"""The QEMU harness, a library: the initramfs, the boot, the console's
kernel reports and KTAP, the judging of a variant's boots (two-boot tests
across them), the live display, the results file and JUnit XML.  It
imports nothing of gkibuild: its caller passes it paths and values
(gkibuild/testrun.py runs the tests with it)."""


class HarnessError(Exception):
	"""The harness could not do its job: an input missing, a tool that
	failed.  build/gki prints it as one line, like gkibuild's GkiError,
	with the exit status EXIT_BUILD."""
