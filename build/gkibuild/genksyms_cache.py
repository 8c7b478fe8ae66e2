# SPDX-License-Identifier: GPL-2.0
"""A cache of genksyms's output: the symbol versions of a warm build.

With CONFIG_MODVERSIONS, kbuild preprocesses each object that exports a
symbol a second time, with -D__GENKSYMS__, and pipes the text to genksyms
(cmd_gensymtypes_c in scripts/Makefile.build), whose '#SYMVER' lines go
into the object's .cmd file.  ccache does not cache a preprocessor run, so
a build whose every compile is a ccache hit still preprocesses about 1,500
files at the GKI's size: two thirds of a warm build in a new folder.

This caches that output the way ccache's direct mode caches an object.
The key is the command line (with the checkout's folder, ccache's
base_dir, replaced: a clone in another folder has the same key), the
folder it runs in, the compiler binary and genksyms.  Under the key, a
manifest keeps the last few runs: the files each one read (its dependency
file, which the command line asks the preprocessor for) with their hashes,
and genksyms's output.  A run whose files all hash the same again prints
that output and preprocesses nothing.

Like ccache's direct mode it does not see a header that would now shadow
another in the include path (a new file, read by no earlier run).  With
CCACHE_RECACHE set (toolchain.hermetic_env(use_ccache=False)) it reads
nothing and stores what it runs.

It starts once per exporting object (1,532 of the GKI's), so a hit
imports only what Python has built in: no json (the manifest is
marshal's), no pathlib or shutil, BLAKE2b from its C module; subprocess
and tempfile load on a miss.

    usage: genksyms-cache GENKSYMS CPP_COMMAND...
"""

from __future__ import annotations

import marshal
import os
import sys
import time
import zlib
from typing import TYPE_CHECKING

# hashlib's C module itself (hashlib costs 10 ms to import); BLAKE2b
# hashes a header faster than sha256 does.
from _blake2 import blake2b

if TYPE_CHECKING:
	from pathlib import Path

# Bump when the key or the manifest changes meaning.
VERSION = 2
# Runs kept per key: the variants of one object whose headers differ.
ENTRIES = 4
# Manifests unused this long go (prune()).
MAX_AGE_DAYS = 30
ENV_DIR = 'GKI_GENKSYMS_CACHE'
BASE_MARK = '@BASE@'


def normalize(word: str, base: str) -> str:
	return word.replace(base, BASE_MARK) if base else word


def depfile(cpp: list[str]) -> str | None:
	"""The dependency file the command line asks for (-Wp,-MMD,FILE)."""
	for w in cpp:
		for opt in ('-Wp,-MMD,', '-Wp,-MD,'):
			if w.startswith(opt):
				return w[len(opt):]
	return None


def read_deps(path: str) -> list[str]:
	"""The prerequisites of a make-format dependency file."""
	with open(path, encoding='utf-8', errors='surrogateescape') as f:
		text = f.read().replace('\\\n', ' ')
	_, _, deps = text.partition(':')
	return [d for d in deps.split() if d]


def file_hash(path: str) -> str | None:
	try:
		with open(path, 'rb') as f:
			return blake2b(f.read(), digest_size=16).hexdigest()
	except OSError:
		return None


def tool_id(cpp: list[str], env_path: str) -> str:
	"""Which compiler runs: the first word that is not ccache, by its
	resolved path, size and time (ccache's compiler_check=mtime)."""
	for w in cpp:
		if os.path.basename(w) == 'ccache':
			continue
		found = which(w, env_path)
		if not found:
			return w
		st = os.stat(os.path.realpath(found))
		return f'{os.path.realpath(found)}:{st.st_size}:{st.st_mtime_ns}'
	return ''


def which(cmd: str, env_path: str) -> str | None:
	"""shutil.which(cmd, path=env_path), without importing shutil."""
	dirs = [''] if '/' in cmd else env_path.split(os.pathsep)
	for d in dirs:
		p = os.path.join(d, cmd)
		if os.path.isfile(p) and os.access(p, os.X_OK):
			return p
	return None


def key(genksyms: str, cpp: list[str], base: str, cwd: str, env_path: str) -> str:
	material = (VERSION, normalize(cwd, base), [normalize(w, base) for w in cpp],
		    tool_id(cpp, env_path), file_hash(genksyms))
	return blake2b(repr(material).encode(), digest_size=32).hexdigest()


class Manifest:
	"""The runs stored under one key, newest first."""

	def __init__(self, path: str) -> None:
		self.path = path
		self.entries: list[dict] = []

	def load(self) -> None:
		try:
			with open(self.path, 'rb') as f:
				data = marshal.loads(zlib.decompress(f.read()))
		except (OSError, ValueError, EOFError, TypeError, zlib.error):
			return
		if isinstance(data, list):
			self.entries = [e for e in data if isinstance(e, dict)
					and isinstance(e.get('deps'), list)
					and isinstance(e.get('out'), str)]

	def lookup(self, base: str) -> str | None:
		"""The output of a run whose files all hash as they did."""
		hashes: dict[str, str | None] = {}
		for e in self.entries:
			ok = True
			for name, digest in e['deps']:
				path = name.replace(BASE_MARK, base) if base else name
				if path not in hashes:
					hashes[path] = file_hash(path)
				if hashes[path] != digest:
					ok = False
					break
			if ok:
				return e['out']
		return None

	def store(self, deps: list[list[str]], out: str) -> None:
		entries = [{'deps': deps, 'out': out}] + [
			e for e in self.entries if e['deps'] != deps]
		data = zlib.compress(marshal.dumps(entries[:ENTRIES]))
		folder = os.path.dirname(self.path)
		os.makedirs(folder, exist_ok=True)
		import tempfile
		fd, tmp = tempfile.mkstemp(dir=folder, prefix='.tmp.')
		try:
			os.fchmod(fd, 0o644)
			with os.fdopen(fd, 'wb') as f:
				f.write(data)
			os.replace(tmp, self.path)
		except BaseException:
			os.unlink(tmp)
			raise


def run(genksyms: str, cpp: list[str]) -> tuple[int, str]:
	"""cpp | genksyms -r /dev/null, as kbuild runs it."""
	import subprocess
	pre = subprocess.Popen(cpp, stdout=subprocess.PIPE)
	gen = subprocess.Popen([genksyms, '-r', '/dev/null'], stdin=pre.stdout,
			       stdout=subprocess.PIPE)
	assert pre.stdout is not None
	pre.stdout.close()
	out, _ = gen.communicate()
	rc = pre.wait() or gen.returncode
	return rc, out.decode('utf-8', errors='surrogateescape')


def cached(genksyms: str, cpp: list[str], cache: str | Path, env: dict[str, str]) -> int:
	"""Print genksyms's output for cpp, from the cache where it can."""
	base = env.get('CCACHE_BASEDIR', '')
	dep = depfile(cpp)
	if dep is None:
		rc, out = run(genksyms, cpp)
		sys.stdout.write(out)
		return rc
	k = key(genksyms, cpp, base, os.getcwd(), env.get('PATH', ''))
	manifest = Manifest(os.path.join(cache, k[:2], k[2:]))
	if not env.get('CCACHE_RECACHE'):
		manifest.load()
		out = manifest.lookup(base)
		if out is not None:
			sys.stdout.write(out)
			try:
				os.utime(manifest.path)
			except OSError:
				pass
			return 0
	rc, out = run(genksyms, cpp)
	sys.stdout.write(out)
	if rc == 0:
		deps = [[normalize(d, base), file_hash(d)] for d in read_deps(dep)]
		if all(h is not None for _, h in deps):
			manifest.store(deps, out)
	# kbuild removes the compile's dependency file once fixdep has read
	# it; this one, the preprocessor's second, goes too.
	remove(dep)
	return rc


def remove(path: str) -> None:
	try:
		os.unlink(path)
	except OSError:
		pass


def prune(cache: Path, max_age_days: int = MAX_AGE_DAYS) -> int:
	"""Remove manifests unused for max_age_days; how many went."""
	limit = time.time() - max_age_days * 86400
	gone = 0
	for p in cache.glob('??/*'):
		try:
			if p.stat().st_mtime < limit:
				p.unlink()
				gone += 1
		except OSError:
			pass
	return gone


def make_var(script: Path) -> str:
	"""kbuild's cmd_gensymtypes_c through the cache: a make command-line
	variable, which overrides scripts/Makefile.build's in every sub-make.
	A .symtypes target (the first argument set) runs kbuild's own."""
	orig = '$(CPP) -D__GENKSYMS__ $(c_flags) $<'
	return (f'cmd_gensymtypes_c=$(if $(1),{orig} | $(genksyms),'
		f'{script} scripts/genksyms/genksyms {orig})')


def main(argv: list[str]) -> int:
	if len(argv) < 3:
		print('usage: genksyms-cache GENKSYMS CPP_COMMAND...', file=sys.stderr)
		return 2
	env = dict(os.environ)
	cache = env.get(ENV_DIR)
	if not cache:
		print(f'genksyms-cache: {ENV_DIR} is not set', file=sys.stderr)
		return 2
	return cached(argv[1], argv[2:], cache, env)


if __name__ == '__main__':
	sys.exit(main(sys.argv))
