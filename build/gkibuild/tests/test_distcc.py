# SPDX-License-Identifier: GPL-2.0
"""distcc for real: distccd daemons on loopback addresses (127.0.0.2 and
127.0.0.3, each allowing only 127.0.0.1, on free ports) compile the vendor
modules and a slice of the kernel; the objects must be the ones the local
build made, bit for bit, debug info included (BUILD.md, "distcc", says what
makes that so), and the daemons' own logs must show the jobs.  A host with another clang is refused; a host that is down,
or dies after its probe, leaves its compiles here and the build still
succeeds.

The slice and the modules are rebuilt in copies bind-mounted over the
real paths (scratch.py), so the real tree is never written."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest
from pathlib import Path

from gkibuild import distcc, modules, toolchain
from gkibuild.kernel import Kernel
from gkibuild.layout import SCRATCH, Layout
from gkibuild.main import ext_modules
from gkibuild.sandbox import unavailable
from gkibuild.scratch import Scratch, copy, run_at_real_paths
from gkibuild.tests import prereq
from gkibuild.util import GkiError

LAYOUT = Layout.default()
# The small tree (layout.SCRATCH) is built beside the host tests by `gki
# test`: this module runs after that build (testrun.host_run_split).
NEEDS_EVERY_VARIANT = True
# A kernel slice: three folders, a few dozen objects.  fs/jbd2's
# transaction.c has multi-line macro arguments, whose lines only a compile
# of the source (not of the preprocessed unit) would record.
SLICE = ('lib/lz4', 'fs/proc', 'fs/jbd2')

SAMPLE_LOG = '''\
distcc[7] compile probe.i on 127.0.0.2:3632/2 completed ok
distcc[8] compile a.c on 127.0.0.3:4000 completed ok
distcc[9] compile b.c on 127.0.0.2:3632/2 completed ok
distcc[10] Warning: failed to distribute c.c to 127.0.0.3:4000, running locally instead
distcc[10] compile c.c on localhost completed ok
distcc[11] compile /dev/null on localhost completed ok
distcc[12] compile (null) on localhost completed ok
distcc[13] ERROR: compile d.c on 127.0.0.2:3632/2 failed
distcc[13] (dcc_build_somewhere) Warning: remote compilation of 'd.c' failed, retrying locally
distcc[13] Warning: failed to distribute d.c to 127.0.0.2:3632/2, running locally instead
distcc[13] compile d.c on localhost completed ok
'''


class HostsTest(unittest.TestCase):
	def test_host_specs(self):
		self.assertEqual([distcc.Host('127.0.0.2', 3632, 4), distcc.Host('farm1', 4000, 8)],
				 distcc.parse_hosts('127.0.0.2  farm1:4000/8'))
		self.assertEqual(12 + (os.cpu_count() or 1),
				 distcc.jobs(distcc.parse_hosts('a/4 b:1/8')))

	def test_other_host_forms_are_refused(self):
		for bad in ('localhost', '@ssh-host', 'h:port', 'h/x', 'h,cpp,lzo', '  '):
			with self.subTest(bad), self.assertRaisesRegex(GkiError, 'distcc'):
				distcc.parse_hosts(bad)

	def test_tally_counts_where_compiles_ran(self):
		t = distcc.tally(SAMPLE_LOG)
		self.assertEqual(({'127.0.0.2:3632': 2, '127.0.0.3:4000': 1}, 2, 2),
				 (t.remote, t.local, t.fell_back))
		self.assertEqual('distcc: 3 compiles remote (127.0.0.2:3632 2, 127.0.0.3:4000 1), 2 here, of '
				 'which 2 after a host failed (distcc fell back)', t.line())


def same_bytes(a: Path, b: Path) -> bool:
	return a.read_bytes() == b.read_bytes()


def free_port(addr: str) -> int:
	with socket.socket() as s:
		s.bind((addr, 0))
		return s.getsockname()[1]


class Daemon:
	"""One distccd on addr, serving the compiler ccache names by its
	absolute path (DISTCC_CMDLIST), or another one in its place."""

	def __init__(self, dir: Path, addr: str, compiler: Path | None = None):
		self.addr = addr
		self.port = free_port(addr)
		self.log = dir / f'distccd-{addr}.log'
		self.log.touch()
		self.log.chmod(0o666)	# distccd drops root for the distccd user
		cmdlist = dir / f'cmdlist-{addr}'
		cmdlist.write_text(f'{compiler or toolchain.LLVM_BIN / "clang"}\n')
		cmdlist.chmod(0o644)
		env = {'PATH': f'{toolchain.LLVM_BIN}:/usr/bin:/bin', 'DISTCC_CMDLIST': str(cmdlist),
		       'DISTCC_CMDLIST_NUMWORDS': '1'}
		self.proc = subprocess.Popen(
			['distccd', '--daemon', '--no-detach', '--listen', addr, '--port',
			 str(self.port), '--allow', '127.0.0.1', '--jobs', '2', '--log-file',
			 str(self.log), '--log-level', 'info'],
			env=env, start_new_session=True, stdin=subprocess.DEVNULL)
		self._wait_listening()

	def _wait_listening(self) -> None:
		for _ in range(100):
			try:
				socket.create_connection((self.addr, self.port), timeout=0.1).close()
				return
			except OSError:
				if self.proc.poll() is not None:
					raise AssertionError(f'distccd on {self.addr} exited: '
							     f'{self.log.read_text()}')
				subprocess.run(['sleep', '0.1'])
		raise AssertionError(f'distccd on {self.addr}:{self.port} does not listen')

	@property
	def spec(self) -> str:
		return f'{self.addr}:{self.port}/2'

	def jobs_done(self) -> int:
		return self.log.read_text(errors='replace').count(' COMPILE_OK ')

	def stop(self) -> None:
		if self.proc.poll() is None:
			os.killpg(self.proc.pid, signal.SIGTERM)
			self.proc.wait(timeout=30)


def require_farm() -> None:
	why = unavailable(LAYOUT, SCRATCH)
	if why is None and not shutil.which('distccd'):
		why = 'distccd is not installed'
	prereq.require(why, 'the distcc test')


class FarmTest(unittest.TestCase):
	@classmethod
	def setUpClass(cls):
		require_farm()
		cls.tmp = tempfile.TemporaryDirectory(prefix='gki-farm-')
		cls.dir = Path(cls.tmp.name)
		cls.dir.chmod(0o755)
		# The cache is written, never read: every compile really runs.
		cls.env = toolchain.hermetic_env(use_ccache=False)

	@classmethod
	def tearDownClass(cls):
		cls.tmp.cleanup()

	def daemon(self, addr: str, compiler: Path | None = None) -> Daemon:
		d = Daemon(self.dir, addr, compiler)
		self.addCleanup(d.stop)
		return d

	def farm_env(self, hosts: list[distcc.Host], name: str) -> dict[str, str]:
		return {**self.env, **distcc.build_env(hosts, self.dir / f'state-{name}',
						       self.dir / f'client-{name}.log')}

	def client_tally(self, name: str) -> distcc.Tally:
		return distcc.tally((self.dir / f'client-{name}.log').read_text(errors='replace'))

	def build_slice(self, env: dict[str, str], name: str) -> dict[str, bool]:
		"""Rebuild SLICE in a copy of the small tree (layout.SCRATCH) through env; for
		each object, is it byte for byte the local build's?"""
		k = Kernel(LAYOUT, SCRATCH, env, 4)
		s = Scratch(k, LAYOUT.out / 'distcc-test' / name).create()
		self.addCleanup(s.remove)
		objs = sorted(p.relative_to(s.obj) for d in SLICE for p in (s.obj / d).glob('*.o'))
		self.assertGreater(len(objs), 10)
		for o in objs:
			(s.obj / o).unlink()
		s.make(self.dir / f'slice-{name}.log', *(f'{d}/' for d in SLICE))
		return {str(o): same_bytes(s.obj / o, k.obj / o) for o in objs}

	def build_vendor_modules(self, env: dict[str, str], name: str) -> dict[str, bool]:
		"""Rebuild every vendor module through env in a copy of their
		output folders; for each .ko, is it byte for byte the local
		build's?"""
		k = Kernel(LAYOUT, SCRATCH, env, 4)
		real = LAYOUT.ext(SCRATCH)
		mirror = self.dir / f'ext-{name}'
		copy([['cp', '-a', str(real), str(mirror)]])
		same = {}
		for m in ext_modules(LAYOUT):
			# The small tree has no DRM: not the virtual device's.
			if m.kind != 'vendor' or not modules.wanted(k, m):
				continue
			dest = mirror / m.kind / m.name
			for o in dest.rglob('*.o'):
				o.unlink()
			log = self.dir / f'module-{name}-{m.name}.log'
			rc = run_at_real_paths([(mirror, real)], modules.make_command(k, m), env, log)
			self.assertEqual(0, rc, log.read_text()[-3000:])
			for ko in modules.built_modules(real / m.kind / m.name):
				rel = ko.relative_to(real)
				same[str(rel)] = same_bytes(mirror / rel, ko)
		self.assertTrue(same)
		return same

	def test_compiles_go_remote_and_give_the_local_bits(self):
		a, b = self.daemon('127.0.0.2'), self.daemon('127.0.0.3')
		hosts = distcc.check(distcc.parse_hosts(f'{a.spec} {b.spec}'), self.env)
		self.assertEqual([a.spec, b.spec], [h.spec for h in hosts])
		env = self.farm_env(hosts, 'farm')
		objs = self.build_slice(env, 'farm')
		kos = self.build_vendor_modules(env, 'farm')
		self.assertEqual([], [o for o, same in {**objs, **kos}.items() if not same])
		t = self.client_tally('farm')
		here = [l for l in (self.dir / 'client-farm.log').read_text(errors='replace').splitlines()
			if 'on localhost completed ok' in l and ' compile ' in l
			and '(null)' not in l and '/dev/null' not in l]
		self.assertEqual(0, t.fell_back, t.line())
		# distcc keeps a few compiles here by its own rules (the vDSO's,
		# which make's prepare step rebuilds); none of the slice's or
		# the vendor modules'.
		ours = [l for l in here if any(f'/{d}/' in l for d in SLICE) or '/ext/vendor/' in l]
		self.assertEqual([], ours, t.line())
		# Every object of the slice and every vendor object went remote,
		# and both daemons took a share.
		self.assertGreaterEqual(sum(t.remote.values()), len(objs) + len(kos))
		# The daemons' own logs confirm it (they also count the probes).
		self.assertGreaterEqual(a.jobs_done() + b.jobs_done(), sum(t.remote.values()) + 2)
		self.assertGreater(a.jobs_done(), 0)
		self.assertGreater(b.jobs_done(), 0)

	def test_a_host_with_another_clang_is_refused(self):
		"""A host whose clang is another 19.x (a wrapper stamping its
		objects as 19.1.0, served in place of the pinned path)."""
		fake = self.dir / 'other-llvm' / 'bin' / 'clang'
		fake.parent.mkdir(parents=True)
		fake.write_text(f'#!/bin/sh\nset -e\n{toolchain.LLVM_BIN}/clang "$@"\n'
				'for a; do if [ "$prev" = -o ]; then out=$a; fi; prev=$a; done\n'
				'printf "Debian clang version 19.1.0\\0" > "$out.comment"\n'
				f'{toolchain.LLVM_BIN}/llvm-objcopy --update-section .comment="$out.comment" '
				'"$out"\n')
		fake.chmod(0o755)
		for p in (fake.parent.parent, fake.parent):
			p.chmod(0o755)
		good, other = self.daemon('127.0.0.2'), self.daemon('127.0.0.3', fake)
		with self.assertRaisesRegex(GkiError, rf'distcc host 127\.0\.0\.3:{other.port} runs '
					    r'"Debian clang version 19\.1\.0", not the pinned "Debian '
					    r'clang version 19\.'):
			distcc.check(distcc.parse_hosts(f'{good.spec} {other.spec}'), self.env)

	def test_a_down_host_leaves_its_compiles_here(self):
		"""A host down at the probe is left out; one that dies after it
		makes distcc compile here (its fallback); the build succeeds,
		bit-identical to the local build, and says so."""
		dying = self.daemon('127.0.0.2')
		down = f'127.0.0.4:{free_port("127.0.0.4")}'
		hosts = distcc.check(distcc.parse_hosts(f'{dying.spec} {down}'), self.env)
		self.assertEqual([dying.spec], [h.spec for h in hosts])
		dying.stop()
		objs = self.build_slice(self.farm_env(hosts, 'dying'), 'dying')
		self.assertEqual([], [o for o, same in objs.items() if not same])
		t = self.client_tally('dying')
		log = (self.dir / 'client-dying.log').read_text(errors='replace')
		self.assertEqual({}, t.remote, t.line())
		self.assertGreater(t.fell_back, 0, t.line() + '\n' + log[-3000:])
		self.assertIn('after a host failed (distcc fell back)', t.line())
		# Nothing up at all: no distcc, every compile here.
		self.assertEqual({}, distcc.build_env(distcc.check(distcc.parse_hosts(down), self.env),
						      self.dir / 's', self.dir / 'l'))


if __name__ == '__main__':
	unittest.main()
