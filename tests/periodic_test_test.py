"""Test mode on every new checkpoint while training: the test child gets the
run's own settings, and its results reach a printed line, a file and
TensorBoard at the checkpoint's frames."""

import glob
import json
import os
import re
import subprocess
import sys
import threading

from absl import flags
from absl.testing import flagsaver
from absl.testing import parameterized
import tensorflow as tf

import experiment
from impala_tf import periodic_test
from tests import pipeline_util


def _scalars(logdir, tag):
  """{step: value} of `tag` in the event files directly in `logdir`."""
  values = {}
  for path in glob.glob(os.path.join(logdir, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == tag:
          values[event.step] = float(tf.make_ndarray(value.tensor))
  return values


class TestFlagsTest(parameterized.TestCase):

  @parameterized.parameters('local', 'learner')
  def test_the_test_child_parses_to_the_runs_own_settings(self, job_name):
    training = pipeline_util.config(
        level_name='atari/pong,atari/breakout', num_actors=4,
        entropy_cost=0.003, epsilon=1e-5, full_action_set=True,
        periodic_test_episodes=3, logdir='/tmp/run', job_name=job_name,
        learner_hosts='localhost:8000,localhost:8010')
    argv = periodic_test.test_flags(training.flags, '/tmp/run/ckpt-5', 7,
                                    '/tmp/run/r.json')
    with flagsaver.flagsaver():
      flags.FLAGS(['experiment.py', *argv])
      tested = experiment.make_config(flags.FLAGS)
    self.assertEqual('test', tested.mode)
    self.assertEqual(7, tested.test_num_episodes)
    self.assertEqual('/tmp/run/ckpt-5', tested.test_checkpoint)
    self.assertEqual('/tmp/run/r.json', tested.test_results_file)
    self.assertEqual(0, tested.periodic_test_episodes)
    self.assertTrue(tested.overwrite)
    # A test plays on one machine, also for a learner task's checkpoint.
    self.assertEqual('local', tested.job_name)
    for name, value in training.flags.items():
      if name not in ('mode', 'test_num_episodes', 'overwrite',
                      'test_checkpoint', 'test_results_file',
                      'periodic_test_episodes', 'job_name', 'task',
                      'learner_hosts', 'actor_hosts'):
        self.assertEqual(value, tested.flags[name], name)


class TestCheckpointTest(tf.test.TestCase):

  def test_an_older_checkpoint_is_played_when_named(self):
    logdir = self.create_tempdir().full_path
    first = pipeline_util.train(level_name='catch/plain', logdir=logdir,
                                total_environment_frames=2000)
    older = tf.train.latest_checkpoint(os.path.join(logdir, 'checkpoints'))
    pipeline_util.train(level_name='catch/plain', logdir=logdir,
                        total_environment_frames=4000)
    results = experiment.evaluate(pipeline_util.config(
        level_name='catch/plain', logdir=logdir, mode='test',
        test_num_episodes=2, test_checkpoint=older),
                                  print_fn=lambda line: None)
    self.assertEqual(older, results['checkpoint'])
    self.assertEqual(first['frames'], results['environment_frames'])

  def test_a_path_that_is_no_checkpoint_is_one_line(self):
    logdir = self.create_tempdir().full_path
    result = subprocess.run(
        [sys.executable, periodic_test.EXPERIMENT, '--mode=test',
         '--level_name=catch/plain', f'--logdir={logdir}',
         f'--test_checkpoint={logdir}/ckpt-7'],
        capture_output=True, text=True, timeout=120, check=False)
    self.assertNotEqual(0, result.returncode)
    self.assertEqual(
        f'impala_tf: error: --test_checkpoint={logdir}/ckpt-7 is not a '
        'checkpoint (no .index file)', result.stderr.strip().splitlines()[-1])
    self.assertNotIn('Traceback', result.stderr)


class PeriodicTestTest(tf.test.TestCase):

  def test_a_checkpoint_is_tested_and_reported_while_training(self):
    logdir = self.create_tempdir().full_path
    lines, stop = [], threading.Event()

    def print_fn(line):
      lines.append(line)
      if line.startswith('Test mode at'):
        stop.set()

    give_up = threading.Timer(150, stop.set)
    give_up.start()
    experiment.train(pipeline_util.config(
        level_name='catch/plain', logdir=logdir,
        total_environment_frames=1e9, checkpoint_interval_secs=2,
        periodic_test_episodes=3), stop, print_fn)
    give_up.cancel()
    reported = [line for line in lines if line.startswith('Test mode at')]
    other_lines = [line for line in lines if not line.startswith('frames ')]
    self.assertLen(reported, 1, other_lines[-5:])
    match = re.match(r'Test mode at ([\d,]+) frames \((ckpt-\d+), 3 games '
                     r'per level\): catch/plain (-?[\d.]+) ± ([\d.]+)$',
                     reported[0])
    self.assertIsNotNone(match, reported[0])
    tests = os.path.join(logdir, 'periodic_tests')
    with open(os.path.join(tests, match.group(2) + '.json')) as f:
      results = json.load(f)
    frames = results['environment_frames']
    self.assertEqual(frames, int(match.group(1).replace(',', '')))
    # The test played a copy, removed once reported.
    self.assertEqual(os.path.join(tests, 'copies', match.group(2)),
                     results['checkpoint'])
    self.assertEmpty(glob.glob(results['checkpoint'] + '.index'))
    level = results['levels']['catch/plain']
    self.assertEqual(3, level['episodes'])
    self.assertAllClose(level['mean'], float(match.group(3)), atol=0.05)
    self.assertAllClose(
        {frames: level['mean']},
        _scalars(tests, 'test/catch/plain/mean_return'))
    # The user's own test results are not touched.
    self.assertFalse(os.path.exists(os.path.join(logdir,
                                                 'test_results.json')))


if __name__ == '__main__':
  tf.test.main()
