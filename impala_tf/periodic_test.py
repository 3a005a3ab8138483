"""Test mode on every new checkpoint while training, so that a policy that
gets worse shows in the run itself: the curve of recent training games
averages the policies of thousands of updates and can hide it.

Each test is `experiment.py --mode=test` on the run's own settings, in a
child process at a low CPU priority (`NICENESS`), so that it takes mostly
what training leaves idle. Its results go to `<logdir>/periodic_tests/`
(`frames_<N>.json` and `.log`), to TensorBoard (`test/<level>/mean_return`,
`test/<level>/std_return`, and the suite's human-normalised summary under
`test/human_normalized/`, at the checkpoint's frames) and to one printed
line. A test still running when a newer checkpoint comes finishes first;
the newest checkpoint is tested next.
"""

import functools
import json
import os
import subprocess
import sys
import time

import tensorflow as tf

from impala_tf import checkpointing
from impala_tf import progress

EXPERIMENT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    'experiment.py')
# The test child's niceness: 10 gives it about a tenth of a core that
# training keeps busy (19 starved it when tests ran beside training).
NICENESS = 10
# How often, at most, the newest checkpoint's name is read.
CHECK_INTERVAL_SECS = 5.0
# Flags the test child gets its own values of.
_OWN_FLAGS = ('mode', 'test_num_episodes', 'overwrite', 'test_checkpoint',
              'test_results_file', 'periodic_test_episodes')


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


class PeriodicTest:
  """Starts a test of each new checkpoint; reports the finished ones."""

  def __init__(self, settings, logdir, num_episodes, summary_directory,
               print_fn):
    self._settings = settings
    self._checkpoints = checkpointing.directory(logdir)
    self._directory = os.path.join(logdir, 'periodic_tests')
    self._num_episodes = num_episodes
    self._writer = tf.summary.create_file_writer(summary_directory)
    self._print = print_fn
    self._running = None  # (process, results file, log file).
    self._tested = None  # The newest checkpoint tested or under test.
    self._last_check = 0.0

  def after_update(self, num_updates):
    """The learner loop's callback: cheap unless a check is due."""
    del num_updates
    if time.monotonic() - self._last_check < CHECK_INTERVAL_SECS:
      return
    self._last_check = time.monotonic()
    if self._running and self._running[0].poll() is not None:
      self._report(*self._running)
      self._running = None
    if self._running is None:
      self._start_if_new()

  def _start_if_new(self):
    latest = tf.train.latest_checkpoint(self._checkpoints)
    if latest is None or latest == self._tested:
      return
    self._tested = latest
    os.makedirs(self._directory, exist_ok=True)
    name = os.path.basename(latest)
    results_file = os.path.join(self._directory, f'{name}.json')
    log = open(os.path.join(self._directory, f'{name}.log'), 'w')  # pylint: disable=consider-using-with
    process = subprocess.Popen(
        [sys.executable, EXPERIMENT, *test_flags(
            self._settings, latest, self._num_episodes, results_file)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=functools.partial(os.nice, NICENESS))
    self._running = (process, results_file, log)

  def _report(self, process, results_file, log):
    log.close()
    if process.returncode != 0 or not os.path.exists(results_file):
      self._print(f'Periodic test failed (exit {process.returncode}): see '
                  f'{log.name}')
      return
    with open(results_file) as f:
      results = json.load(f)
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
    self._print(f'Test mode at {frames:,} frames ({results["checkpoint"]}, '
                f'{self._num_episodes} games per level): ' + ', '.join(
                    f'{level} {result["mean"]:.1f} ± {result["std"]:.1f}'
                    for level, result in levels.items()))

  def close(self):
    """Stops a test still running; the next run tests its checkpoint."""
    if self._running:
      process, _, log = self._running
      process.kill()
      process.wait()
      log.close()
      self._running = None
    self._writer.close()
