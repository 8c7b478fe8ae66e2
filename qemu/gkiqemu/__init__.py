# SPDX-License-Identifier: GPL-2.0
"""The QEMU harness: initramfs, boot, console checks and KTAP parsing."""
