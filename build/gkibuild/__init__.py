# SPDX-License-Identifier: GPL-2.0
"""The GKI build: one module per stage, sequenced by main.py."""
