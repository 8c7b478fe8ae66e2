# SPDX-License-Identifier: GPL-2.0
"""python3 -m gkibuild COMMAND ...: what build/gki runs."""

import sys

from gkibuild.main import main

sys.exit(main(sys.argv[1:]))
