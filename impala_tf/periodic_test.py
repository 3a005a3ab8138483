"""Test mode on the newest checkpoint while training, so that a policy that
gets worse shows in the run itself: the curve of recent training games
averages the policies of thousands of updates and can hide it.

Each test is `experiment.py --mode=test` on the run's own settings, in a
child process at a low CPU priority (`NICENESS`), so that it takes mostly
what training leaves idle, and without a GPU. Whenever no test is running
and a checkpoint is newer than the last one tested, that checkpoint is
copied to `<logdir>/periodic_tests/copies/` (training keeps only its
newest few) and tested; checkpoints written meanwhile are skipped, and the
final one is left to test mode. Results: `periodic_tests/ckpt-<N>.json`
(`impala_tf.curves` draws them on the training curve) and `.log`, a
printed line, and TensorBoard summaries in `periodic_tests/` (a run of its
own): `test/<level>/mean_return`, `test/<level>/std_return` and the
suite's human-normalised summary under `test/human_normalized/`, at the
checkpoint's frames.
"""

import os
import signal
import subprocess
import sys
import time

import tensorflow as tf

from impala_tf import checkpointing
from impala_tf import cluster
from impala_tf import progress
from impala_tf import test_results

EXPERIMENT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    'experiment.py')
# The test child's niceness: 10 gives it about a tenth of a core that one
# training thread keeps busy (19 starved it when tests ran beside training).
NICENESS = 10
# How often, at most, the newest checkpoint's name is read.
CHECK_INTERVAL_SECS = 5.0
# Flags the test child gets its own values of; a test runs on one machine,
# so a learner task's cluster flags stay behind.
_OWN_FLAGS = ('mode', 'test_num_episodes', 'overwrite', 'test_checkpoint',
              'test_results_file', 'periodic_test_episodes'
              ) + cluster.TASK_FLAGS


def test_flags(settings, checkpoint, num_episodes, results_file):
  """experiment.py's flags for test mode on `checkpoint` of a run with
  `settings` ({flag name: value}, as `flags.json` holds them)."""
  args = []
  for name, value in sorted(settings.items()):
    if value is None or name in _OWN_FLAGS:
      continue
    if isinstance(value, bool):
      args.append(f'--{name}' if value else f'--no{name}')
    elif isinstance(value, (list, tuple)):
      args.append(f'--{name}={",".join(str(item) for item in value)}')
    else:
      args.append(f'--{name}={value}')
  return args + ['--mode=test', f'--test_checkpoint={checkpoint}',
                 f'--test_num_episodes={num_episodes}',
                 '--overwrite', f'--test_results_file={results_file}',
                 '--periodic_test_episodes=0']


def _child_environment():
  """The test child's: no cluster (TF_CONFIG) and no GPU to share."""
  environment = dict(os.environ, CUDA_VISIBLE_DEVICES='')
  environment.pop('TF_CONFIG', None)
  return environment


def _copy_checkpoint(checkpoint, directory):
  """Copies `checkpoint`'s files into `directory`; returns the copy's
  path."""
  tf.io.gfile.makedirs(directory)
  copy = os.path.join(directory, os.path.basename(checkpoint))
  for path in tf.io.gfile.glob(checkpoint + '.*'):
    tf.io.gfile.copy(path, copy + path[len(checkpoint):], overwrite=True)
  return copy


def _remove_checkpoint(checkpoint):
  for path in tf.io.gfile.glob(checkpoint + '.*'):
    tf.io.gfile.remove(path)


class _Test:
  """One test child: its process, checkpoint copy, results and log."""

  def __init__(self, settings, checkpoint, num_episodes, directory):
    name = os.path.join(directory, os.path.basename(checkpoint))
    self.checkpoint = _copy_checkpoint(checkpoint,
                                       os.path.join(directory, 'copies'))
    self.results_file = name + '.json'
    self.log = open(name + '.log', 'w')  # pylint: disable=consider-using-with
    try:
      self.process = subprocess.Popen(
          ['nice', '-n', str(NICENESS), sys.executable, EXPERIMENT,
           *test_flags(settings, self.checkpoint, num_episodes,
                       self.results_file)],
          stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
          env=_child_environment())
    except OSError:
      self.log.close()
      _remove_checkpoint(self.checkpoint)
      raise

  def results(self):
    """The results, or None when the child failed."""
    if self.process.returncode != 0 or not os.path.exists(self.results_file):
      return None
    return test_results.read(self.results_file)

  def close(self):
    """Stops the child and its session if still running; frees the copy."""
    if self.process.poll() is None:
      os.killpg(self.process.pid, signal.SIGKILL)
      self.process.wait()
    self.log.close()
    _remove_checkpoint(self.checkpoint)


class PeriodicTest:
  """Starts a test of the newest checkpoint; reports the finished ones."""

  def __init__(self, settings, logdir, num_episodes, print_fn):
    self._settings = settings
    self._checkpoints = checkpointing.directory(logdir)
    self._directory = os.path.join(logdir, 'periodic_tests')
    self._num_episodes = num_episodes
    self._print = print_fn
    tf.io.gfile.makedirs(self._directory)
    self._writer = tf.summary.create_file_writer(self._directory)
    self._running = None  # A _Test.
    self._tested = None  # The newest checkpoint tested or under test.
    self._last_check = 0.0

  def after_update(self, num_updates):
    """The learner loop's callback: cheap unless a check is due."""
    del num_updates
    if time.monotonic() - self._last_check < CHECK_INTERVAL_SECS:
      return
    self._last_check = time.monotonic()
    self._report_if_finished()
    if self._running is None:
      self._start_if_new()

  def _report_if_finished(self):
    if self._running and self._running.process.poll() is not None:
      test, self._running = self._running, None
      results = test.results()
      test.close()
      if results is None:
        self._print(f'Periodic test failed (exit {test.process.returncode}):'
                    f' see {test.log.name}')
      else:
        self._report(results)

  def _start_if_new(self):
    latest = tf.train.latest_checkpoint(self._checkpoints)
    if latest is None or latest == self._tested:
      return
    self._tested = latest
    try:
      self._running = _Test(self._settings, latest, self._num_episodes,
                            self._directory)
    except (OSError, tf.errors.OpError) as error:
      self._print(f'Periodic test of {latest} not started: {error}')

  def _report(self, results):
    frames = results['environment_frames']
    levels = results['levels']
    for level, result in levels.items():
      progress.write_scalars(self._writer, frames, {
          'mean_return': result['mean'], 'std_return': result['std']},
                             f'test/{level}')
    if 'human_normalized' in results:
      progress.write_scalars(self._writer, frames,
                             results['human_normalized'],
                             'test/human_normalized')
    self._writer.flush()
    self._print(f'Test mode at {frames:,} frames '
                f'({os.path.basename(results["checkpoint"])}, '
                f'{self._num_episodes} games per level): ' + ', '.join(
                    f'{level} {result["mean"]:.1f} ± {result["std"]:.1f}'
                    for level, result in levels.items()))

  def close(self):
    """Reports a test that has just finished; stops one still running."""
    self._report_if_finished()
    if self._running:
      self._running.close()
      self._running = None
    self._writer.close()
