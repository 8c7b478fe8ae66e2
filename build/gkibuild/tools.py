# SPDX-License-Identifier: GPL-2.0
"""The tools stage: the device tools of qemu/tools/ and each vendor's
tools/ (programs.discover(..., 'tools')), for arm64 against the variant's
UAPI headers (dist's tools/arm64/ and the guest's /bin) and for the build
machine (dist's tools/host/, and the host tests' tools); and the guest
suites and benchmarks, which the initramfs takes."""

from __future__ import annotations

from pathlib import Path

from gkibuild import programs
from gkibuild.layout import Layout, Variant


def guest(layout: Layout, v: Variant, uapi: Path) -> dict[str, Path]:
	"""The arm64 tools, in the variant's programs folder: name -> path."""
	return programs.compile_programs(layout, programs.GUEST, programs.discover(layout, 'tools'),
					 programs.guest_folder(layout, 'tools', v), uapi)


def guest_tests(layout: Layout, v: Variant, uapi: Path,
		progs: list[programs.Program] | None = None) -> dict[str, Path]:
	"""The guest suites and benchmarks (default: all of them), in the
	variant's programs folder.  The build compiles them all, so that the
	guest runs `gki test` starts beside its host tests find them built
	and only read them."""
	if progs is None:
		progs = programs.discover(layout, 'suites') + programs.discover(layout, 'bench')
	return programs.compile_programs(layout, programs.GUEST, progs,
					 programs.guest_folder(layout, 'suites', v), uapi)


def host(layout: Layout) -> dict[str, Path]:
	"""The tools for the build machine, in out/host/bin/: name -> path."""
	return programs.compile_programs(layout, programs.HOST, programs.discover(layout, 'tools'),
					 programs.host_folder(layout))


def build(layout: Layout, v: Variant, uapi: Path) -> dict[str, Path]:
	"""Both, as dist paths -> built files."""
	return {**{f'tools/arm64/{n}': p for n, p in guest(layout, v, uapi).items()},
		**{f'tools/host/{n}': p for n, p in host(layout).items()}}
