# SPDX-License-Identifier: GPL-2.0
"""Import path for the host tests, whether run by build/gki or by
'python3 -m unittest discover -s build/gkibuild/tests'."""

import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[3]
# build/gkibuild/tests for prereq, the skip-or-fail rule of every host test.
for p in (TOP / 'build' / 'gkibuild' / 'tests', TOP / 'build' / 'gkibuild', TOP / 'qemu'):
	if str(p) not in sys.path:
		sys.path.insert(0, str(p))
