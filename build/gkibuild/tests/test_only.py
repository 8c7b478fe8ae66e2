# SPDX-License-Identifier: GPL-2.0
"""`gki qemu --only`: picking suites by name, and refusing unknown names."""

import unittest

from gkibuild import programs, testrun
from gkibuild.layout import VARIANTS, Layout
from gkibuild.util import GkiError

LAYOUT = Layout.default()


class OnlyTest(unittest.TestCase):
	def test_unknown_suite_is_refused_before_anything_is_built(self) -> None:
		with self.assertRaisesRegex(GkiError, 'no guest suite named no_such_suite'):
			testrun.prepare(LAYOUT, VARIANTS['release'], [], only=['no_such_suite'])

	def test_known_suites_are_found(self) -> None:
		names = {p.name for p in programs.discover(LAYOUT, 'suites')}
		self.assertLessEqual({'boot_smoke', 'kunit', 'incfs_reads'}, names)


if __name__ == '__main__':
	unittest.main()
