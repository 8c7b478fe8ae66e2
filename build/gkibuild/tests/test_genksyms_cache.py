# SPDX-License-Identifier: GPL-2.0
"""genksyms_cache: a hit prints what genksyms printed and preprocesses
nothing; any file the run read, the command line or genksyms changed is a
miss; a clone in another folder hits; CCACHE_RECACHE reads nothing.  With a
fake preprocessor and genksyms: the real ones run in every kernel build."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from gkibuild import genksyms_cache

# The preprocessor: counts its runs, writes the dependency file -MMD asks
# for (the source and the header it names), prints both files.
FAKE_CPP = r'''#!/bin/sh
echo run >> "$CPP_RUNS"
for a; do
	case $a in
	-Wp,-MMD,*) dep=${a#-Wp,-MMD,} ;;
	-*) ;;
	*) src=$a ;;
	esac
done
hdr=$(dirname "$src")/$(head -n1 "$src")
[ -z "$dep" ] || printf 'x.o: %s \\\n %s\n' "$src" "$hdr" > "$dep"
cat "$src" "$hdr"
'''
FAKE_GENKSYMS = '#!/bin/sh\necho "#SYMVER f 0x$(cksum | cut -d" " -f1)"\n'


class GenksymsCacheTest(unittest.TestCase):
	def setUp(self) -> None:
		tmp = tempfile.TemporaryDirectory()
		self.addCleanup(tmp.cleanup)
		self.root = Path(tmp.name)
		self.cache = self.root / 'cache'
		self.tools = self.root / 'tools'
		self.tools.mkdir()
		for name, text in (('cpp', FAKE_CPP), ('genksyms', FAKE_GENKSYMS)):
			(self.tools / name).write_text(text)
			(self.tools / name).chmod(0o755)
		self.runs = self.root / 'runs'
		self.base = self.clone('one')
		cwd = os.getcwd()
		self.addCleanup(os.chdir, cwd)

	def clone(self, name: str) -> Path:
		"""A checkout: a source naming its header, and an obj folder."""
		base = self.root / name
		(base / 'src').mkdir(parents=True)
		(base / 'obj').mkdir()
		(base / 'src' / 'a.c').write_text('a.h\nint f(void);\n')
		(base / 'src' / 'a.h').write_text('struct s { int x; };\n')
		return base

	def gen(self, base: Path | None = None, recache: bool = False,
		extra: tuple[str, ...] = ()) -> tuple[int, str]:
		"""genksyms-cache run as kbuild runs it, in base's obj folder."""
		base = base or self.base
		os.chdir(base / 'obj')
		env = {'CCACHE_BASEDIR': str(base), 'PATH': os.environ['PATH'],
		       'CPP_RUNS': str(self.runs)}
		if recache:
			env['CCACHE_RECACHE'] = '1'
		os.environ['CPP_RUNS'] = str(self.runs)
		cpp = [str(self.tools / 'cpp'), '-E', '-D__GENKSYMS__', *extra,
		       '-Wp,-MMD,.a.o.d', str(base / 'src' / 'a.c')]
		out = io.StringIO()
		with contextlib.redirect_stdout(out):
			rc = genksyms_cache.cached(str(self.tools / 'genksyms'), cpp, self.cache, env)
		return rc, out.getvalue()

	def preprocessed(self) -> int:
		return len(self.runs.read_text().splitlines()) if self.runs.exists() else 0

	def test_a_hit_prints_the_output_and_preprocesses_nothing(self):
		rc, first = self.gen()
		self.assertEqual((0, 1), (rc, self.preprocessed()))
		self.assertRegex(first, r'^#SYMVER f 0x\d+\n$')
		self.assertEqual((0, first), self.gen())
		self.assertEqual(1, self.preprocessed())

	def test_the_dependency_file_is_removed_as_kbuild_removes_its_own(self):
		self.gen()
		self.assertFalse((self.base / 'obj' / '.a.o.d').exists())

	def test_an_edited_header_is_a_miss_with_the_new_output(self):
		_, first = self.gen()
		(self.base / 'src' / 'a.h').write_text('struct s { long x; };\n')
		_, second = self.gen()
		self.assertEqual(2, self.preprocessed())
		self.assertNotEqual(first, second)
		# Both runs are kept: going back hits.
		(self.base / 'src' / 'a.h').write_text('struct s { int x; };\n')
		self.assertEqual((0, first), self.gen())
		self.assertEqual(2, self.preprocessed())

	def test_an_edited_source_is_a_miss(self):
		self.gen()
		(self.base / 'src' / 'a.c').write_text('a.h\nlong f(void);\n')
		self.gen()
		self.assertEqual(2, self.preprocessed())

	def test_another_command_line_is_a_miss(self):
		self.gen()
		self.gen(extra=('-DCONFIG_X=1',))
		self.assertEqual(2, self.preprocessed())

	def test_another_genksyms_is_a_miss(self):
		self.gen()
		(self.tools / 'genksyms').write_text(FAKE_GENKSYMS + '# v2\n')
		self.gen()
		self.assertEqual(2, self.preprocessed())

	def test_a_clone_in_another_folder_hits(self):
		_, first = self.gen()
		other = self.clone('two')
		self.assertEqual((0, first), self.gen(other))
		self.assertEqual(1, self.preprocessed())

	def test_recache_reads_nothing_and_stores(self):
		self.gen()
		self.gen(recache=True)
		self.assertEqual(2, self.preprocessed())
		self.gen()
		self.assertEqual(2, self.preprocessed())

	def test_a_failing_preprocessor_fails_and_stores_nothing(self):
		(self.base / 'src' / 'a.c').write_text('missing.h\n')
		rc, _ = self.gen()
		self.assertNotEqual(0, rc)
		rc, _ = self.gen()
		self.assertNotEqual(0, rc)
		self.assertEqual(2, self.preprocessed())

	def test_without_a_dependency_file_it_runs_uncached(self):
		os.chdir(self.base / 'obj')
		os.environ['CPP_RUNS'] = str(self.runs)
		cpp = [str(self.tools / 'cpp'), '-E', str(self.base / 'src' / 'a.c')]
		for _ in range(2):
			with contextlib.redirect_stdout(io.StringIO()):
				self.assertEqual(0, genksyms_cache.cached(
					str(self.tools / 'genksyms'), cpp, self.cache,
					{'PATH': os.environ['PATH']}))
		self.assertEqual(2, self.preprocessed())
		self.assertFalse(self.cache.exists())

	def test_a_corrupt_manifest_is_a_miss(self):
		self.gen()
		for p in self.cache.glob('??/*'):
			p.write_bytes(b'not zlib')
		rc, out = self.gen()
		self.assertEqual(0, rc)
		self.assertIn('#SYMVER', out)
		self.assertEqual(2, self.preprocessed())

	def test_prune_removes_manifests_unused_for_a_month(self):
		self.gen()
		(manifest,) = self.cache.glob('??/*')
		self.assertEqual(0, genksyms_cache.prune(self.cache))
		old = manifest.stat().st_mtime - 31 * 86400
		os.utime(manifest, (old, old))
		self.assertEqual(1, genksyms_cache.prune(self.cache))
		self.assertFalse(manifest.exists())


class MakeVarTest(unittest.TestCase):
	def test_kbuilds_own_command_for_a_symtypes_target(self):
		var = genksyms_cache.make_var(Path('/x/genksyms-cache'))
		self.assertTrue(var.startswith('cmd_gensymtypes_c=$(if $(1),'))
		self.assertIn('$(CPP) -D__GENKSYMS__ $(c_flags) $< | $(genksyms),', var)
		self.assertTrue(var.endswith(
			',/x/genksyms-cache scripts/genksyms/genksyms '
			'$(CPP) -D__GENKSYMS__ $(c_flags) $<)'))


class StartTest(unittest.TestCase):
	"""It starts once per exporting object: the script, as kbuild runs
	it, imports nothing that only a miss needs."""

	def test_a_start_imports_only_what_a_hit_needs(self):
		script = Path(genksyms_cache.__file__).resolve().parent.parent / 'genksyms-cache'
		first = script.read_text().splitlines()[0]
		self.assertEqual('#!/usr/bin/python3 -BS', first)
		with tempfile.TemporaryDirectory() as cache:
			# Without arguments: the usage line, after the imports.
			r = subprocess.run(['/usr/bin/python3', '-BS', '-X', 'importtime', str(script)],
					   env={'GKI_GENKSYMS_CACHE': cache}, capture_output=True,
					   text=True)
			self.assertEqual(2, r.returncode, r.stderr)
			self.assertIn('usage: genksyms-cache', r.stderr)
			imported = {line.split('|')[-1].strip() for line in r.stderr.splitlines()
				    if line.startswith('import time:')}
			self.assertIn('gkibuild.genksyms_cache', imported)
			self.assertEqual(set(), imported & {'json', 'subprocess', 'tempfile', 'shutil',
							    'pathlib', 'hashlib', 'site'})
			self.assertTrue(list(Path(cache, 'pycache').rglob('genksyms_cache.*.pyc')),
					'the module\'s bytecode is not kept in the cache')


if __name__ == '__main__':
	unittest.main()
