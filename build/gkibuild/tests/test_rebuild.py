# SPDX-License-Identifier: GPL-2.0
"""What the build says it rebuilt, and the toolchain stamp that makes a
compiler change rebuild everything; no kernel build needed."""

import contextlib
import io
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from gkibuild import toolchain, util
from gkibuild.kernel import TOOLCHAIN_STAMP, Kernel
from gkibuild.layout import VARIANTS, Layout

V19 = {'clang': '19.1.7', 'ld.lld': '19.1.7', 'llvm-objcopy': '19.1.7'}


class RebuiltTest(unittest.TestCase):
	def test_rebuilt_lists_new_and_rewritten_compiled_objects_only(self):
		with tempfile.TemporaryDirectory() as tmp:
			root = Path(tmp)
			for name in ('a.o', 'b.o', 'c.cmd', 'linked.o'):
				(root / name).write_text('x')
			for name in ('a.o', 'b.o', 'sub/d.o'):
				cmd = root / Path(name).parent / f'.{Path(name).name}.cmd'
				cmd.parent.mkdir(exist_ok=True)
				cmd.write_text(f'savedcmd_{name} := clang\nsource_{name} := x.c\n')
			(root / '.linked.o.cmd').write_text('savedcmd_linked.o := ld.lld\n')
			os.utime(root / 'a.o', (1, 1))
			os.utime(root / 'b.o', (1, 1))
			before = util.mtimes(root, '.o')
			os.utime(root / 'b.o', (2, 2))
			(root / 'sub' / 'd.o').write_text('x')
			(root / 'linked.o').write_text('y')
			(root / 'c.cmd').write_text('y')
			self.assertEqual([str(root / 'b.o'), str(root / 'sub' / 'd.o')],
					 util.rebuilt(before, util.mtimes(root, '.o')))

	def test_stage_line_carries_the_note(self):
		timer = util.StageTimer()
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			with timer.stage('kernel-release', 'release') as st:
				st.note = '412 objects rebuilt'
			with timer.stage('dist-release', 'release'):
				pass
		lines = out.getvalue().splitlines()
		self.assertRegex(lines[0], r'^\[kernel-release \(release\) *\] 412 objects rebuilt in +'
				 r'\d+\.\d s$')
		self.assertRegex(lines[1], r'\] done in ')

	def test_failed_stage_says_failed_not_its_note(self):
		timer = util.StageTimer()
		out = io.StringIO()
		with contextlib.redirect_stdout(out), self.assertRaises(RuntimeError):
			with timer.stage('kernel-release') as st:
				st.note = '3 objects rebuilt'
				raise RuntimeError
		self.assertIn('] FAILED in', out.getvalue())


class ToolchainStampTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		top = Path(self.tmp.name)
		self.layout = Layout(top, top / 'out')
		self.kernel = Kernel(self.layout, VARIANTS['release'], {}, 1)
		self.obj = self.layout.obj(VARIANTS['release'])
		self.ext = self.layout.ext(VARIANTS['release'])

	def tearDown(self):
		self.tmp.cleanup()

	def built(self) -> None:
		for d in (self.obj, self.ext):
			d.mkdir(parents=True, exist_ok=True)
			(d / 'x.o').write_text('x')

	def check(self, versions: dict[str, str]) -> str:
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			self.kernel.check_toolchain(versions)
		return out.getvalue()

	def test_same_toolchain_keeps_objects(self):
		self.check(V19)
		self.built()
		self.assertEqual('', self.check(dict(V19)))
		self.assertTrue((self.obj / 'x.o').exists())
		self.assertTrue((self.ext / 'x.o').exists())

	def test_new_compiler_version_drops_every_object(self):
		self.check(V19)
		self.built()
		said = self.check({**V19, 'clang': '19.1.8'})
		self.assertIn('toolchain changed', said)
		self.assertIn('19.1.8', said)
		self.assertFalse((self.obj / 'x.o').exists())
		self.assertFalse((self.ext / 'x.o').exists())
		self.assertIn('19.1.8', (self.obj / TOOLCHAIN_STAMP).read_text())

	def test_new_cc_unit_drops_every_object(self):
		"""build/cc-unit runs every C compile: a change to it is a
		change of compiler."""
		unit = Path(self.tmp.name) / 'cc-unit'
		unit.write_text('#!/bin/bash\nexec "$@"\n')
		with mock.patch.object(toolchain, 'CC_UNIT', unit):
			self.check(V19)
			self.built()
			self.assertEqual('', self.check(dict(V19)))
			unit.write_text('#!/bin/bash\nexec "$@" -O0\n')
			self.assertIn('toolchain changed', self.check(dict(V19)))
		self.assertFalse((self.obj / 'x.o').exists())
		self.assertFalse((self.ext / 'x.o').exists())

	def test_new_linker_version_drops_every_object(self):
		self.check(V19)
		self.built()
		self.assertIn('toolchain changed', self.check({**V19, 'ld.lld': '19.1.8'}))
		self.assertFalse((self.obj / 'x.o').exists())


if __name__ == '__main__':
	unittest.main()
