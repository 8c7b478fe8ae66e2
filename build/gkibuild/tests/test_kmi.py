# SPDX-License-Identifier: GPL-2.0
"""Symbol lists: the format, updates that change only the lines they add
or remove, what modules need, strict mode, and the message for a module
using a symbol in no list."""

import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from gkibuild import toolchain
from gkibuild.abi import kmi
from gkibuild.layout import Layout
from gkibuild.util import GkiError

LISTS = Layout.default().symbol_lists

# Android's layout: comments before the header, several sections, indented
# symbols, '# required by' groups sorted case-insensitively.
ANDROID = """\
# vendor v: comments may come before the header

[abi_symbol_list]
# commonly used symbols
  __alloc_pages
  alloc_chrdev_region
  kfree

# required by a.ko
  a_helper
  Bz_thing
  cz_op

# required by b.ko
\tb_register

[abi_symbol_list]
# a second section, as Android concatenates lists
  other_symbol
"""
ANDROID_SYMBOLS = {'__alloc_pages', 'alloc_chrdev_region', 'kfree', 'a_helper', 'Bz_thing',
		   'cz_op', 'b_register', 'other_symbol'}


class SymbolListTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.dir = Path(self.tmp.name)

	def tearDown(self):
		self.tmp.cleanup()

	def write(self, name: str, text: str) -> Path:
		p = self.dir / name
		p.write_text(text)
		return p

	def test_parse_reads_symbols_and_skips_comments(self):
		p = self.write('v', '# vendor v\n[abi_symbol_list]\n  kfree\n# why\nkmalloc\n\n')
		self.assertEqual(['kfree', 'kmalloc'], kmi.parse(p))

	def test_parse_names_every_bad_line(self):
		p = self.write('v', '[abi_symbol_list]\nkfree\nkfree\nnot a symbol\n')
		with self.assertRaises(GkiError) as e:
			kmi.parse(p)
		self.assertIn(f'{p}:3: kfree is listed twice', str(e.exception))
		self.assertIn(f"{p}:4: not a symbol name: 'not a symbol'", str(e.exception))

	def test_parse_reads_every_section(self):
		p = self.write('v', ANDROID)
		self.assertEqual(['__alloc_pages', 'alloc_chrdev_region', 'kfree', 'a_helper',
				  'Bz_thing', 'cz_op', 'b_register', 'other_symbol'], kmi.parse(p))

	def test_parse_refuses_a_symbol_twice_across_sections(self):
		p = self.write('v', '[abi_symbol_list]\nkfree\n[abi_symbol_list]\n  kfree\n')
		with self.assertRaises(GkiError) as e:
			kmi.parse(p)
		self.assertEqual(f'{p}:4: kfree is listed twice', str(e.exception))

	def test_parse_needs_the_android_header(self):
		p = self.write('v', '[abi_whitelist]\nkfree\n')
		with self.assertRaisesRegex(GkiError, r':1: expected the header \[abi_symbol_list\]'):
			kmi.parse(p)

	def test_update_is_add_only_unless_asked(self):
		"""An unsorted list stays as it is: a symbol goes before the first
		line sorting after it."""
		p = self.write('v', '# keep me\n[abi_symbol_list]\nold_unused\nkfree\n')
		need = {'kfree': {'a.ko'}, 'kmalloc': {'a.ko', 'b.ko'}}
		allowed = {'kfree', 'kmalloc', 'old_unused'}
		self.assertEqual(kmi.Update({'kmalloc': {'a.ko', 'b.ko'}}, [], {}),
				 kmi.update(p, need, allowed, remove=False))
		self.assertEqual('# keep me\n[abi_symbol_list]\nkmalloc\nold_unused\nkfree\n',
				 p.read_text())
		self.assertEqual(kmi.Update({}, ['old_unused'], {}),
				 kmi.update(p, need, allowed, remove=True))
		self.assertEqual('# keep me\n[abi_symbol_list]\nkmalloc\nkfree\n', p.read_text())

	def test_update_creates_a_missing_list(self):
		p = self.dir / 'new' / 'v'
		kmi.update(p, {'kfree': {'a.ko'}, 'Zeta': {'a.ko'}, '_printk': {'b.ko'}},
			   {'kfree', 'Zeta', '_printk'}, remove=False)
		self.assertEqual('# KMI symbols needed by v; see BUILD.md, "Requesting a symbol".\n'
				 '[abi_symbol_list]\n_printk\nkfree\nZeta\n', p.read_text())

	def test_update_without_changes_keeps_an_android_list(self):
		p = self.write('v', ANDROID)
		need = {s: {'a.ko'} for s in ANDROID_SYMBOLS}
		self.assertEqual(kmi.Update({}, [], {}),
				 kmi.update(p, need, ANDROID_SYMBOLS, remove=True))
		self.assertEqual(ANDROID, p.read_text())

	def test_update_inserts_into_groups_and_appends_new_ones(self):
		"""Into the group of the first module needing it, at its sorted
		place, indented like its neighbours; a module without a group
		gets one at the end; a symbol no module needs goes into the last
		section."""
		p = self.write('v', ANDROID)
		new = {'BA_x': {'a.ko'}, 'b_zz': {'b.ko', 'a.ko'}, 'b_alpha': {'b.ko'},
		       'c_new': {'d.ko', 'c.ko'}, 'zz_last': {'c.ko'},
		       'module_layout': {'the module loader (MODVERSIONS)'}}
		need = {**{s: {'a.ko'} for s in ANDROID_SYMBOLS}, **new}
		res = kmi.update(p, need, ANDROID_SYMBOLS | set(new), remove=False)
		self.assertEqual(new, res.added)
		self.assertEqual(ANDROID.replace(
			'  a_helper\n', '  a_helper\n  b_zz\n  BA_x\n').replace(
			'\tb_register\n', '\tb_alpha\n\tb_register\n').replace(
			'  other_symbol\n', '  module_layout\n  other_symbol\n\n'
			'# required by c.ko\n  c_new\n  zz_last\n'), p.read_text())

	def test_update_remove_deletes_only_those_lines(self):
		p = self.write('v', ANDROID)
		keep = ANDROID_SYMBOLS - {'cz_op', 'other_symbol'}
		res = kmi.update(p, {s: {'a.ko'} for s in keep}, ANDROID_SYMBOLS, remove=True)
		self.assertEqual(['cz_op', 'other_symbol'], res.removed)
		self.assertEqual(ANDROID.replace('  cz_op\n', '').replace('  other_symbol\n', ''),
				 p.read_text())

	def test_update_keeps_our_lists(self):
		"""Our lists (one section, unindented) come back byte for byte, and
		a new symbol takes its case-insensitive place."""
		for src in sorted(LISTS.iterdir()):
			p = Path(shutil.copy(src, self.dir))
			syms = set(kmi.parse(p))
			kmi.update(p, {s: {'m.ko'} for s in syms}, syms, remove=True)
			self.assertEqual(src.read_text(), p.read_text(), src.name)
		p = self.dir / 'test_module'
		kmi.update(p, {'LZ4_compress_fast': {'m.ko'}}, {'LZ4_compress_fast'}, remove=False)
		self.assertEqual((LISTS / 'test_module').read_text().replace(
			'kmalloc_caches\n', 'kmalloc_caches\nLZ4_compress_fast\n'), p.read_text())

	def test_update_adds_tracepoint_companions(self):
		"""A vendor hook's list names both __traceiter_X and
		__tracepoint_X (and the static-call key where the arch has one),
		whichever form the module uses, each only if the kernel exports it."""
		p = self.write('v', '[abi_symbol_list]\n')
		allowed = {'__traceiter_foo', '__tracepoint_foo', '__tracepoint_bar',
			   '__SCK__tp_func_foo'}
		res = kmi.update(p, {'__traceiter_foo': {'a.ko'}, '__tracepoint_bar': {'b.ko'}},
				 allowed, remove=False)
		self.assertEqual({'__SCK__tp_func_foo': {'a.ko'}, '__traceiter_foo': {'a.ko'},
				  '__tracepoint_foo': {'a.ko'}, '__tracepoint_bar': {'b.ko'}},
				 res.added)
		self.assertEqual(['__SCK__tp_func_foo', '__traceiter_foo', '__tracepoint_bar',
				  '__tracepoint_foo'], kmi.parse(p))

	def test_update_reports_what_the_kernel_cannot_export(self):
		p = self.write('v', '[abi_symbol_list]\n')
		res = kmi.update(p, {'kfree': {'a.ko'}, 'local_only': {'a.ko', 'b.ko'}}, {'kfree'},
				 remove=False)
		self.assertEqual({'local_only': {'a.ko', 'b.ko'}}, res.unexportable)
		self.assertEqual(['kfree'], kmi.parse(p))

	def test_strict_lists_both_directions(self):
		symvers = self.write('Module.symvers',
				     '0x1\tkfree\tvmlinux\tEXPORT_SYMBOL\t\n'
				     '0x2\textra\tvmlinux\tEXPORT_SYMBOL\t\n')
		kmi.strict(symvers, {'core': {'kfree', 'extra'}}, self.dir)
		with self.assertRaises(GkiError) as e:
			kmi.strict(symvers, {'core': {'kfree', 'typo'}}, self.dir)
		self.assertIn('exported but in no list (1): extra', str(e.exception))
		self.assertIn('listed but not exported (1', str(e.exception))
		self.assertIn('typo', str(e.exception))

	def test_strict_fails_on_an_extra_export_alone(self):
		symvers = self.write('Module.symvers',
				     '0x1\tkfree\tvmlinux\tEXPORT_SYMBOL\t\n'
				     '0x2\textra\tvmlinux\tEXPORT_SYMBOL\t\n')
		with self.assertRaisesRegex(GkiError, r'exported but in no list \(1\): extra'):
			kmi.strict(symvers, {'core': {'kfree'}}, self.dir)

	def test_strict_names_the_list_and_the_command(self):
		"""An export in no list is one the GKI's in-tree modules use: the
		core list is stale.  A listed symbol the kernel does not export is
		named with each list holding it and the command that fixes it."""
		symvers = self.write('Module.symvers',
				     '0x1\tkfree\tvmlinux\tEXPORT_SYMBOL\t\n'
				     '0x2\tkunit_helper\tvmlinux\tEXPORT_SYMBOL\t\n')
		lists = {'core': {'kfree'}, 'incfs': {'kfree', 'gone_symbol'}, 'vhooks': {'kfree'}}
		with self.assertRaises(GkiError) as e:
			kmi.strict(symvers, lists, self.dir)
		lines = str(e.exception).splitlines()
		self.assertIn('  exported but in no list (1): kunit_helper', lines)
		self.assertIn(f"    the GKI's in-tree modules use them: {self.dir}/core is stale; "
			      'run ./build/gki symbols update core', lines)
		self.assertIn(f'    {self.dir}/incfs lists gone_symbol: '
			      'run ./build/gki symbols update incfs --remove', lines)
		self.assertNotIn('vhooks', str(e.exception))

	def compile(self, name: str, code: str) -> Path:
		src = self.write(name + '.c', code)
		obj = self.dir / (name + '.o')
		subprocess.run(['clang', '-O0', '-c', '-o', str(obj), str(src)],
			       env=toolchain.hermetic_env(use_ccache=False), check=True)
		return obj

	def test_needs_leaves_out_only_what_the_set_exports(self):
		"""A module's static kfree does not meet another's need for the
		kernel's; a symbol another module exports (modpost's
		__ksymtab_NAME in a built .ko) does."""
		a = self.compile('a', 'static void kfree(void *p) { (void)p; }\n'
				 'void a_free(void *p) { kfree(p); }\n')
		b = self.compile('b', 'void kfree(void *p);\nvoid b_free(void *p) { kfree(p); }\n')
		c = self.compile('c', 'int helper(void) { return 0; }\n'
				 'static const int __ksymtab_helper __attribute__((used));\n')
		d = self.compile('d', 'int helper(void);\nint d_use(void) { return helper(); }\n')
		env = toolchain.hermetic_env(use_ccache=False)
		self.assertEqual({'kfree': {'b.o'}}, kmi.needs([a, b, c, d], env))
		self.assertEqual({'kfree': {'b.o'}, 'helper': {'d.o'}},
				 kmi.needs([a, b, c, d], env, own=False))

	def test_undefined_symbol_names_module_and_list(self):
		log = ('ERROR: modpost: "LZ4_decompress_safe" [/x/ext/vendor/incfs/'
		       'incrementalfs.ko] undefined!\n'
		       'ERROR: modpost: "no_such_thing" [/x/incrementalfs.ko] undefined!\n')
		msg = kmi.explain_undefined(log, {'LZ4_decompress_safe'}, Path('symbol_lists/incfs'),
					    'incfs')
		self.assertIn('incrementalfs.ko uses LZ4_decompress_safe, which the GKI does not '
			      'export', msg)
		self.assertIn('symbol_lists/incfs', msg)
		self.assertNotIn('no_such_thing', msg)
		self.assertIsNone(kmi.explain_undefined(log, set(), Path('l'), 'l'))


if __name__ == '__main__':
	unittest.main()
