# SPDX-License-Identifier: GPL-2.0
"""junit.py: the run's outcomes as JUnit XML."""

import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from gkiqemu import junit, ktap
from gkiqemu.runner import Outcome

OUTCOMES = [
	Outcome('host: test_x.Class.test_a', ktap.Status.PASS),
	Outcome('host: test_x.Class.test_b', ktap.Status.FAIL, 'AssertionError: 1 != 2'),
	Outcome('release: boot_smoke: two_cpus_online', ktap.Status.PASS),
	Outcome('release: boot_smoke: variant_matches_config', ktap.Status.SKIP, 'no config'),
	Outcome('debug: incfs_data: read_waits', ktap.Status.MISSING, 'planned, never reported'),
	Outcome('debug: console', ktap.Status.CRASHED, 'KASAN: use-after-free'),
]


class JunitTest(unittest.TestCase):
	def setUp(self):
		self.root = junit.document(OUTCOMES)

	def suite(self, name: str) -> ET.Element:
		[s] = [s for s in self.root if s.get('name') == name]
		return s

	def test_one_suite_per_part_of_the_run(self):
		self.assertEqual(['host', 'release', 'debug'], [s.get('name') for s in self.root])

	def test_counts(self):
		self.assertEqual(('6', '3', '1'), (self.root.get('tests'), self.root.get('failures'),
						   self.root.get('skipped')))
		host = self.suite('host')
		self.assertEqual(('2', '1', '0'), (host.get('tests'), host.get('failures'),
						   host.get('skipped')))

	def test_a_failure_carries_its_text(self):
		[tc] = [c for c in self.suite('host') if c.get('name') == 'test_x.Class.test_b']
		self.assertEqual('host', tc.get('classname'))
		f = tc.find('failure')
		self.assertEqual('AssertionError: 1 != 2', f.text)
		self.assertEqual('FAIL', f.get('type'))

	def test_missing_and_crashed_are_failures(self):
		types = [c.find('failure').get('type') for c in self.suite('debug')]
		self.assertEqual(['MISSING', 'CRASHED'], types)

	def test_guest_case_names_its_suite(self):
		[tc, skipped] = list(self.suite('release'))
		self.assertEqual(('release.boot_smoke', 'two_cpus_online'),
				 (tc.get('classname'), tc.get('name')))
		self.assertIsNone(tc.find('failure'))
		self.assertEqual('no config', skipped.find('skipped').text)

	def test_written_file_parses(self):
		with tempfile.TemporaryDirectory() as tmp:
			path = Path(tmp) / 'results.xml'
			junit.write(OUTCOMES, path)
			self.assertEqual('6', ET.parse(path).getroot().get('tests'))
			self.assertEqual(['results.xml'], [p.name for p in Path(tmp).iterdir()])


if __name__ == '__main__':
	unittest.main()
