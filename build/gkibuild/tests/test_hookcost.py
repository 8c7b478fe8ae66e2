# SPDX-License-Identifier: GPL-2.0
"""bench --against-unhooked's own logic, without a build or a boot: the
edit that takes the vendor hook call sites out (against the patch series:
it must give back exactly the upstream lines), the rounds' medians and
ratios.  The campaign itself boots QEMU a dozen times and is a documented
command (BUILD.md), not a test."""

from __future__ import annotations

import re
import unittest
from pathlib import Path

from gkibuild import hookcost
from gkibuild.hookcost import HOOKED, UNHOOKED, CallSite
from gkibuild.layout import Layout
from gkibuild.util import GkiError
from gkiqemu import boot

LAYOUT = Layout.default()
_HUNK = re.compile(r'^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@')


def series_hunks() -> list[tuple[str, str, str]]:
	"""(path, old text, new text) of every hunk of common/patches/, in
	series order."""
	pdir = LAYOUT.common / 'patches'
	names = [l.strip() for l in (pdir / 'series').read_text().splitlines()
		 if l.strip() and not l.startswith('#')]
	hunks = []
	for name in names:
		lines = (pdir / name).read_text().splitlines(keepends=True)
		path, i = '', 0
		while i < len(lines):
			if lines[i].startswith('+++ '):
				path = lines[i][4:].strip().removeprefix('b/')
			m = _HUNK.match(lines[i])
			i += 1
			if not m:
				continue
			old_n, new_n = int(m.group(1) or 1), int(m.group(2) or 1)
			old, new = [], []
			while old_n or new_n:
				line = lines[i]
				i += 1
				kind, text = line[0], line[1:]
				if kind in ' -':
					old.append(text)
					old_n -= 1
				if kind in ' +':
					new.append(text)
					new_n -= 1
			hunks.append((path, ''.join(old), ''.join(new)))
	return hunks


class SitesTest(unittest.TestCase):
	"""SITES against the series: removing a site's blocks from the hunk
	that adds its calls gives back the hunk's upstream side, line for
	line, and no call the series adds is missing from SITES."""

	def test_removal_gives_back_the_upstream_lines(self) -> None:
		sites = {s.path: s for s in hookcost.SITES}
		seen = set()
		for path, old, new in series_hunks():
			if not hookcost.calls(new):
				continue
			with self.subTest(path):
				self.assertIn(path, sites, f'the series adds a hook call to {path}; '
					      'add it to hookcost.SITES')
				self.assertEqual(old, hookcost.remove_call_sites(sites[path], new))
				seen.add(path)
		self.assertEqual(set(sites), seen, 'sites without a call in the series')


SITE = CallSite('kernel/x.c', 'kernel/x.o',
		('\tbool allowed = true;\n',
		 '\ttrace_android_rvh_x(p, &allowed);\n\tif (!allowed)\n\t\treturn;\n'))
HOOKED_TEXT = '''void x(struct task_struct *p)
{
	int old;
	bool allowed = true;

	trace_android_rvh_x(p, &allowed);
	if (!allowed)
		return;
	if (old)
		return;
}
'''
UPSTREAM_TEXT = '''void x(struct task_struct *p)
{
	int old;

	if (old)
		return;
}
'''


class RemoveTest(unittest.TestCase):
	def test_removes_exactly_the_blocks(self) -> None:
		self.assertEqual(UPSTREAM_TEXT, hookcost.remove_call_sites(SITE, HOOKED_TEXT))

	def test_a_missing_call_site_fails(self) -> None:
		text = HOOKED_TEXT.replace('trace_android_rvh_x(p, &allowed)',
					   'trace_android_rvh_x(p, &allowed, 0)')
		with self.assertRaisesRegex(GkiError, r'kernel/x.c: the call site '
					    r'"trace_android_rvh_x\(p, &allowed\);" occurs 0 times'):
			hookcost.remove_call_sites(SITE, text)

	def test_a_block_twice_fails(self) -> None:
		text = HOOKED_TEXT + HOOKED_TEXT.split('{', 1)[1]
		with self.assertRaisesRegex(GkiError, 'occurs 2 times, expected once'):
			hookcost.remove_call_sites(SITE, text)

	def test_a_block_inside_a_line_does_not_count(self) -> None:
		text = HOOKED_TEXT.replace('\tbool allowed', '\tint y;\tbool allowed')
		with self.assertRaisesRegex(GkiError, 'occurs 0 times'):
			hookcost.remove_call_sites(SITE, text)

	def test_a_call_left_over_fails(self) -> None:
		text = HOOKED_TEXT.replace('\tif (old)', '\ttrace_android_vh_y(p);\n\tif (old)')
		with self.assertRaisesRegex(GkiError, 'trace_android_vh_y left after removing'):
			hookcost.remove_call_sites(SITE, text)

	def test_calls_are_not_registrations(self) -> None:
		text = ('register_trace_android_vh_a(f, NULL);\n'
			'unregister_trace_android_rvh_b(f, NULL);\n'
			'\ttrace_android_vh_c (m);\n'
			'\tif (x) trace_android_rvh_d(p);\n')
		self.assertEqual(['trace_android_vh_c', 'trace_android_rvh_d'], hookcost.calls(text))


def records(**figures: float) -> list[dict]:
	"""BENCH records; a name ending in _attached names its baseline."""
	out = []
	for name, value in figures.items():
		r = {'name': name, 'value': value, 'unit': 'ns'}
		if name.endswith('_attached'):
			r['baseline'] = name.removesuffix('_attached')
		out.append(r)
	return out


class SummaryTest(unittest.TestCase):
	def test_boots_alternate(self) -> None:
		self.assertEqual([HOOKED, UNHOOKED] * 3, hookcost.boot_order(3))

	def test_medians_and_ratios(self) -> None:
		hooked = [100, 104, 101]	# median 101
		unhooked = [100, 99, 98]	# median 99
		attached = [110, 112, 111]	# median 111
		boots = []
		for h, u, a in zip(hooked, unhooked, attached):
			boots.append((HOOKED, records(x_ns=h, x_ns_attached=a)))
			boots.append((UNHOOKED, records(x_ns=u, x_ns_attached=u)))
		x, xa = hookcost.summarize(boots)
		self.assertEqual(('x_ns', 'ns', None), (x.name, x.unit, x.baseline))
		self.assertEqual({HOOKED: 101, UNHOOKED: 99}, x.median)
		self.assertAlmostEqual(101 / 99, x.ratio)
		self.assertEqual([1.0, 104 / 99, 101 / 98], x.round_ratios)
		self.assertEqual({}, x.to_baseline)
		self.assertEqual('x_ns', xa.baseline)
		self.assertAlmostEqual(111 / 99, xa.ratio)
		self.assertAlmostEqual(111 / 101, xa.to_baseline[HOOKED])
		self.assertAlmostEqual(1.0, xa.to_baseline[UNHOOKED])
		text = hookcost.table([x, xa], 3)
		self.assertIn('x_ns_attached / x_ns', text)
		self.assertRegex(text, r'x_ns +ns +101\.0 +99\.0 +1\.020  1\.000-1\.051')

	def test_a_figure_missing_from_a_boot_fails(self) -> None:
		boots = [(HOOKED, records(a=1, b=2)), (UNHOOKED, records(a=1))]
		with self.assertRaisesRegex(GkiError, r'boot 2 \(unhooked\) reported 1 figures; '
					    'missing: b'):
			hookcost.summarize(boots)

	def test_a_figure_reported_twice_fails(self) -> None:
		boots = [(HOOKED, records(a=1)), (UNHOOKED, records(a=1) + records(a=2))]
		with self.assertRaisesRegex(GkiError, 'boot 2 .*repeated: a'):
			hookcost.summarize(boots)

	def test_a_boot_without_figures_fails(self) -> None:
		with self.assertRaisesRegex(GkiError, r'boot 1 \(hooked\) reported 0 figures'):
			hookcost.summarize([(HOOKED, []), (UNHOOKED, records(a=1))])

	def test_rounds_need_both_kernels(self) -> None:
		boots = [(HOOKED, records(a=1)), (UNHOOKED, records(a=1)), (HOOKED, records(a=1))]
		with self.assertRaisesRegex(GkiError, '2 hooked and 1 unhooked boots'):
			hookcost.summarize(boots)

	def test_a_baseline_not_reported_fails(self) -> None:
		boots = [(k, records(a_attached=1)) for k in (HOOKED, UNHOOKED)]
		with self.assertRaisesRegex(GkiError, 'a_attached: its baseline a was not reported'):
			hookcost.summarize(boots)


class IcountTest(unittest.TestCase):
	def test_the_harness_command_gets_the_instruction_clock(self) -> None:
		cmd = boot.command(Path('Image'), Path('initrd'), 1024, 'gki.mode=bench', None)
		got = hookcost.icount_command(cmd)
		want = list(cmd)
		want[cmd.index('-smp') + 1] = '1'
		i = cmd.index('-accel')
		want[i:i + 2] = ['-accel', 'tcg', '-icount', 'shift=0,sleep=off']
		self.assertEqual(want, got)
		self.assertNotIn('tcg,thread=multi', got)

	def test_a_command_without_tcg_or_smp_fails(self) -> None:
		with self.assertRaisesRegex(GkiError, 'no single "-accel tcg..."'):
			hookcost.icount_command(['qemu-system-aarch64', '-accel', 'kvm', '-smp', '2'])
		with self.assertRaisesRegex(GkiError, 'no single "-smp ..."'):
			hookcost.icount_command(['qemu-system-aarch64', '-accel', 'tcg'])


if __name__ == '__main__':
	unittest.main()
