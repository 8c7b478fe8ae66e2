# SPDX-License-Identifier: GPL-2.0
"""The GKI build: one module per stage, sequenced by main.py.

Run as python3 -m gkibuild with build/ and qemu/ on PYTHONPATH (build/gki
sets it).  gkibuild uses gkiqemu, the QEMU harness, by its package name;
gkiqemu imports nothing of gkibuild (tests/test_imports.py)."""
