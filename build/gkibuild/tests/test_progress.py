# SPDX-License-Identifier: GPL-2.0
"""The live line of a long make stage: counted from a log another thread
grows, shown only on a terminal (a fake one here), cleared before the
stage's closing line, and nothing at all when stdout is not a terminal;
the clean-build record that gives the next clean build its total."""

import contextlib
import io
import re
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

from gkibuild import modules, progress, sandbox, util
from gkibuild.kernel import Kernel
from gkibuild.layout import VARIANTS, Layout
from gkibuild.util import GkiError

LABEL = 'kernel-release (release)'
CLEAR = '\r\033[K'
LINES = [
	'  CC      init/main.o',
	'  AS      arch/arm64/kernel/head.o',
	'  CC [M]  fs/incfs/data.o',
	'  HOSTCC  scripts/basic/fixdep',
	'  CC      kernel/bounds.s',
	'  AR      init/built-in.a',
	'fs/x.c:3:1: warning: unused variable',
	'  LD      vmlinux.o',
]
COMPILED = 3	# the CC, AS and CC [M] lines of LINES


class FakeTty(io.StringIO):
	"""A terminal, as far as isatty() tells; written from two threads."""

	def isatty(self) -> bool:
		return True


def drawn(out: str) -> list[str]:
	"""The live lines drawn, in order, without their control codes."""
	return [d.replace('\033[K', '') for d in out.split('\r') if d.replace('\033[K', '')]


class Writer(threading.Thread):
	"""make, as far as the log shows: appends lines in small pieces, a
	line sometimes cut between two writes."""

	def __init__(self, log: Path, lines: list[str], pause: float = 0.003) -> None:
		super().__init__()
		self.log, self.lines, self.pause = log, lines, pause

	def run(self) -> None:
		with self.log.open('ab') as f:
			for line in self.lines:
				data = (line + '\n').encode()
				for part in (data[:5], data[5:]):
					f.write(part)
					f.flush()
					time.sleep(self.pause)


class CompiledTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		self.log = Path(self.tmp.name) / 'kernel.log'
		self.log.write_text('  CC      old/build.o\n')

	def tearDown(self):
		self.tmp.cleanup()

	def follow(self, out, total, lines=LINES * 5, pause=0.003) -> progress.Compiled:
		with progress.Compiled(LABEL, self.log, total, out, interval=0.02) as c:
			w = Writer(self.log, lines, pause)
			w.start()
			w.join()
		return c

	def counts(self, lines: list[str], end: str) -> list[int]:
		"""Each line's count of 20 objects, checked to be a progress
		line ending in end, and never going down."""
		counts = []
		for line in lines:
			m = re.fullmatch(r'\[kernel-release \(release\) *\] (\d+)/20 objects '
					 r'\(\d+%\), ' + end, line)
			self.assertTrue(m, line)
			counts.append(int(m.group(1)))
		self.assertEqual(sorted(counts), counts)
		return counts

	def test_live_line_counts_against_the_total_and_is_cleared(self):
		out = FakeTty()
		c = self.follow(out, 20)
		self.assertEqual(15, c.count)
		text = out.getvalue()
		self.assertTrue(text.endswith(CLEAR), repr(text[-80:]))
		lines = drawn(text)
		self.assertGreater(len(lines), 3)
		counts = self.counts(lines, r'0:\d\d.*')
		self.assertGreater(counts[-1], 0)

	def test_live_line_shows_kbuilds_latest_step(self):
		out = FakeTty()
		self.follow(out, None, ['  CC      init/main.o', '  LD      vmlinux.o'], pause=0.1)
		self.assertIn('  LD vmlinux.o', drawn(out.getvalue())[-1])

	def test_without_a_total_the_count_stands_alone(self):
		out = FakeTty()
		self.follow(out, None)
		self.assertRegex(drawn(out.getvalue())[-1], r'\] \d+ objects compiled, 0:0\d')

	def test_a_count_beyond_the_total_drops_the_total(self):
		out = FakeTty()
		self.follow(out, 2)
		self.assertRegex(drawn(out.getvalue())[-1], r'\] 15 objects compiled, ')

	def test_not_a_terminal_writes_nothing_and_still_counts(self):
		out = io.StringIO()
		c = self.follow(out, 20)
		self.assertEqual('', out.getvalue())
		self.assertEqual(15, c.count)

	def test_not_a_terminal_gets_a_heartbeat_line_per_period(self):
		"""Off a terminal (CI, a redirected build): whole lines, one per
		heartbeat, with the count against the total and the time, and
		no redraw or step."""
		out = io.StringIO()
		start = time.monotonic()
		with progress.Compiled(LABEL, self.log, 20, out, heartbeat=0.1) as c:
			w = Writer(self.log, LINES * 5, pause=0.02)
			w.start()
			w.join()
		secs = time.monotonic() - start
		self.assertEqual(15, c.count)
		lines = out.getvalue().splitlines()
		self.assertGreaterEqual(len(lines), 2)
		self.assertLessEqual(len(lines), secs / 0.1 + 1)
		self.assertNotIn('\r', out.getvalue())
		self.counts(lines, r'0:\d\d')

	def test_the_heartbeat_is_a_minute(self):
		self.assertEqual(60, progress.HEARTBEAT)

	def test_only_what_make_appends_is_counted(self):
		c = self.follow(io.StringIO(), None, LINES)
		self.assertEqual(COMPILED, c.count)

	def test_failure_stops_the_thread_and_clears_the_line(self):
		for exc in (util.GkiError('make failed'), KeyboardInterrupt()):
			out = FakeTty()
			with self.assertRaises(type(exc)):
				with progress.Compiled(LABEL, self.log, 9, out, interval=0.01) as c:
					time.sleep(0.05)
					raise exc
			self.assertFalse(c._thread.is_alive())
			self.assertTrue(out.getvalue().endswith(CLEAR))
			self.assertIn('0/9 objects', out.getvalue())

	def test_a_missing_log_counts_from_its_start(self):
		self.log.unlink()
		c = self.follow(io.StringIO(), None, LINES)
		self.assertEqual(COMPILED, c.count)


class RecordTest(unittest.TestCase):
	def test_only_host_programs_is_a_fresh_folder(self):
		obj = Path('/o/obj')
		self.assertTrue(progress.fresh([], obj))
		self.assertTrue(progress.fresh(['/o/obj/scripts/kconfig/conf.o'], obj))
		self.assertFalse(progress.fresh(['/o/obj/scripts/kconfig/conf.o',
						 '/o/obj/init/main.o'], obj))
		self.assertFalse(progress.fresh(['/o/obj/scriptsx/a.o'], obj))

	def test_record_round_trip_and_a_broken_record(self):
		with tempfile.TemporaryDirectory() as tmp:
			obj = Path(tmp)
			self.assertIsNone(progress.expected(obj))
			progress.remember(obj, 9123)
			self.assertEqual(9123, progress.expected(obj))
			for bad in ('', '{', '[]', '{"clean": "9"}', '{"clean": 0}'):
				(obj / progress.RECORD).write_text(bad)
				self.assertIsNone(progress.expected(obj), bad)


class FakeMakeKernel(Kernel):
	"""Kernel whose make writes kbuild lines to the log and an object per
	line to obj, in a thread as make would, slowly enough to be drawn."""

	def __init__(self, layout: Layout, objects: list[str]) -> None:
		super().__init__(layout, VARIANTS['release'], {}, 1)
		self.objects = objects

	def make(self, *targets, extra=None, what='make') -> None:
		self.log.parent.mkdir(parents=True, exist_ok=True)
		for o in self.objects:
			(self.obj / o).parent.mkdir(parents=True, exist_ok=True)
			(self.obj / o).write_text('x')
		w = Writer(self.log, [f'  CC      {o}' for o in self.objects], pause=0.05)
		w.start()
		w.join()


class KernelBuildTest(unittest.TestCase):
	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		top = Path(self.tmp.name)
		self.layout = Layout(top, top / 'out')
		self.obj = self.layout.obj(VARIANTS['release'])
		self.obj.mkdir(parents=True)
		(self.obj / 'scripts' / 'kconfig').mkdir(parents=True)
		(self.obj / 'scripts' / 'kconfig' / 'conf.o').write_text('host')
		# A configured tree: build() reads which of its steps .config asks for.
		(self.obj / '.config').write_text('CONFIG_MODULES=y\n')

	def tearDown(self):
		self.tmp.cleanup()

	def build(self, objects: list[str], out: io.StringIO) -> str:
		"""One kernel stage, closing line and all, printed to out."""
		timer = util.StageTimer()
		with contextlib.redirect_stdout(out):
			with timer.stage('kernel-release', 'release'):
				FakeMakeKernel(self.layout, objects).build(set())
		return out.getvalue()

	def test_clean_build_records_its_count_and_an_incremental_one_does_not(self):
		self.build(['init/main.o', 'fs/a.o', 'fs/b.o'], io.StringIO())
		self.assertEqual(3, progress.expected(self.obj))
		self.build(['fs/a.o'], io.StringIO())
		self.assertEqual(3, progress.expected(self.obj))

	def test_a_clean_build_on_a_terminal_shows_the_last_clean_count(self):
		progress.remember(self.obj, 4)
		text = self.build(['init/main.o', 'fs/a.o'], FakeTty())
		self.assertRegex(text, r'\r\[kernel-release \(release\) *\] [0-2]/4 objects \(\d+%\), 0:0\d')
		live, closing = text.rsplit(CLEAR, 1)
		self.assertRegex(closing, r'^\[kernel-release \(release\) *\] done in +\d+\.\d s\n$')
		self.assertEqual(2, progress.expected(self.obj))

	def test_an_incremental_build_on_a_terminal_shows_no_total(self):
		self.build(['init/main.o', 'fs/a.o'], io.StringIO())
		text = self.build(['fs/a.o'], FakeTty())
		self.assertRegex(text, r'\] [01] objects compiled, 0:0\d')
		self.assertNotIn('/2 objects', text)

	def test_not_a_terminal_prints_only_the_closing_line(self):
		text = self.build(['init/main.o'], io.StringIO())
		self.assertRegex(text, r'^\[kernel-release \(release\) *\] done in +\d+\.\d s\n$')

	def test_toolchain_change_keeps_the_record_for_the_clean_build(self):
		kernel = Kernel(self.layout, VARIANTS['release'], {}, 1)
		with contextlib.redirect_stdout(io.StringIO()):
			kernel.check_toolchain({'clang': '19.1.7'})
			progress.remember(self.obj, 9123)
			(self.obj / 'init').mkdir()
			(self.obj / 'init' / 'main.o').write_text('x')
			kernel.check_toolchain({'clang': '19.1.8'})
		self.assertFalse((self.obj / 'init').exists())
		self.assertEqual(9123, progress.expected(self.obj))


class ModulesBuildTest(unittest.TestCase):
	"""The modules stage draws the same live line for each module's
	make, with the module's own clean-build count."""

	def setUp(self):
		self.tmp = tempfile.TemporaryDirectory()
		top = Path(self.tmp.name)
		self.layout = Layout(top, top / 'out')
		src = top / 'vendor_modules' / 'vmod'
		src.mkdir(parents=True)
		(src / 'Kbuild').write_text('obj-m += vmod.o\nvmod-y := a.o b.o\n')
		self.mod = modules.ExtModule('vmod', 'vendor', src)
		self.dest = self.layout.ext(VARIANTS['release']) / 'vendor' / 'vmod'
		# Every build's compiles go through ccache (toolchain.make_vars).
		env = {'CCACHE_DIR': str(top / 'ccache')}
		self.kernel = Kernel(self.layout, VARIANTS['release'], env, 1)

	def tearDown(self):
		self.tmp.cleanup()

	def build(self, objects: list[str], out: io.StringIO) -> str:
		"""modules.build with a make that compiles objects slowly."""
		def make(cmd, log, env=None, cwd=None, what=''):
			log.parent.mkdir(parents=True, exist_ok=True)
			for o in objects:
				(self.dest / o).write_text('x')
			(self.dest / 'vmod.ko').write_text('ko')
			(self.dest / 'modules.order').write_text(f'{self.dest}/vmod.o\n')
			lines = [f'  CC [M]  {self.dest}/{o}' for o in objects]
			w = Writer(log, lines + [f'  LD [M]  {self.dest}/vmod.ko'], pause=0.05)
			w.start()
			w.join()
		with mock.patch.object(modules, 'run_logged', make), contextlib.redirect_stdout(out):
			kos = modules.build(self.kernel, self.mod)
		self.assertEqual([self.dest / 'vmod.ko'], kos)
		return out.getvalue()

	def test_clean_build_shows_the_last_clean_count_and_records_its_own(self):
		self.dest.mkdir(parents=True)
		progress.remember(self.dest, 3)
		text = self.build(['a.o', 'b.o'], FakeTty())
		self.assertRegex(text, r'\r\[module vmod \(release\) *\] [0-2]/3 objects \(\d+%\), 0:0\d')
		self.assertTrue(text.endswith(CLEAR), 'the live line is left on the screen')
		self.assertEqual(2, progress.expected(self.dest))

	def test_an_incremental_build_shows_no_total_and_keeps_the_record(self):
		self.build(['a.o', 'b.o'], io.StringIO())
		text = self.build(['b.o'], FakeTty())
		self.assertRegex(text, r'\] [01] objects compiled, 0:0\d')
		self.assertNotIn('/2 objects', text)
		self.assertEqual(2, progress.expected(self.dest))

	def test_not_a_terminal_prints_nothing(self):
		self.assertEqual('', self.build(['a.o'], io.StringIO()))

	def failing_build(self, this_run: str) -> str:
		"""The message of a module build whose make fails after writing
		this_run to a log that an earlier build left a modpost error in."""
		log = self.layout.log(VARIANTS['release'], 'module-vmod')
		log.parent.mkdir(parents=True, exist_ok=True)
		log.write_text('ERROR: modpost: "old_sym" [/x/vmod.ko] undefined!\n')

		def make(cmd, log, env=None, cwd=None, what=''):
			with log.open('a') as f:
				f.write(this_run)
			raise GkiError('vendor module vmod failed')
		with (mock.patch.object(modules, 'run_logged', make),
		      mock.patch.object(modules.kmi, 'exportable',
					lambda obj, env: {'old_sym', 'new_sym'}),
		      self.assertRaises(GkiError) as cm):
			modules.build(self.kernel, self.mod)
		return str(cm.exception)

	def test_a_failure_is_explained_by_its_own_log_lines(self):
		msg = self.failing_build('a.c:1:1: error: call to undeclared function\n')
		self.assertEqual('vendor module vmod failed', msg)
		msg = self.failing_build('ERROR: modpost: "new_sym" [/x/vmod.ko] undefined!\n')
		self.assertIn('vmod.ko uses new_sym, which the GKI does not export', msg)
		self.assertNotIn('old_sym', msg)



class SandboxNoteTest(unittest.TestCase):
	"""A sandbox build's note is the kernel stage's closing line, not a
	heartbeat printed before it."""

	def test_the_closing_line_after_heartbeats(self):
		out = ('[kernel-release (release)    ] 67 objects compiled, 1:00\n'
		       '[kernel-release (release)    ] 110 objects rebuilt in    75.0 s\n')
		self.assertEqual('110 objects rebuilt in    75.0 s',
				 sandbox.Build(0, out, set(), {}).note)

if __name__ == '__main__':
	unittest.main()
