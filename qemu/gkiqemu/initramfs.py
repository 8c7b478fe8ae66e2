# SPDX-License-Identifier: GPL-2.0
"""The guest's initramfs: busybox, /init, the guest programs and device
tools, the modules from dist and what /init runs; and the scratch disk.
The caller builds the programs and names every input (Inputs)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

from gkiqemu import HarnessError


# /data/BLANK_EXT4 in the guest: an empty ext4 filesystem.  4 KiB blocks, as
# on a phone (mkfs.ext4 picks 1 KiB for so small a filesystem): its
# superblock, written in place outside the journal, then never spans the
# halves of a torn block write.
BLANK_EXT4 = 'blank.ext4'
BLANK_EXT4_MB = 16


@dataclasses.dataclass(frozen=True)
class Inputs:
	"""What every initramfs is made with, besides a variant's programs,
	tools and modules."""
	busybox: Path		# a static arm64 busybox
	init: Path		# the guest's /init (qemu/init)
	gen_init_cpio: Path	# the kernel tree's usr/gen_init_cpio


def write_cpio(inputs: Inputs, gdir: Path, variant: str, dist: Path,
	       programs: dict[str, Path], tools: dict[str, Path],
	       lists: dict[str, list[str]], data: dict[str, Path] | None = None) -> Path:
	"""Write the initramfs of the variant named variant, whose dist is
	dist, with gen_init_cpio, in gdir: programs go to /tests, tools to
	/bin, data (files the suites read) to /data; lists maps
	/etc/gki/<mode> to the command lines /init runs in that mode."""
	gdir.mkdir(parents=True, exist_ok=True)
	spec = ['dir /dev 0755 0 0', 'nod /dev/console 0600 0 0 c 5 1']
	spec += [f'dir /{d} 0755 0 0' for d in
		 ('bin', 'sbin', 'proc', 'sys', 'tmp', 'mnt', 'mnt/scratch', 'etc', 'etc/gki',
		  'tests', 'modules', 'root', 'data')]
	# The guest has no mkfs: a suite that needs a filesystem of its own
	# (incfs's crash-point replay) copies this one.
	blank = mkfs_ext4(gdir / BLANK_EXT4, BLANK_EXT4_MB, ['-b', '4096'])
	spec.append(f'file /data/{BLANK_EXT4} {blank} 0644 0 0')
	spec += [f'file /bin/busybox {inputs.busybox} 0755 0 0',
		 f'file /init {inputs.init} 0755 0 0']
	for name, path in sorted(programs.items()):
		spec.append(f'file /tests/{name} {path} 0755 0 0')
	for name, path in sorted(tools.items()):
		spec.append(f'file /bin/{name} {path} 0755 0 0')
	for name, path in sorted((data or {}).items()):
		spec.append(f'file /data/{name} {path} 0644 0 0')

	mods = dist / 'modules'
	for d in sorted(p for p in mods.rglob('*') if p.is_dir()):
		spec.append(f'dir /modules/{d.relative_to(mods)} 0755 0 0')
	kos = sorted(mods.rglob('*.ko'))
	# The GKI modules come without debug info, and signed: as the dist
	# ships them (dist.py), which a strip here would unsign.
	for ko in kos:
		spec.append(f'file /modules/{ko.relative_to(mods)} {ko} 0644 0 0')
	# depmod's files and the load orders: /init loads each vendor folder
	# that has a modules.load at boot, as a device's init loads vendor_dlkm.
	for f in sorted(p for p in mods.rglob('modules.*') if p.is_file()):
		spec.append(f'file /modules/{f.relative_to(mods)} {f} 0644 0 0')

	etc = gdir / 'etc'
	etc.mkdir(exist_ok=True)
	release = json.loads((dist / 'manifest.json').read_text())['kernel_release']
	files = {'kernel.release': release + '\n', 'variant': variant + '\n',
		 # What the build produced, so that a guest suite can tell a
		 # missing module or tool from one that was never built.
		 'modules': ''.join(f'{ko.relative_to(mods)}\n' for ko in kos),
		 'tools': ''.join(f'{name}\n' for name in sorted(tools))}
	files.update({mode: ''.join(c + '\n' for c in cmds) for mode, cmds in lists.items()})
	for name, text in files.items():
		(etc / name).write_text(text)
		spec.append(f'file /etc/gki/{name} {etc / name} 0644 0 0')

	spec_file = gdir / 'initramfs.list'
	spec_file.write_text('\n'.join(spec) + '\n')
	return cpio_from_spec(inputs.gen_init_cpio, gdir)


def cpio_from_spec(gen: Path, gdir: Path) -> Path:
	"""(Re)write the initramfs in gdir from its list, with gen
	(gen_init_cpio)."""
	out = gdir / 'initramfs.cpio'
	if not gen.exists():
		raise HarnessError(f'{gen} is missing (CONFIG_BLK_DEV_INITRD builds it)')
	with out.open('wb') as f:
		rc = subprocess.call([str(gen), '-t', '0', str(gdir / 'initramfs.list')], stdout=f)
	if rc:
		raise HarnessError(f'gen_init_cpio failed on {gdir / "initramfs.list"}')
	return out


def scratch_disk(path: Path, size_mb: int = 256) -> Path:
	"""A fresh ext4 image for the guest's /mnt/scratch."""
	return mkfs_ext4(path, size_mb)


def mkfs_ext4(path: Path, size_mb: int, opts: list[str] | None = None) -> Path:
	"""A fresh, empty ext4 image of size_mb MiB at path, made with mkfs.ext4's
	defaults and opts."""
	path.parent.mkdir(parents=True, exist_ok=True)
	path.unlink(missing_ok=True)
	with path.open('wb') as f:
		f.truncate(size_mb << 20)
	cmd = ['mkfs.ext4', '-q', '-F', '-E', 'root_owner=0:0', *(opts or []), str(path)]
	res = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
			     stderr=subprocess.STDOUT)
	log = path.with_suffix('.mkfs.log')
	log.write_bytes(('\n$ ' + ' '.join(cmd) + '\n').encode() + res.stdout)
	if res.returncode:
		last = log.read_text(errors='replace').splitlines()[-15:]
		raise HarnessError(f'mkfs.ext4 failed (exit {res.returncode}); last lines:\n'
				   + '\n'.join('    ' + l for l in last) + f'\nfull log: {log}')
	return path
