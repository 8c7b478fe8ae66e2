# SPDX-License-Identifier: GPL-2.0
"""The virtual device (vendor_modules/virtual_device/) without a boot: the
folder agrees with itself and with the kernel tree (each module its Kbuild
names is in its modules.load, each source is mirrored from the tree, none
is a GKI driver), QEMU gets its devices with a network that stays inside,
the initramfs carries the load orders, and /init's loader, run by the
host's sh, loads a set in its order after the modules each needs.  After a
release build, the dist's set is checked too."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from gkibuild import modules
from gkibuild.layout import VARIANTS, Layout
from gkibuild.modules import ExtModule
from gkibuild.tests import prereq
from gkiqemu import boot, initramfs

LAYOUT = Layout.default()
FOLDER = LAYOUT.vendor_modules / 'virtual_device'
MOD = ExtModule('virtual_device', 'vendor', FOLDER)
_OBJ = re.compile(r'^obj-\$\(CONFIG_(\w+)\)\s*\+=\s*(\S+)\s*$', re.M)


def kbuild_options(text: str, kind: str) -> list[str]:
	"""The options the Kbuild sets for the module (kind 'm') or built in
	(kind 'y'): its 'vdev-m-opts := ...' lines."""
	m = re.search(rf'^vdev-{kind}-opts\s*:=((?:.*\\\n)*.*)$', text, re.M)
	return m.group(1).replace('\\\n', ' ').split() if m else []


def tree_modules(tree: Path, folder: str, options: list[str]) -> list[str]:
	"""The modules a tree folder's own Makefile builds with options set."""
	text = (tree / folder / 'Makefile').read_text()
	return [Path(o).with_suffix('.ko').name for opt, o in _OBJ.findall(text) if opt in options]


class FolderTest(unittest.TestCase):
	"""The folder as committed, read against the extracted tree."""

	@classmethod
	def setUpClass(cls):
		prereq.require(None if (LAYOUT.src / 'Makefile').exists() else
			       f'{LAYOUT.src} is not extracted', 'the virtual device folder tests')
		cls.kbuild = (FOLDER / 'Kbuild').read_text()
		cls.options = kbuild_options(cls.kbuild, 'm')
		cls.entries = [(opt, o) for opt, o in _OBJ.findall(cls.kbuild)]

	def test_every_tree_path_is_in_the_tree(self):
		self.assertTrue(modules.tree_paths(FOLDER / modules.TREE_SOURCES, LAYOUT.src))

	def test_each_object_and_folder_comes_from_a_listed_tree_path(self):
		listed = modules.tree_paths(FOLDER / modules.TREE_SOURCES, LAYOUT.src)
		for _, o in self.entries:
			src = o.rstrip('/') if o.endswith('/') else o[:-2] + '.c'
			with self.subTest(obj=o):
				self.assertTrue(any(src == p or src.startswith(p + '/') for p in listed),
						f'{src} is not mirrored by tree-sources')
				self.assertTrue((LAYOUT.src / src).exists())

	def test_every_option_the_kbuild_uses_is_one_it_sets(self):
		self.assertEqual(sorted(self.options), sorted({opt for opt, _ in self.entries}))
		self.assertEqual(['DRM_VIRTIO_GPU_KMS'], kbuild_options(self.kbuild, 'y'))

	def test_modules_load_lists_each_module_the_kbuild_builds(self):
		built = []
		for _, o in self.entries:
			built += (tree_modules(LAYOUT.src, o, self.options) if o.endswith('/')
				  else [Path(o).with_suffix('.ko').name])
		listed = modules.read_load(FOLDER / modules.LOAD)
		self.assertEqual(sorted(built), sorted(listed))
		# The virtio GPU is card0: it loads before vkms.
		self.assertLess(listed.index('virtio-gpu.ko'), listed.index('vkms.ko'))

	def test_no_driver_is_the_gkis(self):
		gki = (LAYOUT.common / 'gki.config').read_text()
		for opt in self.options + kbuild_options(self.kbuild, 'y'):
			with self.subTest(opt=opt):
				self.assertNotRegex(gki, rf'(?m)^CONFIG_{opt}=[ym]$')

	def test_requirements_read(self):
		req = modules.requirements(MOD)
		self.assertEqual('y', req['CONFIG_DRM_GEM_SHMEM_HELPER'])
		self.assertEqual('m', req['CONFIG_MAC80211'])


class QemuTest(unittest.TestCase):
	def setUp(self):
		self.cmd = boot.command(Path('Image'), Path('initrd'), 1024, 'gki.mode=test', None)

	def values(self, option: str) -> list[str]:
		return [self.cmd[i + 1] for i, a in enumerate(self.cmd[:-1]) if a == option]

	def test_the_devices_are_attached_on_virtio_mmio(self):
		devices = [d.split(',')[0] for d in self.values('-device')]
		self.assertEqual(['virtio-net-device', 'virtio-gpu-device', 'virtio-keyboard-device',
				  'virtio-rng-device', 'virtio-serial-device', 'virtconsole'], devices)

	def test_the_network_stays_inside_qemu(self):
		self.assertEqual(['user,id=vnet0,restrict=on'], self.values('-netdev'))
		self.assertEqual(['none'], self.values('-net'))
		self.assertEqual(['null,id=vcon0'], self.values('-chardev'))
		self.assertFalse([a for a in self.cmd if 'hostfwd' in a or 'guestfwd' in a])


class InitramfsTest(unittest.TestCase):
	def test_load_orders_and_dependencies_are_packed(self):
		with tempfile.TemporaryDirectory() as tmp:
			top = Path(tmp)
			dist = top / 'dist'
			for rel in ('modules/gki/kunit.ko', 'modules/gki/modules.load',
				    'modules/gki/modules.dep', 'modules/vendor/vd/a.ko',
				    'modules/vendor/vd/modules.load', 'modules/vendor/vd/modules.dep',
				    'modules/vendor/incfs/incrementalfs.ko'):
				(dist / rel).parent.mkdir(parents=True, exist_ok=True)
				(dist / rel).write_text('')
			(dist / 'manifest.json').write_text(json.dumps({'kernel_release': '6.12.118'}))
			inputs = initramfs.Inputs(Path('busybox'), Path('init'), Path('gen'))
			with mock.patch.object(initramfs, 'mkfs_ext4', return_value=Path('blank')), \
			     mock.patch.object(initramfs, 'cpio_from_spec'):
				initramfs.write_cpio(inputs, top / 'guest', 'release', dist, {}, {}, {})
			spec = (top / 'guest' / 'initramfs.list').read_text().splitlines()
		files = {line.split()[1] for line in spec if line.startswith('file /modules/')}
		self.assertEqual({f'/modules/{r}' for r in (
			'gki/kunit.ko', 'gki/modules.load', 'gki/modules.dep', 'vendor/vd/a.ko',
			'vendor/vd/modules.load', 'vendor/vd/modules.dep',
			'vendor/incfs/incrementalfs.ko')}, files)


def init_loader() -> str:
	"""qemu/init's vendor module loader: its functions, between markers."""
	text = (LAYOUT.qemu / 'init').read_text()
	m = re.search(r'^# gki: vendor module loading begins.*?\n(.*)^# gki: vendor module '
		      r'loading ends', text, re.M | re.S)
	assert m, 'no vendor module loader in qemu/init'
	return m.group(1)


class InitLoaderTest(unittest.TestCase):
	"""The loader, run by the host's sh with insmod replaced: it records
	each path and lists the module in a stand-in /proc/modules, unless
	the path has 'broken' in it."""
	DEP = ('vendor/vd/failover.ko:\nvendor/vd/net_failover.ko: vendor/vd/failover.ko\n'
	       'vendor/vd/hwsim.ko: gki/mac80211.ko gki/cfg80211.ko gki/rfkill.ko\n'
	       'gki/mac80211.ko: gki/cfg80211.ko gki/rfkill.ko\ngki/cfg80211.ko: gki/rfkill.ko\n'
	       'gki/rfkill.ko:\nvendor/vd/virtio-gpu.ko:\n'
	       'vendor/vd/needs_broken.ko: gki/broken.ko\ngki/broken.ko:\n')

	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.dir = Path(tmp.name)
		self.mods = self.dir / 'modules'
		self.proc = self.dir / 'proc_modules'
		self.log = self.dir / 'insmod.log'
		for rel, text in (('vendor/vd/modules.dep', self.DEP),
				  ('gki/modules.load', 'rfkill.ko\ncfg80211.ko\nkunit.ko\n'),
				  ('vendor/incfs/incrementalfs.ko', '')):
			(self.mods / rel).parent.mkdir(parents=True, exist_ok=True)
			(self.mods / rel).write_text(text)

	def load(self, order: str, loaded: str = '') -> str:
		(self.mods / 'vendor' / 'vd' / 'modules.load').write_text(order)
		self.proc.write_text(loaded)
		script = (f'MODULES={self.mods}\nPROC_MODULES={self.proc}\n' + init_loader() +
			  'insmod() {\n'
			  f'\techo "$1" >>{self.log}\n'
			  '\tcase "$1" in *broken.ko) return 1 ;; esac\n'
			  f'\techo "$(basename "$1" .ko | tr - _) 1 0 - Live" >>{self.proc}\n'
			  '}\nload_vendor_modules\n')
		res = subprocess.run(['sh', '-c', script], capture_output=True, text=True, timeout=30)
		self.assertEqual(0, res.returncode, res.stderr)
		return res.stdout

	def insmods(self) -> list[str]:
		text = self.log.read_text() if self.log.exists() else ''
		return [str(Path(p).relative_to(self.mods)) for p in text.split()]

	def test_in_order_each_after_what_it_needs_once(self):
		out = self.load('failover.ko\nnet_failover.ko\nhwsim.ko\nvirtio-gpu.ko\n',
				loaded='rfkill 1 0 - Live\n')
		self.assertEqual('', out)
		self.assertEqual(['vendor/vd/failover.ko', 'vendor/vd/net_failover.ko',
				  'gki/cfg80211.ko', 'gki/mac80211.ko', 'vendor/vd/hwsim.ko',
				  'vendor/vd/virtio-gpu.ko'], self.insmods())

	def test_a_module_whose_need_fails_is_reported_and_the_rest_load(self):
		out = self.load('needs_broken.ko\nfailover.ko\n')
		self.assertEqual('gki: vendor/vd/needs_broken.ko did not load\n', out)
		self.assertEqual(['gki/broken.ko', 'vendor/vd/failover.ko'], self.insmods())

	def test_the_gki_modules_order_and_a_set_without_one_are_not_loaded(self):
		self.load('')
		self.assertEqual([], self.insmods())


class DistTest(unittest.TestCase):
	"""The release dist's set: each module listed, each listed module's
	line in modules.dep, dependencies first, the GKI modules it needs
	shipped."""

	@classmethod
	def setUpClass(cls):
		cls.mods = LAYOUT.dist(VARIANTS['release']) / 'modules'
		cls.dir = cls.mods / MOD.dist_dir
		prereq.require(None if (cls.dir / modules.LOAD).exists() else f'{cls.dir} not built',
			       'the virtual device dist test')

	def test_every_module_loads_after_what_it_needs(self):
		load = modules.read_load(self.dir / modules.LOAD)
		self.assertEqual(sorted(load), sorted(p.name for p in self.dir.glob('*.ko')))
		deps = modules.gkimodules.parse_dep((self.dir / modules.DEP).read_text())
		prefix = f'{MOD.dist_dir}/'
		for i, name in enumerate(load):
			for dep in deps[prefix + name]:
				with self.subTest(name=name, dep=dep):
					self.assertTrue((self.mods / dep).exists())
					if dep.startswith(prefix):
						self.assertLess(load.index(dep[len(prefix):]), i)


if __name__ == '__main__':
	unittest.main()
