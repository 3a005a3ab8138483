"""The learner-health table: the nearest summary to each frame asked for,
read back from a real summary writer, and one-line errors."""

import os
import subprocess
import sys
import tempfile

import tensorflow as tf

from experiments import learner_health
from impala_tf import curves

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def points(pairs):
  return [curves.Scalar(step, value, 0.0) for step, value in pairs]


class LearnerHealthTest(tf.test.TestCase):

  def test_nearest_summary_on_either_side(self):
    dead = points([(20_000, 0.7), (90_000, 0.9), (130_000, 0.5)])
    self.assertEqual(0.9, learner_health.nearest(dead, 1e5))  # 10k away.
    self.assertEqual(0.5, learner_health.nearest(dead, 1.2e5))
    self.assertEqual(0.7, learner_health.nearest(dead, 0))
    self.assertIsNone(learner_health.nearest([], 1e5))

  def test_table_has_a_row_per_run_and_a_dash_where_a_tag_is_missing(self):
    runs = {
        'seed 1': {'torso_dead_fraction': points([(1e5, 0.891), (1e6, 0.3)]),
                   'entropy': points([(1e5, 1.5)])},
        'seed 2': {'torso_dead_fraction': points([(1e5, 0.95)]),
                   'entropy': []},
    }
    lines = learner_health.table(runs, ['torso_dead_fraction', 'entropy'],
                                 [1e5, 1e6]).splitlines()
    self.assertEqual(
        '| run | torso_dead_fraction at 0.1M | torso_dead_fraction at 1M '
        '| entropy at 0.1M | entropy at 1M |', lines[0])
    self.assertEqual('|---|---:|---:|---:|---:|', lines[1])
    self.assertEqual('| seed 1 | 0.89 | 0.30 | 1.50 | 1.50 |', lines[2])
    self.assertEqual('| seed 2 | 0.95 | 0.95 | — | — |', lines[3])

  def test_table_shows_the_decimals_asked_for(self):
    runs = {'seed 1': {'update_to_weight_ratio': points([(1e6, 0.01264)])}}
    lines = learner_health.table(runs, ['update_to_weight_ratio'], [1e6],
                                 decimals=4).splitlines()
    self.assertEqual('| seed 1 | 0.0126 |', lines[2])

  def _run(self, *args):
    return subprocess.run(
        [sys.executable, '-m', 'experiments.learner_health', *args],
        capture_output=True, text=True, check=False, timeout=120,
        cwd=REPO_ROOT)

  def test_reads_a_runs_events(self):
    logdir = os.path.join(tempfile.mkdtemp(), 'run')
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default():
      for step, dead in [(30_000, 0.8), (1_000_000, 0.4), (2_900_000, 0.1)]:
        tf.summary.scalar('learner/torso_dead_fraction', dead, step=step)
    writer.close()
    # Unlabelled, a run is named by its folder (as impala_tf.curves does).
    result = self._run(f'seed 1={logdir}', logdir + os.sep,
                       '--tags=torso_dead_fraction', '--at_frames=1e5,3e6')
    self.assertEqual(0, result.returncode, result.stderr)
    self.assertEqual(['| seed 1 | 0.80 | 0.10 |', '| run | 0.80 | 0.10 |'],
                     result.stdout.strip().splitlines()[-2:])

  def test_bad_input_is_one_line(self):
    empty = tempfile.mkdtemp()
    for args, message in [
        ([f'run={empty}'], 'has none of the learner/ summaries'),
        ([f'run={empty}/missing'], 'is not a directory'),
        ([f'run={empty}', '--at_frames=soon'], 'must be numbers'),
        ([f'run={empty}', '--decimals=-1'], '--decimals=-1 must be 0-9'),
        ([], 'give one or more LABEL=LOGDIR runs'),
    ]:
      result = self._run(*args)
      self.assertEqual(1, result.returncode, args)
      self.assertNotIn('Traceback', result.stderr, args)
      self.assertIn(message, result.stderr.strip().splitlines()[-1], args)


if __name__ == '__main__':
  tf.test.main()
