# SPDX-License-Identifier: GPL-2.0
"""unitcost.py's reading of kbuild's .cmd files (bench --cc-unit)."""

import tempfile
import unittest
from pathlib import Path

from gkibuild import unitcost

C_CMD = ('savedcmd_lib/a.o := ccache clang -Wp,-MMD,lib/.a.o.d -nostdinc -O2 '
	 "-DKBUILD_MODNAME='\"a\"' -c -o lib/a.o /src/lib/a.c\n\nsource_lib/a.o := /src/lib/a.c\n")
S_CMD = 'savedcmd_lib/b.o := ccache clang -D__ASSEMBLY__ -c -o lib/b.o /src/lib/b.S\n'
LD_CMD = 'savedcmd_lib/built-in.a := rm -f lib/built-in.a; llvm-ar cDPrST lib/built-in.a\n'


class CompileLinesTest(unittest.TestCase):
	def test_only_c_compiles_are_read(self):
		with tempfile.TemporaryDirectory() as d:
			lib = Path(d) / 'lib'
			lib.mkdir()
			(lib / '.a.o.cmd').write_text(C_CMD)
			(lib / '.b.o.cmd').write_text(S_CMD)
			(lib / '.built-in.a.cmd').write_text(LD_CMD)
			(lib / '.c.o.cmd').write_text('garbage\n')
			lines = unitcost.compile_lines(Path(d))
		self.assertEqual([['clang', '-Wp,-MMD,lib/.a.o.d', '-nostdinc', '-O2',
				   '-DKBUILD_MODNAME="a"', '-c', '-o',
				   'lib/a.o', '/src/lib/a.c']], lines)

	def test_outputs_go_to_the_scratch_folder(self):
		args = ['clang', '-Wp,-MMD,lib/.a.o.d', '-c', '-o', 'lib/a.o', '/src/lib/a.c']
		self.assertEqual(['clang', '-Wp,-MMD,/t/x.d', '-c', '-o', '/t/x.o', '/src/lib/a.c'],
				 unitcost.retarget(args, Path('/t')))


if __name__ == '__main__':
	unittest.main()
