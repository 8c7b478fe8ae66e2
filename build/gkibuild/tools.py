# SPDX-License-Identifier: GPL-2.0
"""The tools stage: the device tools of qemu/tools/ and each vendor's
tools/ (programs.discover(..., 'tools')), for arm64 against the variant's
UAPI headers (dist's tools/arm64/ and the guest's /bin) and for the build
machine (dist's tools/host/, and the host tests' tools)."""

from __future__ import annotations

from pathlib import Path

from gkibuild import programs
from gkibuild.layout import Layout, Variant


def guest(layout: Layout, v: Variant, uapi: Path) -> dict[str, Path]:
	"""The arm64 tools, in the variant's programs folder: name -> path."""
	return programs.compile_programs(layout, programs.GUEST, programs.discover(layout, 'tools'),
					 programs.guest_folder(layout, 'tools', v), uapi)


def host(layout: Layout) -> dict[str, Path]:
	"""The tools for the build machine, in out/host/bin/: name -> path."""
	return programs.compile_programs(layout, programs.HOST, programs.discover(layout, 'tools'),
					 programs.host_folder(layout))


def build(layout: Layout, v: Variant, uapi: Path) -> dict[str, Path]:
	"""Both, as dist paths -> built files."""
	return {**{f'tools/arm64/{n}': p for n, p in guest(layout, v, uapi).items()},
		**{f'tools/host/{n}': p for n, p in host(layout).items()}}
