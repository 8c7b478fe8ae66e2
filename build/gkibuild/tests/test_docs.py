# SPDX-License-Identifier: GPL-2.0
"""The documents name only what exists: in README.md, BUILD.md and
docs/*.md, every relative link resolves to a file (and its #anchor to a
heading of it), every repository path written as code exists, and every
`./build/gki ...` command parses with build/gki's own parser (nothing is
run).

What counts as what:
- a link is [text](target) outside code; a target with a scheme
  (https:, mailto:) is not checked;
- a path is a code span that is one word starting with one of ROOTS; a
  part of it written <like-this>, in capitals (NAME, VERSION) or with *
  is a placeholder: at least one file must match in its place.  Paths
  under out/ are build outputs, not checked;
- a command is a code span, or a line of a fenced block, in which a
  shell command (up to |, &&, ;, >) starts with ./build/gki and
  arguments; a word written <like this> is a placeholder, and a command
  written with [, {, ... or an ellipsis is a synopsis, not a command
  (docs/commands.md's are generated from the parser)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import re
import shlex
import tempfile
import unittest
from pathlib import Path

from gkibuild import main
from gkibuild.layout import TOP

ROOTS = ('build/', 'qemu/', 'common/', 'vendor_modules/', 'abi/', 'symbol_lists/', 'docs/',
	 'tools/', '.ci/')
SCRIPT = './build/gki'
_FENCE = re.compile(r'^\s*(```|~~~)')
_HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
_SPAN = re.compile(r'(`+)(.+?)(?<!`)\1(?!`)', re.S)
_LINK = re.compile(r'!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
_PLACEHOLDER = re.compile(r'<[^<>/]+>|^[A-Z][A-Z0-9_]+$')
_OPERATORS = set('();<>|&')
_SYNOPSIS = ('[', '{', '...', '…')
_ANGLED = re.compile(r'<[^<>\n]+>')
_ASSIGNMENT = re.compile(r'[A-Za-z_][A-Za-z0-9_]*=.*')


def documents(top: Path = TOP) -> list[Path]:
	return [top / 'README.md', top / 'BUILD.md', *sorted((top / 'docs').glob('*.md'))]


@dataclasses.dataclass
class Text:
	"""A Markdown document split into prose (fenced blocks blanked, so
	offsets and line numbers stay) and the lines of its fenced blocks."""
	prose: str
	code: list[tuple[int, str]]	# (line number, line)

	@classmethod
	def parse(cls, text: str) -> 'Text':
		prose, code, fenced = [], [], False
		for n, line in enumerate(text.split('\n'), 1):
			if _FENCE.match(line):
				fenced = not fenced
				prose.append('')
			elif fenced:
				code.append((n, line))
				prose.append('')
			else:
				prose.append(line)
		return cls('\n'.join(prose), code)

	def line(self, offset: int) -> int:
		return self.prose.count('\n', 0, offset) + 1

	def spans(self) -> list[tuple[int, str]]:
		"""Code spans, each within a paragraph, line breaks as blanks."""
		out = []
		for para in re.finditer(r'(?:[^\n]|\n(?!\s*\n))+', self.prose):
			for m in _SPAN.finditer(para.group(0)):
				content = re.sub(r'\s*\n\s*', ' ', m.group(2))
				if content.strip():
					out.append((self.line(para.start() + m.start()), content.strip()))
		return out

	def links(self) -> list[tuple[int, str]]:
		"""Link targets outside code spans."""
		blanked = _SPAN.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), self.prose)
		return [(self.line(m.start()), m.group(2)) for m in _LINK.finditer(blanked)]

	def headings(self) -> list[str]:
		out = []
		for line in self.prose.split('\n'):
			m = _HEADING.match(line)
			if m:
				out.append(m.group(2))
		return out


def slug(heading: str) -> str:
	"""GitHub's anchor for a heading: link markup and code ticks dropped,
	lower case, punctuation but - and _ dropped, blanks as -."""
	text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading).replace('`', '')
	text = re.sub(r'[^\w\- ]', '', text.strip().lower())
	return text.replace(' ', '-')


def anchors(text: str) -> set[str]:
	"""Every heading's anchor; a repeated one also as name-1, name-2..."""
	out: set[str] = set()
	seen: dict[str, int] = {}
	for h in Text.parse(text).headings():
		s = slug(h)
		n = seen.get(s, 0)
		out.add(s if n == 0 else f'{s}-{n}')
		seen[s] = n + 1
	return out


def check_link(doc: Path, target: str) -> str | None:
	"""Why the link target of doc does not resolve, or None."""
	if re.match(r'^[a-z][a-z0-9+.-]*:', target):
		return None
	path, _, anchor = target.partition('#')
	dest = (doc.parent / path).resolve() if path else doc
	if not dest.exists():
		return f'link to {target}: no such file'
	if anchor and dest.suffix == '.md' and anchor not in anchors(dest.read_text()):
		return f'link to {target}: {dest.name} has no heading with that anchor'
	return None


def check_path(span: str, top: Path) -> str | None:
	"""Why a code span naming a repository path names nothing, or None
	(None as well for a span that is no such path)."""
	if re.search(r'\s', span) or not span.startswith(ROOTS):
		return None
	parts = [_PLACEHOLDER.sub('*', p) for p in span.rstrip('/').split('/')]
	pattern = '/'.join(parts)
	if '*' in pattern:
		found = next(iter(top.glob(pattern)), None) is not None
	else:
		found = (top / pattern).exists()
	return None if found else f'`{span}`: no such path in the repository'


def synopsis(words: list[str]) -> bool:
	return any(mark in w for w in words for mark in _SYNOPSIS)


def commands(text: str) -> list[list[str]]:
	"""The arguments of each ./build/gki command of a span or line: each
	shell command, cut at an operator, whose first word but NAME=VALUE
	ones is ./build/gki, with at least one argument; synopses left out."""
	text = _ANGLED.sub('PLACEHOLDER', text)
	try:
		lex = shlex.shlex(text, posix=True, punctuation_chars=True)
		lex.whitespace_split = True
		words = list(lex)
	except ValueError:
		return []
	out: list[list[str]] = []
	current: list[str] = []
	for w in [*words, ';']:
		if w and set(w) <= _OPERATORS:
			while current and _ASSIGNMENT.fullmatch(current[0]):
				current.pop(0)
			if len(current) > 1 and current[0] == SCRIPT and not synopsis(current):
				out.append(current[1:])
			current = []
		else:
			current.append(w)
	return out


def check_command(argv: list[str], parser: argparse.ArgumentParser) -> str | None:
	"""Why build/gki's parser rejects argv, or None."""
	err = io.StringIO()
	with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
		try:
			parser.parse_args(argv)
		except SystemExit as e:
			if e.code:
				last = (err.getvalue().strip().splitlines() or ['rejected'])[-1]
				return f'`{shlex.join([SCRIPT, *argv])}` does not parse: {last}'
	return None


def problems(doc: Path, text: str, top: Path, parser: argparse.ArgumentParser) -> list[str]:
	"""Every broken link, missing path and bad command of one document."""
	t = Text.parse(text)
	name = doc.name
	out = [f'{name}:{n}: {why}' for n, target in t.links()
	       for why in [check_link(doc, target)] if why]
	for n, span in t.spans():
		why = check_path(span, top)
		if why:
			out.append(f'{name}:{n}: {why}')
	for n, snippet in t.spans() + t.code:
		for cmd in commands(snippet):
			why = check_command(cmd, parser)
			if why:
				out.append(f'{name}:{n}: {why}')
	return out


class DocumentsTest(unittest.TestCase):
	def test_every_link_path_and_command_of_the_documents(self):
		parser = main.parser()
		found = []
		for doc in documents():
			with self.subTest(doc.name):
				found += problems(doc, doc.read_text(), TOP, parser)
		self.assertEqual([], found, '\n' + '\n'.join(found))

	def test_the_documents_are_there(self):
		names = {d.relative_to(TOP).as_posix() for d in documents()}
		for must in ('README.md', 'BUILD.md', 'docs/ci.md', 'docs/commands.md',
			     'docs/figures.md', 'docs/internals.md'):
			self.assertIn(must, names)
			self.assertTrue((TOP / must).is_file(), must)


SYNTHETIC = '''# A page

## The `--add` option: yours

Good: [manual](../BUILD.md#the-kmi), [here](#the---add-option-yours),
[web](https://example.org/x), `build/gki`, `symbol_lists/NAME`,
`vendor_modules/<vendor>/tests/`, `common/*.config`, `out/dist/Image`,
`./build/gki test --variant debug`, `./build/gki qemu [--add PATH]...`,
`GKI_KMI_ENFORCED=0 ./build/gki build -j 2`, and
`./build/gki help --markdown > docs/commands.md`.

Bad: [gone](nosuch.md), [no heading](#no-such-heading),
[no heading there](../BUILD.md#no-such-heading), `build/gkibuild/nosuch.py`,
`./build/gki build --frobnicate`, and `cd x && ./build/gki frobnicate`.

```sh
./build/gki bench --cc-unit 40      # good
./build/gki bench --cc-unit FILES   # bad: not a number
```
'''


class CheckerTest(unittest.TestCase):
	"""The checker on a synthetic page: it finds each kind of mistake
	and passes what is right."""

	def setUp(self) -> None:
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		(Path(tmp.name) / 'docs').mkdir()
		(Path(tmp.name) / 'BUILD.md').write_text((TOP / 'BUILD.md').read_text())
		self.doc = Path(tmp.name) / 'docs' / 'page.md'
		self.doc.write_text(SYNTHETIC)
		self.found = problems(self.doc, SYNTHETIC, TOP, main.parser())

	def test_each_mistake_is_found_on_its_line(self):
		lines = SYNTHETIC.split('\n')
		expected = [
			(12, 'link to nosuch.md: no such file'),
			(12, 'link to #no-such-heading: page.md has no heading'),
			(13, 'link to ../BUILD.md#no-such-heading: BUILD.md has no heading'),
			(13, '`build/gkibuild/nosuch.py`: no such path'),
			(14, '`./build/gki build --frobnicate` does not parse'),
			(14, '`./build/gki frobnicate` does not parse'),
			(18, '`./build/gki bench --cc-unit FILES` does not parse'),
		]
		self.assertEqual(len(expected), len(self.found), '\n'.join(self.found))
		for (n, what), got in zip(expected, self.found):
			with self.subTest(what):
				self.assertTrue(got.startswith(f'page.md:{n}: {what}'),
						f'{got!r}, line {n}: {lines[n - 1]!r}')

	def test_what_is_right_passes(self):
		self.assertFalse([p for p in self.found
				  if re.match(r'page\.md:([1-9]|1[01]|17):', p)], self.found)

	def test_slug(self):
		self.assertEqual('the---add-option-yours', slug('The `--add` option: yours'))
		self.assertEqual('incfs-the-first-vendor-module', slug('incfs, the first vendor module'))
		self.assertEqual('abiprop', slug('`abi.prop`'))


if __name__ == '__main__':
	unittest.main()
