# SPDX-License-Identifier: GPL-2.0
"""The import graph of the two packages, read with ast (nothing is
imported, so a function's own imports count too): gkiqemu, the harness
library, imports nothing of gkibuild, the build driver that uses it; so
no import cycle joins the two packages.  Within gkibuild, the KMI and ABI
gate's subpackage (gkibuild.abi) uses none of the build's stages but in
abi compare, the one command of it that builds."""

from __future__ import annotations

import ast
import unittest
from pathlib import Path

from gkibuild.layout import IMPORT_ROOT, TOP

PACKAGES = ('gkibuild', 'gkiqemu')
# gkiqemu's tests that run on the build's outputs, which only gkibuild
# knows how to reach: the harness on real boots of the built GKI, and the
# device tools' C tests, built by gkibuild.programs.  Every other module
# of gkiqemu, its tests included, must do without gkibuild.
ON_THE_BUILD = {'gkiqemu.tests.test_harness_boot', 'gkiqemu.tests.test_vendor_tools'}
# gkibuild's subpackage for the KMI and the ABI gate: its modules use one
# another and gkibuild's helpers, never the build's stages, but for the
# abi compare command, which builds a candidate kernel.
ABI = 'gkibuild.abi'
ABI_COMMAND = 'gkibuild.abi.compare'
ABI_MAY_USE = {'gkibuild.util'}


def modules(top: Path = TOP) -> dict[str, Path]:
	"""Every module of the packages: dotted name -> file."""
	out = {}
	for root in IMPORT_ROOT:
		for pkg in PACKAGES:
			for f in sorted((top / root / pkg).rglob('*.py')):
				parts = f.relative_to(top / root).with_suffix('').parts
				if parts[-1] == '__init__':
					parts = parts[:-1]
				out['.'.join(parts)] = f
	return out


def imported(name: str, source: str, known: set[str], is_package: bool = False) -> set[str]:
	"""The modules of the packages that module name, whose text is
	source, imports anywhere in it: for `from a import b`, a.b when it is
	a module of known, a otherwise."""
	package = name if is_package else name.rpartition('.')[0]
	out = set()
	for node in ast.walk(ast.parse(source, name)):
		if isinstance(node, ast.Import):
			out.update(a.name for a in node.names)
		elif isinstance(node, ast.ImportFrom):
			base = node.module or ''
			if node.level:
				up = package.split('.')[:len(package.split('.')) - node.level + 1]
				base = '.'.join(up + ([base] if base else []))
			out.update(f'{base}.{a.name}' if f'{base}.{a.name}' in known else base
				   for a in node.names)
	return {m for m in out if m in known or m.split('.')[0] in PACKAGES}


def graph(top: Path = TOP) -> dict[str, set[str]]:
	mods = modules(top)
	return {name: imported(name, path.read_text(), set(mods), path.name == '__init__.py')
		for name, path in mods.items()}


def package(module: str) -> str:
	return module.split('.')[0]


def crossings(g: dict[str, set[str]]) -> dict[tuple[str, str], set[str]]:
	"""(from package, to package) -> 'module -> module' for each import of
	one package's code by the other's (tests aside)."""
	out: dict[tuple[str, str], set[str]] = {}
	for m, deps in g.items():
		for d in deps:
			if package(d) != package(m) and 'tests' not in m.split('.'):
				out.setdefault((package(m), package(d)), set()).add(f'{m} -> {d}')
	return out


class ImportGraphTest(unittest.TestCase):
	def setUp(self):
		self.graph = graph()

	def test_both_packages_are_read(self):
		self.assertIn('gkiqemu.ktap', self.graph)
		self.assertIn('gkibuild.main', self.graph)
		self.assertIn('gkiqemu.ktap', self.graph['gkiqemu.runner'])

	def test_the_subpackage_is_read(self):
		self.assertIn(ABI, self.graph)
		self.assertIn('gkibuild.abi.kmi', self.graph['gkibuild.kernel'])
		self.assertIn('gkibuild.abi.symvers', self.graph['gkibuild.abi.kmi'])

	def test_the_abi_package_stands_apart_from_the_stages(self):
		bad = [f'{m} imports {d}' for m, deps in sorted(self.graph.items())
		       if m.startswith(ABI + '.') and m != ABI_COMMAND
		       for d in sorted(deps)
		       if not (d.startswith(ABI + '.') or d in ABI_MAY_USE)]
		self.assertEqual([], bad, f'only {ABI_COMMAND} may use the build\'s stages')

	def test_the_harness_imports_nothing_of_the_build(self):
		bad = [f'{m} imports {", ".join(sorted(d for d in deps if package(d) == "gkibuild"))}'
		       for m, deps in sorted(self.graph.items())
		       if package(m) == 'gkiqemu' and m not in ON_THE_BUILD
		       and any(package(d) == 'gkibuild' for d in deps)]
		self.assertEqual([], bad, 'gkiqemu must take paths and values from its caller')

	def test_no_cycle_between_the_packages(self):
		"""No imports both ways between the packages' code (their tests,
		which nothing imports, aside): with them, a change to either can
		break the other's import."""
		ways = crossings(self.graph)
		self.assertLess(len(ways), 2, 'imports both ways: ' + '; '.join(
			f'{a} -> {b} ({", ".join(sorted(ways[a, b]))})' for a, b in sorted(ways)))

	def test_relative_and_from_imports_are_read(self):
		sources = {'gkibuild': '', 'gkibuild.a': 'def f():\n\tfrom gkiqemu import b\n',
			   'gkiqemu': '', 'gkiqemu.b': 'from . import c\nfrom .c import X\n',
			   'gkiqemu.c': 'import gkibuild.a\nimport os\n',
			   'gkiqemu.tests.test_c': 'from gkibuild import a\n',
			   'gkibuild.sub': 'from . import d\n', 'gkibuild.sub.d': '',
			   'gkibuild.sub.e': 'from . import d\nfrom gkibuild.sub.d import X\n'}
		g = {name: imported(name, text, set(sources), name == 'gkibuild.sub')
		     for name, text in sources.items()}
		self.assertEqual({'gkibuild.sub.d'}, g['gkibuild.sub'])
		self.assertEqual({'gkibuild.sub.d'}, g['gkibuild.sub.e'])
		self.assertEqual({'gkiqemu.b'}, g['gkibuild.a'])
		self.assertEqual({'gkiqemu.c'}, g['gkiqemu.b'])
		self.assertEqual({'gkibuild.a'}, g['gkiqemu.tests.test_c'])
		self.assertEqual({('gkibuild', 'gkiqemu'): {'gkibuild.a -> gkiqemu.b'},
				  ('gkiqemu', 'gkibuild'): {'gkiqemu.c -> gkibuild.a'}}, crossings(g))


if __name__ == '__main__':
	unittest.main()
