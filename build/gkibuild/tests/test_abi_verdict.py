# SPDX-License-Identifier: GPL-2.0
"""The ABI gate's verdict and short report, on recorded abidiff reports: a
break, an enum change, an unrecorded addition and a report the gate cannot
classify each fail the build; an unchanged KMI and a recorded break pass.
gate.check runs for real, with abidw and abidiff replaced by a record from
abidiff/ (see test_abi_report.py) and Module.symvers written by the test."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path
from unittest import mock

from gkibuild.abi import abidiff, breaks, gate
from gkibuild.abi.changes import Change, Result
from gkibuild.abi.symvers import Export, write_symvers
from gkibuild.tests.test_abi_report import FIXTURES, recorded

RELEASES = Path(__file__).resolve().parent / 'abi_releases'

BREAK = 'the KMI differs from the baseline'
UPDATE = './build/gki abi update'
APPROVAL = 'needs approval'
LISTS = {'incfs': {'LZ4_decompress_safe', 'init_uts_ns', 'fs_kobj'},
	 'core': {'init_uts_ns', 'module_layout'}}


def sk_buff_grows(last: str):
	"""An edit of the struct-member-added record: struct sk_buff gains
	three members, the last one named last; the description is longer than
	WHAT_MAX and last comes after that point."""
	members = ''.join(f"    'u64 {m}', at offset {1856 + 64 * i} (in bits) at skbuff.h:{1071 + i}:1\n"
			  for i, m in enumerate(('android_kabi_reserved1', 'android_kabi_reserved2', last)))
	return lambda t: t.replace(
		"'struct point at lib.c:8:1'", "'struct sk_buff at skbuff.h:883:1'").replace(
		"  type size changed from 64 to 96 (in bits)\n  1 data member insertion:\n"
		"    'int z', at offset 64 (in bits) at lib.c:16:1\n",
		'  type size changed from 1856 to 2048 (in bits)\n  3 data member insertions:\n'
		+ members).replace('function int move(point*, int)', 'function void consume_skb(sk_buff*)')


class VerdictTest(unittest.TestCase):
	"""The same Module.symvers on both sides unless a test says otherwise,
	so the report alone decides, as it must for what the CRCs do not cover
	(libabigail sees types, MODVERSIONS sees CRCs, kinds and namespaces)."""

	EXPORTS = {'LZ4_decompress_safe': Export('0xc7c1107a', 'vmlinux', 'EXPORT_SYMBOL', ''),
		   'init_uts_ns': Export('0xb72a650c', 'vmlinux', 'EXPORT_SYMBOL_GPL', '')}

	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.dir = Path(tmp.name)
		(self.dir / 'abi').mkdir()
		(self.dir / 'out').mkdir()		# abidw, replaced here, makes it
		(self.dir / 'abi' / gate.BASELINE).write_text('<abi-corpus/>\n')
		write_symvers(self.dir / 'abi' / gate.SYMVERS, self.EXPORTS)

	def check(self, name: str, exports: dict[str, Export] | None = None,
		  edit=lambda text: text, dumps: tuple[str, str] | None = None) -> gate.Result:
		"""abi.check with abidiff's answer taken from the record name (its
		text through edit), the build's Module.symvers holding exports, and
		the baseline and the new dump the XML files of dumps, if given."""
		new = self.dir / 'Module.symvers'
		write_symvers(new, exports or self.EXPORTS)
		rc, text = recorded(name)
		old_xml, new_xml = (('<abi-corpus/>\n',) * 2 if dumps is None else
				    [(FIXTURES / d).read_text() for d in dumps])
		(self.dir / 'abi' / gate.BASELINE).write_text(old_xml)

		def fake_dump(vmlinux, symbols, out, cache=None):
			out.write_text(new_xml)
		with mock.patch.object(abidiff, 'dump', side_effect=fake_dump), \
		     mock.patch.object(abidiff, 'diff', return_value=(rc, edit(text))):
			return gate.check(self.dir / 'abi', self.dir / 'vmlinux', new, LISTS,
					  self.dir / 'out')

	def fails(self, r: gate.Result) -> str:
		"""The verdict, which must be a failure."""
		v = gate.decide(r).why
		self.assertIsNotNone(v, f'the gate passed:\n{r.short}')
		return v

	def test_unchanged_passes(self):
		r = self.check('unchanged')
		self.assertIsNone(gate.decide(r).why, r.short)
		self.assertEqual([], r.changes)
		self.assertIn('0 type change(s), 0 symbol change(s): 0 break(s)', r.short)
		self.assertEqual(r.short, (self.dir / 'out' / gate.SHORT).read_text())

	def test_enum_changes_need_approval(self):
		for name, what in (('enum-enumerator-added', "'color::BLUE' value '2'"),
				   ('enum-enumerator-removed', "'color::GREEN' value '1'"),
				   ('enum-enumerator-renumbered', "'mode::MODE_B' from value '2' to '5'")):
			with self.subTest(name):
				r = self.check(name)
				self.assertFalse(r.breaks, r.short)
				self.assertIn(APPROVAL, self.fails(r))
				[c] = r.of('enum')
				self.assertIn(what, c.what)
				self.assertIn(f'  APPROVAL  {c.name}: ', r.short)

	def test_type_change_names_the_type_and_whom_it_reaches(self):
		r = self.check('struct-member-added')
		self.assertIn(BREAK, self.fails(r))
		[c] = r.of('type')
		self.assertEqual('struct point', c.name)
		self.assertEqual(('move',), c.reaches)
		self.assertIn("type size changed from 64 to 96 (in bits); 1 data member insertion; "
			      "'int z', at offset 64 (in bits)", c.what)
		self.assertIn('  BREAK     struct point: type size changed from 64 to 96', r.short)
		self.assertIn('[reaches 1 KMI symbol: no list]', r.short)

	def test_type_line_counts_the_symbols_and_lists_it_reaches(self):
		r = self.check('kernel-struct-resized')
		sym = {c.name: c for c in r.of('symbol')}['init_uts_ns']
		self.assertEqual(97, len(sym.reaches))	# init_uts_ns is among its 97
		self.assertIn('init_uts_ns', sym.reaches)
		self.assertIn('[core 2, incfs 2]', r.short)
		self.assertIn('vendor lists reached by the breaks:', r.short)
		self.assertIn('  incfs: 2 symbol(s): fs_kobj, init_uts_ns', r.short)

	def test_parameter_change_is_one_symbol_change_and_one_crc_change(self):
		new = {**self.EXPORTS, 'LZ4_decompress_safe': Export(
			'0x329f0514', 'vmlinux', 'EXPORT_SYMBOL', '')}
		r = self.check('kernel-parameter-type-changed', new)
		self.assertIn(BREAK, self.fails(r))
		self.assertEqual(['crc', 'symbol'], sorted(c.kind for c in r.changes))
		[sym] = r.of('symbol')
		self.assertIn("parameter 4 of type 'int' changed; type name changed from 'int' "
			      "to 'long int'", sym.what)
		[crc] = r.of('crc')
		self.assertEqual('CRC 0xc7c1107a -> 0x329f0514', crc.what)
		self.assertEqual('reached by its own signature', crc.cause)

	def test_crc_only_block_is_counted_once_with_its_cause(self):
		new = {**self.EXPORTS, 'LZ4_decompress_safe': Export(
			'0x329f0514', 'vmlinux', 'EXPORT_SYMBOL', '')}
		r = self.check('kernel-crc-only-function', new)
		self.assertEqual(['crc'], [c.kind for c in r.changes])
		self.assertEqual([], r.of('type', 'symbol'))
		self.assertIn('0 type change(s), 1 symbol change(s): 1 break(s)', r.short)
		self.assertIn('genksyms hashed other declaration text', r.changes[0].cause)

	def test_removal_in_the_report_alone_fails(self):
		for name, sym in (('function-removed', 'gone'), ('variable-removed', 'spare'),
				  ('kernel-asm-export-removed', '__arch_copy_from_user')):
			with self.subTest(name):
				r = self.check(name)
				self.assertEqual([sym], r.removed)
				self.assertIn(BREAK, self.fails(r))
				self.assertIn(f'  BREAK     {sym}: no longer exported', r.short)

	def test_crc_change_alone_fails(self):
		new = {**self.EXPORTS, 'LZ4_decompress_safe': Export(
			'0x329f0514', 'vmlinux', 'EXPORT_SYMBOL', '')}
		r = self.check('unchanged', new)
		self.assertEqual(['LZ4_decompress_safe'], r.crc_changed)
		self.assertIn(BREAK, self.fails(r))
		self.assertIn('LZ4_decompress_safe: CRC 0xc7c1107a -> 0x329f0514 [incfs]', r.short)

	def test_export_kind_and_namespace_changes_fail(self):
		for new, what in (
			(Export('0xc7c1107a', 'vmlinux', 'EXPORT_SYMBOL_GPL', ''),
			 'EXPORT_SYMBOL -> EXPORT_SYMBOL_GPL'),
			(Export('0xc7c1107a', 'vmlinux', 'EXPORT_SYMBOL', 'LZ4'),
			 "namespace '' -> 'LZ4'")):
			with self.subTest(what):
				r = self.check('unchanged', {**self.EXPORTS, 'LZ4_decompress_safe': new})
				[c] = r.changes
				self.assertEqual(('export', what), (c.kind, c.what))
				self.assertIn(BREAK, self.fails(r))
				self.assertIn(f'LZ4_decompress_safe: {what} [incfs]', r.short)

	def test_namespace_block_is_one_export_change(self):
		"""abidiff reports a namespace change too; alone (a baseline whose
		symvers missed it) or beside Module.symvers's, it is one change."""
		old = {**self.EXPORTS, '___ratelimit': Export('0xf5edea2e', 'vmlinux',
							       'EXPORT_SYMBOL', '')}
		write_symvers(self.dir / 'abi' / gate.SYMVERS, old)
		for new_ns in ('', 'GKI_TEST'):
			with self.subTest(new_ns=new_ns):
				new = Export('0xf5edea2e', 'vmlinux', 'EXPORT_SYMBOL', new_ns)
				r = self.check('kernel-namespace-added', {**old, '___ratelimit': new})
				[c] = r.changes
				self.assertEqual(('export', '___ratelimit'), (c.kind, c.name))
				self.assertIn(BREAK, self.fails(r))

	def test_addition_in_the_report_fails_without_a_new_baseline(self):
		for name, sym in (('function-added', 'fresh'), ('variable-added', 'extra'),
				  ('nodebug-symbol-added', 'raw_fill')):
			with self.subTest(name):
				r = self.check(name)
				self.assertFalse(r.breaks, r.short)
				self.assertEqual([sym], r.added)
				self.assertIn(UPDATE, self.fails(r))

	def test_addition_in_the_symvers_fails_without_a_new_baseline(self):
		new = {**self.EXPORTS, 'LZ4_compress_fast': Export('0x1', 'vmlinux',
								    'EXPORT_SYMBOL', '')}
		r = self.check('unchanged', new)
		self.assertFalse(r.breaks, r.short)
		self.assertEqual(['LZ4_compress_fast'], r.added)
		self.assertIn(UPDATE, self.fails(r))

	def test_break_is_named_before_an_addition(self):
		r = self.check('combined')
		self.assertIn(BREAK, self.fails(r))
		self.assertEqual(['extra', 'fresh', 'raw_fill'], r.added)
		lines = r.short.splitlines()
		self.assertLess(lines.index('types:'), lines.index('symbols:'))
		labels = [ln.split()[0] for ln in lines[lines.index('symbols:') + 1:]
			  if ln.startswith('  ') and not ln.startswith('   ')]
		self.assertEqual(sorted(labels, key=lambda s: s != 'BREAK'), labels)

	def test_recorded_break_passes_and_others_still_fail(self):
		r = self.check('struct-member-added')
		[c] = r.of('type')
		breaks.append(self.dir / 'abi', breaks.Record(
			'2026-12-03', 'point grows for the z axis', '6.12.118-gki', (c.key,)))
		r = self.check('struct-member-added')
		self.assertIsNone(gate.decide(r).why, r.short)
		self.assertIn('ALLOWED   struct point', r.short)
		self.assertIn('(recorded 2026-12-03: point grows for the z axis)', r.short)
		r = self.check('struct-member-resized')	# struct point, another change
		self.assertIn(BREAK, self.fails(r))

	def test_recorded_break_survives_moved_source_lines(self):
		"""A rebase onto a branch where the header's lines moved: the same
		change, other line numbers; the record still holds."""
		[c] = self.check('struct-member-added').of('type')
		breaks.append(self.dir / 'abi', breaks.Record(
			'2026-12-03', 'point grows', '6.12.118-gki', (c.key,)))
		r = self.check('struct-member-added',
			       edit=lambda t: t.replace('lib.c:16:1', 'lib.c:21:1').replace(
				       'lib.c:8:1', 'lib.c:13:1'))
		self.assertIn("'struct point at lib.c:13:1' changed:", r.abidiff_report)
		self.assertIsNone(gate.decide(r).why, r.short)

	def test_a_record_holds_the_whole_change_not_its_first_characters(self):
		"""Two struct sk_buff changes that part only after the characters
		the short report shows: recording one leaves the other a break."""
		taken, other = sk_buff_grows('android_kabi_reserved3'), sk_buff_grows('android_vendor_data1')
		[c] = self.check('struct-member-added', edit=taken).of('type')
		breaks.append(self.dir / 'abi', breaks.Record(
			'2026-12-03', 'sk_buff takes its reserved fields', '6.12.118-gki', (c.key,)))
		self.assertIsNone(gate.decide(self.check('struct-member-added', edit=taken)).why)
		r = self.check('struct-member-added', edit=other)
		self.assertIn("'u64 android_vendor_data1'", r.abidiff_report)
		self.assertIn(BREAK, self.fails(r))
		self.assertIn('  BREAK     struct sk_buff: type size changed from 1856 to 2048', r.short)

	def test_same_named_types_are_two_changes(self):
		"""Both struct twin changed and the report shows both (as
		abidiff's full report does): two changes, each shown with its
		site; recording one leaves the other a break."""
		both = lambda t: t.replace('1 artifact changed', '2 artifacts changed').replace(
			'1 leaf type changed', '2 leaf types changed') + (
			"\n'struct twin at twin_a.c:8:1' changed:\n"
			'  type size changed from 32 to 64 (in bits)\n'
			'  1 data member insertion:\n'
			"    'int z', at offset 32 (in bits) at twin_a.c:11:1\n"
			'  one impacted interface:\n'
			'    function int twin_a(twin*)\n')
		dumps = ('same-named-types.old.xml', 'same-named-types.new.xml')
		r = self.check('same-named-types', edit=both, dumps=dumps)
		twins = r.of('type')
		self.assertEqual(2, len(twins), r.short)
		self.assertEqual([('struct twin', 'twin_a.c:8:1'), ('struct twin', 'twin_b.c:7:1')],
				 sorted((c.name, c.site) for c in twins), r.short)
		self.assertEqual(twins[0].what, twins[1].what)
		self.assertNotEqual(twins[0].key, twins[1].key)
		self.assertEqual([], r.unclassified)
		self.assertIn('2 type change(s)', r.short)
		[b] = [c for c in twins if c.site.startswith('twin_b.c')]
		breaks.append(self.dir / 'abi', breaks.Record(
			'2026-12-03', 'twin b grows', '6.12.118-gki', (b.key,)))
		r = self.check('same-named-types', edit=both, dumps=dumps)
		self.assertIn(BREAK, self.fails(r))
		self.assertIn('  BREAK     struct twin at twin_a.c:8:1: type size changed', r.short)
		self.assertIn('  ALLOWED   struct twin at twin_b.c:7:1: type size changed', r.short)

	def test_a_type_change_the_report_may_hide_fails_closed(self):
		"""The real report: both struct twin changed, libabigail 2.2's
		leaf report shows twin_b.c's only.  The dumps define the name
		twice, so the check fails closed naming the other definition,
		even with the change it shows recorded."""
		dumps = ('same-named-types.old.xml', 'same-named-types.new.xml')
		r = self.check('same-named-types', dumps=dumps)
		[c] = r.of('type')
		self.assertEqual('struct twin', c.name)
		self.assertIn("'struct twin at twin_b.c:7:1' changed:", r.abidiff_report)
		breaks.append(self.dir / 'abi', breaks.Record(
			'2026-12-03', 'twin b grows', '6.12.118-gki', (c.key,)))
		r = self.check('same-named-types', dumps=dumps)
		self.assertIn('cannot classify', self.fails(r))
		self.assertIn('  ALLOWED   struct twin: type size changed', r.short)
		self.assertIn('struct twin has several definitions in the KMI and abidiff shows a '
			      'change of twin_b.c:7:1 only', r.short)
		self.assertIn('a change at twin_a.c:8:1 may be hidden', r.short)

	def test_unclassified_report_fails_and_is_printed_whole(self):
		r = self.check('soname-changed')
		self.assertIn('cannot classify', self.fails(r))
		for line in recorded('soname-changed')[1].splitlines():
			self.assertIn(line, gate.summary(r))
		self.assertIn("SONAME changed from 'libfixture.so.1' to 'libfixture.so.2'",
			      r.report.read_text())


class DecisionTest(unittest.TestCase):
	"""gate.decide, the one decision the build, abi update and abi compare
	take, on each kind of change, recorded in abi/allowed_breaks or not."""

	CRC = Change('crc', 'f', 'CRC 0x1 -> 0x2', ('f',))
	ENUM = Change('enum', 'enum e', 'insertion')
	ADDED = Change('added', 'g', 'newly exported', ('g',))
	UNREAD = Change('unclassified', 'report', 'unknown line: x')

	def result(self, *found: Change, recorded: tuple[Change, ...] = ()) -> Result:
		rec = breaks.Record('2026-12-03', 'why', 'r', tuple(c.key for c in recorded))
		return Result(list(found), Path('report.txt'), allowed={c.key: rec for c in recorded})

	def test_each_kind_of_change(self):
		cases = [((), (), gate.PASS),
			 ((self.ADDED,), (), gate.NEEDS_UPDATE),
			 ((self.CRC,), (), gate.BREAKS),
			 ((self.CRC,), (self.CRC,), gate.PASS),
			 ((self.CRC, self.ADDED), (self.CRC,), gate.NEEDS_UPDATE),
			 ((self.ENUM,), (), gate.BREAKS),
			 ((self.ENUM,), (self.ENUM,), gate.PASS),
			 ((self.UNREAD,), (), gate.BREAKS),
			 ((self.UNREAD,), (self.UNREAD,), gate.BREAKS)]
		for found, recorded, outcome in cases:
			with self.subTest(found=[c.kind for c in found], recorded=[c.kind for c in recorded]):
				d = gate.decide(self.result(*found, recorded=recorded))
				self.assertEqual(outcome, d.outcome)
				self.assertEqual(outcome == gate.PASS, d.why is None, d.why)

	def test_what_blocks_is_what_breaks(self):
		"""What abi update must be told to take (Result.blocking) is there
		exactly when the decision is BREAKS: a report the gate could not
		read, recorded or not, among it."""
		res = self.result(self.UNREAD, self.ADDED, recorded=(self.UNREAD,))
		self.assertEqual(gate.BREAKS, gate.decide(res).outcome)
		self.assertEqual([self.UNREAD], res.blocking())
		res = self.result(self.CRC, self.ADDED, recorded=(self.CRC,))
		self.assertEqual((gate.NEEDS_UPDATE, []), (gate.decide(res).outcome, res.blocking()))


class PointReleaseTest(unittest.TestCase):
	"""A real case: Debian's linux-source-6.12 6.12.111 built with today's
	series and config against the 6.12.118 baseline (abi_releases/: the
	abidiff report and both KMI symvers, recorded with today's flags).
	abidiff finds 11 changed structs and 88 changed CRCs; the old console
	summary said '99 type change(s)' and named none of the structs."""

	STRUCTS = ['bus_type', 'device_type', 'folio_queue', 'io_ring_ctx', 'irqaction',
		   'mm_struct', 'net_device', 'proto_ops', 'rq', 'sock', 'tty_struct']

	def setUp(self):
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		d = Path(tmp.name)
		(d / 'abi').mkdir()
		(d / 'abi' / gate.BASELINE).write_text('<abi-corpus/>\n')
		(d / 'abi' / gate.SYMVERS).write_bytes((RELEASES / '6.12.118.symvers').read_bytes())
		report = (int((RELEASES / '6.12.111.rc').read_text()),
			  (RELEASES / '6.12.111.report').read_text())
		with mock.patch.object(abidiff, 'dump', side_effect=lambda v, s, out, c=None:
				       out.write_text('<abi-corpus/>\n')), \
		     mock.patch.object(abidiff, 'diff', return_value=report):
			self.r = gate.check(d / 'abi', d / 'vmlinux', RELEASES / '6.12.111.symvers',
					    LISTS, d)

	def test_short_report_leads_with_the_structs(self):
		lines = self.r.short.splitlines()
		self.assertIn('11 type change(s), 89 symbol change(s): 100 break(s)', lines[0])
		self.assertEqual('types:', lines[1])
		self.assertEqual([f'struct {s}' for s in self.STRUCTS],
				 [ln.split()[1].rstrip(':') + ' ' + ln.split()[2].rstrip(':')
				  for ln in lines[2:13]])
		self.assertIn("struct proto_ops: type size changed from 1792 to 1728 (in bits)",
			      lines[9])
		self.assertIn('[reaches 97 KMI symbols: ', lines[2])
		self.assertEqual('symbols:', lines[13])

	def test_crc_only_blocks_are_crc_changes_counted_once(self):
		self.assertEqual(88, len(self.r.of('crc')))
		self.assertEqual(['platform_bus_type'], [c.name for c in self.r.of('symbol')])
		crc = {c.name: c for c in self.r.of('crc')}['__folio_put']
		self.assertEqual('CRC 0x1da5e377 -> 0x7fd81a60', crc.what)
		self.assertEqual('reached by struct bus_type, struct device_type and 9 more',
				 crc.cause)


if __name__ == '__main__':
	unittest.main()
