# SPDX-License-Identifier: GPL-2.0
import tempfile
import textwrap
import unittest
from pathlib import Path

from gkibuild import patches
from gkibuild.util import GkiError

HELLO = 'int main(void)\n{\n\treturn 0;\n}\n'


def format_patch(subject: str, old: str, new: str) -> str:
	return textwrap.dedent(f'''\
		From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
		From: GKI Test <test@example.com>
		Date: Thu, 1 Jan 2026 00:00:00 +0000
		Subject: [PATCH] {subject}

		---
		 hello.c | 2 +-
		 1 file changed, 1 insertion(+), 1 deletion(-)

		diff --git a/hello.c b/hello.c
		--- a/hello.c
		+++ b/hello.c
		@@ -1,4 +1,4 @@
		 int main(void)
		 {{
		-\t{old}
		+\t{new}
		 }}
		--
		2.39.5
		''')


class SeriesTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.dir = Path(self.tmp.name)
		self.tree = self.dir / 'tree'
		self.tree.mkdir()
		(self.tree / 'hello.c').write_text(HELLO)
		self.pdir = self.dir / 'patches'
		self.pdir.mkdir()

	def tearDown(self):
		self.tmp.cleanup()

	def add(self, name: str, text: str) -> patches.Entry:
		(self.pdir / name).write_text(text)
		return patches.Entry(name)

	def test_series_format(self):
		(self.pdir / 'series').write_text('# comment\n\n0001-a.patch\n0002-b.patch -p0 # x\n')
		self.assertEqual([patches.Entry('0001-a.patch', 1), patches.Entry('0002-b.patch', 0)],
				 patches.read_series(self.pdir / 'series'))

	def test_missing_series_is_empty(self):
		self.assertEqual([], patches.read_series(self.pdir / 'series'))

	def test_series_bad_option(self):
		(self.pdir / 'series').write_text('0001-a.patch --fuzz\n')
		with self.assertRaisesRegex(GkiError, "series:1: unknown option '--fuzz'"):
			patches.read_series(self.pdir / 'series')

	def test_tagged_subject_accepted(self):
		self.add('0001-a.patch', format_patch('ANDROID: hello: return 1', 'return 0;',
						      'return 1;'))
		patches.check_subject(self.pdir / '0001-a.patch')
		self.assertEqual('ANDROID: hello: return 1', patches.subject(self.pdir / '0001-a.patch'))

	def test_every_tag_of_the_table_accepted(self):
		# BUILD.md's table, not patches.TAGS: the test must not share a bug.
		for tag in ('UPSTREAM', 'BACKPORT', 'FROMLIST', 'ANDROID'):
			with self.subTest(tag):
				self.add('0001-a.patch', format_patch(f'{tag}: hello: return 1', 'return 0;',
								      'return 1;'))
				patches.check_subject(self.pdir / '0001-a.patch')

	def test_tag_elsewhere_in_the_subject_rejected(self):
		self.add('0001-a.patch', format_patch('hello: ANDROID: return 1', 'return 0;',
						      'return 1;'))
		with self.assertRaisesRegex(GkiError, 'lacks a tag'):
			patches.check_subject(self.pdir / '0001-a.patch')

	def test_untagged_subject_rejected(self):
		self.add('0001-a.patch', format_patch('hello: return 1', 'return 0;', 'return 1;'))
		with self.assertRaisesRegex(GkiError, 'lacks a tag'):
			patches.check_subject(self.pdir / '0001-a.patch')

	def test_series_applies_in_order(self):
		a = self.add('0001-a.patch', format_patch('UPSTREAM: a', 'return 0;', 'return 1;'))
		b = self.add('0002-b.patch', format_patch('FROMLIST: b', 'return 1;', 'return 2;'))
		patches.apply_series(self.tree, self.pdir, [a, b])
		self.assertIn('return 2;', (self.tree / 'hello.c').read_text())

	def test_failing_patch_named_with_its_hunk(self):
		a = self.add('0001-a.patch', format_patch('ANDROID: a', 'return 0;', 'return 1;'))
		bad = self.add('0002-bad.patch', format_patch('ANDROID: bad', 'return 7;', 'return 8;'))
		with self.assertRaisesRegex(GkiError, r'patch 0002-bad.patch does not apply: '
					    r'hunk #1 of hello.c FAILED at line 1'):
			patches.apply_series(self.tree, self.pdir, [a, bad])
		# The dry run kept the failing patch from touching the tree.
		self.assertEqual(HELLO.replace('return 0;', 'return 1;'),
				 (self.tree / 'hello.c').read_text())
		self.assertEqual(['hello.c'], sorted(p.name for p in self.tree.iterdir()))

	def test_already_applied_patch_reported(self):
		a = self.add('0001-a.patch', format_patch('ANDROID: a', 'return 0;', 'return 1;'))
		with self.assertRaisesRegex(GkiError, 'already applied'):
			patches.apply_series(self.tree, self.pdir, [a, a])


if __name__ == '__main__':
	unittest.main()
