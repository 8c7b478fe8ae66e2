# SPDX-License-Identifier: GPL-2.0
"""The guest's initramfs: busybox, /init, the guest programs and device
tools (built by gkibuild.programs and gkibuild.tools), the modules from
dist and what /init runs; and the scratch disk."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gkibuild import toolchain
from gkibuild.layout import Layout, Variant
from gkibuild.util import GkiError, run_logged, write_if_changed


# /data/BLANK_EXT4 in the guest: an empty ext4 filesystem.  4 KiB blocks, as
# on a phone (mkfs.ext4 picks 1 KiB for so small a filesystem): its
# superblock, written in place outside the journal, then never spans the
# halves of a torn block write.
BLANK_EXT4 = 'blank.ext4'
BLANK_EXT4_MB = 16


def busybox(layout: Layout) -> Path:
	path = layout.out / 'guest-pkgs' / 'busybox-static' / 'bin' / 'busybox'
	if not path.exists():
		raise GkiError(f'{path} is missing; build/deps.sh unpacks it (run ./build/gki build)')
	return path


def stripped(ko: Path, dest: Path) -> Path:
	"""ko without its debug info, at dest (made again when ko is newer):
	the GKI modules' DWARF, a hundred megabytes, would have every boot
	unpack it into guest memory for nothing.  The dist keeps them whole."""
	if dest.exists() and dest.stat().st_mtime_ns >= ko.stat().st_mtime_ns:
		return dest
	dest.parent.mkdir(parents=True, exist_ok=True)
	tmp = dest.with_name(dest.name + '.tmp')
	objcopy = str(toolchain.LLVM_BIN / 'llvm-objcopy')
	res = subprocess.run([objcopy, '--strip-debug', str(ko), str(tmp)], capture_output=True,
			     text=True)
	if res.returncode:
		raise GkiError(f'llvm-objcopy --strip-debug {ko} failed: {res.stderr.strip()}')
	tmp.rename(dest)
	return dest


def write_cpio(layout: Layout, v: Variant, dist: Path, programs: dict[str, Path],
	       tools: dict[str, Path], lists: dict[str, list[str]],
	       gdir: Path | None = None) -> Path:
	"""Write the initramfs for variant v with gen_init_cpio, in gdir
	(default: the variant's guest folder): programs go to /tests, tools to
	/bin; lists maps /etc/gki/<mode> to the command lines /init runs in
	that mode."""
	gdir = gdir or layout.guest(v)
	gdir.mkdir(parents=True, exist_ok=True)
	spec = ['dir /dev 0755 0 0', 'nod /dev/console 0600 0 0 c 5 1']
	spec += [f'dir /{d} 0755 0 0' for d in
		 ('bin', 'sbin', 'proc', 'sys', 'tmp', 'mnt', 'mnt/scratch', 'etc', 'etc/gki',
		  'tests', 'modules', 'root', 'data')]
	# The guest has no mkfs: a suite that needs a filesystem of its own
	# (incfs's crash-point replay) copies this one.
	blank = mkfs_ext4(gdir / BLANK_EXT4, BLANK_EXT4_MB, ['-b', '4096'])
	spec.append(f'file /data/{BLANK_EXT4} {blank} 0644 0 0')
	spec += [f'file /bin/busybox {busybox(layout)} 0755 0 0',
		 f'file /init {layout.qemu / "init"} 0755 0 0']
	for name, path in sorted(programs.items()):
		spec.append(f'file /tests/{name} {path} 0755 0 0')
	for name, path in sorted(tools.items()):
		spec.append(f'file /bin/{name} {path} 0755 0 0')

	mods = dist / 'modules'
	for d in sorted(p for p in mods.rglob('*') if p.is_dir()):
		spec.append(f'dir /modules/{d.relative_to(mods)} 0755 0 0')
	kos = sorted(mods.rglob('*.ko'))
	for ko in kos:
		rel = ko.relative_to(mods)
		src = stripped(ko, gdir / 'stripped' / rel) if rel.parts[0] == 'gki' else ko
		spec.append(f'file /modules/{rel} {src} 0644 0 0')
	for f in sorted((mods / 'gki').glob('modules.*')):
		spec.append(f'file /modules/gki/{f.name} {f} 0644 0 0')

	etc = gdir / 'etc'
	release = json.loads((dist / 'manifest.json').read_text())['kernel_release']
	files = {'kernel.release': release + '\n', 'variant': v.name + '\n',
		 # What the build produced, so that a guest suite can tell a
		 # missing module or tool from one that was never built.
		 'modules': ''.join(f'{ko.relative_to(mods)}\n' for ko in kos),
		 'tools': ''.join(f'{name}\n' for name in sorted(tools))}
	files.update({mode: ''.join(c + '\n' for c in cmds) for mode, cmds in lists.items()})
	for name, text in files.items():
		write_if_changed(etc / name, text.encode())
		spec.append(f'file /etc/gki/{name} {etc / name} 0644 0 0')

	spec_file = gdir / 'initramfs.list'
	spec_file.write_text('\n'.join(spec) + '\n')
	return cpio_from_spec(layout, v, gdir)


def cpio_from_spec(layout: Layout, v: Variant, gdir: Path | None = None) -> Path:
	"""(Re)write the initramfs in gdir (default: the variant's guest
	folder) from its gen_init_cpio list."""
	gdir = gdir or layout.guest(v)
	out = gdir / 'initramfs.cpio'
	gen = layout.obj(v) / 'usr' / 'gen_init_cpio'
	if not gen.exists():
		raise GkiError(f'{gen} is missing (CONFIG_BLK_DEV_INITRD builds it)')
	with out.open('wb') as f:
		rc = subprocess.call([str(gen), '-t', '0', str(gdir / 'initramfs.list')], stdout=f)
	if rc:
		raise GkiError(f'gen_init_cpio failed on {gdir / "initramfs.list"}')
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
	log = path.with_suffix('.mkfs.log')
	log.unlink(missing_ok=True)
	run_logged(['mkfs.ext4', '-q', '-F', '-E', 'root_owner=0:0', *(opts or []), str(path)], log,
		   what='mkfs.ext4')
	return path
