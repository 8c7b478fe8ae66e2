# SPDX-License-Identifier: GPL-2.0
"""build/gki's Python half: parses the command line and sequences the
stages (source, config, kernel, modules, dist), the tests and QEMU runs."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent),
		str(Path(__file__).resolve().parents[2] / 'qemu')]

import dist  # noqa: E402
import modules  # noqa: E402
import source  # noqa: E402
import toolchain  # noqa: E402
from kernel import Kernel, default_jobs  # noqa: E402
from layout import Layout, Variant, variants  # noqa: E402
from util import GkiError, StageTimer, die, info, sha256_file  # noqa: E402


def build(layout: Layout, vs: list[Variant], jobs: int, accept_update: bool,
	  use_ccache: bool = True) -> dict[str, Path]:
	timer = StageTimer()
	env = toolchain.hermetic_env(use_ccache)
	with timer.stage('toolchain'):
		versions = toolchain.check(env)
	with timer.stage('source'):
		pin = source.load_pin(layout.common / 'source.pin')
		src = source.check_pin(pin, accept_update)
		applied = source.prepare(layout, src, layout.log(None, 'source'))
	dists = {}
	for v in vs:
		k = Kernel(layout, v, env, jobs)
		with timer.stage(f'config-{v.name}', v.name):
			config_sha = k.configure()
		with timer.stage(f'kernel-{v.name}', v.name):
			k.build()
			headers = k.headers()
		with timer.stage(f'modules-{v.name}', v.name):
			ext = {m: modules.build(k, m) for m in
			       modules.discover(layout.vendor_modules, [layout.qemu / 'test_module'])}
		with timer.stage(f'tools-{v.name}', v.name):
			tools = device_tools(layout, headers)
		with timer.stage(f'dist-{v.name}', v.name):
			manifest = {
				'variant': v.name,
				'kernel_release': k.release(),
				'source': {'package': src.package, 'version': src.version,
					   'sha256': src.sha256, 'pinned': src.pinned},
				'toolchain': versions,
				'patches': applied,
				'config_sha256': config_sha,
				'vendor_modules': sorted(m.name for m in ext if m.kind == 'vendor'),
				'stage_seconds': timer.timings,
			}
			dists[v.name] = dist.assemble(k, headers, ext, tools, manifest)
	info('dist: ' + ', '.join(str(p) for p in dists.values()))
	return dists


def device_tools(layout: Layout, uapi: Path) -> dict[str, Path]:
	"""The device tools of qemu/tools/, for arm64 and for the build machine,
	as dist paths -> built files."""
	from gkiqemu import initramfs
	progs = initramfs.discover(layout, 'tools')
	arm64 = initramfs.compile_programs(layout, uapi, progs, 'guest/tools')
	host = initramfs.compile_programs(layout, uapi, progs, 'host/bin', host=True)
	return {**{f'tools/arm64/{n}': p for n, p in arm64.items()},
		**{f'tools/host/{n}': p for n, p in host.items()}}


def cmd_build(args: argparse.Namespace, layout: Layout) -> int:
	build(layout, variants(args.variant), args.jobs, args.accept_source_update)
	return 0


def cmd_repro(args: argparse.Namespace, layout: Layout) -> int:
	"""Two clean builds, ccache off, into separate folders; compare."""
	import shutil
	sums = []
	for name in ('a', 'b'):
		sub = Layout(layout.top, layout.out / 'repro' / name)
		shutil.rmtree(sub.out, ignore_errors=True)
		d = build(sub, variants('release'), args.jobs, args.accept_source_update,
			  use_ccache=False)['release']
		sums.append({f: sha256_file(d / f) for f in ('Image', 'vmlinux')})
	for f in ('Image', 'vmlinux'):
		same = sums[0][f] == sums[1][f]
		print(f'{f:8} {"identical" if same else "DIFFERENT"}  {sums[0][f]}  {sums[1][f]}')
	return 0 if sums[0] == sums[1] else 1


def cmd_test(args: argparse.Namespace, layout: Layout) -> int:
	from gkiqemu import runner
	vs = variants(args.variant)
	build(layout, vs, args.jobs, args.accept_source_update)
	return runner.test_all(layout, vs, host=not args.skip_host)


def cmd_qemu(args: argparse.Namespace, layout: Layout) -> int:
	from gkiqemu import runner
	vs = variants(args.variant)
	build(layout, vs, args.jobs, args.accept_source_update)
	extra = [Path(p).resolve() for p in args.add]
	for p in extra:
		if not p.is_file() or not os.access(p, os.X_OK):
			raise GkiError(f'--add {p}: not an executable file')
	if args.shell:
		return runner.shell(layout, vs[0], extra)
	return runner.guest_suites(layout, vs, extra, args.only)


def cmd_bench(args: argparse.Namespace, layout: Layout) -> int:
	from gkiqemu import runner
	vs = variants(args.variant)
	build(layout, vs, args.jobs, args.accept_source_update)
	return runner.bench(layout, vs[0], args.names)


def parser() -> argparse.ArgumentParser:
	p = argparse.ArgumentParser(prog='gki')
	sub = p.add_subparsers(dest='cmd', required=True)

	def add(name: str, default_variant: str) -> argparse.ArgumentParser:
		s = sub.add_parser(name)
		s.add_argument('--variant', choices=['release', 'debug', 'all'],
			       default=default_variant)
		s.add_argument('-j', '--jobs', type=int, default=default_jobs())
		s.add_argument('--accept-source-update', action='store_true',
			       default=os.environ.get('GKI_ACCEPT_SOURCE_UPDATE') == '1')
		return s

	add('build', 'all')
	add('repro', 'release')
	add('test', 'all').add_argument('--skip-host', action='store_true')
	q = add('qemu', 'release')
	q.add_argument('--add', action='append', default=[], metavar='PATH')
	q.add_argument('--only', action='append', default=[], metavar='SUITE',
		       help='run only this guest suite (repeatable)')
	q.add_argument('--shell', action='store_true')
	add('bench', 'release').add_argument('names', nargs='*')
	return p


def main(argv: list[str]) -> int:
	args = parser().parse_args(argv)
	layout = Layout.default()
	handler = {'build': cmd_build, 'repro': cmd_repro, 'test': cmd_test,
		   'qemu': cmd_qemu, 'bench': cmd_bench}[args.cmd]
	try:
		return handler(args, layout)
	except GkiError as e:
		die(str(e))
	except KeyboardInterrupt:
		die('interrupted')
	return 1


if __name__ == '__main__':
	sys.exit(main(sys.argv[1:]))
