# SPDX-License-Identifier: GPL-2.0
"""The C tests of the tool libraries and tools (qemu/tools/tests/ and
vendor_modules/*/tools/tests/, test_*.c): kselftest-harness programs built for the build
machine with the tree's tools/testing/selftests/kselftest_harness.h, the
library's sources, AddressSanitizer and UBSan, as gkibuild.programs
declares host tests (HOST_ASAN: the pinned clang; libclang-rt-19-dev).
Each runs with the vendor's tools built for the host
as for dist (out/dist/tools/host/), each tool's path in an environment
variable named after it (incfs-image: INCFS_IMAGE), and each KTAP case it
prints is a subtest of its own: passed, skipped, or failed naming it."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

from gkibuild import programs, toolchain
from gkibuild.layout import Layout
from gkiqemu import ktap

LAYOUT = Layout.default()
SELFTESTS = LAYOUT.src / 'tools' / 'testing' / 'selftests'
# A whole run takes under a minute; each case has the harness's timeout.
RUN_TIMEOUT_S = 1800
# The cases fsync every image they write: minutes on a disk shared with a
# kernel build, nothing on tmpfs.  What they check does not depend on it.
SHM = Path('/dev/shm')


def env_name(tool: str) -> str:
	"""The environment variable holding a tool's path: INCFS_IMAGE."""
	return re.sub(r'[^A-Za-z0-9]', '_', tool).upper()


def case_output(out: str, case: str) -> str:
	"""What a case printed: from the harness's RUN line to its result."""
	lines = out.splitlines()
	start = next((i for i, l in enumerate(lines)
		      if l.startswith('#  RUN') and l.split()[2:3] == [case]), 0)
	result = re.compile(rf'^(not )?ok \d+ {re.escape(case)}(\s|$)')
	end = next((i for i in range(start, len(lines)) if result.match(lines[i])),
		   len(lines) - 1)
	return '\n'.join(lines[start:end + 1])[-3000:]


class VendorToolTests(unittest.TestCase):
	def test_c_tests(self) -> None:
		# qemu/tools/ and each vendor's tools/ (programs.tool_dirs()).
		libs = [d / 'lib' for d in programs.tool_dirs(LAYOUT) if (d / 'lib').is_dir()]
		if not libs:
			self.skipTest('no tools folder has a lib/')
		for lib in libs:
			tests = sorted((lib.parent / 'tests').glob('test_*.c'))
			with self.subTest(tools=str(lib.parent.relative_to(LAYOUT.top))):
				self.assertTrue(tests, f'{lib} has no tests/test_*.c')
			for src in tests:
				with self.subTest(test=str(src.relative_to(LAYOUT.top))):
					self.run_one(src)

	def run_one(self, src: Path) -> None:
		self.assertTrue((SELFTESTS / 'kselftest_harness.h').exists(),
				f'{SELFTESTS} is missing: ./build/gki build extracts the tree')
		tools_dir = src.parents[1]
		prog = next(p for p in programs.discover(LAYOUT, 'host-tests') if p.srcs[0] == src)
		shm = SHM if SHM.is_dir() and os.access(SHM, os.W_OK) else None
		with (tempfile.TemporaryDirectory() as tmp,
		      tempfile.TemporaryDirectory(dir=shm) as scratch):
			exe = Path(tmp) / src.stem
			build = subprocess.run(programs.HOST_ASAN.command(LAYOUT, prog.srcs, exe),
					       capture_output=True, text=True,
					       env=toolchain.hermetic_env(use_ccache=False))
			self.assertEqual(0, build.returncode, build.stderr[-3000:])
			env = dict(os.environ, TMPDIR=scratch)
			for name, path in self.host_tools(tools_dir, Path(tmp)).items():
				env[env_name(name)] = str(path)
			res = subprocess.run([str(exe)], stdout=subprocess.PIPE,
					     stderr=subprocess.STDOUT, text=True, cwd=tmp, env=env,
					     timeout=RUN_TIMEOUT_S)
		self.judge(res.stdout, res.returncode)

	@staticmethod
	def host_tools(tools_dir: Path, tmp: Path) -> dict[str, Path]:
		"""The vendor's tools, built for the host as dist's are."""
		layout = Layout(LAYOUT.top, tmp / 'out')
		progs = [p for p in programs.discover(layout, 'tools')
			 if p.srcs[0].parents[1] == tools_dir]
		return programs.compile_programs(layout, programs.HOST, progs,
						 programs.host_folder(layout))

	def judge(self, out: str, rc: int) -> None:
		"""One subtest per KTAP case; a clean exit when none failed."""
		doc = ktap.parse(out)
		self.assertIsNotNone(doc, f'no KTAP output:\n{out[-3000:]}')
		assert doc is not None
		self.assertIsNotNone(doc.plan, f'no KTAP plan:\n{out[-3000:]}')
		leaves = ktap.leaves(doc, suites=False)	# one program: its cases
		self.assertTrue(leaves, f'no test case ran:\n{out[-3000:]}')
		for leaf in leaves:
			with self.subTest(case=leaf.name):
				if leaf.status == ktap.Status.SKIP:
					self.skipTest(leaf.detail or 'skipped')
				if leaf.status != ktap.Status.PASS:
					self.fail(f'{leaf.name}: {leaf.status.value}'
						  f'{f" ({leaf.detail})" if leaf.detail else ""}\n'
						  f'{case_output(out, leaf.name)}')
		if all(l.status in (ktap.Status.PASS, ktap.Status.SKIP) for l in leaves):
			with self.subTest(case='exit status'):
				self.assertEqual(0, rc, f'every case passed, yet exit status {rc}:\n'
						 f'{out[-3000:]}')


if __name__ == '__main__':
	unittest.main()
