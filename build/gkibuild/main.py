# SPDX-License-Identifier: GPL-2.0
"""build/gki's Python half (python3 -m gkibuild, __main__.py): parses the
command line and sequences the stages (source, config, kernel, modules,
tools, dist), the tests and QEMU runs."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Mapping

from gkibuild import archive, cmdref, dist, distcc, modules, signing, source, toolchain, tools
from gkibuild.abi import gate, kmi, protected
from gkibuild.background import Background
from gkibuild.kernel import Kernel, default_jobs
from gkibuild.layout import VARIANTS, Layout, Variant, variants
from gkibuild.util import (
	EXIT_BUILD, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, GkiError, StageTimer, UsageError, die,
	info, mtimes, rebuilt, sha256_file)
from gkiqemu import HarnessError


ENFORCED_ENV = 'GKI_KMI_ENFORCED'


def build(layout: Layout, vs: list[Variant], jobs: int | None, accept_update: bool,
	  use_ccache: bool = True, abi_check: bool = True,
	  distcc_hosts: str | None = None, signing_key: Path | None = None) -> dict[str, Path]:
	"""All stages for each variant; the release variant's KMI is checked
	against the baseline in abi/ unless abi_check is off.  distcc_hosts
	(default: $GKI_DISTCC_HOSTS) sends the compiles to a distcc farm;
	jobs None: this machine's cores, or the farm's slots.  The modules
	are signed with signing_key, by default signing.key()'s."""
	timer = StageTimer()
	enforced = kmi_enforced()
	env = toolchain.hermetic_env(use_ccache)
	with timer.stage('toolchain'):
		versions = toolchain.check(env)
	farm = distcc_hosts if distcc_hosts is not None else os.environ.get(distcc.ENV, '')
	farm_log = layout.log(None, 'distcc')
	if farm.strip():
		with timer.stage('distcc-hosts'):
			up = distcc.check(distcc.parse_hosts(farm), env)
			env.update(distcc.build_env(up, layout.out / 'distcc', farm_log))
			farm_log.unlink(missing_ok=True)
		jobs = jobs or (distcc.jobs(up) if up else None)
	jobs = jobs or default_jobs()
	with timer.stage('source'):
		pin = source.load_pin(layout.common / 'source.pin')
		src = source.obtain(pin, accept_update)
		applied = source.prepare(layout, src, layout.log(None, 'source'))
	lists = kmi.load_all(layout.symbol_lists)
	dists = {}
	for v in vs:
		k = Kernel(layout, v, env, jobs)
		with timer.stage(f'config-{v.name}', v.name):
			k.check_toolchain(versions)
			config_sha = k.configure()
			if k.signs_modules():
				k.signing_key = signing_key or signing.key(layout.out)
		with timer.stage(f'kernel-{v.name}', v.name) as st:
			k.build(kmi.union(lists))
			st.note = f'{len(k.rebuilt)} objects rebuilt'
			headers = k.headers()
		with timer.stage(f'gki-modules-{v.name}', v.name) as st:
			k.gki_modules()
			st.note = f'{len(k.in_tree_modules())} built, as listed'
		if k.trims_exports():
			with timer.stage(f'kmi-{v.name}', v.name):
				kmi.strict(k.obj / 'Module.symvers', lists, layout.symbol_lists)
		with timer.stage(f'modules-{v.name}', v.name) as st:
			before = mtimes(layout.ext(v), '.o')
			ext = {m: modules.build(k, m) for m in ext_modules(layout)}
			st.note = f'{len(rebuilt(before, mtimes(layout.ext(v), ".o")))} objects rebuilt'
			if k.trims_exports():
				lists_stand_alone(k, ext, lists, env)
		with timer.stage(f'tools-{v.name}', v.name):
			shipped_tools = tools.build(layout, v, headers)
			tools.guest_tests(layout, v, headers)
		with timer.stage(f'dist-{v.name}', v.name):
			manifest = {
				'variant': v.name,
				'kernel_release': k.release(),
				'source': {'package': src.package, 'version': src.version,
					   'sha256': src.sha256, 'pinned': src.pinned},
				'toolchain': versions,
				'patches': applied,
				'config_sha256': config_sha,
				'vendor_modules': sorted(m.name for m in ext if m.kind == 'vendor' and ext[m]),
				'stage_seconds': timer.timings,
			}
			dists[v.name] = dist.assemble(k, headers, ext, shipped_tools, manifest)
		if v.name == 'release':
			gate.write_prop(dists[v.name], lists, enforced, manifest)
		if v.name == 'release' and abi_check:
			with timer.stage('abi-check', v.name):
				protected.check(layout.abi / protected.FILE, protected.of_build(
					k.obj / 'Module.symvers', k.gki_modules()))
				res = gate.check(layout.abi, k.obj / 'vmlinux', k.obj / 'Module.symvers',
						 lists, dists[v.name] / 'abi')
			print(gate.summary(res), flush=True)
			abi_gate(res, enforced)
	if 'DISTCC_HOSTS' in env:
		text = farm_log.read_text(errors='replace') if farm_log.exists() else ''
		info(distcc.tally(text).line() + f' (log: {farm_log})')
	info('dist: ' + ', '.join(str(p) for p in dists.values()))
	return dists


def kmi_enforced() -> bool:
	"""GKI_KMI_ENFORCED=0 lets a bring-up branch build past a KMI break (the
	gate still reports it, and abi.prop says KMI_ENFORCED=0); enforced
	otherwise."""
	value = os.environ.get(ENFORCED_ENV, '1')
	if value not in ('0', '1'):
		raise UsageError(f'{ENFORCED_ENV}={value!r}: expected 0 or 1')
	return value == '1'


def abi_gate(res: gate.Result, enforced: bool) -> None:
	"""Fail the build on the gate's decision, or, not enforced, say it."""
	failure = gate.decide(res).why
	if failure and enforced:
		raise GkiError(failure)
	if failure:
		info(f'KMI not enforced ({ENFORCED_ENV}=0), so the build goes on: {failure}')


def module_needs(k: Kernel, ext: Mapping[modules.ExtModule, list[Path]],
		 env: Mapping[str, str]) -> dict[str, dict[str, set[str]]]:
	"""Per symbol list, symbol -> the modules needing it: core's are the
	in-tree modules' (each other's exports too: trimming drops those), a
	module folder's what its modules do not export to each other."""
	out = {kmi.CORE: kmi.needs(k.in_tree_modules(), env, own=False)}
	for m, kos in ext.items():
		out[m.symbol_list] = kmi.needs(kos, env)
	return out


def lists_stand_alone(k: Kernel, ext: Mapping[modules.ExtModule, list[Path]],
		      lists: Mapping[str, set[str]], env: Mapping[str, str]) -> None:
	"""A module set's list must hold every KMI symbol its modules use: one
	another list holds is exported, so the modules built, but the set's own
	list does not say it needs it.  After the modules, on a variant that
	trims its exports."""
	stale = kmi.stale(module_needs(k, ext, env), lists, kmi.union(lists))
	if stale:
		raise GkiError('a symbol list lacks symbols its own modules use (another list has '
			       'them, so they built; each list must stand alone):\n  '
			       + '\n  '.join(stale) + '\nrun the command of each list, then build again')


def stale_lists(layout: Layout, k: Kernel, env: dict[str, str]) -> list[str]:
	"""Symbols a set of built modules needs that the kernel could export
	but its own list lacks (kmi.stale)."""
	ext = {m: modules.built_modules(layout.ext(k.variant) / m.kind / m.name)
	       for m in ext_modules(layout)}
	return kmi.stale(module_needs(k, ext, env), kmi.load_all(layout.symbol_lists),
			 kmi.exportable(k.obj, env))


def cmd_abi(args: argparse.Namespace, layout: Layout) -> int:
	"""abi check: build (the check is a stage); abi update: new baseline;
	abi compare: another source or compiler against the baseline."""
	if args.action != 'compare' and (args.source or args.toolchain):
		raise UsageError('--source and --toolchain go with abi compare')
	if args.action == 'compare':
		return abi_compare(args, layout)
	if args.action == 'check':
		if args.accept_break is not None:
			raise UsageError('--accept-break goes with abi update, which records the break')
		build(layout, variants('release'), args.jobs, args.accept_source_update)
		return 0
	build(layout, variants('release'), args.jobs, args.accept_source_update, abi_check=False)
	env = toolchain.hermetic_env()
	k = Kernel(layout, VARIANTS['release'], env, args.jobs or default_jobs())
	stale = stale_lists(layout, k, env)
	if stale:
		raise GkiError('the symbol lists are out of date; not updating the baseline:\n  '
			       + '\n  '.join(stale))
	dist = layout.dist(VARIANTS['release'])
	manifest = json.loads((dist / 'manifest.json').read_text())
	gate.update(layout.abi, k.obj / 'vmlinux', k.obj / 'Module.symvers',
		    kmi.load_all(layout.symbol_lists),
		    {'kernel_release': manifest['kernel_release'], 'source': manifest['source'],
		     'toolchain': manifest['toolchain']}, dist / 'abi', args.accept_break,
		    datetime.datetime.now(datetime.timezone.utc).date().isoformat())
	# Written once the update is taken: a refused one leaves abi/ alone.
	protected.write(layout.abi / protected.FILE, protected.of_build(
		k.obj / 'Module.symvers', k.gki_modules()))
	info(f'new ABI baseline in {layout.abi}; commit it with the symbol lists, using the '
	     f'message in {dist / "abi" / gate.COMMIT_MSG}')
	return 0


def abi_compare(args: argparse.Namespace, layout: Layout) -> int:
	"""Build the release GKI as it is, then the candidate beside it."""
	from gkibuild.abi import compare
	if bool(args.source) == bool(args.toolchain):
		raise UsageError('abi compare needs one of --source VERSION and --toolchain clang-N')
	build(layout, variants('release'), args.jobs, args.accept_source_update, abi_check=False)
	try:
		if args.source:
			pin = source.load_pin(layout.common / 'source.pin')
			version = archive.resolve(args.source, archive.Archive().versions(pin.package))
			cand = compare.Candidate(f'source-{version}',
						 compare.fetch_source(layout, pin, version))
		else:
			major = compare.parse_toolchain(args.toolchain)
			compare.install_llvm(major)
			cand = compare.Candidate(f'toolchain-clang-{major}', major=major)
	except GkiError as e:
		print(f'gki: abi compare: could not fetch the candidate: {e}', flush=True)
		return compare.NO_BUILD
	return compare.run(layout, cand, args.jobs or default_jobs())


def ext_modules(layout: Layout) -> list[modules.ExtModule]:
	return modules.discover(layout.vendor_modules, [layout.qemu / 'test_module'])


def cmd_symbols(args: argparse.Namespace, layout: Layout) -> int:
	"""symbols update NAME: add what NAME's modules need to its list; exit
	status 1 if they need a symbol the GKI does not export at all."""
	env = toolchain.hermetic_env()
	toolchain.check(env)
	source.prepare(layout, source.obtain(source.load_pin(layout.common / 'source.pin'),
						args.accept_source_update), layout.log(None, 'source'))
	k = Kernel(layout, VARIANTS['release'], env, args.jobs or default_jobs())
	k.configure()
	k.build(kmi.union(kmi.load_all(layout.symbol_lists)))
	if args.name == kmi.CORE:
		kos = k.in_tree_modules()
	else:
		mods = [m for m in ext_modules(layout) if m.symbol_list == args.name]
		if not mods:
			names = ', '.join([kmi.CORE] + [m.symbol_list for m in ext_modules(layout)])
			raise UsageError(f'no module set named {args.name}; known: {names}')
		kos = modules.build(k, mods[0], allow_undefined=True)
	path = layout.symbol_lists / args.name
	need = kmi.needs(kos, env, own=args.name != kmi.CORE)
	if args.name == kmi.CORE:
		need.update({s: {who} for s, who in kmi.LOADER_SYMBOLS.items()})
	res = kmi.update(path, need, kmi.exportable(k.obj, env), args.remove)
	for sym, mods_needing in res.added.items():
		print(f'+ {sym:40} needed by {", ".join(sorted(mods_needing))}')
	for sym in res.removed:
		print(f'- {sym}')
	# No list can make these resolve: the module must stop using them.
	for sym, mods_needing in res.unexportable.items():
		print(f'! {sym} needed by {", ".join(sorted(mods_needing))}: the GKI does not '
		      'export it (no EXPORT_SYMBOL in the kernel or its in-tree modules)')
	print(f'{path}: {len(res.added)} added, {len(res.removed)} removed'
	      + ('' if args.remove else ' (add-only; --remove drops unused symbols)'))
	return 1 if res.unexportable else 0


def cmd_source(args: argparse.Namespace, layout: Layout) -> int:
	"""source pin VERSION: move common/source.pin to a version the archive
	offers (downloaded and hashed); the pin is unchanged on any error."""
	path = layout.common / 'source.pin'
	pin = source.load_pin(path)
	arch = archive.Archive()
	offered = arch.versions(pin.package)
	if not offered:
		arch.refresh()
		offered = arch.versions(pin.package)
	try:
		version = archive.resolve(args.version, offered)
	except GkiError as e:
		raise UsageError(str(e)) from None
	tarball = archive.fetch(arch, pin.package, version, pin.tarball, archive.cache_dir())
	sha256 = sha256_file(tarball)
	source.write_pin(path, version, sha256)
	print(f'{path.relative_to(layout.top)}: {pin.package} {pin.version} -> {version} '
	      f'(sha256 {sha256})')
	print('next: ./build/gki test, read the ABI gate\'s verdict, and commit the pin with it '
	      '(BUILD.md, "Moving the pin")')
	return 0


def cmd_build(args: argparse.Namespace, layout: Layout) -> int:
	build(layout, variants(args.variant), args.jobs, args.accept_source_update,
	      distcc_hosts=args.distcc)
	return 0


def shipped(dist: Path) -> dict[str, str]:
	"""sha256 of what the build ships and must reproduce: Image, vmlinux
	and every module."""
	files = [dist / 'Image', dist / 'vmlinux', *sorted((dist / 'modules').rglob('*.ko'))]
	return {str(f.relative_to(dist)): sha256_file(f) for f in files}


def cmd_repro(args: argparse.Namespace, layout: Layout) -> int:
	"""Two clean builds, the cache not read, into separate folders;
	compare.  With --distcc the second goes through the farm."""
	import shutil
	sums = []
	key = signing.key(layout.out)	# both sign with one key (signing.py)
	for name, farm in (('a', ''), ('b', args.distcc or '')):
		sub = Layout(layout.top, layout.out / 'repro' / name)
		shutil.rmtree(sub.out, ignore_errors=True)
		# The arm64 packages build/deps.sh unpacked (liblz4 for the
		# device tools): inputs, not outputs of the build compared.
		sub.out.mkdir(parents=True)
		(sub.out / 'guest-pkgs').symlink_to(layout.out / 'guest-pkgs')
		d = build(sub, variants('release'), args.jobs, args.accept_source_update,
			  use_ccache=False, distcc_hosts=farm, signing_key=key)['release']
		sums.append(shipped(d))
	a, b = sums
	dists = [layout.out / 'repro' / n / 'dist' for n in ('a', 'b')]
	for f in sorted(set(a) | set(b)):
		same = a.get(f) == b.get(f)
		if same and f not in ('Image', 'vmlinux'):
			continue
		state = 'identical' if same else 'DIFFERENT'
		# Image is raw: its build ID note hashes vmlinux's debug info.
		if not same and f in a and f in b and f != 'Image' and \
		   distcc.same_code(dists[0] / f, dists[1] / f):
			state += ' (debug info only)'
		print(f'{f:8} {state}  {a.get(f)}  {b.get(f)}')
	print(f'{sum(a.get(f) == b.get(f) for f in a)} of {len(set(a) | set(b))} files identical'
	      + (' (b built through distcc)' if args.distcc else ''))
	return 0 if a == b else 1


# How far the host tests step back for the builds and guest runs beside
# them (background.py): CFS then gives a host test about a third of the CPU
# time of a compile or a guest vCPU that wants it at the same time.
HOST_TESTS_NICE = 5


def cmd_test(args: argparse.Namespace, layout: Layout) -> int:
	"""Build, then test.  With the host tests and more than one variant,
	the variants after the first build in the background while the host
	tests run, the first variant's guest suites run beside them at once,
	each other's after its build, and the host tests step back for them
	(background.py says why)."""
	from gkibuild import testrun
	vs = variants(args.variant)
	if args.skip_host or len(vs) == 1:
		build(layout, vs, args.jobs, args.accept_source_update)
		return testrun.test_all(layout, vs, host=not args.skip_host)
	build(layout, vs[:1], args.jobs, args.accept_source_update)
	guests = vs if [v.name for v in vs] == list(VARIANTS) else []
	with Background(layout, vs[1:], args.jobs, args.accept_source_update,
			guests, nice=HOST_TESTS_NICE) as meanwhile:
		return testrun.test_all(layout, vs, host=True, meanwhile=meanwhile)


def cmd_qemu(args: argparse.Namespace, layout: Layout) -> int:
	from gkibuild import testrun
	vs = variants(args.variant)
	env = testrun.guest_env(args.env)
	if args.timeout:
		# A long campaign (BUILD.md): each suite gets 2/3 of it, as usual.
		vs = [dataclasses.replace(v, qemu_timeout_s=args.timeout) for v in vs]
	# The command line first: a usage error costs no build.
	extra = [Path(p).resolve() for p in args.add]
	for p in extra:
		if not p.is_file() or not os.access(p, os.X_OK):
			raise UsageError(f'--add {p}: not an executable file')
	if args.prebuilt:
		missing = [str(layout.dist(v) / 'Image') for v in vs
			   if not (layout.dist(v) / 'Image').exists()]
		if missing:
			raise GkiError(f'--prebuilt: {", ".join(missing)} not built')
	else:
		build(layout, vs, args.jobs, args.accept_source_update)
	if args.shell:
		return testrun.shell(layout, vs[0], extra)
	return testrun.guest_suites(layout, vs, extra, args.only,
				    Path(args.results) if args.results else None, env)


def cmd_bench(args: argparse.Namespace, layout: Layout) -> int:
	from gkibuild import testrun
	vs = variants(args.variant)
	if args.against_unhooked and args.variant != 'release':
		raise UsageError('bench --against-unhooked measures the release GKI')
	if args.icount and not args.against_unhooked:
		raise UsageError('--icount goes with bench --against-unhooked')
	build(layout, vs, args.jobs, args.accept_source_update)
	if args.cc_unit:
		from gkibuild import unitcost
		return unitcost.run(layout, vs[0], args.cc_unit)
	if args.against_unhooked:
		from gkibuild import hookcost
		return hookcost.run(layout, vs[0], args.names, args.jobs or default_jobs(), args.icount)
	return testrun.bench(layout, vs[0], args.names)


def cmd_programs(args: argparse.Namespace, layout: Layout) -> int:
	"""The command lines of user-space programs, from their declaration."""
	from gkibuild import programs
	print('\n'.join(programs.listing(layout, VARIANTS[args.variant], args.names)))
	return 0


def cmd_mutate(args: argparse.Namespace, layout: Layout) -> int:
	from gkibuild import mutate
	return mutate.main(layout, args.names, args.fast)[0]


# build/gki runs the command line through the parser with this set to 1
# before it installs anything: a command line the parser rejects costs
# nothing (exit status 2), and one it takes does nothing yet.
CHECK_ONLY_ENV = 'GKI_CHECK_ARGS'


def parser() -> argparse.ArgumentParser:
	"""build/gki's command line; cmdref.py makes the command reference
	(`gki help`, docs/commands.md) from it, so every argument has a help
	text."""
	p = argparse.ArgumentParser(
		prog='gki', formatter_class=cmdref.Formatter,
		description='The one entry point of the GKI build: it installs the host packages '
		'that are missing (build/deps.sh), then runs the command. Every command that '
		'boots or tests builds first what is missing or stale.')
	sub = p.add_subparsers(dest='cmd', required=True, metavar='COMMAND')
	release_only = 'accepted and ignored: this command builds the release variant'

	def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
		return sub.add_parser(name, help=summary, description=description,
				      formatter_class=cmdref.Formatter)

	def add(name: str, default_variant: str, summary: str, description: str,
		variant_help: str = 'the variant to build and use: release, debug, or all '
		'of them, in turn') -> argparse.ArgumentParser:
		s = command(name, summary, description)
		s.add_argument('--variant', choices=['release', 'debug', 'all'],
			       default=default_variant, help=variant_help)
		s.add_argument('-j', '--jobs', type=int, default=None, metavar='N',
			       help='parallel jobs (default: the cores, or the distcc hosts\' slots)')
		s.add_argument('--accept-source-update', action='store_true',
			       default=os.environ.get('GKI_ACCEPT_SOURCE_UPDATE') == '1',
			       help='build although the pinned source cannot be had: the '
			       "archive's newest version when the pinned one is gone, or a tarball "
			       'whose sha256 is not the pin\'s (the manifest records "pinned": false; '
			       'on when GKI_ACCEPT_SOURCE_UPDATE=1)')
		return s

	add('build', 'all', 'build the GKI and write out/dist/',
	    'Install the host packages that are missing, extract and patch the pinned kernel '
	    'source, configure, build Image, the GKI modules, the vendor modules and the device '
	    'tools, check the release KMI against abi/ (the ABI gate), and write out/dist/ '
	    '(out/dist-debug/ for the debug variant). A build whose inputs did not change is '
	    'a no-op.').add_argument(
		'--distcc', metavar='HOSTS', default=None,
		help='compile through these distcc hosts (HOST[:PORT][/SLOTS], space separated), '
		f'each first checked to run the same clang (default: ${distcc.ENV})')
	add('test', 'all', 'build, then run the host tests and every guest suite',
	    'Build what is missing or stale, run the host tests of the tooling, then every guest '
	    'suite in QEMU on each variant; with both variants, the debug variant builds and '
	    'the guest suites run while the host tests go on. The outcomes are also written as '
	    'JUnit XML to out/test-results.xml. Exit status 1 when a test failed.').add_argument(
		'--skip-host', action='store_true',
		help='run the guest suites only, not the host tests')
	q = add('qemu', 'release', 'boot the GKI and run guest suites, your own tests, or a shell',
		'Build (unless --prebuilt), boot the GKI with the vendor modules in QEMU and run '
		'the standard guest suites, or those named with --only, plus each program given '
		'with --add, judged like the standard ones; or boot to a shell.')
	q.add_argument('--add', action='append', default=[], metavar='PATH',
		       help='also run this arm64 executable or script in the guest; it must '
		       'print KTAP (repeatable)')
	q.add_argument('--only', action='append', default=[], metavar='SUITE',
		       help='run only this guest suite (repeatable)')
	q.add_argument('--shell', action='store_true',
		       help='boot to an interactive busybox shell on the serial console instead '
		       'of running the suites (leave with poweroff -f)')
	q.add_argument('--prebuilt', action='store_true',
		       help='boot what is built, without building (the run `gki test` starts '
		       'while its host tests go on)')
	q.add_argument('--results', metavar='FILE',
		       help='also write the outcomes to FILE as JSON')
	q.add_argument('--env', action='append', default=[], metavar='NAME=VALUE',
		       help="set NAME in the suites' environment (repeatable; NAME in capitals, "
		       'VALUE without blanks), e.g. the size of a long campaign')
	q.add_argument('--timeout', type=int, metavar='SECONDS',
		       help="the boot's time limit (default: the variant's); "
		       'each suite may take 2/3 of it')
	be = add('bench', 'release', 'boot the GKI and run benchmark programs',
		 'Build, boot the GKI and run the benchmark programs of qemu/bench/ and '
		 'vendor_modules/*/bench/ (or those named); print the figures and the ratios of '
		 'those measured side by side, and write them to out/bench/. Benchmarks are '
		 'measured, never asserted.',
		 'the variant to build and boot (all: both are built, the benchmarks run on '
		 'release)')
	be.add_argument('names', nargs='*', metavar='NAME',
			help='a benchmark program to run (default: all)')
	be.add_argument('--against-unhooked', action='store_true',
			help='boot the release GKI and the same kernel built without the vendor '
			'hook call sites alternately, and compare (default benchmark: vh_cost)')
	be.add_argument('--icount', action='store_true',
			help='with --against-unhooked: time by the guest\'s instruction count '
			'(QEMU -icount, one vCPU), not the host\'s clock')
	be.add_argument('--cc-unit', type=int, metavar='FILES', default=0,
			help='compile FILES sampled C files of the kernel from their source and '
			'through build/cc-unit, alternately, and compare their CPU time')
	ab = add('abi', 'release', 'check the KMI, write a new baseline, or judge an update',
		 'check: build the release GKI; its abi-check stage compares the KMI with the '
		 'baseline in abi/ and writes out/dist/abi/report.short. update: build, show the '
		 'changes and write a new baseline; additions are taken, a break only with '
		 '--accept-break, recorded in abi/allowed_breaks. compare: build another '
		 "linux-source-6.12 from Debian's archive, or the pinned one with another Debian "
		 'clang, beside the release tree and check it against abi/ (exit status 0 '
		 'compatible, 1 breaks, 2 could not build); nothing pinned or installed changes.',
		 release_only)
	ab.add_argument('action', choices=['check', 'update', 'compare'],
			help='check, update or compare (above)')
	ab.add_argument('--source', metavar='VERSION',
			help='compare: build this linux-source-6.12 version from the archive')
	ab.add_argument('--toolchain', metavar='clang-N',
			help='compare: build the pinned source with this Debian LLVM')
	ab.add_argument('--accept-break', metavar='REASON',
			help='update: take the breaks the report shows, recorded in '
			'abi/allowed_breaks with REASON')
	sy = add('symbols', 'release', "add the kernel symbols a module set uses to its list",
		 "Build the release kernel and NAME's modules, and add every kernel symbol they "
		 'use to symbol_lists/NAME; add-only unless --remove. Exit status 1 when a module '
		 'needs a symbol the GKI does not export at all.', release_only)
	sy.add_argument('action', choices=['update'], help='update (the only action)')
	sy.add_argument('name', metavar='NAME',
			help=f'a list of symbol_lists/: {kmi.CORE} or a module folder')
	sy.add_argument('--remove', action='store_true',
			help='also drop symbols no module needs any more')
	pr = command('programs', 'print the command lines that build the user-space programs',
		     'Print the command line that builds each user-space program (guest suites '
		     'and benchmarks, device tools for arm64 and the host, the host C tests), or '
		     'the named ones, from their one declaration in build/gkibuild/programs.py: '
		     'what the build and the host tests run. Builds nothing.')
	pr.add_argument('names', nargs='*', metavar='NAME',
			help='suites, benchmarks, tools or host C tests (default: all)')
	pr.add_argument('--variant', choices=list(VARIANTS), default='release',
			help='whose UAPI headers guest programs build against')
	so = command('source', 'move the source pin',
		     "Move common/source.pin to a linux-source-6.12 version Debian's archive "
		     'offers: the package is downloaded, its tarball hashed, and version= and '
		     'sha256= rewritten. An unknown version names the versions offered and '
		     'leaves the pin as it was. Take a new version in a reviewed change '
		     '(BUILD.md, "Moving the pin").')
	so.add_argument('action', choices=['pin'], help='pin (the only action)')
	so.add_argument('version', metavar='VERSION',
			help="a linux-source-6.12 version Debian's archive offers (full, or "
			'upstream as 6.12.120 when it matches one)')
	mu = command('mutate', 'the mutation check: do the tests catch deliberate bugs?',
		     'Apply each mutant of build/mutants.toml (or the named ones, or the fast '
		     'sample) alone in a copy and run the tests that must catch it; report '
		     'killed, survived or did not build, and write out/mutate/result.json. Exit '
		     'status 1 on a survivor without a note, a note no longer true, a mutant '
		     'that did not build, or an outcome that cannot be read.')
	mu.add_argument('names', nargs='*', metavar='NAME', help='mutants of build/mutants.toml '
			'(default: all)')
	mu.add_argument('--fast', action='store_true', help='the sample ./build/gki test runs')
	add('repro', 'release', 'build the release GKI twice and compare the bits',
	    'Build the release GKI twice, into out/repro/a and out/repro/b, the ccache written '
	    'but not read, and compare Image, vmlinux and every module byte for byte. Exit '
	    'status 1 when a file differs.', release_only).add_argument(
		'--distcc', metavar='HOSTS', default=None,
		help='build the second through these distcc hosts (HOST[:PORT][/SLOTS], space '
		'separated) and say of a file that differs whether only its debug info does')
	he = command('help', "print this reference, or one command's",
		     'Print every command with its synopsis, the environment and the exit '
		     "statuses, or one command's options (as COMMAND --help does).")
	he.add_argument('command', nargs='?', metavar='COMMAND', choices=list(sub.choices),
			help='the command to describe (default: every command, in brief)')
	he.add_argument('--markdown', action='store_true',
			help=f'print the whole reference as Markdown: {cmdref.PAGE} is this output')
	return p


def main(argv: list[str]) -> int:
	p = parser()
	if not argv:
		print(cmdref.overview(p), end='', file=sys.stderr)
		return EXIT_USAGE
	if argv[0] in ('-h', '--help'):
		argv = ['help', *argv[1:]]
	unknown = cmdref.unknown_command(p, argv)
	if unknown:
		print(unknown, file=sys.stderr)
		return EXIT_USAGE
	args = p.parse_args(argv)
	if args.cmd == 'help':
		return cmdref.cmd_help(p, args.command, args.markdown)
	if os.environ.get(CHECK_ONLY_ENV) == '1':
		return EXIT_OK
	layout = Layout.default()
	handler = {'build': cmd_build, 'repro': cmd_repro, 'test': cmd_test,
		   'qemu': cmd_qemu, 'bench': cmd_bench, 'symbols': cmd_symbols,
		   'abi': cmd_abi, 'programs': cmd_programs, 'mutate': cmd_mutate,
		   'source': cmd_source}[args.cmd]
	try:
		return handler(args, layout)
	except UsageError as e:
		die(str(e), EXIT_USAGE)
	except (GkiError, HarnessError) as e:
		die(str(e), EXIT_BUILD)
	except KeyboardInterrupt:
		die('interrupted', EXIT_INTERRUPTED)
	return EXIT_BUILD
