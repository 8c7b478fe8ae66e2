# SPDX-License-Identifier: GPL-2.0
"""What build/cc-unit costs: sampled C files of a built tree compiled from
their source and through cc-unit (preprocess, then compile the unit),
alternately, each with the command line kbuild recorded; the CPU time of
each way and their ratio (./build/gki bench --cc-unit, BUILD.md)."""

from __future__ import annotations

import json
import random
import resource
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

from gkibuild import toolchain
from gkibuild.layout import Layout, Variant
from gkibuild.util import GkiError, info

_SAVED = 'savedcmd_'


def compile_lines(obj: Path) -> list[list[str]]:
	"""The compiler command line of every C object kbuild recorded in
	obj (from its .cmd file), without the ccache in front."""
	lines = []
	for cmd in sorted(obj.rglob('.*.o.cmd')):
		first = cmd.read_text(errors='replace').split('\n', 1)[0]
		if not first.startswith(_SAVED) or ' := ' not in first:
			continue
		args = shlex.split(first.split(' := ', 1)[1])
		if args[:2] != ['ccache', 'clang'] or not args[-1].endswith('.c') or '-c' not in args:
			continue
		lines.append(args[1:])
	return lines


def retarget(args: list[str], out: Path) -> list[str]:
	"""args writing the object and the dependency file into out, not
	into the tree."""
	new = []
	for i, a in enumerate(args):
		if i and args[i - 1] == '-o':
			a = str(out / 'x.o')
		elif a.startswith('-Wp,-MMD,'):
			a = f'-Wp,-MMD,{out / "x.d"}'
		new.append(a)
	return new


def cpu_seconds(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
	before = resource.getrusage(resource.RUSAGE_CHILDREN)
	r = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
			   stderr=subprocess.PIPE, text=True)
	after = resource.getrusage(resource.RUSAGE_CHILDREN)
	if r.returncode:
		raise GkiError(f'{" ".join(argv[-3:])} failed:\n{r.stderr[-2000:]}')
	return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(layout: Layout, v: Variant, count: int) -> int:
	obj = layout.obj(v)
	lines = compile_lines(obj)
	if len(lines) < count:
		raise GkiError(f'{obj}: {len(lines)} compiled C files recorded, {count} asked for')
	sample = random.Random(0).sample(lines, count)
	env = toolchain.hermetic_env()
	ways = {'source': [], 'cc-unit': [str(toolchain.CC_UNIT)]}
	cpu = {w: 0.0 for w in ways}
	start = time.monotonic()
	with tempfile.TemporaryDirectory(prefix='gki-unitcost-') as tmp:
		for n, args in enumerate(sample):
			args = retarget(args, Path(tmp))
			# Alternate which way goes first: neither always gets
			# the warm page cache.
			order = list(ways) if n % 2 == 0 else list(reversed(ways))
			for w in order:
				cpu[w] += cpu_seconds(ways[w] + args, obj, env)
	ratio = cpu['cc-unit'] / cpu['source']
	result = {'files': count, 'cpu_s': {w: round(s, 2) for w, s in cpu.items()},
		  'ratio': round(ratio, 3), 'wall_s': round(time.monotonic() - start, 1)}
	dest = layout.out / 'bench' / 'cc-unit.json'
	dest.parent.mkdir(parents=True, exist_ok=True)
	dest.write_text(json.dumps(result, indent=1) + '\n')
	info(f'cc-unit: {count} files, CPU {cpu["source"]:.1f} s from the source, '
	     f'{cpu["cc-unit"]:.1f} s through cc-unit: x{ratio:.3f} ({dest})')
	return 0
