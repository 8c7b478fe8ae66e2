# SPDX-License-Identifier: GPL-2.0
"""The GKI build: one module per stage, sequenced by main.py.

Run as python3 -m gkibuild with build/ and qemu/ on PYTHONPATH (build/gki
sets it): gkibuild and gkiqemu import each other by their package names."""
