# SPDX-License-Identifier: GPL-2.0
"""skips.py: under CI a skip is a failure unless its reason names the
kernel options it needs and its variant's .config lacks them all."""

import io
import unittest

from gkibuild import skips
from gkiqemu.ktap import Status as S
from gkiqemu.runner import Tally

CONFIGS = {
	'release': 'CONFIG_BPF=y\nCONFIG_ZRAM=m\n# CONFIG_BPF_EVENTS is not set\n',
	'debug': 'CONFIG_BPF=y\nCONFIG_BPF_EVENTS=y\n',
}
BPF = 'no BPF raw tracepoints in this kernel (CONFIG_BPF_EVENTS)'


class RefusalTest(unittest.TestCase):
	def test_an_option_the_variant_lacks_is_accepted(self):
		self.assertIsNone(skips.refusal('release: vendor_hooks: bpf.a', BPF, CONFIGS))

	def test_an_option_the_variant_has_is_refused_naming_it(self):
		why = skips.refusal('debug: vendor_hooks: bpf.a', BPF, CONFIGS)
		self.assertEqual('CONFIG_BPF_EVENTS is set in the debug configuration', why)

	def test_a_module_option_counts_as_set(self):
		why = skips.refusal('release: s: c', 'needs CONFIG_ZRAM', CONFIGS)
		self.assertIn('CONFIG_ZRAM is set', why)

	def test_a_prefix_of_a_set_option_is_not_that_option(self):
		# CONFIG_BPF=y does not prove CONFIG_BPF_EVENTS present, nor the
		# reverse.
		self.assertIsNone(skips.refusal('release: s: c', 'needs CONFIG_BPF_EVENTS',
						{'release': 'CONFIG_BPF_EVENTS_X=y\nCONFIG_BPF=y\n'}))

	def test_every_named_option_must_be_missing(self):
		why = skips.refusal('release: s: c', 'needs CONFIG_BPF_EVENTS and CONFIG_BPF', CONFIGS)
		self.assertEqual('CONFIG_BPF is set in the release configuration', why)

	def test_a_reason_naming_no_option_is_refused(self):
		why = skips.refusal('release: incfs_data: c', '/mnt/scratch is not an ext4 mount',
				    CONFIGS)
		self.assertIn('names the CONFIG_ options', why)

	def test_a_host_test_or_unknown_variant_is_refused(self):
		for name in ('host: T.test_x', 'other: s: c'):
			with self.subTest(name=name):
				why = skips.refusal(name, 'needs CONFIG_BPF_EVENTS', CONFIGS)
				self.assertIn('no kernel configuration of', why)


class EnforceTest(unittest.TestCase):
	def test_refused_skips_become_failures_and_accepted_ones_stay(self):
		out = io.StringIO()
		t = Tally(out)
		t.add('release: s: ok', S.PASS)
		t.add('release: vendor_hooks: bpf.a', S.SKIP, BPF)
		t.add('debug: vendor_hooks: bpf.a', S.SKIP, BPF)
		t.add('release: incfs_data: c', S.SKIP, 'no scratch disk')
		self.assertEqual(2, skips.enforce(t, CONFIGS))
		got = {(o.name, o.status) for o in t.outcomes}
		self.assertEqual({('release: s: ok', S.PASS), ('release: vendor_hooks: bpf.a', S.SKIP),
				  ('debug: vendor_hooks: bpf.a', S.FAIL),
				  ('release: incfs_data: c', S.FAIL)}, got)
		self.assertIn('  FAIL  release: incfs_data: c  (fail: skipped under CI (no scratch '
			      'disk): CI accepts a skip only', out.getvalue())
		self.assertEqual(1, t.close())

	def test_nothing_to_refuse_changes_nothing(self):
		t = Tally(io.StringIO())
		t.add('release: s: ok', S.PASS)
		t.add('release: vendor_hooks: bpf.a', S.SKIP, BPF)
		self.assertEqual(0, skips.enforce(t, CONFIGS))
		self.assertEqual(0, t.close())


if __name__ == '__main__':
	unittest.main()
