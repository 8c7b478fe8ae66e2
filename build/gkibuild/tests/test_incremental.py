# SPDX-License-Identifier: GPL-2.0
"""The build's output is a function of its inputs, checked by hash.

Each case runs the real `gki build` of a variant in a sandbox (sandbox.py:
a copy of the inputs and outputs at the real paths), makes one kind of
change, builds, reverts it, builds again, and requires Image, vmlinux and
every module to be bit-identical to the build before the change, with the
ABI gate clean on the release.  The costly cases (a header many files
include, a new compiler: every object; a patch series or a fragment
edited, each build relinking vmlinux) run on the debug variant, the small
configuration; the others on the release GKI at its real size.  Where a
change must show in the output, the build with it must differ; where it
must not touch the kernel, no kernel object may be rebuilt.  Make then rebuilt exactly what the change
touched when the two builds rebuilt the same objects.
"""

import difflib
import os
import time
import unittest
from pathlib import Path

from gkibuild import toolchain
from gkibuild.kernel import TOOLCHAIN_STAMP, Kernel
from gkibuild.layout import VARIANTS, Layout, Variant
from gkibuild.sandbox import Build, Sandbox, unavailable
from gkibuild.scratch import Scratch
from gkibuild.tests import prereq
from gkibuild.util import compiled, sha256_file

LAYOUT = Layout.default()
RELEASE = VARIANTS['release']
SMALL = VARIANTS['debug']	# the small configuration (BUILD.md, "Variants")
# SMALL is built beside the host tests by `gki test`: this module runs
# after that build (gkibuild.testrun.host_run_split).
NEEDS_EVERY_VARIANT = True

# A header many files include (about 110 objects of the small build),
# and a value only code uses: the KMI's types (and so the ABI gate) do not
# see it, the objects do.  (fs.h, with 670 includers, or pagemap.h, with
# 180, prove no more and cost CI minutes of compiles on a cold ccache.)
SWAP_H = 'include/linux/swap.h'
SWAP_H_OLD = '#define SWAP_CLUSTER_MAX 32UL'
SWAP_H_NEW = '#define SWAP_CLUSTER_MAX 64UL'
# Two one-file changes for the cheap cases.
FILESYSTEMS_C = 'fs/filesystems.c'
FILESYSTEMS_OLD = '"%s: truncating file system list\\n"'
LZ4_C = 'lib/lz4/lz4_decompress.c'
LZ4_C_OLD = ('int LZ4_decompress_safe(const char *source, char *dest,\n'
	     '\tint compressedSize, int maxDecompressedSize)\n{')
LZ4_C_NEW = LZ4_C_OLD + '\n\tif (unlikely(compressedSize < 0))\n\t\treturn -1;'


def require_build(variant: Variant = RELEASE) -> None:
	prereq.require(unavailable(LAYOUT, variant), 'the incremental-build tests')


def format_patch(subject: str, rel: str, old: str, new: str) -> str:
	"""A git format-patch file changing rel from old to new."""
	diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
				    f'a/{rel}', f'b/{rel}')
	return ('From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
		'From: GKI test <gki@localhost>\n'
		f'Subject: [PATCH] ANDROID: {subject}\n\n---\n'
		f'diff --git a/{rel} b/{rel}\n' + ''.join(diff))


class IncrementalTestBase(unittest.TestCase):
	"""One sandbox per variant for every case of the module (made and
	built by the first class that uses it, removed with the module: each
	sandbox and its first build cost minutes of CI); every case starts and
	must end at the state of that first build."""
	variant: Variant = RELEASE
	boxes: dict[str, tuple[Sandbox, Build]] = {}
	box: Sandbox
	base: Build

	@classmethod
	def setUpClass(cls):
		v = cls.variant
		require_build(v)
		if v.name not in IncrementalTestBase.boxes:
			box = Sandbox(LAYOUT, v, LAYOUT.out / 'incremental' / f'sandbox-{v.name}')
			IncrementalTestBase.boxes[v.name] = (box.create(), box.build())
		cls.box, cls.base = IncrementalTestBase.boxes[v.name]
		if cls.base.rc:
			raise AssertionError(f'the unchanged {v.name} sandbox does not build:\n'
					     + cls.base.output[-3000:])

	def build(self, ok: bool = True) -> Build:
		b = self.box.build()
		if ok:
			self.assertEqual(0, b.rc, b.output[-3000:])
		return b

	def assertSameAsBase(self, b: Build) -> None:
		self.assertEqual(sorted(self.base.hashes), sorted(b.hashes))
		differ = [f for f in self.base.hashes if self.base.hashes[f] != b.hashes[f]]
		self.assertEqual([], differ, 'not bit-identical to the build before the change')
		if self.variant is RELEASE:
			self.assertIn('ABI check: 0 type change(s), 0 symbol change(s): 0 break(s), '
				      '0 needing approval, 0 addition(s)', b.output)

	def assertDiffers(self, b: Build, *files: str) -> None:
		for f in files:
			self.assertNotEqual(self.base.hashes[f], b.hashes[f],
					    f'{f}: the change does not show in the output')

	def relative(self, objs: set[str]) -> list[str]:
		obj = LAYOUT.obj(self.variant)
		return sorted(str(Path(o).relative_to(obj)) for o in objs)

	def series(self, *patches: tuple[str, str]) -> None:
		"""Write the sandbox's patch series: the checked-in one (the
		vendor hooks), then (file name, text) in order."""
		pdir = self.box.input('common/patches')
		for name, text in patches:
			(pdir / name).write_text(text)
		lines = (LAYOUT.common / 'patches' / 'series').read_text().splitlines()
		(pdir / 'series').write_text('\n'.join(lines + [n for n, _ in patches]) + '\n')

	def patch(self, subject: str, rel: str, old: str, new: str) -> str:
		text = (LAYOUT.src / rel).read_text()
		self.assertIn(old, text)
		return format_patch(subject, rel, text, text.replace(old, new, 1))

	@classmethod
	def edit(cls, rel: str, change) -> str:
		"""Change a sandbox input; returns its old text to write back."""
		path = cls.box.input(rel)
		old = path.read_text()
		new = change(old)
		if new == old:
			raise AssertionError(f'the edit of {rel} changed nothing')
		path.write_text(new)
		return old


def tearDownModule() -> None:
	for box, _ in IncrementalTestBase.boxes.values():
		box.remove()
	IncrementalTestBase.boxes.clear()


class PatchSeriesTest(IncrementalTestBase):
	def test_no_change_rebuilds_nothing(self):
		"""Nothing, even after one more hard link to a header: every
		cp -al copy of the tree makes them, and kheaders hashed the link
		counts (common/patches/0006-*)."""
		link = self.box.real.out / 'another-link-to-swap.h'
		os.link(self.box.real.src / SWAP_H, link)
		self.addCleanup(link.unlink)
		b = self.build()
		self.assertEqual(set(), b.rebuilt)
		self.assertIn('0 objects rebuilt', b.note)
		self.assertSameAsBase(b)


class VendorEditTest(IncrementalTestBase):
	"""Two vendor edits in one build (incfs's source, and its Kbuild
	dropping one of its modules), then one build with both reverted:
	each case checks what its own edit must do and leave alone.  (A
	release sandbox build is a minute of CI: two instead of four.)"""
	SOURCE = 'vendor_modules/incfs/main.c'
	KBUILD = 'vendor_modules/incfs/Kbuild'
	EDITED = 'modules/vendor/incfs/incrementalfs.ko'
	DROPPED = 'modules/vendor/incfs/incfs_tree_kunit.ko'
	KEPT = 'modules/vendor/incfs/incfs_format_kunit.ko'
	changed: Build
	reverted: Build

	@classmethod
	def setUpClass(cls):
		super().setUpClass()
		edits = {cls.SOURCE: lambda t: t + 'MODULE_INFO(gki_test, "edited");\n',
			 cls.KBUILD: lambda t: t.replace('obj-m += incfs_tree_kunit.o\n', '')}
		old: dict[str, str] = {}
		try:
			for rel, change in edits.items():
				old[rel] = cls.edit(rel, change)
			cls.changed = cls.box.build()
		finally:
			for rel, text in old.items():
				cls.box.input(rel).write_text(text)
		cls.reverted = cls.box.build()

	def test_vendor_module_source_edit_rebuilds_its_module_only(self):
		self.assertEqual(0, self.changed.rc, self.changed.output[-3000:])
		self.assertDiffers(self.changed, self.EDITED)
		self.assertEqual(set(), self.changed.rebuilt, 'a vendor edit rebuilt kernel objects')
		self.assertEqual(self.base.hashes['vmlinux'], self.changed.hashes['vmlinux'])

	def test_module_dropped_from_a_vendor_kbuild_leaves_the_dist(self):
		"""Its old .ko stays in the build folder, not in the dist; the
		Kbuild's other modules are untouched."""
		self.assertIn(self.DROPPED, self.base.hashes)
		self.assertNotIn(self.DROPPED, self.changed.hashes)
		self.assertEqual(self.base.hashes[self.KEPT], self.changed.hashes[self.KEPT])

	def test_vendor_edits_reverted_give_the_same_build(self):
		self.assertEqual(0, self.reverted.rc, self.reverted.output[-3000:])
		self.assertSameAsBase(self.reverted)


class SymbolListTest(IncrementalTestBase):
	def test_symbol_list_edited_and_reverted(self):
		"""One more KMI symbol: trimming keeps its export (vmlinux
		changes) and the gate asks for a new baseline; reverted, the
		export is trimmed again."""
		rel = 'symbol_lists/incfs'
		old = self.edit(rel, lambda t: t + 'LZ4_compress_default\n')
		changed = self.build(ok=False)
		self.assertNotEqual(0, changed.rc)
		self.assertIn('  ADDED     LZ4_compress_default: newly exported [incfs]', changed.output)
		self.assertDiffers(changed, 'vmlinux')
		self.box.input(rel).write_text(old)
		self.assertSameAsBase(self.build())


class SmallConfigTest(IncrementalTestBase):
	"""The cases that rebuild a hundred objects or all of them, or relink
	and dump the kernel build after build, on the small configuration: at
	the GKI's size each would cost CI minutes of compiles, links and ABI
	dumps, and proves no more (the rules are the same for every
	configuration)."""
	variant = SMALL

	def test_patch_edited_reordered_and_dropped(self):
		a1 = self.patch('test: lz4 checks its size', LZ4_C, LZ4_C_OLD, LZ4_C_NEW)
		a2 = self.patch('test: lz4 checks its size', LZ4_C, LZ4_C_OLD,
				LZ4_C_NEW.replace('< 0', '<= 0'))
		b = self.patch('test: a filesystems.c message', FILESYSTEMS_C, FILESYSTEMS_OLD,
			       '"%s: file system list truncated\\n"')
		self.series(('0001-lz4.patch', a1), ('0002-fs.patch', b))
		first = self.build()
		self.assertDiffers(first, 'vmlinux')
		self.assertEqual(['fs/filesystems.o', 'lib/lz4/lz4_decompress.o'],
				 self.relative(first.rebuilt))

		self.series(('0002-fs.patch', b), ('0001-lz4.patch', a1))
		reordered = self.build()
		self.assertEqual(set(), reordered.rebuilt, 'a reorder with the same result')
		self.assertEqual(first.hashes, reordered.hashes)

		self.series(('0002-fs.patch', b), ('0001-lz4.patch', a2))
		edited = self.build()
		self.assertEqual(['lib/lz4/lz4_decompress.o'], self.relative(edited.rebuilt))
		self.assertNotEqual(first.hashes['vmlinux'], edited.hashes['vmlinux'])

		self.series()
		dropped = self.build()
		self.assertSameAsBase(dropped)
		self.assertEqual(first.rebuilt, dropped.rebuilt)

	def test_config_fragment_edited_and_reverted(self):
		rel = f'common/{self.variant.fragments[0]}'
		old = self.edit(rel, lambda t: t + 'CONFIG_LOG_BUF_SHIFT=13\n')
		changed = self.build()
		self.assertDiffers(changed, 'Image', 'vmlinux')
		self.assertGreater(len(changed.rebuilt), 0)
		self.box.input(rel).write_text(old)
		reverted = self.build()
		self.assertSameAsBase(reverted)
		self.assertEqual(changed.rebuilt, reverted.rebuilt)

	def test_header_patch_added_then_dropped(self):
		"""The issue's case: a patch to a header many files include."""
		self.series(('0001-swap-h.patch', self.patch('test: double the reclaim batch',
							     SWAP_H, SWAP_H_OLD, SWAP_H_NEW)))
		added = self.build()
		self.assertDiffers(added, 'Image', 'vmlinux')
		self.assertGreater(len(added.rebuilt), 80, added.note)
		self.assertIn(f'{len(added.rebuilt)} objects rebuilt', added.note)

		self.series()
		dropped = self.build()
		self.assertSameAsBase(dropped)
		self.assertEqual(added.rebuilt, dropped.rebuilt)

	def test_toolchain_change_rebuilds_everything(self):
		"""A stamp from another compiler version: every object is
		rebuilt (ccache makes it cheap) and the output is the same."""
		obj = self.box.real.obj(self.variant)
		stamp = obj / TOOLCHAIN_STAMP
		stamp.write_text(stamp.read_text().replace('"clang": "19.', '"clang": "18.'))
		every = sorted(o for o in obj.rglob('*.o') if compiled(str(o)))
		start = time.time()
		changed = self.build()
		self.assertIn('toolchain changed', changed.output)
		# The config stage rebuilds kconfig's own objects, the kernel
		# stage the rest: none may be older than the build.
		after = sorted(o for o in obj.rglob('*.o') if compiled(str(o)))
		self.assertEqual(every, after)
		self.assertEqual([], [str(o) for o in after if o.stat().st_mtime < start - 1])
		self.assertGreater(len(changed.rebuilt), 0.9 * len(every), changed.note)
		self.assertSameAsBase(changed)
		again = self.build()
		self.assertEqual(set(), again.rebuilt)
		self.assertSameAsBase(again)


class ScratchCopyTest(unittest.TestCase):
	"""The ABI gate's scratch copies (scratch.py) obey the same rule; on
	the small configuration, as the gate's tests use them (each build
	relinks vmlinux)."""

	def test_scratch_edit_and_revert(self):
		require_build(SMALL)
		kernel = Kernel(LAYOUT, SMALL, toolchain.hermetic_env(), os.cpu_count() or 1)
		s = Scratch(kernel, LAYOUT.out / 'incremental' / 'scratch').create()
		self.addCleanup(s.remove)
		log = LAYOUT.log(SMALL, 'incremental-scratch')
		files = [s.obj / 'vmlinux', s.obj / 'arch' / 'arm64' / 'boot' / 'Image']
		s.build(log)
		base = [sha256_file(f) for f in files]
		s.edit(LZ4_C, lambda t: t.replace(LZ4_C_OLD, LZ4_C_NEW))
		s.build(log)
		self.assertNotEqual(base[0], sha256_file(files[0]))
		s.revert(LZ4_C)
		s.build(log)
		self.assertEqual(base, [sha256_file(f) for f in files])


if __name__ == '__main__':
	unittest.main()
