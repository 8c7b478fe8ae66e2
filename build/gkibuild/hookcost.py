# SPDX-License-Identifier: GPL-2.0
"""bench --against-unhooked: what the vendor hooks' call sites cost.

The release GKI as built ("hooked") is compared with the same tree built
without the call sites ("unhooked"): a scratch copy of the release tree
(scratch.py) in which the lines of SITES are removed from their files and
Image is made again; only the objects of those files are rebuilt.  The
unhooked Image is kept in out/bench/unhooked/ and made again only when the
hooked Image or SITES change (builds are reproducible, so the hooked
Image's hash stands for the tree and the configuration).

Both kernels then boot the same initramfs, alternately, ROUNDS times each
(hooked, unhooked, hooked, ...), and each boot runs the benchmarks named
(vh_cost by default).  The machine is shared and noisy, so only ratios of
figures measured side by side mean something: for each figure the median
over the rounds on each kernel, their ratio, and the range of the ratios of
each round's pair of boots; for a figure with a baseline (vh_cost's
'..._attached' figures) its ratio to the baseline on each kernel.  Nothing
is asserted (targets are in docs/figures.md); a boot that fails, or a figure
missing from one boot, stops the campaign.

Under TCG on a shared machine a pass's wall-clock time varies by 10-30%,
far more than a call site costs.  With icount the guest's clock counts
the instructions it executes instead (QEMU's -icount shift=0: one virtual
ns per instruction), so each figure is the instructions one call takes,
the same from boot to boot whatever else the machine runs (on one vCPU:
see ICOUNT).
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from gkibuild import programs, testrun, toolchain
from gkibuild.kernel import Kernel
from gkibuild.layout import Layout, Variant
from gkibuild.scratch import Scratch
from gkibuild.util import GkiError, info, sha256_file
from gkiqemu import boot, initramfs, runner

HOOKED, UNHOOKED = 'hooked', 'unhooked'
ROUNDS = 5
DEFAULT_BENCH = ['vh_cost']
# The instruction-counting clock: shift=0 is one virtual ns per guest
# instruction, sleep=off lets an idle guest jump to its next timer.  It
# needs TCG's single-threaded mode, where the vCPUs take turns on one
# clock: with two, what the other one runs shows in the figures (modes
# 6% apart, changing from pass to pass); with one, two boots give the
# same figures to 0.01%.
ICOUNT = ['-icount', 'shift=0,sleep=off']
ICOUNT_CPUS = '1'


@dataclasses.dataclass(frozen=True)
class CallSite:
	"""A file of the patched tree with vendor hook calls: the text blocks
	(whole lines) that removing its calls takes out, and the object that
	is compiled from it."""
	path: str
	obj: str
	blocks: tuple[str, ...]


# What common/patches/ added at each call site, removed as a whole so that
# the file is the upstream one again (the hook headers stay included).
SITES = (
	CallSite('fs/proc/meminfo.c', 'fs/proc/meminfo.o',
		 ('\ttrace_android_vh_meminfo_proc_show(m);\n\n',)),
	CallSite('mm/mmap.c', 'mm/mmap.o',
		 ('\ttrace_android_vh_mmap_region(vma, addr);\n\n',)),
	# syscalls.c is compiled as part of build_policy.c.
	CallSite('kernel/sched/syscalls.c', 'kernel/sched/build_policy.o',
		 ('\tbool allowed = true;\n',
		  '\ttrace_android_rvh_set_user_nice(p, &nice, &allowed);\n'
		  '\tif (!allowed)\n'
		  '\t\treturn;\n')),
)

# A call of a hook: trace_android_vh_NAME( or trace_android_rvh_NAME(, not
# register_trace_android_... (a word character before it).
_CALL = re.compile(r'(?<!\w)trace_android_r?vh_\w+\s*\(')
_GREP_CALL = r'\btrace_android_r?vh_[A-Za-z0-9_]+[[:space:]]*\('


def calls(text: str) -> list[str]:
	"""The hook calls in a C text, as 'trace_android_vh_NAME'."""
	return [m.group(0).rstrip('( \t\n') for m in _CALL.finditer(text)]


def remove_call_sites(site: CallSite, text: str) -> str:
	"""text (site.path) without site.blocks.  Each block must occur exactly
	once, at the start of a line, and no hook call may be left: a call
	site that moved, or a new one in the same file, is an error naming
	SITES, not a comparison with a kernel that still has hooks."""
	for block in site.blocks:
		at = [m.start() for m in re.finditer(re.escape(block), text)
		      if m.start() == 0 or text[m.start() - 1] == '\n']
		if len(at) != 1:
			first = block.strip().splitlines()[0]
			raise GkiError(f'{site.path}: the call site "{first}" occurs {len(at)} times, '
				       'expected once; update hookcost.SITES with the series')
		text = text[:at[0]] + text[at[0] + len(block):]
	left = calls(text)
	if left:
		raise GkiError(f'{site.path}: {", ".join(left)} left after removing the known '
			       'call sites; add it to hookcost.SITES')
	return text


def files_with_calls(src: Path) -> set[str]:
	"""The C files and headers of the tree that call a vendor hook."""
	res = subprocess.run(['grep', '-rlE', '--include=*.c', '--include=*.h', _GREP_CALL, '.'],
			     cwd=src, capture_output=True, text=True)
	if res.returncode not in (0, 1):
		raise GkiError(f'grep for vendor hook calls in {src}: {res.stderr.strip()}')
	return {p.removeprefix('./') for p in res.stdout.split()}


def check_tree(src: Path) -> None:
	"""Every file of the tree with a hook call is one of SITES, and the
	other way round."""
	found, known = files_with_calls(src), {s.path for s in SITES}
	if found != known:
		extra = ', '.join(sorted(found - known)) or 'none'
		gone = ', '.join(sorted(known - found)) or 'none'
		raise GkiError(f'vendor hook calls in files hookcost.SITES does not list: {extra}; '
			       f'listed without calls: {gone}')


def sites_digest() -> str:
	text = json.dumps([dataclasses.astuple(s) for s in SITES])
	return hashlib.sha256(text.encode()).hexdigest()


def unhooked_image(layout: Layout, v: Variant, jobs: int, hooked: Path) -> Path:
	"""The release Image without the call sites, made in a scratch copy of
	the built tree unless the one in out/bench/unhooked/ is up to date
	(made from the tree that built hooked, the release Image)."""
	dest = layout.out / 'bench' / UNHOOKED
	image, stamp_file = dest / 'Image', dest / 'stamp.json'
	stamp = {'hooked_image_sha256': sha256_file(hooked),
		 'sites_sha256': sites_digest()}
	if image.is_file() and stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp:
		info(f'unhooked Image up to date: {image}')
		return image
	check_tree(layout.src)
	log = layout.log(v, 'bench-unhooked')
	start = time.monotonic()
	stamp_file.unlink(missing_ok=True)
	s = Scratch(Kernel(layout, v, toolchain.hermetic_env(), jobs), dest / 'tree').create()
	try:
		built = s.obj / 'arch' / 'arm64' / 'boot' / 'Image'
		if sha256_file(built) != stamp['hooked_image_sha256']:
			raise GkiError(f'{layout.obj(v)} did not build {hooked}: build the release GKI first')
		for site in SITES:
			s.edit(site.path, lambda text, site=site: remove_call_sites(site, text))
		before = {site.obj: os.stat(s.obj / site.obj).st_mtime_ns for site in SITES}
		info(f'building the unhooked Image in {s.root} (log: {log})')
		s.make(log, 'Image')
		stale = [o for o, t in before.items() if os.stat(s.obj / o).st_mtime_ns == t]
		if stale:
			raise GkiError(f'unhooked build: {", ".join(stale)} not rebuilt; see {log}')
		if sha256_file(built) == stamp['hooked_image_sha256']:
			raise GkiError(f'unhooked build: Image identical to the hooked one; see {log}')
		shutil.copyfile(built, image.with_suffix('.tmp'))
		image.with_suffix('.tmp').rename(image)
	finally:
		s.remove()
	stamp_file.write_text(json.dumps(stamp, indent=2) + '\n')
	info(f'unhooked Image built in {time.monotonic() - start:.0f} s: {image}')
	return image


# Rounds and figures ---------------------------------------------------------

def boot_order(rounds: int) -> list[str]:
	"""The kernels in the order they boot: hooked, unhooked, hooked, ..."""
	return [HOOKED, UNHOOKED] * rounds


@dataclasses.dataclass
class Row:
	"""One figure over the campaign: each kernel's values in round order,
	their medians and ratio, and, for a figure with a baseline, the ratio
	of its median to the baseline's on each kernel."""
	name: str
	unit: str
	baseline: str | None
	values: dict[str, list[float]]
	median: dict[str, float]
	ratio: float			# hooked / unhooked, of the medians
	round_ratios: list[float]	# hooked / unhooked, round by round
	to_baseline: dict[str, float]	# kernel -> median / the baseline's median


def summarize(boots: list[tuple[str, list[dict]]]) -> list[Row]:
	"""Rows from each boot's kernel and BENCH records, boots in the order
	they ran.  Every boot must report the same figures, each once, and
	both kernels must have booted equally often."""
	if not boots:
		raise GkiError('no boot to summarize')
	order: list[str] = []
	values: dict[str, dict[str, list[float]]] = {}
	meta: dict[str, dict] = {}
	for n, (kernel, records) in enumerate(boots, 1):
		names = [r.get('name') for r in records]
		if not order:
			order = names
		if not names or sorted(names) != sorted(order) or len(set(names)) != len(names):
			missing = sorted(set(order) - set(names)) or ['none']
			extra = sorted(set(names) - set(order)) or ['none']
			twice = sorted({x for x in names if names.count(x) > 1}) or ['none']
			raise GkiError(f'boot {n} ({kernel}) reported {len(names)} figures; missing: '
				       f'{", ".join(missing)}; unexpected: {", ".join(extra)}; '
				       f'repeated: {", ".join(twice)}')
		for r in records:
			meta.setdefault(r['name'], r)
			values.setdefault(r['name'], {HOOKED: [], UNHOOKED: []})[kernel].append(
				float(r['value']))
	counts = {k: len(values[order[0]][k]) for k in (HOOKED, UNHOOKED)}
	if counts[HOOKED] != counts[UNHOOKED] or not counts[HOOKED]:
		raise GkiError(f'{counts[HOOKED]} hooked and {counts[UNHOOKED]} unhooked boots: '
			       'the rounds need one of each')
	medians = {name: {k: statistics.median(v) for k, v in vals.items()}
		   for name, vals in values.items()}
	rows = []
	for name in order:
		vals, med, base = values[name], medians[name], meta[name].get('baseline')
		if base is not None and base not in medians:
			raise GkiError(f'{name}: its baseline {base} was not reported')
		rows.append(Row(name, meta[name].get('unit', ''), base, vals, med,
				med[HOOKED] / med[UNHOOKED],
				[h / u for h, u in zip(vals[HOOKED], vals[UNHOOKED])],
				{k: med[k] / medians[base][k] for k in med} if base else {}))
	return rows


def table(rows: list[Row], rounds: int) -> str:
	out = [f'{"figure":<32} {"unit":<4} {"hooked":>11} {"unhooked":>11} '
	       f'{"hooked/unhooked":>15}  per round',
	       f'{"":<32} {"":<4} {f"median of {rounds}":>11} {f"median of {rounds}":>11}']
	for r in rows:
		spread = f'{min(r.round_ratios):.3f}-{max(r.round_ratios):.3f}'
		out.append(f'{r.name:<32} {r.unit:<4} {r.median[HOOKED]:>11.1f} '
			   f'{r.median[UNHOOKED]:>11.1f} {r.ratio:>15.3f}  {spread}')
	with_base = [r for r in rows if r.baseline]
	if with_base:
		out += ['', f'{"ratio to the baseline":<60} {"hooked":>8} {"unhooked":>8}']
		for r in with_base:
			label = f'{r.name} / {r.baseline}'
			out.append(f'{label:<60} {r.to_baseline[HOOKED]:>8.3f} '
				   f'{r.to_baseline[UNHOOKED]:>8.3f}')
	return '\n'.join(out)


# The campaign ---------------------------------------------------------------

def icount_command(cmd: list[str]) -> list[str]:
	"""boot.command()'s QEMU command line with the instruction-counting
	clock: multi-threaded TCG becomes single-threaded, with ICOUNT, on
	ICOUNT_CPUS vCPUs."""
	def option(name: str, value: str = '') -> int:
		at = [i for i, a in enumerate(cmd[:-1])
		      if a == name and cmd[i + 1].startswith(value)]
		if len(at) != 1:
			raise GkiError(f'no single "{name} {value}..." in the QEMU command: '
				       f'{" ".join(cmd)}')
		return at[0]
	out = list(cmd)
	out[option('-smp') + 1] = ICOUNT_CPUS
	i = option('-accel', 'tcg')
	return out[:i] + ['-accel', 'tcg', *ICOUNT] + out[i + 2:]


def boot_once(layout: Layout, v: Variant, image: Path, initrd: Path, log: Path,
	      icount: bool = False) -> list[dict]:
	"""One bench boot of image; its BENCH records.  A boot that fails (a
	benchmark's exit status, a kernel error, no power-off) or reports
	nothing is an error."""
	disk = initramfs.scratch_disk(layout.out / 'bench' / 'hookcost' / 'scratch.ext4')
	cmdline = f'gki.mode=bench gki.boot=1 gki.suite_timeout={v.qemu_timeout_s * 2 // 3}'
	cmd = boot.command(image, initrd, v.qemu_mem_mb, cmdline, disk)
	b = boot.run(icount_command(cmd) if icount else cmd, log, v.qemu_timeout_s)
	out = io.StringIO()
	tally = runner.Tally(out)
	runner.evaluate(v, [b], tally)
	records = runner.bench_records(b.console)
	if tally.close() or not records:
		print(out.getvalue(), end='', flush=True)
		raise GkiError(f'{image}: the bench boot failed; console: {log}')
	return records


def run(layout: Layout, v: Variant, names: list[str], jobs: int, icount: bool = False,
	rounds: int = ROUNDS) -> int:
	"""The campaign: the unhooked Image, then rounds of a hooked and an
	unhooked boot of the benchmarks names (DEFAULT_BENCH when empty);
	prints the table, writes out/bench/hookcost-CLOCK-TIME.json."""
	clock = 'icount' if icount else 'host'
	names = names or DEFAULT_BENCH
	known = {p.name for p in programs.discover(layout, 'bench')}
	if set(names) - known:
		raise GkiError(f'unknown benchmark(s) {", ".join(sorted(set(names) - known))}')
	start = time.monotonic()
	work = layout.out / 'bench' / 'hookcost'
	work.mkdir(parents=True, exist_ok=True)
	# Copies: every boot of a kernel gets the same files, whatever else
	# runs meanwhile.
	hooked = work / 'Image.hooked'
	shutil.copyfile(layout.dist(v) / 'Image', hooked)
	images = {HOOKED: hooked, UNHOOKED: unhooked_image(layout, v, jobs, hooked)}
	initrd = work / 'initramfs.cpio'
	shutil.copyfile(testrun.prepare(layout, v, [], names), initrd)
	boots = []
	order = boot_order(rounds)
	for n, kernel in enumerate(order):
		log = layout.log(v, f'console-hookcost-{clock}-{kernel}-round{n // 2 + 1}')
		t = time.monotonic()
		boots.append((kernel, boot_once(layout, v, images[kernel], initrd, log, icount)))
		info(f'round {n // 2 + 1}/{rounds}, {kernel}: {time.monotonic() - t:.1f} s')
	rows = summarize(boots)
	secs = time.monotonic() - start
	stamp = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')
	dest = layout.out / 'bench' / f'hookcost-{clock}-{stamp}.json'
	dest.write_text(json.dumps({
		'variant': v.name, 'time': stamp, 'benchmarks': names, 'rounds': rounds,
		'order': order, 'clock': clock, 'seconds': round(secs, 1),
		'images': {k: {'path': str(p), 'sha256': sha256_file(p)} for k, p in images.items()},
		'figures': [dataclasses.asdict(r) for r in rows],
	}, indent=2) + '\n')
	print(table(rows, rounds))
	if icount:
		print('(icount: a virtual ns is one guest instruction; the figures count '
		      'instructions per call)')
	info(f'{rounds} rounds (hooked, unhooked alternately, {clock} clock) in {secs:.0f} s; '
	     f'figures: {dest}')
	return 0
