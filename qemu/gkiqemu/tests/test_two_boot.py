# SPDX-License-Identifier: GPL-2.0
"""Two-boot tests on recorded consoles: a half that writes in boot 1 and
one that checks in boot 2 are one test, so the checking half fails when
the writing half did not pass; the skips that stand in for the other
boot's half are not results; a boot beyond MAX_BOOTS is a failure."""

import dataclasses
import io
import unittest
from pathlib import Path

from gkiqemu import boot, ktap, runner

LOGS = Path(__file__).parent / 'logs'
S = ktap.Status
CHECK = 'release: boot2: scratch_persist: global.data_readable_after_power_off'
LIFE_CHECK = 'release: boot2: incfs_lifetime: life.work_after_power_off_boot2_checks'
LOADER_CHECK = 'release: boot2: incfs_loader: ldr.app_64mib_runs_from_the_image_after_reboot'


@dataclasses.dataclass(frozen=True)
class Machine:
	"""A runner.Machine, as the build's release variant."""
	name: str = 'release'
	qemu_mem_mb: int = 1024
	qemu_timeout_s: int = 300


def recorded(name: str) -> boot.Boot:
	log = LOGS / name
	return boot.Boot(log.read_text(), log, 1.0, False, 0.5)


def evaluate(*logs: str) -> runner.Tally:
	"""The release variant's boots, one recorded console each."""
	tally = runner.Tally(io.StringIO())
	runner.evaluate(Machine(), [recorded(l) for l in logs], tally)
	return tally


def lines(tally: runner.Tally) -> list[tuple[str, ktap.Status]]:
	return [(o.name, o.status) for o in tally.outcomes]


def detail(tally: runner.Tally, name: str) -> str:
	return next(o.detail for o in tally.outcomes if o.name == name)


class TwoBootTest(unittest.TestCase):
	def test_both_halves_passing_are_two_passes_and_no_skip(self):
		tally = evaluate('two_boot_pass_boot1.log', 'two_boot_pass_boot2.log')
		self.assertEqual([
			('release: boot_smoke: global.release_matches_build', S.PASS),
			('release: scratch_persist: global.scratch_is_ext4_on_virtio_blk', S.PASS),
			('release: scratch_persist: global.data_written_before_power_off', S.PASS),
			('release: kernel log clean', S.PASS),
			('release: boot2: scratch_persist: global.scratch_is_ext4_on_virtio_blk', S.PASS),
			(CHECK, S.PASS),
			('release: boot2: kernel log clean', S.PASS)], lines(tally))
		self.assertEqual(0, tally.close())

	def test_check_fails_when_the_write_skipped_and_no_boot_followed(self):
		tally = evaluate('two_boot_write_skips_boot1.log')
		self.assertEqual([
			('release: incfs_lifetime: life.rmmod_while_mounted_fails', S.PASS),
			('release: incfs_lifetime: life.work_after_power_off_boot1_writes', S.SKIP),
			('release: kernel log clean', S.PASS),
			(LIFE_CHECK, S.FAIL)], lines(tally))
		why = detail(tally, LIFE_CHECK)
		self.assertIn('boot 2 never came', why)
		self.assertIn('life.work_after_power_off_boot1_writes: skip '
			      '(/mnt/scratch is not an ext4 mount)', why)

	def test_check_fails_when_the_write_skipped_and_another_suite_booted_again(self):
		tally = evaluate('two_boot_write_skips_other_queues_boot1.log',
				 'two_boot_pass_boot2.log')
		self.assertIn((LIFE_CHECK, S.FAIL), lines(tally))
		self.assertIn((CHECK, S.PASS), lines(tally))
		self.assertIn('not reported in boot 2', detail(tally, LIFE_CHECK))
		self.assertEqual(1, tally.count(S.SKIP))	# the write's own skip only

	def test_check_fails_when_the_write_failed_in_the_boot_before(self):
		tally = evaluate('two_boot_write_fails_boot1.log', 'two_boot_write_fails_boot2.log')
		self.assertEqual([
			('release: incfs_loader: ldr.dir_tree_with_hard_links', S.PASS),
			('release: incfs_loader: ldr.app_64mib_starts_while_loading_at_8mib_s', S.FAIL),
			('release: kernel log clean', S.PASS),
			('release: boot2: incfs_loader: ldr.dir_tree_with_hard_links', S.PASS),
			(LOADER_CHECK, S.FAIL),
			('release: boot2: kernel log clean', S.PASS)], lines(tally))
		self.assertIn('ldr.app_64mib_starts_while_loading_at_8mib_s: fail',
			      detail(tally, LOADER_CHECK))

	def test_check_skipped_in_its_own_boot_fails(self):
		tally = evaluate('two_boot_pass_boot1.log', 'two_boot_check_skips_boot2.log')
		self.assertIn((CHECK, S.FAIL), lines(tally))
		self.assertIn('skipped in boot 2', detail(tally, CHECK))

	def test_check_without_a_writing_half_fails(self):
		tally = evaluate('two_boot_no_writer_boot1.log', 'two_boot_no_writer_boot2.log')
		name = 'release: boot2: reboot_check: global.checks_after_reboot'
		self.assertIn((name, S.FAIL), lines(tally))
		self.assertIn('no test of reboot_check skips in boot 2 saying it belongs to boot 1',
			      detail(tally, name))

	def test_half_for_a_boot_beyond_the_maximum_fails(self):
		tally = evaluate('two_boot_fourth_boot.log')
		name = 'release: boot4: long_chain: global.checks_much_later'
		self.assertIn((name, S.FAIL), lines(tally))
		self.assertIn(f'beyond the runner\'s maximum of {runner.MAX_BOOTS} boots',
			      detail(tally, name))
		self.assertEqual(0, tally.count(S.SKIP))

	def test_asking_for_a_boot_beyond_the_maximum_fails(self):
		tally = evaluate(*['two_boot_requeues.log'] * runner.MAX_BOOTS)
		name = f'release: boot{runner.MAX_BOOTS}: next boot'
		self.assertIn((name, S.FAIL), lines(tally))
		self.assertIn(f'maximum of {runner.MAX_BOOTS} boots', detail(tally, name))


if __name__ == '__main__':
	unittest.main()
