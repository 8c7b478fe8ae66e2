# SPDX-License-Identifier: GPL-2.0
"""showmap built for the build machine, on smaps files written here: the
sums, the formats, and one clear error per kind of bad input."""

import csv
import io
import json
import subprocess
import tempfile
import textwrap
import unittest
from pathlib import Path

from gkibuild import programs
from gkibuild.layout import Layout

TOP = Path(__file__).resolve().parents[4]

SMAPS = textwrap.dedent('''\
	aaaa0000-aaaa4000 rw-p 00000000 00:00 0                                  [anon:dalvik-main]
	Size:                 16 kB
	KernelPageSize:        4 kB
	Rss:                   8 kB
	Pss:                   6 kB
	Pss_Dirty:             6 kB
	Shared_Clean:          0 kB
	Shared_Dirty:          4 kB
	Private_Clean:         0 kB
	Private_Dirty:         4 kB
	Swap:                  0 kB
	THPeligible:    0
	VmFlags: rd wr mr mw me ac
	aaaa5000-aaaa6000 rw-p 00000000 00:00 0                                  [anon:dalvik-main]
	Size:                  4 kB
	Rss:                   4 kB
	Pss:                   4 kB
	Private_Dirty:         4 kB
	Swap:                 12 kB
	bbbb0000-bbbb2000 r-xp 00000000 fe:00 1234                               /system/lib64/libc.so
	Size:                  8 kB
	Rss:                   8 kB
	Pss:                   2 kB
	Shared_Clean:          8 kB
	cccc0000-cccc1000 rw-p 00000000 00:00 0
	Size:                  4 kB
	Rss:                   4 kB
	Pss:                   4 kB
	Private_Dirty:         4 kB
	dddd0000-dddd1000 rw-s 00000000 00:01 77                                 [anon_shmem:a,"b"]
	Size:                  4 kB
	Rss:                   4 kB
	Pss:                   1 kB
	Shared_Dirty:          4 kB
	''')

COLUMNS = ['size_kib', 'rss_kib', 'pss_kib', 'private_clean_kib', 'private_dirty_kib',
	   'shared_kib', 'swap_kib']


class ShowmapTest(unittest.TestCase):
	@classmethod
	def setUpClass(cls):
		cls.tmp = tempfile.TemporaryDirectory()
		layout = Layout(TOP, Path(cls.tmp.name))
		progs = [p for p in programs.discover(layout, 'tools') if p.name == 'showmap']
		cls.bin = programs.compile_programs(layout, programs.HOST, progs,
						    programs.host_folder(layout))['showmap']

	@classmethod
	def tearDownClass(cls):
		cls.tmp.cleanup()

	def run_on(self, text: str, *args: str) -> subprocess.CompletedProcess:
		path = Path(self.tmp.name) / 'smaps'
		path.write_text(text)
		return subprocess.run([str(self.bin), *args, '-f', str(path)],
				      capture_output=True, text=True)

	def rows(self, text: str) -> dict[str, dict[str, int]]:
		r = self.run_on(text, '--csv')
		self.assertEqual(0, r.returncode, r.stderr)
		return {row['name']: {k: int(row[k]) for k in COLUMNS}
			for row in csv.DictReader(io.StringIO(r.stdout))}

	def test_sums_per_name(self):
		rows = self.rows(SMAPS)
		self.assertEqual({'size_kib': 20, 'rss_kib': 12, 'pss_kib': 10,
				  'private_clean_kib': 0, 'private_dirty_kib': 8,
				  'shared_kib': 4, 'swap_kib': 12}, rows['[anon:dalvik-main]'])
		self.assertEqual(8, rows['/system/lib64/libc.so']['shared_kib'])
		self.assertEqual(4, rows['[anon]']['rss_kib'])

	def test_total_is_the_sum(self):
		rows = self.rows(SMAPS)
		total = rows.pop('TOTAL')
		for col in COLUMNS:
			self.assertEqual(sum(r[col] for r in rows.values()), total[col], col)

	def test_sorted_by_pss(self):
		r = self.run_on(SMAPS, '--csv')
		names = [row['name'] for row in csv.DictReader(io.StringIO(r.stdout))]
		self.assertEqual(['[anon:dalvik-main]', '[anon]', '/system/lib64/libc.so',
				  '[anon_shmem:a,"b"]', 'TOTAL'], names)

	def test_json(self):
		r = self.run_on(SMAPS, '--json')
		self.assertEqual(0, r.returncode, r.stderr)
		doc = json.loads(r.stdout)
		self.assertEqual('[anon_shmem:a,"b"]', doc['mappings'][3]['name'])
		self.assertEqual(12, doc['total']['swap_kib'])
		self.assertEqual(4, len(doc['mappings']))

	def test_text_has_header_and_total(self):
		r = self.run_on(SMAPS)
		lines = r.stdout.splitlines()
		self.assertRegex(lines[0], r'^\s+Size\s+Rss\s+Pss\s+PrivClean\s+PrivDirty\s+Shared'
				 r'\s+Swap Name')
		self.assertRegex(lines[-1], r'^\s+36\s+28\s+17\s+0\s+12\s+16\s+12 TOTAL$')

	def test_malformed_lines(self):
		header = 'aaaa0000-aaaa1000 rw-p 00000000 00:00 0 [anon:x]\n'
		cases = {
			'Rss: 4 kB\n': 1,				# a field before any header
			header + 'Rss:   four kB\n': 2,		# not a number
			header + 'Rss:   4\n': 2,			# no unit
			header + 'Rss:   4 MB\n': 2,			# wrong unit
			header + 'garbage\n': 2,			# neither header nor field
			header + 'Size: 4 kB\nzz-yy rw-p 0 0:0 0\n': 3,	# bad header
		}
		for text, line in cases.items():
			with self.subTest(text=text):
				r = self.run_on(text)
				self.assertEqual(1, r.returncode)
				self.assertEqual('', r.stdout)
				self.assertRegex(r.stderr, rf'^showmap: .*/smaps:{line}: malformed line: ')
				self.assertEqual(1, len(r.stderr.splitlines()))

	def test_missing_file(self):
		r = subprocess.run([str(self.bin), '-f', '/nonexistent/smaps'],
				   capture_output=True, text=True)
		self.assertEqual(1, r.returncode)
		self.assertEqual('showmap: /nonexistent/smaps: No such file or directory\n', r.stderr)

	def test_usage_errors(self):
		for args in ([], ['-p', '1', '-a'], ['--bogus'], ['-p', '']):
			with self.subTest(args=args):
				r = subprocess.run([str(self.bin), *args], capture_output=True, text=True)
				self.assertEqual(2, r.returncode)
				self.assertEqual('', r.stdout)


if __name__ == '__main__':
	unittest.main()
