# SPDX-License-Identifier: GPL-2.0
"""GKI modules: the list in common/, its check against the build, the load
order, and the dist's modules/gki/ of the real release build."""

import gzip
import subprocess
import tempfile
import unittest
from pathlib import Path

from gkibuild import gkimodules, signing
from gkibuild.layout import VARIANTS, Layout
from gkibuild.tests import prereq
from gkibuild.util import GkiError

LAYOUT = Layout.default()
SIG_MAGIC = b'~Module signature appended~\n'
LISTED = ['lib/kunit/kunit.ko', 'net/wireless/cfg80211.ko', 'net/rfkill/rfkill.ko',
	  'net/mac80211/mac80211.ko']


class ListTest(unittest.TestCase):
	def read(self, text: str) -> list[str]:
		with tempfile.TemporaryDirectory() as d:
			p = Path(d) / 'gki_modules'
			p.write_text(text)
			return gkimodules.read_list(p)

	def test_paths_in_order_comments_dropped(self):
		self.assertEqual(['a/x.ko', 'b/y.ko'], self.read('# c\na/x.ko  # why\n\nb/y.ko\n'))

	def test_a_duplicate_or_not_a_module_is_an_error(self):
		with self.assertRaisesRegex(GkiError, r':2: a/x.ko is listed twice'):
			self.read('a/x.ko\na/x.ko\n')
		with self.assertRaisesRegex(GkiError, r':1: expected a module path in the tree'):
			self.read('a/x.o\n')
		with self.assertRaisesRegex(GkiError, r':1: expected a module path'):
			self.read('/abs/x.ko\n')

	def test_the_real_list_reads(self):
		self.assertIn('lib/kunit/kunit.ko',
			      gkimodules.read_list(LAYOUT.common / gkimodules.LIST))


class CheckTest(unittest.TestCase):
	P = Path('common/gki_modules')

	def test_a_built_module_not_listed_fails(self):
		with self.assertRaisesRegex(GkiError, r'built but not in common/gki_modules .*: '
					    r'drivers/x/new\.ko'):
			gkimodules.check(LISTED + ['drivers/x/new.ko'], LISTED, True, self.P)

	def test_a_listed_module_not_built_fails_for_the_whole_gki_only(self):
		with self.assertRaisesRegex(GkiError, r'listed in .* but not built .*: '
					    r'net/rfkill/rfkill\.ko'):
			gkimodules.check(LISTED[:2] + LISTED[3:], LISTED, True, self.P)
		gkimodules.check(LISTED[:1], LISTED, False, self.P)

	def test_two_modules_of_one_name_fail(self):
		with self.assertRaisesRegex(GkiError, r'built twice: core\.ko'):
			gkimodules.check(['a/core.ko', 'b/core.ko'], ['a/core.ko', 'b/core.ko'], True,
					 self.P)

	def test_the_release_variant_builds_the_whole_gki_and_debug_does_not(self):
		self.assertTrue(VARIANTS['release'].whole)
		self.assertFalse(VARIANTS['debug'].whole)


class LoadOrderTest(unittest.TestCase):
	DEP = ('kunit.ko:\ncfg80211.ko: rfkill.ko\nrfkill.ko:\n'
	       'mac80211.ko: cfg80211.ko rfkill.ko\n')

	def test_each_module_after_what_it_needs_else_the_list_order(self):
		order = gkimodules.load_order(LISTED, gkimodules.parse_dep(self.DEP))
		self.assertEqual(['kunit.ko', 'rfkill.ko', 'cfg80211.ko', 'mac80211.ko'], order)

	def test_a_cycle_is_an_error(self):
		deps = gkimodules.parse_dep('a.ko: b.ko\nb.ko: a.ko\n')
		with self.assertRaisesRegex(GkiError, r'cycle a\.ko -> b\.ko -> a\.ko'):
			gkimodules.load_order(['x/a.ko', 'x/b.ko'], deps)

	def test_a_dependency_outside_the_gki_is_an_error(self):
		deps = gkimodules.parse_dep('a.ko: vendor.ko\n')
		with self.assertRaisesRegex(GkiError, r'a\.ko needs vendor\.ko, which is not a GKI'):
			gkimodules.load_order(['x/a.ko'], deps)


class DistTest(unittest.TestCase):
	"""The release dist's modules/gki/: every listed module, depmod's
	files naming each of them, and a load order that keeps dependencies
	first."""

	@classmethod
	def setUpClass(cls):
		cls.dir = LAYOUT.dist(VARIANTS['release']) / 'modules' / 'gki'
		prereq.require(None if (cls.dir / gkimodules.LOAD).exists() else
			       f'{cls.dir} not built', 'the GKI modules dist test')

	def test_every_listed_module_ships_and_loads_in_order(self):
		listed = [Path(m).name for m in gkimodules.read_list(LAYOUT.common / gkimodules.LIST)]
		self.assertEqual(sorted(listed), sorted(p.name for p in self.dir.glob('*.ko')))
		load = (self.dir / gkimodules.LOAD).read_text().split()
		self.assertEqual(sorted(listed), sorted(load))
		deps = gkimodules.parse_dep((self.dir / 'modules.dep').read_text())
		self.assertEqual(sorted(listed), sorted(deps))
		for i, name in enumerate(load):
			for dep in deps[name]:
				with self.subTest(name=name, dep=dep):
					self.assertLess(load.index(dep), i)

	def test_aliases_come_from_depmod(self):
		text = (self.dir / 'modules.alias').read_text()
		self.assertTrue(text.startswith('# Aliases extracted from modules themselves.'),
				text[:80])

	def test_modules_ship_signed_by_the_builds_key_without_debug_info(self):
		"""As a device loads them: modinfo names the build's certificate
		as the signer; their debug info ships in unstripped/gki/."""
		obj = LAYOUT.obj(VARIANTS['release'])
		cert = subprocess.run(['openssl', 'x509', '-in', str(obj / signing.KEY), '-noout',
				       '-subject', '-nameopt', 'multiline'],
				      capture_output=True, text=True, check=True).stdout
		unstripped = self.dir.parent.parent / 'unstripped' / 'gki'
		kos = sorted(self.dir.glob('*.ko'))
		self.assertEqual([p.name for p in kos], sorted(p.name for p in unstripped.glob('*.ko')))
		for ko in kos:
			with self.subTest(module=ko.name):
				self.assertTrue(ko.read_bytes().endswith(SIG_MAGIC))
				signer = subprocess.run(['modinfo', '-F', 'signer', str(ko)],
							capture_output=True, text=True,
							check=True).stdout.strip()
				self.assertTrue(signer and signer in cert, (signer, cert))
				self.assertNotIn(b'.debug_info', ko.read_bytes())
				self.assertIn(b'.debug_info', (unstripped / ko.name).read_bytes())

	def test_the_dist_holds_no_private_key(self):
		"""The signing key stays under out/: not in the dist, and not in
		the module kit."""
		dist = self.dir.parent.parent
		for f in sorted(p for p in dist.rglob('*') if p.is_file()):
			data = f.read_bytes()
			if f.name.endswith('.tar.gz'):
				data = gzip.decompress(data)
			with self.subTest(file=str(f.relative_to(dist))):
				self.assertNotIn(b'PRIVATE KEY-----', data)


if __name__ == '__main__':
	unittest.main()
