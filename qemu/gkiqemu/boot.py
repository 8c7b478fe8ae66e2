# SPDX-License-Identifier: GPL-2.0
"""Boot a GKI in qemu-system-aarch64 under TCG and capture its console."""

from __future__ import annotations

import dataclasses
import os
import selectors
import subprocess
import time
from pathlib import Path
from typing import Callable

# Machine settings are data, as in kunit.py's qemu_configs.
QEMU = 'qemu-system-aarch64'
MACHINE = ['-M', 'virt', '-cpu', 'max,pauth-impdef=on', '-smp', '2',
	   '-accel', 'tcg,thread=multi']
# loglevel=5: warnings and errors reach the console (and the error scan),
# chatty info lines do not interleave with the KTAP output.
CMDLINE = 'console=ttyAMA0 panic=-1 loglevel=5 printk.time=1 rdinit=/init'
# The virtual device's hardware, driven by vendor_modules/virtual_device/
# (the virt machine's PL031 RTC is always there): network, GPU, keyboard,
# RNG and a console port, on virtio-mmio.  The network backend is QEMU's
# user-mode stack, restricted: nothing the guest sends leaves QEMU; the
# console port's backend discards what it is sent.  Attached on every
# boot: a kernel without the drivers (the small debug one) leaves them
# idle.  Modern virtio-mmio (not legacy, QEMU's default there): virtio-gpu
# and virtio-input refuse a device without VIRTIO_F_VERSION_1.
VIRTUAL_DEVICE = ['-global', 'virtio-mmio.force-legacy=false',
		  '-netdev', 'user,id=vnet0,restrict=on',
		  '-device', 'virtio-net-device,netdev=vnet0',
		  '-device', 'virtio-gpu-device',
		  '-device', 'virtio-keyboard-device',
		  '-device', 'virtio-rng-device',
		  '-chardev', 'null,id=vcon0', '-device', 'virtio-serial-device',
		  '-device', 'virtconsole,chardev=vcon0']

DONE = 'GKI-HARNESS: done'
NEXT_BOOT = 'GKI-HARNESS: next-boot'


@dataclasses.dataclass
class Boot:
	console: str
	log: Path
	seconds: float
	timed_out: bool
	first_ktap_s: float | None

	@property
	def finished(self) -> bool:
		return DONE in self.console

	@property
	def wants_next_boot(self) -> bool:
		return NEXT_BOOT in self.console


def command(image: Path, initrd: Path, mem_mb: int, cmdline: str,
	    scratch: Path | None, interactive: bool = False) -> list[str]:
	cmd = [QEMU, *MACHINE, '-m', str(mem_mb), '-kernel', str(image),
	       '-initrd', str(initrd), '-append', f'{CMDLINE} {cmdline}'.strip(),
	       '-no-reboot', '-net', 'none', *VIRTUAL_DEVICE]
	if interactive:
		cmd += ['-nographic']
	else:
		cmd += ['-display', 'none', '-monitor', 'none', '-serial', 'stdio']
	if scratch:
		cmd += ['-drive', f'file={scratch},format=raw,if=none,id=scratch',
			'-device', 'virtio-blk-device,drive=scratch']
	return cmd


def run(cmd: list[str], log: Path, timeout_s: float,
	watch: Callable[[bytes], None] | None = None) -> Boot:
	"""Run QEMU, copying its console to log as it arrives; kill it when it
	has not powered off after timeout_s.  watch, for a live display, gets
	the console as it arrives too, and b'' about twice a second while
	none does."""
	log.parent.mkdir(parents=True, exist_ok=True)
	start = time.monotonic()
	first_ktap = None
	chunks: list[bytes] = []
	recent = b''
	timed_out = False
	with log.open('wb') as f:
		f.write(('# ' + ' '.join(cmd) + '\n').encode())
		proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
					stderr=subprocess.STDOUT)
		assert proc.stdout
		fd = proc.stdout.fileno()
		os.set_blocking(fd, False)
		with selectors.DefaultSelector() as sel:
			sel.register(fd, selectors.EVENT_READ)
			while True:
				left = timeout_s - (time.monotonic() - start)
				if left <= 0:
					timed_out = True
					proc.kill()
					break
				if not sel.select(timeout=min(left, 0.5 if watch else 1.0)):
					if watch:
						watch(b'')
					continue
				try:
					data = os.read(fd, 1 << 16)
				except BlockingIOError:
					continue
				if not data:
					break
				# The serial port may deliver a line in many pieces.
				seen = recent + data
				recent = seen[-32:]
				chunks.append(data)
				f.write(data)
				f.flush()
				if watch:
					watch(data)
				if first_ktap is None and b'KTAP version 1' in seen:
					first_ktap = time.monotonic() - start
		proc.wait()
		proc.stdout.close()
	console = b''.join(chunks).decode(errors='replace')
	return Boot(console, log, time.monotonic() - start, timed_out, first_ktap)


def interactive(cmd: list[str]) -> int:
	return subprocess.call(cmd)
