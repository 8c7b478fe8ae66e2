# SPDX-License-Identifier: GPL-2.0
"""Symbol lists: the format, add-only updates, strict mode, and the
message for a module using a symbol in no list."""

import subprocess
import tempfile
import unittest
from pathlib import Path

import context  # noqa: F401 (sets the import path)
import kmi
import toolchain
from util import GkiError


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

	def test_parse_needs_the_android_header(self):
		p = self.write('v', '[abi_whitelist]\nkfree\n')
		with self.assertRaisesRegex(GkiError, r':1: expected the header \[abi_symbol_list\]'):
			kmi.parse(p)

	def test_update_is_add_only_unless_asked(self):
		p = self.write('v', '# keep me\n[abi_symbol_list]\nold_unused\nkfree\n')
		need = {'kfree': {'a.ko'}, 'kmalloc': {'a.ko', 'b.ko'}, 'local_only': {'a.ko'}}
		allowed = {'kfree', 'kmalloc', 'old_unused'}
		added, removed = kmi.update(p, need, allowed, remove=False)
		self.assertEqual({'kmalloc': {'a.ko', 'b.ko'}}, added)
		self.assertEqual([], removed)
		self.assertEqual('# keep me\n[abi_symbol_list]\nkfree\nkmalloc\nold_unused\n',
				 p.read_text())
		added, removed = kmi.update(p, need, allowed, remove=True)
		self.assertEqual(({}, ['old_unused']), (added, removed))
		self.assertEqual(['kfree', 'kmalloc'], kmi.parse(p))

	def test_strict_lists_both_directions(self):
		symvers = self.write('Module.symvers',
				     '0x1\tkfree\tvmlinux\tEXPORT_SYMBOL\t\n'
				     '0x2\textra\tvmlinux\tEXPORT_SYMBOL\t\n')
		kmi.strict(symvers, {'kfree', 'extra'}, self.dir)
		with self.assertRaises(GkiError) as e:
			kmi.strict(symvers, {'kfree', 'typo'}, self.dir)
		self.assertIn('exported but in no list (1): extra', str(e.exception))
		self.assertIn('listed but not exported (1', str(e.exception))
		self.assertIn('typo', str(e.exception))

	def test_strict_fails_on_an_extra_export_alone(self):
		symvers = self.write('Module.symvers',
				     '0x1\tkfree\tvmlinux\tEXPORT_SYMBOL\t\n'
				     '0x2\textra\tvmlinux\tEXPORT_SYMBOL\t\n')
		with self.assertRaisesRegex(GkiError, r'exported but in no list \(1\): extra'):
			kmi.strict(symvers, {'kfree'}, self.dir)

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
