# SPDX-License-Identifier: GPL-2.0
"""The gate's abidiff run ignores the caller's suppressions: a personal
~/.abignore and LIBABIGAIL_DEFAULT_USER_SUPPRESSION_FILE, each suppressing
the very type that changed, must not hide the change.  Runs the installed
abidiff on abi/gki.xml against a copy with struct uts_namespace resized
(as make_fixtures.sh's kernel-struct-resized): no kernel build.  The diff
is restricted to init_uts_ns, the KMI variable of that type: the whole KMI
at real size takes abidiff minutes for the same verdict."""

from __future__ import annotations

import os
import re
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from gkibuild.abi import abidiff
from gkibuild.layout import Layout
from gkibuild.tests import prereq

LAYOUT = Layout.default()
HOSTILE = '[suppress_type]\n  name = uts_namespace\n'


class HermeticTest(unittest.TestCase):
	@classmethod
	def setUpClass(cls):
		base = LAYOUT.abi / 'gki.xml'
		prereq.require(None if base.exists() else 'no ABI baseline in abi/', 'abidiff')
		cls.tmp = tempfile.TemporaryDirectory()
		d = Path(cls.tmp.name)
		text = base.read_text()
		edited = re.sub(r"(<class-decl name='uts_namespace' size-in-bits=')\d+'",
				r"\g<1>3520'", text, count=1)
		assert edited != text, 'no struct uts_namespace in abi/gki.xml'
		cls.base, cls.new = base, d / 'new.xml'
		cls.new.write_text(edited)
		assert "<elf-symbol name='init_uts_ns'" in text, 'init_uts_ns left the KMI'
		cls.symbols = {'init_uts_ns'}
		(d / 'home').mkdir()
		(d / 'home' / '.abignore').write_text(HOSTILE)
		(d / 'suppr').write_text(HOSTILE)
		cls.env = {'HOME': str(d / 'home'),
			   'LIBABIGAIL_DEFAULT_USER_SUPPRESSION_FILE': str(d / 'suppr')}
		cls.dir = d

	@classmethod
	def tearDownClass(cls):
		cls.tmp.cleanup()

	def test_caller_suppressions_do_not_hide_a_struct_change(self):
		with mock.patch.dict(os.environ, self.env):
			rc, text = abidiff.diff(self.base, self.new, self.symbols, self.dir / 'report')
		r = abidiff.classify(text, rc)
		self.assertEqual([], r.unclassified, text)
		self.assertIn("'struct uts_namespace at utsname.h:24:1' changed:",
			      [b.splitlines()[0] for b in r.changed], text)
		self.assertNotIn('filtered out', text)


if __name__ == '__main__':
	unittest.main()
