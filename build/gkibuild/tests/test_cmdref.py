# SPDX-License-Identifier: GPL-2.0
"""The command reference (cmdref.py): generated from the parser, whole
(every command and argument explained), printed by `gki help` without
installing anything, and docs/commands.md is what it prints now."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from gkibuild import cmdref, main
from gkibuild.layout import TOP
from gkibuild.util import EXIT_USAGE

GKI = str(TOP / 'build' / 'gki')


def run_main(*argv: str) -> tuple[int, str, str]:
	"""main.main(argv): its exit status (returned or raised), stdout and
	stderr."""
	out, err = io.StringIO(), io.StringIO()
	with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
		try:
			rc = main.main(list(argv))
		except SystemExit as e:
			rc = e.code if isinstance(e.code, int) else 1
	return rc, out.getvalue(), err.getvalue()


class PageTest(unittest.TestCase):
	def test_the_page_is_what_the_generator_prints(self):
		page = TOP / cmdref.PAGE
		self.assertTrue(page.is_file(), f'{cmdref.PAGE} is missing: {cmdref.REGENERATE}')
		self.assertEqual(cmdref.markdown(main.parser()), page.read_text(),
				 f'{cmdref.PAGE} is stale: run `{cmdref.REGENERATE}` at the top '
				 'of the checkout and commit it with the parser change')

	def test_the_page_names_every_command_and_option(self):
		page = cmdref.markdown(main.parser())
		for name, sub in cmdref.commands(main.parser()).items():
			self.assertIn(f'\n## {name}\n', page)
			for a in sub._actions:
				for opt in a.option_strings:
					if opt not in ('-h', '--help'):
						self.assertIn(f'`{opt}', page, f'{name} {opt}')


class WholeTest(unittest.TestCase):
	def test_every_command_has_a_summary_and_a_description(self):
		p = main.parser()
		said = cmdref.summaries(p)
		for name, sub in cmdref.commands(p).items():
			with self.subTest(name):
				self.assertTrue(said.get(name))
				self.assertTrue(sub.description)

	def test_every_argument_is_explained(self):
		for name, sub in cmdref.commands(main.parser()).items():
			for a in sub._actions:
				with self.subTest(command=name, argument=a.dest):
					self.assertTrue(a.help, f'{name} {a.dest}: no help text')

	def test_a_default_worth_saying_is_said(self):
		p = main.parser()
		variant = next(a for a in cmdref.commands(p)['qemu']._actions if a.dest == 'variant')
		self.assertTrue(cmdref.explanation(variant).endswith('(default: release)'))
		flag = next(a for a in cmdref.commands(p)['test']._actions if a.dest == 'skip_host')
		self.assertNotIn('default', cmdref.explanation(flag))


class SynopsisTest(unittest.TestCase):
	def test_words(self):
		subs = cmdref.commands(main.parser())
		self.assertEqual(
			'./build/gki symbols update NAME [--variant {release,debug,all}] [-j N]\n'
			'                    [--accept-source-update] [--remove]',
			cmdref.synopsis('symbols', subs['symbols']))
		self.assertIn('[--only SUITE]...', cmdref.synopsis('qemu', subs['qemu']))
		self.assertTrue(cmdref.synopsis('mutate', subs['mutate']).startswith(
			'./build/gki mutate [NAME ...]'))

	def test_lines_fit(self):
		for name, sub in cmdref.commands(main.parser()).items():
			for line in cmdref.synopsis(name, sub).splitlines():
				self.assertLessEqual(len(line), cmdref.WIDTH, line)


class HelpCommandTest(unittest.TestCase):
	def test_overview_lists_every_command(self):
		rc, out, _ = run_main('help')
		self.assertEqual(0, rc)
		for name in cmdref.commands(main.parser()):
			self.assertRegex(out, rf'\n  {name}\b')
		self.assertIn('\nExit status:\n', out)

	def test_help_of_a_command_is_its_dash_dash_help(self):
		for name in ('build', 'abi', 'help'):
			with self.subTest(name):
				rc, out, _ = run_main('help', name)
				rc2, out2, _ = run_main(name, '--help')
				self.assertEqual((0, 0), (rc, rc2))
				self.assertEqual(out2, out)
				self.assertIn(f'usage: gki {name}', out)

	def test_dash_dash_help_alone_is_the_overview(self):
		self.assertEqual(run_main('help'), run_main('--help'))

	def test_markdown_is_the_page(self):
		rc, out, _ = run_main('help', '--markdown')
		self.assertEqual((0, cmdref.markdown(main.parser())), (rc, out))

	def test_no_command_is_usage_on_stderr(self):
		rc, out, err = run_main()
		self.assertEqual((EXIT_USAGE, ''), (rc, out))
		self.assertTrue(err.startswith('usage: ./build/gki COMMAND'), err)

	def test_unknown_command_is_one_line(self):
		rc, out, err = run_main('frobnicate', '--variant', 'release')
		self.assertEqual((EXIT_USAGE, ''), (rc, out))
		self.assertEqual("gki: unknown command 'frobnicate' (try: ./build/gki help)\n", err)

	def test_unknown_help_topic_is_a_usage_error(self):
		rc, _, err = run_main('help', 'frobnicate')
		self.assertEqual(EXIT_USAGE, rc)
		self.assertIn('invalid choice', err)

	def test_check_only_parses_and_runs_nothing(self):
		with mock.patch.dict(os.environ, {main.CHECK_ONLY_ENV: '1'}), \
		     mock.patch.object(main, 'cmd_build') as build:
			self.assertEqual(0, run_main('build', '--variant', 'release')[0])
			self.assertEqual(EXIT_USAGE, run_main('build', '--variant', 'nosuch')[0])
		build.assert_not_called()


class ShellTest(unittest.TestCase):
	"""build/gki hands help, and a command line the parser rejects, to
	Python before build/deps.sh: nothing is installed or written."""

	def gki(self, *argv: str) -> tuple[subprocess.CompletedProcess, list[Path]]:
		with tempfile.TemporaryDirectory() as out:
			r = subprocess.run([GKI, *argv], capture_output=True, text=True, timeout=60,
					   env={**os.environ, 'GKI_OUT': out})
			# build/deps.sh writes its log there before anything else.
			return r, list(Path(out).iterdir())

	def test_help(self):
		r, written = self.gki('help', 'qemu')
		self.assertEqual((0, []), (r.returncode, written), r.stderr)
		self.assertIn('usage: gki qemu', r.stdout)

	def test_no_command(self):
		r, written = self.gki()
		self.assertEqual((EXIT_USAGE, [], ''), (r.returncode, written, r.stdout))
		self.assertIn('\nExit status:\n', r.stderr)

	def test_a_command_line_the_parser_rejects(self):
		for argv in (['nosuch'], ['build', '--nosuch'], ['abi', 'nosuch']):
			with self.subTest(argv=argv):
				r, written = self.gki(*argv)
				self.assertEqual((EXIT_USAGE, []), (r.returncode, written), r.stderr)
				self.assertEqual('', r.stdout)


if __name__ == '__main__':
	unittest.main()
