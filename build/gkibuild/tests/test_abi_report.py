# SPDX-License-Identifier: GPL-2.0
"""The ABI gate's reading of abidiff, on recorded reports: no kernel build.

Every report under abidiff/ is real output of the installed abigail-tools
with the gate's flags (abidiff/make_fixtures.sh regenerates them): a small
library changed one way at a time, and the kernel baseline abi/gki.xml
against edited copies of itself.  The parser must classify each kind; what
it cannot classify, and what abidiff's exit status signals but the report
does not show, must fail the gate with the raw report (test_abi_verdict.py
tests what the gate then decides)."""

from __future__ import annotations

import dataclasses
import unittest
from pathlib import Path

from gkibuild.abi import abidiff

FIXTURES = Path(__file__).resolve().parent / 'abidiff'
LZ4 = "'function int LZ4_decompress_safe(const char*, char*, int, int)' at lz4_decompress.c:460:1"
UTS = "'uts_namespace init_uts_ns' was changed at version-timestamp.c:10:1:"
POINT = "'struct point at lib.c:8:1' changed:"
MODE = "'enum mode at lib.c:30:1' changed:"
COLOR = "'enum color at lib.c:20:1' changed:"
SCALE = "[C] 'function long int scale(int)' at lib.c:51:1 has some sub-type changes:"
COUNTER = "[C] 'int counter' was changed to 'long int counter' at lib.c:74:1:"
TWIN_B = "'struct twin at twin_b.c:7:1' changed:"


def recorded(name: str) -> tuple[int, str]:
	"""A recorded abidiff run: its exit status and its report."""
	return int((FIXTURES / f'{name}.rc').read_text()), (FIXTURES / f'{name}.report').read_text()


@dataclasses.dataclass(frozen=True)
class Expect:
	"""How a recorded report must be classified; changed holds the first
	line of each changed block, in the report's order."""
	rc: int
	changed: tuple[str, ...] = ()
	removed: tuple[str, ...] = ()
	added: tuple[str, ...] = ()
	unclassified: bool = False


# Every recorded report and its classification.  The exit statuses are part
# of the record: a struct change sets only "changed" (4), a removal also
# "incompatible" (8), which is why the gate reads the report.
EXPECTED = {
	'unchanged': Expect(0),
	'struct-member-added': Expect(4, changed=(POINT,)),
	'struct-member-resized': Expect(4, changed=(POINT,)),
	'parameter-type-changed': Expect(4, changed=(SCALE,)),
	'function-removed': Expect(12, removed=('gone',)),
	'function-added': Expect(4, added=('fresh',)),
	'variable-removed': Expect(12, removed=('spare',)),
	'variable-added': Expect(4, added=('extra',)),
	'variable-type-changed': Expect(4, changed=(COUNTER,)),
	# libabigail 2.2 files an enumerator's addition as harmless and filters
	# it by default; --harmless shows it.
	'enum-enumerator-added': Expect(4, changed=(COLOR,)),
	'enum-enumerator-renumbered': Expect(4, changed=(MODE,)),
	'enum-enumerator-removed': Expect(4, changed=(COLOR,)),
	# A suppression the gate did not ask for hid the change: exit 0.
	'suppressed-struct': Expect(0, unclassified=True),
	'nodebug-symbol-removed': Expect(12, removed=('raw_copy',)),
	'nodebug-symbol-added': Expect(4, added=('raw_fill',)),
	'combined': Expect(12, changed=(SCALE, COUNTER, COLOR, MODE, POINT),
			   removed=('gone', 'spare'), added=('extra', 'fresh', 'raw_fill')),
	'soname-changed': Expect(12, unclassified=True),
	# Both struct twin changed; libabigail 2.2's leaf report shows one.
	'same-named-types': Expect(4, changed=(TWIN_B,)),
	'kernel-crc-only-function': Expect(4, changed=(f'[C] {LZ4} has some sub-type changes:',)),
	'kernel-crc-only-variable': Expect(4, changed=(f'[C] {UTS}',)),
	'kernel-parameter-type-changed': Expect(4, changed=(
		f'[C] {LZ4} has some sub-type changes:',)),
	'kernel-struct-resized': Expect(4, changed=(
		f'[C] {UTS}', "'struct uts_namespace at utsname.h:24:1' changed:")),
	'kernel-asm-export-removed': Expect(12, removed=('__arch_copy_from_user',)),
	'kernel-namespace-added': Expect(4, changed=(
		"[C] 'function int ___ratelimit(ratelimit_state*, const char*)' at ratelimit.c:27:1 "
		'has some sub-type changes:',)),
}


def block(report: abidiff.Report, head: str) -> str:
	"""The changed block whose first line is head."""
	found = [b for b in report.changed if b.splitlines()[0].strip() == head]
	if len(found) != 1:
		raise AssertionError(f'{len(found)} blocks start with {head!r}: {report.changed}')
	return found[0]


class ReportTest(unittest.TestCase):
	def classify(self, name: str) -> abidiff.Report:
		rc, text = recorded(name)
		return abidiff.classify(text, rc)

	def test_every_recorded_report_has_an_expectation(self):
		names = {p.stem for p in FIXTURES.glob('*.report')}
		self.assertEqual(set(EXPECTED), names)
		self.assertEqual(names, {p.stem for p in FIXTURES.glob('*.rc')})

	def test_each_recorded_report_is_classified(self):
		for name, want in EXPECTED.items():
			with self.subTest(name):
				rc, text = recorded(name)
				r = abidiff.classify(text, rc)
				self.assertEqual(want.rc, rc)
				self.assertEqual(list(want.changed),
						 [b.splitlines()[0].strip() for b in r.changed])
				self.assertEqual(sorted(want.removed), sorted(r.removed))
				self.assertEqual(sorted(want.added), sorted(r.added))
				self.assertEqual(want.unclassified, bool(r.unclassified),
						 r.unclassified)

	def test_struct_member_insertion_is_one_block_with_its_interfaces(self):
		b = block(self.classify('struct-member-added'), POINT)
		self.assertIn("'int z', at offset 64 (in bits)", b)
		self.assertIn('function int move(point*, int)', b)

	def test_resized_member_keeps_its_offset_change(self):
		b = block(self.classify('struct-member-resized'), POINT)
		self.assertIn("type 'int' of 'point::y' changed:", b)
		self.assertIn('and offset changed from 32 to 64 (in bits)', b)

	def test_parameter_type_change_is_in_its_function_block(self):
		b = block(self.classify('parameter-type-changed'), SCALE)
		self.assertIn("type name changed from 'int' to 'long int'", b)

	def test_enumerator_renumbering_names_the_value(self):
		b = block(self.classify('enum-enumerator-renumbered'), MODE)
		self.assertIn("'mode::MODE_B' from value '2' to '5'", b)

	def test_enumerator_addition_and_removal_name_the_value(self):
		b = block(self.classify('enum-enumerator-added'), COLOR)
		self.assertIn("1 enumerator insertion:", b)
		self.assertIn("'color::BLUE' value '2'", b)
		b = block(self.classify('enum-enumerator-removed'), COLOR)
		self.assertIn("1 enumerator deletion:", b)
		self.assertIn("'color::GREEN' value '1'", b)

	def test_a_filtered_change_fails_closed(self):
		"""Nothing is suppressed on purpose, so a change abidiff counts as
		filtered out came from a suppression file the gate did not give."""
		r = self.classify('suppressed-struct')
		self.assertEqual([], r.changed)
		self.assertTrue(any('filtered 1 change(s) out' in u for u in r.unclassified),
				r.unclassified)

	def test_crc_only_block_is_a_change(self):
		b = block(self.classify('kernel-crc-only-function'),
			  f'[C] {LZ4} has some sub-type changes:')
		self.assertIn('CRC (modversions) changed from 0xc7c1107a to 0x329f0514', b)
		b = block(self.classify('kernel-crc-only-variable'), f'[C] {UTS}')
		self.assertIn('CRC (modversions) changed from 0xb72a650c to 0x12345678', b)

	def test_kernel_parameter_change_carries_crc_and_type(self):
		b = block(self.classify('kernel-parameter-type-changed'),
			  f'[C] {LZ4} has some sub-type changes:')
		self.assertIn('CRC (modversions) changed', b)
		self.assertIn("parameter 4 of type 'int' changed:", b)

	def test_impacted_interfaces_stay_inside_their_block(self):
		r = self.classify('kernel-struct-resized')
		self.assertIn('97 impacted interfaces:', block(r, f'[C] {UTS}'))
		self.assertIn('function int wake_up_process(task_struct*)', block(r, f'[C] {UTS}'))
		self.assertEqual(2, len(r.changed))

	def test_combined_report_keeps_sections_apart(self):
		r = self.classify('combined')
		scale = block(r, SCALE)
		self.assertNotIn('Removed variable', scale)
		self.assertNotIn("'enum mode", block(r, COUNTER))
		self.assertNotIn("'struct point", block(r, MODE))

	def test_unknown_lines_fail_closed(self):
		r = self.classify('soname-changed')
		self.assertTrue(any('SONAME changed from' in u for u in r.unclassified),
				r.unclassified)

	def test_status_without_a_listed_change_fails_closed(self):
		_, nothing = recorded('unchanged')
		for rc in (abidiff.ABIDIFF_CHANGE, abidiff.ABIDIFF_CHANGE | abidiff.ABIDIFF_INCOMPATIBLE):
			with self.subTest(rc=rc):
				self.assertTrue(abidiff.classify('', rc).unclassified)
				self.assertTrue(abidiff.classify(nothing, rc).unclassified)

	def test_report_is_read_whatever_the_status_says(self):
		_, text = recorded('struct-member-added')
		r = abidiff.classify(text, 0)
		self.assertEqual([POINT], [b.splitlines()[0] for b in r.changed])

	def test_incompatible_status_without_a_break_fails_closed(self):
		rc, text = recorded('function-added')
		self.assertFalse(abidiff.classify(text, rc).unclassified)
		self.assertTrue(abidiff.classify(text, rc | abidiff.ABIDIFF_INCOMPATIBLE).unclassified)

	def test_edited_reports_fail_closed(self):
		"""Real reports with one thing the parser must not pass over."""
		edits = (
			('an entry gone', 'combined', "  [A] 'int extra'    {extra}\n", ''),
			('a heading counting more entries than it lists', 'function-added',
			 '1 Added function:', '2 Added functions:'),
			('an entry naming no symbol', 'combined', '    {extra}', ''),
			('an entry marked for another section', 'function-removed', '[D]', '[A]'),
			('a heading the parser does not know', 'kernel-asm-export-removed',
			 'Removed function symbol not referenced by debug info:',
			 'Removed function symbol of another kind:'),
		)
		for why, name, old, new in edits:
			with self.subTest(why):
				rc, text = recorded(name)
				self.assertEqual([], abidiff.classify(text, rc).unclassified)
				self.assertIn(old, text)
				edited = abidiff.classify(text.replace(old, new), rc)
				self.assertTrue(edited.unclassified)

	def test_report_missing_a_leaf_type_fails_closed(self):
		rc, text = recorded('combined')
		cut = text[:text.index(POINT)]
		self.assertTrue(abidiff.classify(cut, rc).unclassified)

	def test_report_without_its_summary_fails_closed(self):
		rc, text = recorded('struct-member-added')
		body = text[text.index(POINT):]
		self.assertTrue(abidiff.classify(body, rc).unclassified)


if __name__ == '__main__':
	unittest.main()
