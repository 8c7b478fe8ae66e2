# SPDX-License-Identifier: GPL-2.0
"""Booting a kernel with a shell probe: a guest program the host test
writes, run in place of the suites (only boot_smoke runs beside it).
Files the probe needs ride at the end of the script, after its `exit`,
each taken out with `tail -c` by the lines blob() gives."""

from __future__ import annotations

from pathlib import Path

from gkibuild import testrun
from gkibuild.layout import Layout, Variant
from gkiqemu import boot

HEAD = '#!/bin/sh\necho "TAP version 13"\necho "1..1"\n'
TAIL = 'echo "ok 1 {name}"\nexit 0\n'


def script(body: str, name: str, blobs: dict[str, Path]) -> bytes:
	"""The probe: HEAD, a line per blob writing it to its guest path,
	body, TAIL, then the blobs' bytes.  blobs: guest path -> host file."""
	data = [p.read_bytes() for p in blobs.values()]
	# The offsets depend on the text's length, which depends on the
	# offsets' digits: settle it by iterating.
	text = b''
	for _ in range(4):
		offset = len(text) + 1
		lines = []
		for guest, blob in zip(blobs, data):
			lines.append(f'tail -c +{offset} "$0" | head -c {len(blob)} > {guest}\n')
			offset += len(blob)
		new = (HEAD + ''.join(lines) + body + TAIL.format(name=name)).encode()
		if new == text:
			break
		text = new
	return text + b''.join(data)


def boot_with(layout: Layout, v: Variant, image: Path, probe: bytes, name: str,
	      where: Path) -> boot.Boot:
	"""Boot image (of variant v's configuration) with the probe as the
	guest program name; the console is saved in where."""
	where.mkdir(parents=True, exist_ok=True)
	path = where / name
	path.write_bytes(probe)
	path.chmod(0o755)
	initrd = testrun.prepare(layout, v, [path], only=['boot_smoke'], gdir=where / 'guest')
	cmd = boot.command(image, initrd, v.qemu_mem_mb, 'gki.mode=test', None)
	return boot.run(cmd, where / f'{name}-console.log', v.qemu_timeout_s)
