"""Every benchmark configuration still runs (benchmarks are not tests, but
they must not rot): each script, for a moment and at a small size, prints a
JSON line per configuration with a positive speed and no error."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from absl.testing import parameterized
import tensorflow as tf

from benchmarks import perf_samples
from benchmarks import progress_window
from benchmarks import throughput
from impala_tf import run_status

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# DeepMind Lab's configurations run on the real engine where it is
# installed, else on the tests' stand-in.
DMLAB_PATH = os.pathsep.join(
    [REPO_ROOT] + ([] if importlib.util.find_spec('deepmind_lab') else
                   [os.path.join(REPO_ROOT, 'tests', 'dmlab_stand_in')]))


def _run(name, *args, python_path=REPO_ROOT):
  """The JSON lines `benchmarks/<name>.py` printed, run as `make benchmark`
  runs it (a module, from the repository root)."""
  result = subprocess.run(
      [sys.executable, '-m', f'benchmarks.{name}', *args],
      capture_output=True, text=True, timeout=600, check=False,
      cwd=REPO_ROOT, env=dict(os.environ, PYTHONPATH=python_path))
  lines = [json.loads(line) for line in result.stdout.splitlines()
           if line.startswith('{')]
  return result, lines


class ProgressWindowTest(tf.test.TestCase):

  def test_opens_after_the_warm_up_and_closes_once_long_enough(self):
    window = progress_window.Window(warmup=5, seconds=2)
    self.assertFalse(window.add(10, 0))  # The first line: t = 0.
    self.assertFalse(window.add(14, 100))  # Still warming up.
    self.assertFalse(window.add(15, 200))  # Opens the window.
    self.assertFalse(window.add(16, 300))  # Spans 1 s of the 2.
    self.assertTrue(window.add(17, 600))
    self.assertAllClose(200.0, window.frames_per_second())

  def test_waits_for_the_frame_count_to_move(self):
    window = progress_window.Window(warmup=0, seconds=1)
    window.add(0, 0)
    self.assertFalse(window.add(5, 0))
    with self.assertRaisesRegex(RuntimeError, 'must move'):
      window.frames_per_second()
    self.assertTrue(window.add(6, 60))

  def test_slowest_and_fastest_stretches_show_a_stall(self):
    window = progress_window.Window(warmup=0, seconds=1)
    for time, frames in [(0, 0), (1, 100), (2, 200), (3, 210), (4, 220),
                         (5, 820)]:
      window.add(time, frames)
    # Stretches of 2 s: [0, 2] 100/s, [2, 4] 10/s; [4, 5] is too short.
    self.assertAllClose((10.0, 100.0), window.slowest_and_fastest(span=2))
    self.assertIsNone(window.slowest_and_fastest(span=10))

  def test_watches_the_status_file_until_the_window_is_complete(self):
    logdir = tempfile.mkdtemp()
    window = progress_window.Window(warmup=0, seconds=0.01)
    done = threading.Event()
    watcher = threading.Thread(target=progress_window.watch,
                               args=(logdir, window, done, 0.01))
    watcher.start()
    status = run_status.RunStatus(logdir, frames=0)  # Not yet a report.
    time.sleep(0.1)
    self.assertFalse(done.is_set())
    for frames in (100, 200):
      time.sleep(0.1)
      status.update(frames=frames, frames_per_second=1000.0)
    watcher.join(10)
    self.assertTrue(done.is_set())
    self.assertGreater(window.frames_per_second(), 0)


# A moment each, and batches of two short trajectories: the first batch
# comes after 10 agent steps per environment instead of 160.
SMALL_BATCHES = ('--seconds=1', '--warmup_seconds=0', '--batch=2',
                 '--unroll=5')


def _check(test, lines, names, speed_key):
  """Each of `names` printed one JSON line with a positive `speed_key`."""
  test.assertEqual(sorted(names), sorted(line.get('name') or
                                         line.get('configuration')
                                         for line in lines))
  for line in lines:
    test.assertNotIn('error', line)
    test.assertGreater(line[speed_key], 0, line)


# A test per configuration, so that Bazel's shards (tests/BUILD) spread
# them over its parallel jobs.
class ThroughputBenchmarkTest(parameterized.TestCase):

  @parameterized.parameters(*throughput.CONFIGURATIONS)
  def test_configuration_runs(self, name):
    result, lines = _run('throughput', f'--only={name}',
                         '--num_environments=4', *SMALL_BATCHES)
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    _check(self, lines, [name], 'frames_per_second')


class DmLabThroughputBenchmarkTest(parameterized.TestCase):

  @parameterized.parameters(*throughput.DMLAB_CONFIGURATIONS)
  def test_configuration_runs(self, name):
    result, lines = _run('throughput', f'--only={name}',
                         '--level=dmlab/seekavoid_arena_01',
                         '--num_environments=2', *SMALL_BATCHES,
                         '--experiment_flag=--level_cache_dir=',
                         python_path=DMLAB_PATH)
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    _check(self, lines, [name], 'frames_per_second')
    self.assertEqual('--level_cache_dir=', lines[0]['flags'][-1])


class DistributedBenchmarkTest(parameterized.TestCase):

  @parameterized.parameters('local', 'distributed_1_learner',
                            'distributed_2_learners')
  def test_configuration_runs(self, name):
    result, lines = _run('distributed', f'--only={name}',
                         '--num_actors=4', *SMALL_BATCHES)
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    _check(self, lines, [name], 'frames_per_second')

  def test_a_launch_that_fails_ends_the_measurement_at_once(self):
    # It used to wait --max_seconds (900) for progress lines that never
    # came: in CI a launch stopped on a port in use hung this test 600 s.
    start = time.monotonic()
    result, lines = _run('distributed', '--only=distributed_2_learners',
                         '--num_actor_tasks=1', '--num_actors=4',
                         *SMALL_BATCHES)
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    self.assertLen(lines, 1)
    self.assertIn('cannot feed 2 learners', lines[0]['error'])
    self.assertLess(time.monotonic() - start, 120)


class LearnerStepBenchmarkTest(parameterized.TestCase):

  @parameterized.parameters('dmlab', 'atari')
  def test_every_configuration_runs(self, shape):
    result, lines = _run('learner_step', '--seconds=0.05',
                         '--unroll_lengths=3', '--batch_size=2',
                         f'--shape={shape}')
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    benchmarks = [line for line in lines if 'benchmark' in line]
    # 2 torsos x (1 unroll length x XLA off/on + 3 inference batch sizes).
    self.assertLen(benchmarks, 2 * (2 + 3))
    for line in benchmarks:
      self.assertEqual(shape, line['shape'])
      self.assertGreater(line['steps_per_second'], 0, line)
      self.assertGreater(line['cpu_seconds_per_step'], 0, line)


# Two samples as `perf script -F comm,tid,ip,sym,dso` prints them.
PERF_SCRIPT = """\
experiment.py 101 
\t    7f6a74dd5427 [unknown] (/tmp/perf-100.map)
\t    7f6a8c347740 [unknown] ([unknown])

actor_0 102 
\t          2a1b20 _PyEval_EvalFrameDefault (/usr/lib/libpython3.11.so.1.0)
\t          2a0000 PyEval_EvalCode (/usr/lib/libpython3.11.so.1.0)
"""


class ProfilePartsTest(tf.test.TestCase):

  def test_reads_the_thread_and_callchain_of_each_sample(self):
    self.assertEqual(
        [('experiment.py', 101, [('[unknown]', '/tmp/perf-100.map'),
                                 ('[unknown]', '[unknown]')]),
         ('actor_0', 102,
          [('_PyEval_EvalFrameDefault', '/usr/lib/libpython3.11.so.1.0'),
           ('PyEval_EvalCode', '/usr/lib/libpython3.11.so.1.0')])],
        perf_samples.parse_perf_script(PERF_SCRIPT))

  def test_named_threads_by_name_and_the_leaf_code(self):
    python = [('_PyEval_EvalFrameDefault', 'libpython3.11.so.1.0')]
    self.assertEqual('actor threads: Python',
                     perf_samples.part_of('actor_3', False, python))
    self.assertEqual('learner thread: Python',
                     perf_samples.part_of('experiment.py', True, python))
    self.assertEqual('staging thread: numpy', perf_samples.part_of(
        'staging', False, [('raw_array_assign_array',
                            '_multiarray_umath.cpython-311.so')]))
    # The kernel's name of the thread: its first 15 bytes.
    self.assertEqual('dynamic_batching thread: Python', perf_samples.part_of(
        'dynamic_batchin', False, python))

  def test_other_threads_by_the_code_anywhere_in_their_callchain(self):
    ale = '_ale_py.cpython-311-x86_64-linux-gnu.so'
    self.assertEqual('ALE workers: emulator', perf_samples.part_of(
        'experiment.py', False,
        [('memcpy', 'libc.so.6'), ('ale::stella::M6502Low::execute', ale)]))
    self.assertEqual('ALE workers: preprocessing', perf_samples.part_of(
        'experiment.py', False,
        [('ale::ColourPalette::applyPaletteGrayscale', ale)]))
    self.assertEqual(
        'TensorFlow pools: kernels of learner step and inference',
        perf_samples.part_of('experiment.py', False,
                        [('[unknown]', '/tmp/perf-100.map')]))
    self.assertEqual('other threads: operating system', perf_samples.part_of(
        'experiment.py', False, [('clear_page_erms', '[kernel.kallsyms]')]))

  def test_cores_are_samples_per_rate_and_second(self):
    samples = perf_samples.parse_perf_script(PERF_SCRIPT) * 50
    cores = perf_samples.cores_by_part(samples, main_thread_id=101,
                                       frequency=10, seconds=5)
    self.assertEqual({'learner thread: TensorFlow': 1.0,
                      'actor threads: Python': 1.0}, cores)


@unittest.skipIf(shutil.which('perf') is None,
                 'Linux perf is not installed (apt-get install linux-perf)')
class ProfileBenchmarkTest(tf.test.TestCase):

  def test_a_small_pong_run_is_split_into_its_parts(self):
    result, lines = _run(
        'profile', '--seconds=3', '--warmup_seconds=2',
        '--max_seconds=300',
        '--experiment_flag=--total_environment_frames=1e7',
        '--experiment_flag=--level_name=atari/pong',
        '--experiment_flag=--num_actors=4',
        '--experiment_flag=--batch_size=2',
        '--experiment_flag=--unroll_length=5')
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    parts = {line['part']: line['cores'] for line in lines if 'part' in line}
    # The actor threads are found by their names (impala_tf.os_threads).
    self.assertTrue(any(part.startswith('actor threads:') for part in parts),
                    parts)
    self.assertIn('ALE workers: emulator', parts)
    self.assertIn('TensorFlow pools: kernels of learner step and inference',
                  parts)
    self.assertAllClose(1.0, sum(line['share'] for line in lines
                                 if 'part' in line), atol=0.01)
    self.assertGreater(lines[-1]['frames_per_second'], 0)


if __name__ == '__main__':
  tf.test.main()
