# SPDX-License-Identifier: GPL-2.0
"""Compiles spread over a distcc farm.

ccache stays the compiler's front end and hands each miss to its prefix
command, build/cc-unit, which preprocesses here and hands the unit to
distcc (DISTCC_HOSTS in its environment); distcc sends it to a host, or
compiles it here if the host fails.  A local build compiles the same unit
with the same command line (cc-unit without DISTCC_HOSTS), so a farm gives
the local build's bits, debug info included.  A host must run the same
compiler: each compiles a probe first, and the compiler named in the
probe's .comment section must be the local one, or the build stops.

ccache names the compiler by its absolute path, /usr/lib/llvm-19/bin/clang,
so a host's distccd must list that path in DISTCC_CMDLIST (BUILD.md).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import tempfile
from pathlib import Path

from gkibuild import toolchain
from gkibuild.util import GkiError, capture, info

ENV = 'GKI_DISTCC_HOSTS'
DEFAULT_PORT = 3632
DEFAULT_SLOTS = 4		# distcc's own default per host
PROBE_TIMEOUT_S = 60

_HOST = re.compile(r'(?P<host>[A-Za-z0-9._-]+)(?::(?P<port>\d+))?(?:/(?P<slots>\d+))?')
_DONE = re.compile(r'compile \S+ on ([^\s/]+)(?:/\d+)? completed ok')
# One line per file that fell back, whether the host was down or its
# compile failed (which distcc also logs as 'retrying locally').
_FELL_BACK = re.compile(r'failed to distribute .* running locally instead')


@dataclasses.dataclass(frozen=True)
class Host:
	name: str
	port: int
	slots: int

	@property
	def spec(self) -> str:
		"""The host in DISTCC_HOSTS syntax."""
		return f'{self.name}:{self.port}/{self.slots}'

	@property
	def where(self) -> str:
		"""How distcc's log names it."""
		return f'{self.name}:{self.port}'


def parse_hosts(text: str) -> list[Host]:
	"""HOST[:PORT][/SLOTS] separated by spaces, as DISTCC_HOSTS.  Only TCP hosts:
	distcc's ssh (@host), pump (,cpp) and zeroconf forms are refused, and
	so is localhost, which this machine's own -j share covers."""
	hosts = []
	for word in text.split():
		m = _HOST.fullmatch(word)
		if not m or m['host'] == 'localhost':
			raise GkiError(f'distcc host {word!r}: expected HOST[:PORT][/SLOTS] of a TCP '
				       'distccd (no localhost, ssh, pump or zeroconf hosts)')
		hosts.append(Host(m['host'], int(m['port'] or DEFAULT_PORT),
				  int(m['slots'] or DEFAULT_SLOTS)))
	if not hosts:
		raise GkiError('distcc: the host list is empty')
	return hosts


def jobs(hosts: list[Host]) -> int:
	"""-j for a farm: every host's slots, plus this machine's cores, which
	preprocess, link and take what falls back."""
	return sum(h.slots for h in hosts) + (os.cpu_count() or 1)


def compiler_ident(obj: Path, env: dict[str, str]) -> str:
	"""The compiler that built obj, from its .comment section."""
	out = capture(['llvm-readelf', '-p', '.comment', str(obj)], env=env)
	m = re.search(r'\]\s+(.*clang version \S+.*)', out)
	if not m:
		raise GkiError(f'{obj}: no clang version in its .comment section')
	return m.group(1).strip()


PROBE_SOURCE = 'int gki_distcc_probe;\n'


def _compile_probe(prefix: list[str], dir: Path, env: dict[str, str]) -> Path:
	"""Compile the probe (already preprocessed) for the GKI's target."""
	src, obj = dir / 'probe.i', dir / 'probe.o'
	src.write_text(PROBE_SOURCE)
	obj.unlink(missing_ok=True)
	cmd = [*prefix, str(toolchain.LLVM_BIN / 'clang'), '--target=aarch64-linux-gnu',
	       '-c', str(src), '-o', str(obj)]
	try:
		subprocess.run(cmd, env=env, cwd=dir, capture_output=True, timeout=PROBE_TIMEOUT_S)
	except subprocess.TimeoutExpired:
		pass
	return obj


def probe(host: Host, env: dict[str, str]) -> tuple[str, str]:
	"""('ok', compiler) when host compiled the probe; ('down', why) when
	distcc could not reach it; ('failed', why) otherwise."""
	with tempfile.TemporaryDirectory(prefix='gki-distcc-') as d:
		dir = Path(d)
		log = dir / 'distcc.log'
		(dir / 'state').mkdir()
		penv = {**env, 'DISTCC_HOSTS': host.spec, 'DISTCC_DIR': str(dir / 'state'),
			'DISTCC_LOG': str(log)}
		obj = _compile_probe(['distcc'], dir, penv)
		text = log.read_text(errors='replace') if log.exists() else ''
		if f'on {host.spec} completed ok' in text and obj.exists():
			return 'ok', compiler_ident(obj, env)
		errors = [l.split('ERROR: ', 1)[1] for l in text.splitlines() if 'ERROR: ' in l]
		why = errors[0] if errors else 'no answer'
		if re.search(r'connect.*(refused|timed out|unreachable)|failed to look up', why):
			return 'down', why
		return 'failed', why


def check(hosts: list[Host], env: dict[str, str]) -> list[Host]:
	"""Probe every host: stop when one runs another compiler or refuses
	the probe; return the hosts that answered (a down host is left out,
	and its share compiles here)."""
	with tempfile.TemporaryDirectory(prefix='gki-distcc-') as d:
		local = compiler_ident(_compile_probe([], Path(d), env), env)
	up = []
	for h in hosts:
		state, what = probe(h, env)
		if state == 'ok' and what != local:
			raise GkiError(f'distcc host {h.where} runs "{what}", not the pinned "{local}": '
				       'refused (every host must run the same clang)')
		if state == 'failed':
			raise GkiError(f'distcc host {h.where} did not compile the probe ({what}); does '
				       f'its distccd allow this machine and list {toolchain.LLVM_BIN}/clang '
				       'in DISTCC_CMDLIST?  See BUILD.md, "distcc".')
		if state == 'down':
			info(f'distcc host {h.where} is down ({what}): its share compiles here')
			continue
		up.append(h)
	return up


def build_env(hosts: list[Host], state: Path, log: Path) -> dict[str, str]:
	"""What the hermetic environment gains for a distcc build.  No hosts
	(all down): distcc is left out and everything compiles here."""
	if not hosts:
		return {}
	state.mkdir(parents=True, exist_ok=True)
	log.parent.mkdir(parents=True, exist_ok=True)
	return {'DISTCC_HOSTS': ' '.join(h.spec for h in hosts),
		'DISTCC_DIR': str(state), 'DISTCC_LOG': str(log)}


@dataclasses.dataclass
class Tally:
	remote: dict[str, int]
	local: int
	fell_back: int

	def line(self) -> str:
		hosts = ', '.join(f'{h} {n}' for h, n in sorted(self.remote.items()))
		s = f'distcc: {sum(self.remote.values())} compiles remote ({hosts or "none"}), ' \
		    f'{self.local} here'
		if self.fell_back:
			s += f', of which {self.fell_back} after a host failed (distcc fell back)'
		return s


def tally(text: str) -> Tally:
	"""Count where the compiles of a distcc log ran."""
	remote: dict[str, int] = {}
	local = 0
	for m in _DONE.finditer(text):
		if m[1] == 'localhost' and m[0].split()[1] in ('/dev/null', '(null)'):
			# kbuild's compiler probes (cc-option, --version):
			# nothing to send.
			continue
		if m[1] == 'localhost':
			local += 1
		else:
			remote[m[1]] = remote.get(m[1], 0) + 1
	return Tally(remote, local, len(_FELL_BACK.findall(text)))


def without_debug(path: Path) -> bytes:
	"""An ELF file with its debug sections stripped, and its GNU build ID
	(a module's .note.gnu.build-id; vmlinux keeps it in .notes), which the
	linker computes over the whole file, debug info included: what differs
	when only the debug info does (repro's diagnosis)."""
	with tempfile.TemporaryDirectory(prefix='gki-distcc-') as d:
		out = Path(d) / path.name
		subprocess.run([str(toolchain.LLVM_BIN / 'llvm-objcopy'), '--strip-debug',
				'--remove-section=.note.gnu.build-id', '--remove-section=.notes',
				str(path), str(out)], check=True)
		return out.read_bytes()


def same_code(a: Path, b: Path) -> bool:
	return a.read_bytes() == b.read_bytes() or without_debug(a) == without_debug(b)
