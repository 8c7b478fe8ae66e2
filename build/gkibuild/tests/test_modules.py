# SPDX-License-Identifier: GPL-2.0
"""External modules without a kernel build: the sources a folder's build
mirror holds (its own files and the kernel tree files its tree-sources
lists), the mirror kept in step with them, a folder's requirements of the
GKI's configuration, and its modules.load, checked and shipped with its
modules.dep.  Temporary folders stand for the tree, the folder, the build
mirror and the dist; depmod is replaced by its answers, and run for real on
objects the pinned clang makes (RealDepmodTest)."""

from __future__ import annotations

import io
import os
import subprocess
import tempfile
import types
import unittest
from contextlib import redirect_stdout
from pathlib import Path
from unittest import mock

from gkibuild import modules, toolchain
from gkibuild.modules import ExtModule
from gkibuild.tests import prereq
from gkibuild.util import GkiError


class Tmp(unittest.TestCase):
	def setUp(self) -> None:
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.dir = Path(tmp.name)

	def write(self, rel: str, text: str = '') -> Path:
		p = self.dir / rel
		p.parent.mkdir(parents=True, exist_ok=True)
		p.write_text(text)
		return p


class TreePathsTest(Tmp):
	def setUp(self) -> None:
		super().setUp()
		self.write('tree/drivers/net/virtio_net.c', 'net')
		self.write('tree/drivers/gpu/drm/virtio/Makefile', 'obj-m += x.o')

	def paths(self, text: str) -> list[str]:
		return modules.tree_paths(self.write('v/tree-sources', text), self.dir / 'tree')

	def test_files_and_folders_in_order_comments_dropped(self):
		self.assertEqual(['drivers/net/virtio_net.c', 'drivers/gpu/drm/virtio'],
				 self.paths('# why\ndrivers/net/virtio_net.c  # the driver\n\n'
					    'drivers/gpu/drm/virtio/\n'))

	def test_a_path_the_tree_lacks_names_the_line(self):
		with self.assertRaisesRegex(GkiError, r'tree-sources:2: drivers/net/gone\.c is not in '
					    r'the kernel tree .*tree: the pinned source lacks it'):
			self.paths('drivers/net/virtio_net.c\ndrivers/net/gone.c\n')

	def test_a_path_outside_the_tree_or_twice_is_an_error(self):
		for text, why in (('/etc/passwd\n', r':1: .*expected a path inside the kernel tree'),
				  ('drivers/../../x\n', r':1: .*expected a path inside'),
				  ('./\n', r':1: .*expected a path inside'),
				  ('drivers/net/virtio_net.c\ndrivers/net//virtio_net.c\n',
				   r':2: drivers/net/virtio_net\.c is listed twice')):
			with self.subTest(text=text), self.assertRaisesRegex(GkiError, why):
				self.paths(text)


class SourcesTest(Tmp):
	def setUp(self) -> None:
		super().setUp()
		self.tree = self.dir / 'tree'
		self.write('tree/drivers/char/virtio_console.c', 'console')
		self.write('tree/drivers/tty/hvc/hvc_console.h', 'hvc')
		self.write('tree/drivers/tty/hvc/hvc_dcc.c', 'not listed')
		self.write('tree/drivers/gpu/drm/vkms/Makefile', 'vkms-y := vkms_drv.o')
		self.write('tree/drivers/gpu/drm/vkms/vkms_drv.c', 'vkms')
		self.write('tree/drivers/gpu/drm/vkms/sub/deeper.h', 'deeper')
		self.write('v/Kbuild', 'obj-m += drivers/char/virtio_console.o\n')
		self.write('v/tests/t.c', 'test')
		self.mod = ExtModule('v', 'vendor', self.dir / 'v')

	def test_a_folder_without_a_list_is_its_own_files(self):
		self.assertEqual({Path('Kbuild'): self.dir / 'v' / 'Kbuild',
				  Path('tests/t.c'): self.dir / 'v' / 'tests' / 't.c'},
				 modules.sources(self.mod, self.tree))

	def test_listed_tree_files_at_their_tree_paths_a_folder_whole(self):
		self.write('v/tree-sources', 'drivers/char/virtio_console.c\n'
			   'drivers/tty/hvc/hvc_console.h\ndrivers/gpu/drm/vkms\n')
		got = modules.sources(self.mod, self.tree)
		tree = {Path(p): self.tree / p for p in (
			'drivers/char/virtio_console.c', 'drivers/tty/hvc/hvc_console.h',
			'drivers/gpu/drm/vkms/Makefile', 'drivers/gpu/drm/vkms/vkms_drv.c',
			'drivers/gpu/drm/vkms/sub/deeper.h')}
		own = {Path(p): self.dir / 'v' / p for p in ('Kbuild', 'tests/t.c', 'tree-sources')}
		self.assertEqual({**own, **tree}, got)

	def test_a_tree_file_where_the_folder_has_its_own_is_an_error(self):
		self.write('v/drivers/char/virtio_console.c', 'a copy')
		self.write('v/tree-sources', 'drivers/char/\n')
		with self.assertRaisesRegex(GkiError, r'v/drivers/char/virtio_console\.c is also the '
					    r"tree's drivers/char/virtio_console\.c"):
			modules.sources(self.mod, self.tree)


class MirrorTest(Tmp):
	def setUp(self) -> None:
		super().setUp()
		self.dest = self.dir / 'ext' / 'v'
		self.a = self.write('src/a.c', 'a')
		self.b = self.write('tree/drivers/b.c', 'b')

	def test_copies_at_the_paths_given_keeping_modes(self):
		self.a.chmod(0o755)
		modules.mirror({Path('a.c'): self.a, Path('drivers/b.c'): self.b}, self.dest)
		self.assertEqual('a', (self.dest / 'a.c').read_text())
		self.assertEqual('b', (self.dest / 'drivers' / 'b.c').read_text())
		self.assertEqual(0o755, (self.dest / 'a.c').stat().st_mode & 0o777)

	def test_an_unchanged_file_keeps_its_time_a_changed_one_is_written(self):
		files = {Path('a.c'): self.a, Path('drivers/b.c'): self.b}
		modules.mirror(files, self.dest)
		old = 1_000_000_000
		for rel in files:
			os.utime(self.dest / rel, ns=(old, old))
		self.b.write_text('b2')
		modules.mirror(files, self.dest)
		self.assertEqual(old, (self.dest / 'a.c').stat().st_mtime_ns)
		self.assertNotEqual(old, (self.dest / 'drivers' / 'b.c').stat().st_mtime_ns)
		self.assertEqual('b2', (self.dest / 'drivers' / 'b.c').read_text())

	def test_a_dropped_source_goes_build_outputs_stay(self):
		modules.mirror({Path('a.c'): self.a, Path('drivers/b.c'): self.b}, self.dest)
		(self.dest / 'drivers' / 'b.o').write_text('object')
		modules.mirror({Path('a.c'): self.a}, self.dest)
		self.assertFalse((self.dest / 'drivers' / 'b.c').exists())
		self.assertTrue((self.dest / 'drivers' / 'b.o').exists())
		self.assertTrue((self.dest / 'a.c').exists())

	def test_an_older_mirrors_record_of_folders_is_read(self):
		# util.sync_tree's record lists folders as well as files.
		self.dest.mkdir(parents=True)
		(self.dest / 'tests').mkdir()
		(self.dest / 'tests' / 'old.c').write_text('old')
		(self.dest / modules.MARKER).write_text('tests\ntests/old.c\n')
		modules.mirror({Path('a.c'): self.a}, self.dest)
		self.assertFalse((self.dest / 'tests' / 'old.c').exists())
		self.assertTrue((self.dest / 'tests').is_dir())
		self.assertEqual('a.c\n', (self.dest / modules.MARKER).read_text())


class BuiltModulesTest(Tmp):
	def test_two_modules_of_one_name_fail(self):
		for rel in ('a/x.ko', 'b/x.ko', 'y.ko'):
			self.write(rel)
		self.write('modules.order', ''.join(f'{self.dir / r[:-3]}.o\n'
						    for r in ('a/x.ko', 'b/x.ko', 'y.ko')))
		with self.assertRaisesRegex(GkiError, 'modules of one name in two folders: x.ko'):
			modules.built_modules(self.dir)

	def test_modules_in_subfolders_are_found(self):
		self.write('drivers/net/virtio_net.ko')
		self.write('modules.order', f'{self.dir}/drivers/net/virtio_net.o\n')
		self.assertEqual([self.dir / 'drivers' / 'net' / 'virtio_net.ko'],
				 modules.built_modules(self.dir))


class WantedTest(Tmp):
	def kernel(self, config: str, whole: bool) -> types.SimpleNamespace:
		self.write('obj/.config', config)
		return types.SimpleNamespace(obj=self.dir / 'obj',
					     variant=types.SimpleNamespace(name='small', whole=whole))

	def mod(self, requires: str | None) -> ExtModule:
		(self.dir / 'v').mkdir(exist_ok=True)
		if requires is not None:
			self.write(f'v/{modules.REQUIRES}', requires)
		return ExtModule('v', 'vendor', self.dir / 'v')

	def test_a_folder_without_requirements_is_built_everywhere(self):
		self.assertTrue(modules.wanted(self.kernel('', True), self.mod(None)))
		# Without reading a .config, which a test's kernel may lack.
		nowhere = types.SimpleNamespace(obj=self.dir / 'none', variant=None)
		self.assertTrue(modules.wanted(nowhere, self.mod(None)))

	def test_met_requirements_build(self):
		config = 'CONFIG_DRM=y\nCONFIG_MAC80211=m\n# CONFIG_VIRTIO_NET is not set\n'
		req = '# why\nCONFIG_DRM=y\nCONFIG_MAC80211=m\n# CONFIG_VIRTIO_NET is not set\n'
		self.assertTrue(modules.wanted(self.kernel(config, True), self.mod(req)))

	def test_a_partial_variant_lacking_one_skips_saying_so(self):
		out = io.StringIO()
		with redirect_stdout(out):
			got = modules.wanted(self.kernel('CONFIG_DRM=y\n', False),
					     self.mod('CONFIG_DRM=y\nCONFIG_MAC80211=m\n'))
		self.assertFalse(got)
		self.assertIn('vendor module v: not built for small, whose configuration lacks '
			      'CONFIG_MAC80211=m (got not set)', out.getvalue())

	def test_the_whole_gki_lacking_one_fails(self):
		with self.assertRaisesRegex(GkiError, r'the small GKI lacks options .*requires\.config '
					    r'requires: CONFIG_DRM=y \(got m\)'):
			modules.wanted(self.kernel('CONFIG_DRM=m\n', True), self.mod('CONFIG_DRM=y\n'))

	def test_a_line_that_is_no_option_fails(self):
		with self.assertRaisesRegex(GkiError, r'requires\.config:2: expected CONFIG_NAME=VALUE'):
			modules.requirements(self.mod('CONFIG_DRM=y\nDRM=y\n'))


class LoadOrderTest(Tmp):
	P = Path('vendor_modules/v/modules.load')
	BUILT = ['failover.ko', 'net_failover.ko', 'virtio_net.ko']
	DEPS = {'virtio_net.ko': ['net_failover.ko', 'failover.ko'],
		'net_failover.ko': ['failover.ko'], 'failover.ko': []}

	def test_reads_names_in_order(self):
		p = self.write('modules.load', '# first\nfailover.ko\n\nvirtio-gpu.ko  # gpu\n')
		self.assertEqual(['failover.ko', 'virtio-gpu.ko'], modules.read_load(p))

	def test_a_path_a_non_module_or_a_name_twice_fails(self):
		for text, why in (('drivers/net/x.ko\n', r':1: expected a module file name'),
				  ('x.o\n', r':1: expected a module file name'),
				  ('x.ko\nx.ko\n', r':2: x\.ko is listed twice')):
			with self.subTest(text=text), self.assertRaisesRegex(GkiError, why):
				modules.read_load(self.write('modules.load', text))

	def test_dependencies_first_passes(self):
		modules.check_load(self.P, self.BUILT, self.BUILT, self.DEPS)

	def test_a_module_before_what_it_needs_fails(self):
		with self.assertRaisesRegex(GkiError, r'modules\.load: net_failover\.ko loads before '
					    r'failover\.ko, which it needs'):
			modules.check_load(self.P, ['net_failover.ko', 'failover.ko', 'virtio_net.ko'],
					   self.BUILT, self.DEPS)

	def test_the_list_and_the_build_must_agree(self):
		with self.assertRaisesRegex(GkiError, r'built but not listed: virtio_net\.ko; listed '
					    r'but not built: gone\.ko'):
			modules.check_load(self.P, ['failover.ko', 'net_failover.ko', 'gone.ko'],
					   self.BUILT, self.DEPS)

	def test_module_names(self):
		self.assertEqual('virtio_gpu', modules.module_name('vendor/v/virtio-gpu.ko'))
		self.assertEqual('rtc_pl031', modules.module_name('rtc-pl031.ko'))

	def test_closure_is_the_roots_and_all_they_need(self):
		deps = {'v/a.ko': ['gki/m.ko', 'gki/c.ko'], 'gki/m.ko': ['gki/c.ko'], 'gki/c.ko': [],
			'gki/kunit.ko': [], 'v/b.ko': []}
		self.assertEqual({'v/a.ko': ['gki/m.ko', 'gki/c.ko'], 'gki/m.ko': ['gki/c.ko'],
				  'gki/c.ko': []}, modules.closure(['v/a.ko'], deps))


class StageLoadTest(Tmp):
	"""stage_load on a dist's modules/ folder, depmod replaced by its
	answer for the files it is given."""
	DEPS = {'vendor/v/hwsim.ko': ['gki/mac80211.ko', 'gki/cfg80211.ko', 'gki/rfkill.ko'],
		'vendor/v/virtio_net.ko': ['vendor/v/failover.ko'], 'vendor/v/failover.ko': [],
		'gki/mac80211.ko': ['gki/cfg80211.ko', 'gki/rfkill.ko'],
		'gki/cfg80211.ko': ['gki/rfkill.ko'], 'gki/rfkill.ko': [], 'gki/kunit.ko': []}

	def setUp(self) -> None:
		super().setUp()
		self.mods = self.dir / 'dist' / 'modules'
		for rel in self.DEPS:
			self.write(f'dist/modules/{rel}', 'ELF')
		self.mod = ExtModule('v', 'vendor', self.dir / 'v')
		(self.dir / 'v').mkdir()
		self.unknown: dict[str, list[str]] = {}

	def stage(self, order: str) -> dict[str, Path]:
		self.write(f'v/{modules.LOAD}', order)
		given = {}

		def depmod(kos, release, system_map):
			given.update(kos)
			return self.DEPS, self.unknown
		with mock.patch.object(modules, 'depmod', side_effect=depmod):
			modules.stage_load(self.mod, self.mods, '6.12.118', self.dir / 'System.map')
		return given

	def test_ships_the_order_and_the_lines_it_needs_gki_modules_included(self):
		given = self.stage('# first\nfailover.ko\nvirtio_net.ko\nhwsim.ko\n')
		self.assertEqual(sorted(self.DEPS), sorted(given))
		dest = self.mods / 'vendor' / 'v'
		self.assertEqual('failover.ko\nvirtio_net.ko\nhwsim.ko\n',
				 (dest / modules.LOAD).read_text())
		self.assertEqual('gki/cfg80211.ko: gki/rfkill.ko\n'
				 'gki/mac80211.ko: gki/cfg80211.ko gki/rfkill.ko\n'
				 'gki/rfkill.ko:\n'
				 'vendor/v/failover.ko:\n'
				 'vendor/v/hwsim.ko: gki/mac80211.ko gki/cfg80211.ko gki/rfkill.ko\n'
				 'vendor/v/virtio_net.ko: vendor/v/failover.ko\n',
				 (dest / modules.DEP).read_text())

	def test_a_wrong_order_fails(self):
		with self.assertRaisesRegex(GkiError, r'virtio_net\.ko loads before failover\.ko'):
			self.stage('virtio_net.ko\nfailover.ko\nhwsim.ko\n')

	def test_a_symbol_nothing_shipped_defines_fails_for_the_sets_modules_only(self):
		self.unknown = {'gki/mac80211.ko': ['odd']}
		self.stage('failover.ko\nvirtio_net.ko\nhwsim.ko\n')
		self.unknown['vendor/v/hwsim.ko'] = ['ieee80211_free_hw', 'wiphy_free']
		with self.assertRaisesRegex(GkiError, r'neither the kernel nor the GKI modules in '
					    r'modules/gki/ export: vendor/v/hwsim\.ko needs '
					    r'ieee80211_free_hw wiphy_free$'):
			self.stage('failover.ko\nvirtio_net.ko\nhwsim.ko\n')

	def test_a_folder_without_a_load_order_ships_none(self):
		with mock.patch.object(modules, 'depmod') as depmod:
			modules.stage_load(self.mod, self.mods, '6.12.118', self.dir / 'System.map')
		depmod.assert_not_called()
		self.assertFalse((self.mods / 'vendor' / 'v' / modules.DEP).exists())

	def test_a_module_named_as_a_gki_module_fails(self):
		self.write('dist/modules/vendor/v/rfkill.ko', 'ELF')
		with self.assertRaisesRegex(GkiError, 'modules named as GKI modules: rfkill'):
			self.stage('rfkill.ko\n')


class DepmodTest(Tmp):
	"""depmod()'s handling of depmod itself: it is run on links to the
	modules at the paths given, and says which symbols each module needs
	that nothing defines."""

	def run_with(self, stderr: str) -> tuple[dict, dict, list[str]]:
		ko = self.write('x.ko', 'ELF')
		seen = []

		def run(cmd, **kw):
			top = Path(cmd[cmd.index('-b') + 1]) / 'lib' / 'modules' / '6.12.118'
			seen.extend(str(p.relative_to(top)) for p in sorted(top.rglob('*.ko')))
			self.assertTrue((top / 'vendor' / 'v' / 'a.ko').is_symlink())
			self.assertEqual(str(self.dir / 'System.map'), cmd[cmd.index('-F') + 1])
			(top / 'modules.dep').write_text('vendor/v/a.ko: gki/b.ko\ngki/b.ko:\n')
			return subprocess.CompletedProcess(cmd, 0, '', stderr.format(top=top))
		with mock.patch.object(modules.subprocess, 'run', side_effect=run):
			deps, unknown = modules.depmod({'vendor/v/a.ko': ko, 'gki/b.ko': ko}, '6.12.118',
						       self.dir / 'System.map')
		return deps, unknown, seen

	def test_dependencies_of_the_files_at_their_paths(self):
		deps, unknown, seen = self.run_with('')
		self.assertEqual(['gki/b.ko', 'vendor/v/a.ko'], seen)
		self.assertEqual({'vendor/v/a.ko': ['gki/b.ko'], 'gki/b.ko': []}, deps)
		self.assertEqual({}, unknown)

	def test_unknown_symbols_by_module(self):
		_, unknown, _ = self.run_with(
			'depmod: WARNING: {top}/vendor/v/a.ko needs unknown symbol ieee80211_free_hw\n'
			'depmod: WARNING: {top}/vendor/v/a.ko needs unknown symbol wiphy_free\n')
		self.assertEqual({'vendor/v/a.ko': ['ieee80211_free_hw', 'wiphy_free']}, unknown)


class RealDepmodTest(Tmp):
	"""stage_load with the real depmod, on objects the pinned clang makes
	that depmod reads as modules: a set's module needing a GKI module's
	export, and one needing a symbol nothing defines."""
	MAP = 'ffff800080000000 r __ksymtab_printk\n'

	def setUp(self) -> None:
		super().setUp()
		clang = toolchain.LLVM_BIN / 'clang'
		prereq.require(None if clang.exists() else f'{clang} is missing', 'the depmod test')
		self.clang = clang
		self.mods = self.dir / 'modules'
		self.module('gki/cfg80211.ko', 'int wiphy_new(void) { return 1; }', 'wiphy_new')
		self.write('System.map', self.MAP)
		(self.dir / 'v').mkdir()
		self.mod = ExtModule('v', 'vendor', self.dir / 'v')

	def module(self, rel: str, code: str, exports: str = '') -> None:
		"""An object with code, its exports named as a 6.12 module names
		them (__ksymtab_strings), at modules/rel."""
		src = self.write(rel + '.c', code + '\n__attribute__((section(".modinfo"))) '
				 'const char info[] = "license=GPL";\n' +
				 (f'__attribute__((section("__ksymtab_strings"))) const char ks[] = '
				  f'"{exports}";\n' if exports else ''))
		(self.mods / rel).parent.mkdir(parents=True, exist_ok=True)
		subprocess.run([str(self.clang), '--target=aarch64-linux-gnu', '-c', str(src), '-o',
				str(self.mods / rel)], check=True)
		src.unlink()

	def test_the_gki_module_a_set_needs_is_in_its_modules_dep(self):
		self.module('vendor/v/hwsim.ko', 'extern int wiphy_new(void);\n'
			    'int probe(void) { return wiphy_new(); }')
		self.write(f'v/{modules.LOAD}', 'hwsim.ko\n')
		modules.stage_load(self.mod, self.mods, '6.12.118', self.dir / 'System.map')
		self.assertEqual('gki/cfg80211.ko:\nvendor/v/hwsim.ko: gki/cfg80211.ko\n',
				 (self.mods / 'vendor' / 'v' / modules.DEP).read_text())

	def test_a_symbol_no_shipped_module_exports_fails(self):
		self.module('vendor/v/hwsim.ko', 'extern int ieee80211_free_hw(void);\n'
			    'int probe(void) { return ieee80211_free_hw(); }')
		self.write(f'v/{modules.LOAD}', 'hwsim.ko\n')
		with self.assertRaisesRegex(GkiError, r'vendor/v/hwsim\.ko needs ieee80211_free_hw'):
			modules.stage_load(self.mod, self.mods, '6.12.118', self.dir / 'System.map')


if __name__ == '__main__':
	unittest.main()
