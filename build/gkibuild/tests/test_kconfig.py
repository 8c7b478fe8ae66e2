# SPDX-License-Identifier: GPL-2.0
import re
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from gkibuild import kconfig, toolchain
from gkibuild.kernel import Kernel
from gkibuild.layout import Layout, Variant
from gkibuild.tests import prereq
from gkibuild.util import GkiError

REAL = Layout.default()


class ParseTest(unittest.TestCase):
	def test_set_unset_and_strings(self):
		opts = kconfig.parse('CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C="x y"\n'
				     '# a comment\nCONFIG_D=m\nCONFIG_A=n\n')
		self.assertEqual({'CONFIG_A': 'n', 'CONFIG_B': 'n', 'CONFIG_C': '"x y"',
				  'CONFIG_D': 'm'}, opts)

	def test_unmet_lists_each_difference(self):
		wanted = kconfig.parse('CONFIG_A=y\nCONFIG_B=m\n# CONFIG_C is not set\nCONFIG_D=4\n')
		have = kconfig.parse('CONFIG_A=y\nCONFIG_B=y\nCONFIG_D=8\n')
		self.assertEqual(['CONFIG_B=m (got y)', 'CONFIG_D=4 (got 8)'],
				 kconfig.unmet(wanted, have))

	def test_absent_option_is_not_set(self):
		self.assertEqual(['CONFIG_X=y (got not set)'],
				 kconfig.unmet({'CONFIG_X': 'y'}, {}))


def configure(fragment: str, base: str = 'allnoconfig') -> dict[str, str]:
	"""The .config the fragment gives over base, parsed."""
	with tempfile.TemporaryDirectory() as tmp:
		top, out = Path(tmp) / 'top', Path(tmp) / 'out'
		(top / 'common').mkdir(parents=True)
		(top / 'common' / 'test.config').write_text(fragment)
		(out / 'src').mkdir(parents=True)
		(out / 'src' / 'linux').symlink_to(REAL.src)
		(out / 'src' / 'stamp.json').write_text('{}')
		v = Variant('hosttest', ('test.config',), 0, 0, base=base)
		k = Kernel(Layout(top, out), v, toolchain.hermetic_env(), 2)
		k.configure()
		return kconfig.parse((k.obj / '.config').read_text())


class HandEditTest(unittest.TestCase):
	"""A .config edited by hand is not kept silently: the next configure
	writes it again from common/ and says so; an untouched one is not
	configured again."""

	def test_hand_edit_is_configured_again(self):
		require_tree()
		with tempfile.TemporaryDirectory() as tmp:
			top, out = Path(tmp) / 'top', Path(tmp) / 'out'
			(top / 'common').mkdir(parents=True)
			(top / 'common' / 'test.config').write_text('CONFIG_MODULES=y\n')
			(out / 'src').mkdir(parents=True)
			(out / 'src' / 'linux').symlink_to(REAL.src)
			(out / 'src' / 'stamp.json').write_text('{}')
			v = Variant('hosttest', ('test.config',), 0, 0)
			k = Kernel(Layout(top, out), v, toolchain.hermetic_env(), 2)
			first = k.configure()
			config = k.obj / '.config'
			written = config.stat().st_mtime_ns
			self.assertEqual(first, k.configure())
			self.assertEqual(written, config.stat().st_mtime_ns, 'configured again')
			config.write_text(config.read_text() + 'CONFIG_LOG_BUF_SHIFT=13\n')
			with mock.patch('gkibuild.kernel.info') as said:
				self.assertEqual(first, k.configure())
			self.assertIn('edited by hand', said.call_args.args[0])
			self.assertNotIn('CONFIG_LOG_BUF_SHIFT=13', config.read_text())


def require_tree() -> None:
	prereq.require(None if (REAL.src / 'Makefile').exists() else 'kernel tree not extracted',
		       'the Kconfig tests')


class RealKconfigTest(unittest.TestCase):
	"""Run the tree's own Kconfig on fragments, as the build does."""

	@classmethod
	def setUpClass(cls):
		require_tree()

	def configure(self, fragment: str) -> dict[str, str]:
		return configure(fragment)

	def test_option_without_prompt_is_caught(self):
		# LZ4_COMPRESS has no prompt: only a select can set it.
		with self.assertRaisesRegex(GkiError, r'CONFIG_LZ4_COMPRESS=y \(got not set\)'):
			self.configure('CONFIG_LZ4_COMPRESS=y\n')

	def test_option_with_missing_dependency_is_caught(self):
		with self.assertRaisesRegex(GkiError, r'CONFIG_VIRTIO_BLK=y \(got not set\)'):
			self.configure('CONFIG_VIRTIO_MMIO=y\nCONFIG_VIRTIO_BLK=y\n')

	def test_satisfiable_fragment_passes(self):
		self.configure('CONFIG_BLOCK=y\nCONFIG_BLK_DEV=y\nCONFIG_VIRTIO_MENU=y\n'
			       'CONFIG_VIRTIO_MMIO=y\nCONFIG_VIRTIO_BLK=y\n')


# What the GKI must build in (=y) or ship as a GKI module (=m): a few
# options that stand for each subsystem of its scope (BUILD.md,
# "Configuration").
SCOPE = {
	'core': 'CGROUPS MEMCG CPUSETS CGROUP_SCHED BLK_CGROUP CGROUP_FREEZER CGROUP_BPF '
		'UCLAMP_TASK_GROUP PSI BPF_SYSCALL BPF_JIT NAMESPACES USER_NS PID_NS NET_NS '
		'SECCOMP_FILTER SECURITY_SELINUX AUDIT KPROBES FTRACE ANDROID_VENDOR_HOOKS',
	'memory': 'ZSMALLOC CMA DMABUF_HEAPS DMABUF_HEAPS_SYSTEM DMABUF_HEAPS_CMA USERFAULTFD '
		  'KSM TRANSPARENT_HUGEPAGE ANON_VMA_NAME',
	'storage': 'VIRTIO_BLK SCSI SCSI_UFSHCD MMC BLK_DEV_DM DM_VERITY DM_CRYPT DM_LOG_WRITES '
		   'BLK_DEV_LOOP F2FS_FS EROFS_FS EXT4_FS FUSE_FS VFAT_FS EXFAT_FS OVERLAY_FS '
		   'FS_VERITY FS_ENCRYPTION FS_ENCRYPTION_INLINE_CRYPT BLK_INLINE_ENCRYPTION',
	'network': 'INET IPV6 NETFILTER NF_CONNTRACK IP_NF_IPTABLES IP6_NF_IPTABLES '
		   'NETFILTER_XT_MATCH_BPF NETFILTER_XT_MATCH_OWNER TUN BRIDGE VSOCKETS',
	'devices': 'DRM DRM_KMS_HELPER SND SND_SOC INPUT INPUT_EVDEV USB USB_GADGET USB_CONFIGFS '
		   'USB_CONFIGFS_F_FS TYPEC IIO REGMAP_I2C REGULATOR COMMON_CLK PINCTRL GPIOLIB '
		   'POWER_SUPPLY THERMAL PM_DEVFREQ CPU_FREQ CPU_FREQ_GOV_SCHEDUTIL CPU_IDLE '
		   'CPU_IDLE_GOV_TEO RTC_CLASS MEDIA_SUPPORT VIDEO_DEV REMOTEPROC RPMSG MAILBOX PCI',
}
GKI_MODULES = 'ZRAM CFG80211 MAC80211'
EXCLUDED = REAL.common / 'gki.config.excluded'


def excluded() -> dict[str, str]:
	"""gki.config.excluded: option -> why it is left out."""
	out = {}
	for line in EXCLUDED.read_text().splitlines():
		if line.strip() and not line.startswith('#'):
			opt, why = line.split(None, 1)
			out[opt] = why
	return out


GENERIC = 'gki.config'


class ScopeTest(unittest.TestCase):
	"""gki.config, over alldefconfig, is a GKI at real size."""

	@classmethod
	def setUpClass(cls):
		require_tree()
		fragment = (REAL.common / GENERIC).read_text()
		cls.config = configure(fragment, 'alldefconfig')

	def test_at_least_1900_options_are_built_in(self):
		self.assertGreaterEqual(sum(v == 'y' for v in self.config.values()), 1900)

	def test_each_subsystem_of_the_scope_is_built_in(self):
		for area, opts in SCOPE.items():
			for opt in opts.split():
				with self.subTest(area=area, opt=opt):
					self.assertEqual('y', self.config.get(f'CONFIG_{opt}'))

	def test_zram_and_wireless_are_gki_modules(self):
		for opt in GKI_MODULES.split():
			with self.subTest(opt):
				self.assertEqual('m', self.config.get(f'CONFIG_{opt}'))


class ExcludedTest(unittest.TestCase):
	"""gki.config.excluded names only options the tree does not have,
	each with a reason, and none of them is in gki.config."""

	def test_each_excluded_option_has_a_reason(self):
		for opt, why in excluded().items():
			with self.subTest(opt):
				self.assertRegex(opt, r'^CONFIG_[A-Z0-9_]+$')
				self.assertGreater(len(why.split()), 1)

	def test_no_excluded_option_is_in_the_fragment(self):
		frag = kconfig.parse((REAL.common / GENERIC).read_text())
		self.assertEqual([], sorted(set(excluded()) & set(frag)))

	def test_the_tree_defines_none_of_them(self):
		"""Once a patch brings one in, it belongs in gki.config.  CMDLINE
		exists upstream: it is left out for what Android sets it to."""
		require_tree()
		defined = set()
		for kc in REAL.src.rglob('Kconfig*'):
			for m in re.finditer(r'^\s*(?:menu)?config\s+(\w+)', kc.read_text(errors='replace'),
					     re.M):
				defined.add(f'CONFIG_{m.group(1)}')
		self.assertEqual([], sorted(set(excluded()) & defined - {'CONFIG_CMDLINE'}))


if __name__ == '__main__':
	unittest.main()
