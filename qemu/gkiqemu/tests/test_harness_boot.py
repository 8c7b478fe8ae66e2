# SPDX-License-Identifier: GPL-2.0
"""The harness's own failure paths, on a real boot of the built GKI: a
kernel warning, a guest that never powers off and a scratch disk that does
not mount must fail a run."""

import io
import tempfile
import unittest
from pathlib import Path

from gkibuild import testrun
from gkibuild.layout import VARIANTS, Layout, Variant
from gkibuild.tests import prereq
from gkiqemu import boot, initramfs, ktap, runner

LAYOUT = Layout.default()
RELEASE = VARIANTS['release']
DEBUG = VARIANTS['debug']
MODULE = '/modules/test/test_module/gki_test_module.ko'
KTAP_OK = 'echo "TAP version 13"; echo "1..1"; echo "ok 1 loaded"\n'
# The debug cases need the debug build, which `gki test` may still be
# making while the other host tests run (testrun.host_tests).
NEEDS_EVERY_VARIANT = True


def built(v: Variant) -> bool:
	return ((LAYOUT.dist(v) / 'Image').exists() and
		(LAYOUT.obj(v) / 'usr' / 'gen_init_cpio').exists())


class HarnessBootTest(unittest.TestCase):
	variant = RELEASE

	@classmethod
	def setUpClass(cls):
		# Checked when the class runs, not when it is imported: the
		# build may finish between the two.
		prereq.require(None if built(cls.variant) else f'the {cls.variant.name} GKI is not '
			       f'built', 'the harness boot tests')

	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.dir = Path(self.tmp.name)

	def tearDown(self):
		self.tmp.cleanup()

	def script(self, name: str, body: str) -> Path:
		p = self.dir / name
		p.write_text('#!/bin/sh\n' + body)
		p.chmod(0o755)
		return p

	def boot_with(self, script: Path, timeout_s: int, suite_timeout_s: int,
		      scratch: Path | None = None) -> boot.Boot:
		v = self.variant
		# An initramfs of its own: `gki test` may be booting the
		# variant's standard one meanwhile (background.py).
		gdir = self.dir / 'guest'
		initrd = testrun.prepare(LAYOUT, v, [script], gdir=gdir)
		# Only the script: the standard suites are not what is tested here.
		lst = gdir / 'initramfs.list'
		spec = lst.read_text().replace(f'{gdir}/etc/test', str(self.dir / 'list'))
		(self.dir / 'list').write_text(f'/tests/{script.name}\n')
		lst.write_text(spec)
		initramfs.cpio_from_spec(testrun.initramfs_inputs(LAYOUT, v).gen_init_cpio, gdir)
		cmd = boot.command(LAYOUT.dist(v) / 'Image', initrd, v.qemu_mem_mb,
				   f'gki.mode=test gki.suite_timeout={suite_timeout_s}', scratch)
		return boot.run(cmd, self.dir / 'console.log', timeout_s)

	def kernel_report(self, b: boot.Boot) -> str:
		"""The detail of the failed 'kernel log clean' outcome."""
		self.assertTrue(b.finished, b.console[-2000:])
		tally = runner.Tally(io.StringIO())
		runner.evaluate(self.variant, [b], tally)
		failed = {o.name: o.detail for o in tally.outcomes if o.status == ktap.Status.FAIL}
		self.assertIn(f'{self.variant.name}: kernel log clean', failed)
		return failed[f'{self.variant.name}: kernel log clean']

	def test_kernel_warning_fails_the_run(self):
		s = self.script('warn_on_load', f'insmod {MODULE} warn_on_load=1\n'
				'rmmod gki_test_module\n' + KTAP_OK)
		self.assertIn('WARN: ', self.kernel_report(self.boot_with(s, 120, 60)))

	def test_hung_suite_and_its_children_are_killed(self):
		s = self.script('hang_with_child', 'sleep 1000 &\nsleep 1000\n')
		b = self.boot_with(s, RELEASE.qemu_timeout_s, 3)
		self.assertTrue(b.finished, b.console[-2000:])
		tally = runner.Tally(io.StringIO())
		runner.evaluate(RELEASE, [b], tally)
		self.assertIn(('release: hang_with_child', ktap.Status.FAIL),
			      [(o.name, o.status) for o in tally.outcomes])
		self.assertIn('killed: timeout of 3 s', b.console)

	def test_a_suite_that_exits_non_zero_fails_though_its_cases_passed(self):
		"""/init judges a suite by its exit status too: 0 passes, 4
		skips, anything else fails, whatever KTAP it printed."""
		b = self.boot_with(self.script('exits_1', KTAP_OK + 'exit 1\n'), 120, 60)
		self.assertTrue(b.finished, b.console[-2000:])
		tally = runner.Tally(io.StringIO())
		runner.evaluate(RELEASE, [b], tally)
		self.assertIn(('release: exits_1', ktap.Status.FAIL),
			      [(o.name, o.status) for o in tally.outcomes])
		self.assertIn('not ok 1 exits_1 # exit status 1', b.console)

	def test_scratch_disk_that_does_not_mount_fails_the_run(self):
		"""A disk that is there but holds no ext4: /init bails out of its
		KTAP document instead of running suites that would skip."""
		disk = self.dir / 'zeros.img'
		with disk.open('wb') as f:
			f.truncate(8 << 20)
		b = self.boot_with(self.script('fine', KTAP_OK), 120, 60, disk)
		self.assertTrue(b.finished, b.console[-2000:])
		tally = runner.Tally(io.StringIO())
		runner.evaluate(RELEASE, [b], tally)
		failed = {o.name: o.detail for o in tally.outcomes if o.status == ktap.Status.FAIL}
		self.assertEqual('Bail out! the scratch disk /dev/vda did not mount on /mnt/scratch',
				 failed.get('release: harness'), failed)

	def test_guest_that_never_powers_off_is_killed(self):
		s = self.script('hang', 'sleep 1000\n')
		b = self.boot_with(s, 8, 600)
		self.assertTrue(b.timed_out)
		tally = runner.Tally(io.StringIO())
		runner.evaluate(RELEASE, [b], tally)
		self.assertIn(('release: power-off', ktap.Status.FAIL),
			      [(o.name, o.status) for o in tally.outcomes])



class DebugHarnessBootTest(HarnessBootTest):
	"""KASAN, UBSAN and kmemleak reports, which only the debug variant
	makes."""
	variant = DEBUG

	def test_kasan_ubsan_and_kmemleak_reports_fail_the_run(self):
		s = self.script('fault_on_load', f'insmod {MODULE} oob_on_load=1 leak_on_load=1 '
				'ubsan_on_load=1\nrmmod gki_test_module\n' + KTAP_OK)
		report = self.kernel_report(self.boot_with(s, DEBUG.qemu_timeout_s, 120))
		self.assertIn('BUG: KASAN: slab-out-of-bounds', report)
		self.assertIn('UBSAN: shift-out-of-bounds', report)
		self.assertIn('kmemleak: unreferenced object', report)

	# The generic cases ran on the release variant already.
	test_hung_suite_and_its_children_are_killed = None
	test_guest_that_never_powers_off_is_killed = None
	test_kernel_warning_fails_the_run = None
	test_scratch_disk_that_does_not_mount_fails_the_run = None


if __name__ == '__main__':
	unittest.main()
