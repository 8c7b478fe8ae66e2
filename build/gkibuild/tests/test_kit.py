# SPDX-License-Identifier: GPL-2.0
"""The module kit (kit.py) as a vendor uses it: only the kit from the dist
and one vendor folder (incfs), copied into an empty folder outside the
checkout and built there with the kernel's interface for external modules
and the pinned clang.  The module loads and works on the released GKI in
QEMU; another compiler is refused before anything is built; and a module
built against another GKI (the kit of a tree whose KMI changed) is refused
at load by MODVERSIONS, with the kernel's message.  That last case builds
its changed tree from the small one (layout.SCRATCH, scratch.py; root)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest
from pathlib import Path

from gkibuild import kit, toolchain
from gkibuild.kernel import Kernel
from gkibuild.layout import SCRATCH, VARIANTS, Layout
from gkibuild.sandbox import unavailable
from gkibuild.scratch import Scratch
from gkibuild.tests import prereq, probe
from gkibuild.tests.test_abi_gate import LZ4_C, LZ4_C_OLD, LZ4_H, LZ4_H_OLD, int_to_long

LAYOUT = Layout.default()
# The small tree (layout.SCRATCH) is built beside the host tests by `gki
# test`: this module runs after that build (testrun.host_run_split).
NEEDS_EVERY_VARIANT = True
RELEASE = VARIANTS['release']
KO = 'incrementalfs.ko'
# Load the kit's modules (refused or not, each says), then use the one
# that loaded: an image made in the guest, mounted, a file read back.
PROBE = '''for ko in {kos}; do
	if insmod $ko; then
		echo "# GKI-KIT: $ko loaded"
	else
		echo "# GKI-KIT: $ko refused"
		dmesg | grep 'disagrees about version' | sed 's/^/# /'
	fi
done
mkdir -p /tmp/kit/src /tmp/kit/mnt
echo hello-from-the-kit > /tmp/kit/src/file
incfs-image create /tmp/kit/src /tmp/kit/image
exec 3<>/tmp/kit/image
mount -t incremental-fs -o backing_fd=3 incremental-fs /tmp/kit/mnt
exec 3<&-
echo "# GKI-KIT: read $(cat /tmp/kit/mnt/file)"
umount /tmp/kit/mnt
'''


def unpack(tarball: Path, where: Path) -> Path:
	"""The kit unpacked in where, as a vendor would: tar."""
	subprocess.run(['tar', '-xzf', str(tarball), '-C', str(where)], check=True)
	return where / kit.TOP


def kit_make(kit_dir: Path, mod: Path, path: str) -> subprocess.CompletedProcess[str]:
	"""make -C KIT M=DIR ARCH=arm64 LLVM=1 modules, with only PATH set."""
	env = {'PATH': path, 'HOME': str(mod.parent), 'LC_ALL': 'C'}
	return subprocess.run(['make', '-C', str(kit_dir), f'M={mod}', 'ARCH=arm64', 'LLVM=1',
			       f'-j{os.cpu_count() or 1}', 'modules'],
			      env=env, capture_output=True, text=True)


class KitTest(unittest.TestCase):
	@classmethod
	def setUpClass(cls):
		prereq.require(unavailable(LAYOUT, RELEASE), 'the module kit')
		cls.tarball = LAYOUT.dist(RELEASE) / kit.TARBALL
		tmp = tempfile.TemporaryDirectory(prefix='gki-kit-')
		cls.addClassCleanup(tmp.cleanup)
		cls.dir = Path(tmp.name)
		cls.pinned = f'{toolchain.llvm_bin(toolchain.LLVM_MAJOR)}:/usr/bin:/bin'

	def vendor(self, name: str) -> tuple[Path, Path]:
		"""An empty folder outside the checkout holding only the release
		kit and the incfs folder: (kit, module folder)."""
		where = self.dir / name
		where.mkdir()
		self.assertNotIn(LAYOUT.top, where.parents)
		mod = where / 'incfs'
		shutil.copytree(LAYOUT.vendor_modules / 'incfs', mod)
		return unpack(self.tarball, where), mod

	def build(self, kit_dir: Path, mod: Path) -> Path:
		res = kit_make(kit_dir, mod, self.pinned)
		self.assertEqual(0, res.returncode, res.stdout[-2000:] + res.stderr[-3000:])
		return mod / KO

	def test_the_kit_holds_an_external_build_and_nothing_of_this_machine(self):
		with tarfile.open(self.tarball) as tar:
			names = tar.getnames()
			manifest = json.load(tar.extractfile(f'{kit.TOP}/{kit.MANIFEST}'))
			symvers = tar.extractfile(f'{kit.TOP}/Module.symvers').read()
			top = str(LAYOUT.top).encode()
			here = [m.name for m in tar.getmembers()
				if m.isfile() and top in tar.extractfile(m).read()]
		for rel in ('GNUmakefile', 'Makefile', '.config', 'Module.symvers', kit.MANIFEST,
			    'arch/arm64/Makefile', 'include/linux/module.h',
			    'include/generated/autoconf.h', 'include/config/auto.conf',
			    'arch/arm64/include/generated/asm/cpucap-defs.h', 'scripts/module.lds',
			    'scripts/mod/modpost', 'scripts/genksyms/genksyms',
			    'scripts/basic/fixdep', 'scripts/Makefile.modpost'):
			self.assertTrue(f'{kit.TOP}/{rel}' in names, f'{rel} is not in the kit')
		self.assertTrue(all(n == kit.TOP or n.startswith(kit.TOP + '/') for n in names))
		self.assertEqual([], [n for n in names if n.endswith(('.o', '.cmd', '.ko'))])
		self.assertEqual([], here, 'the kit names the checkout it was built in')
		self.assertEqual((LAYOUT.dist(RELEASE) / 'Module.symvers').read_bytes(), symvers)
		config = (LAYOUT.dist(RELEASE) / '.config').read_text()
		self.assertEqual(kit.toolchain(config), manifest['toolchain'])
		self.assertEqual(19, manifest['toolchain']['clang_major'])

	def test_a_module_built_outside_works_on_the_released_gki(self):
		kit_dir, mod = self.vendor('outside')
		ko = self.build(kit_dir, mod)
		body = PROBE.format(kos='/tmp/kit.ko')
		b = probe.boot_with(LAYOUT, RELEASE, LAYOUT.dist(RELEASE) / 'Image',
				    probe.script(body, 'kit_probe', {'/tmp/kit.ko': ko}),
				    'kit_probe', self.dir / 'boot-release')
		self.assertTrue(b.finished, b.console[-2000:])
		self.assertIn('GKI-KIT: /tmp/kit.ko loaded', b.console)
		self.assertIn('GKI-KIT: read hello-from-the-kit', b.console)

	def test_another_compiler_is_refused_before_anything_is_built(self):
		kit_dir, mod = self.vendor('other-clang')
		fake = self.dir / 'other-clang' / 'bin'
		fake.mkdir()
		(fake / 'clang').write_text('#!/bin/sh\necho "Debian clang version 14.0.6"\n')
		(fake / 'clang').chmod(0o755)
		res = kit_make(kit_dir, mod, f'{fake}:{self.pinned}')
		self.assertNotEqual(0, res.returncode)
		self.assertIn('gki-kit: the GKI was built by "Debian clang version 19.', res.stderr)
		self.assertIn('but clang is "Debian clang version 14.0.6"', res.stderr)
		self.assertEqual([], list(mod.rglob('*.o')))

	def test_a_module_of_another_kmi_is_refused_at_load(self):
		prereq.require(unavailable(LAYOUT, SCRATCH), 'the module kit of a changed tree')
		k = Kernel(LAYOUT, SCRATCH, toolchain.hermetic_env(), os.cpu_count() or 1)
		s = Scratch(k, LAYOUT.out / 'gate' / 'kit').create()
		self.addCleanup(s.remove)
		s.edit(LZ4_H, int_to_long(LZ4_H_OLD))
		s.edit(LZ4_C, int_to_long(LZ4_C_OLD))
		s.build(LAYOUT.log(SCRATCH, 'gate-kit'))
		kos = {}
		for name, src, obj in (('same', k.layout.src, k.obj), ('changed', s.src, s.obj)):
			where = self.dir / f'kmi-{name}'
			where.mkdir()
			kit_dir = where / kit.TOP
			kit.stage(src, obj, kit_dir, k.env)
			mod = where / 'incfs'
			shutil.copytree(LAYOUT.vendor_modules / 'incfs', mod)
			kos[f'/tmp/{name}.ko'] = self.build(kit_dir, mod)
		# The changed one first: refused, then the same KMI's loads.
		body = PROBE.format(kos=' '.join(sorted(kos)))
		b = probe.boot_with(LAYOUT, SCRATCH, LAYOUT.dist(SCRATCH) / 'Image',
				    probe.script(body, 'kit_probe', kos), 'kit_probe',
				    self.dir / 'boot-kmi')
		self.assertTrue(b.finished, b.console[-2000:])
		self.assertIn('GKI-KIT: /tmp/changed.ko refused', b.console)
		self.assertIn('incrementalfs: disagrees about version of symbol LZ4_decompress_safe',
			      b.console)
		self.assertIn('GKI-KIT: /tmp/same.ko loaded', b.console)
		self.assertIn('GKI-KIT: read hello-from-the-kit', b.console)


if __name__ == '__main__':
	unittest.main()
