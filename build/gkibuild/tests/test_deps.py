# SPDX-License-Identifier: GPL-2.0
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from gkibuild.layout import TOP

DEPS = TOP / 'build' / 'deps.sh'


def bash(script: str, user: str | None = None) -> subprocess.CompletedProcess:
	deps = DEPS
	with tempfile.TemporaryDirectory() as tmp:
		if user:
			# Another user may not reach the checkout (a mktemp -d
			# clone is 0700): it reads a copy.
			Path(tmp).chmod(0o755)
			deps = Path(tmp) / 'deps.sh'
			shutil.copyfile(DEPS, deps)
			deps.chmod(0o644)
		cmd = ['bash', '-c', f'TOP={TOP}; . {deps}; {script}']
		if user:
			cmd = ['setpriv', '--reuid', user, '--regid', user, '--clear-groups', *cmd]
		return subprocess.run(cmd, capture_output=True, text=True, cwd='/')


class DepsTest(unittest.TestCase):
	def test_missing_lists_only_absent_packages(self):
		r = bash('deps_missing dpkg gki-no-such-package bash')
		self.assertEqual('gki-no-such-package\n', r.stdout)

	def test_without_root_one_line_names_packages_and_command(self):
		r = bash('DEPS_LOG=/dev/null; deps_missing() { echo gki-a; echo gki-b; }; '
			 'deps_install_host', user='65534')
		self.assertEqual(1, r.returncode)
		self.assertEqual('gki: missing packages: gki-a gki-b (install them with: '
				 'sudo apt-get install gki-a gki-b)\n', r.stderr)

	def test_nothing_missing_is_a_no_op(self):
		r = bash('deps_missing() { :; }; deps_install_host && echo fine', user='65534')
		self.assertEqual(('fine\n', ''), (r.stdout, r.stderr))


if __name__ == '__main__':
	unittest.main()
