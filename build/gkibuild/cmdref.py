# SPDX-License-Identifier: GPL-2.0
"""The command reference of build/gki, generated from its argparse parser
(main.parser()), so that it cannot disagree with what the parser takes:
`./build/gki help` prints the overview, `./build/gki help COMMAND` (the
same as `./build/gki COMMAND --help`) one command, and `./build/gki help
--markdown` the whole reference as docs/commands.md holds it
(tests/test_cmdref.py fails when the page is stale).

The text is laid out here, not by argparse's formatter, so that it does
not depend on the terminal's width or on the Python version."""

from __future__ import annotations

import argparse
import re
import textwrap

from gkibuild.util import EXIT_BUILD, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

SCRIPT = './build/gki'
PAGE = 'docs/commands.md'
# The command that writes PAGE, run from the top of the checkout.
REGENERATE = f'{SCRIPT} help --markdown > {PAGE}'
WIDTH = 79

# What the parser cannot know: the environment build/gki reads and its
# exit statuses (docs/ci.md says more of both).
ENVIRONMENT = (
	('GKI_OUT', 'where everything generated goes (default: out/ in the checkout)'),
	('GKI_ACCEPT_SOURCE_UPDATE=1', 'as --accept-source-update, for every command that takes it'),
	('GKI_SOURCE_CACHE', 'the downloaded source tarballs (default: ~/.cache/gki-source)'),
	('GKI_DISTCC_HOSTS', 'as --distcc, for every command that builds but repro, which takes '
	 '--distcc only'),
	('GKI_CCACHE_DIR', "ccache's folder, shared by every clone on the machine (default: "
	 '~/.cache/gki-ccache)'),
	('GKI_KMI_ENFORCED=0', 'report a KMI break without failing the build, for bring-up '
	 'branches (default: 1)'),
	('GKI_SIGNING_KEY', 'the PEM file (private key and certificate) the GKI modules are '
	 'signed with (default: a throwaway key made once in out/keys/)'),
	('CI', 'when set (CI=true): a host test that cannot run here (no root, no built tree) '
	 'fails instead of being skipped'),
)
EXIT_STATUS = (
	(EXIT_OK, 'everything asked for passed'),
	(EXIT_FAILED, 'a test failed; for abi compare, the KMI breaks; for symbols update, a '
	 'module needs a symbol the GKI does not export; for repro, a file differs'),
	(EXIT_USAGE, 'a command line that cannot be carried out: nothing was built or changed '
	 '(abi compare also exits 2 when the candidate could not be fetched or built)'),
	(EXIT_BUILD, 'a build, the ABI gate or the harness failed'),
	(EXIT_INTERRUPTED, 'interrupted (Ctrl-C)'),
)


class Formatter(argparse.HelpFormatter):
	"""argparse's --help, with each option's default (default_text)."""

	def _get_help_string(self, action: argparse.Action) -> str | None:
		default = default_text(action)
		if action.help and default is not None:
			return f'{action.help} (default: {default})'
		return action.help


def default_text(action: argparse.Action) -> str | None:
	"""The default worth saying: not a flag's, not an empty one."""
	d = action.default
	if isinstance(d, bool) or d is None or d == argparse.SUPPRESS or d in ([], 0, ''):
		return None
	return str(d)


def commands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
	"""The parser of each command, in the order they were added."""
	return dict(_subparsers(p).choices)


def summaries(p: argparse.ArgumentParser) -> dict[str, str]:
	"""Each command's one-line summary (its help= in add_parser)."""
	return {a.dest: a.help or '' for a in _subparsers(p)._choices_actions}


def _subparsers(p: argparse.ArgumentParser) -> argparse._SubParsersAction:
	for a in p._actions:
		if isinstance(a, argparse._SubParsersAction):
			return a
	raise ValueError(f'{p.prog} has no commands')


def _arguments(sub: argparse.ArgumentParser) -> list[argparse.Action]:
	"""The command's arguments, positionals first, without -h."""
	acts = [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]
	return [a for a in acts if not a.option_strings] + [a for a in acts if a.option_strings]


def metavar(a: argparse.Action) -> str:
	if a.metavar is not None:
		return str(a.metavar)
	if a.choices is not None:
		return '{' + ','.join(str(c) for c in a.choices) + '}'
	return a.dest.upper() if a.option_strings else a.dest


def _takes_value(a: argparse.Action) -> bool:
	return a.nargs != 0


def synopsis_word(a: argparse.Action) -> str:
	"""How the argument shows in a command's synopsis."""
	if not a.option_strings:
		if a.choices is not None and len(a.choices) == 1:
			return str(next(iter(a.choices)))
		if a.nargs == '*':
			return f'[{metavar(a)} ...]'
		if a.nargs == '?':
			return f'[{metavar(a)}]'
		return metavar(a)
	word = a.option_strings[0]
	if _takes_value(a):
		word += f' {metavar(a)}'
	if isinstance(a, argparse._AppendAction):
		return f'[{word}]...'
	return word if a.required else f'[{word}]'


def synopsis(name: str, sub: argparse.ArgumentParser, width: int = WIDTH,
	     script: str = SCRIPT) -> str:
	"""'./build/gki NAME ARGS...', wrapped under the first argument."""
	head = f'{script} {name}'.lstrip()
	lines, line = [], head
	for word in (synopsis_word(a) for a in _arguments(sub)):
		if len(line) + 1 + len(word) > width and line.strip() != head:
			lines.append(line)
			line = ' ' * len(head)
		line += ' ' + word
	return '\n'.join(lines + [line])


def option_names(a: argparse.Action) -> list[str]:
	"""'-j N', '--jobs N'; a positional's name."""
	if not a.option_strings:
		return [synopsis_word(a).strip('[]')]
	value = f' {metavar(a)}' if _takes_value(a) else ''
	return [o + value for o in a.option_strings]


def explanation(a: argparse.Action) -> str:
	"""The argument's help, with its default and, for an option that
	may be given more than once, saying so."""
	text = a.help or ''
	if isinstance(a, argparse._AppendAction) and 'repeatable' not in text:
		text += ' (repeatable)'
	default = default_text(a)
	if default is not None:
		text += f' (default: {default})'
	return text


def _fill(text: str, indent: int) -> str:
	pad = ' ' * indent
	return textwrap.fill(text, WIDTH, initial_indent=pad, subsequent_indent=pad,
			     break_on_hyphens=False)


def _fill_markdown(text: str, first: str = '', rest: str = '') -> str:
	"""text filled to WIDTH, never breaking a `code span`."""
	kept = re.sub(r'`[^`]*`', lambda m: m.group(0).replace(' ', '\0'), text)
	return textwrap.fill(kept, WIDTH, initial_indent=first, subsequent_indent=rest,
			     break_on_hyphens=False).replace('\0', ' ')


def overview(p: argparse.ArgumentParser) -> str:
	"""`./build/gki help`: every command's synopsis and summary, the
	environment and the exit statuses."""
	out = [f'usage: {SCRIPT} COMMAND [OPTIONS]', '', _fill(p.description or '', 0), '',
	       f'Commands ({SCRIPT} help COMMAND, or {SCRIPT} COMMAND --help, for one',
	       "command's options):", '']
	said = summaries(p)
	for name, sub in commands(p).items():
		lines = synopsis(name, sub, WIDTH - 2, script='')
		out += [textwrap.indent(lines, '  '), _fill(said[name], len(name) + 3)]
	out += ['', 'Environment:']
	for name, text in ENVIRONMENT:
		out += [f'  {name}', _fill(text, 6)]
	out += ['', 'Exit status:']
	for status, text in EXIT_STATUS:
		out.append(textwrap.fill(text, WIDTH, initial_indent=f'  {status:<4} ',
					 subsequent_indent=' ' * 7))
	out += ['', f'The same reference as a page: {PAGE}; the manual: BUILD.md.']
	return '\n'.join(out) + '\n'


def unknown_command(p: argparse.ArgumentParser, argv: list[str]) -> str | None:
	"""The one line for a command line whose first word is no command
	(nor an option), or None."""
	if argv and not argv[0].startswith('-') and argv[0] not in commands(p):
		return f"gki: unknown command '{argv[0]}' (try: {SCRIPT} help)"
	return None


def command_help(p: argparse.ArgumentParser, name: str) -> str:
	"""`./build/gki help NAME`: what `./build/gki NAME --help` prints."""
	return commands(p)[name].format_help()


def markdown(p: argparse.ArgumentParser) -> str:
	"""The whole reference as a Markdown page: PAGE."""
	said = summaries(p)
	out = ['# Command reference', '',
	       '<!-- Generated by build/gkibuild/cmdref.py from the parser in '
	       'build/gkibuild/main.py: do not edit. -->', '',
	       _fill_markdown(
		       f'Every command of `{SCRIPT}`, with every option. This page is generated from '
		       'the command line parser (`build/gkibuild/main.py`) by '
		       '`build/gkibuild/cmdref.py`: edit the help texts there, then regenerate the '
		       'page from the top of the checkout '
		       '(`build/gkibuild/tests/test_cmdref.py` fails while it is stale):'),
	       '', '```sh', REGENERATE, '```', '',
	       _fill_markdown(
		       f'On a terminal, `{SCRIPT} help` prints the overview, and `{SCRIPT} help '
		       "[COMMAND]` or `--help` after a command prints that command's options."),
	       '', _fill_markdown(p.description or ''), '',
	       '| command | does |', '| --- | --- |']
	for name in commands(p):
		out.append(f'| [`{name}`](#{name}) | {said[name]} |')
	for name, sub in commands(p).items():
		out += ['', f'## {name}', '', '```', synopsis(name, sub), '```', '']
		if sub.description:
			out += [_fill_markdown(sub.description), '']
		for a in _arguments(sub):
			names = ', '.join(f'`{n}`' for n in option_names(a))
			out.append(_fill_markdown(f'- {names}: {explanation(a)}', rest='  '))
	out += ['', '## Environment', '', '| variable | meaning |', '| --- | --- |']
	out += [f'| `{name}` | {text} |' for name, text in ENVIRONMENT]
	out += ['', '## Exit status', '', '| status | meaning |', '| --- | --- |']
	out += [f'| {status} | {text} |' for status, text in EXIT_STATUS]
	return '\n'.join(out) + '\n'


def cmd_help(p: argparse.ArgumentParser, command: str | None, as_markdown: bool) -> int:
	"""`./build/gki help [COMMAND] [--markdown]`."""
	if as_markdown:
		print(markdown(p), end='')
	elif command:
		print(command_help(p, command), end='')
	else:
		print(overview(p), end='')
	return EXIT_OK
