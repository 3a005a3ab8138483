"""experiment.py end to end on real Pong: exact frame accounting, finite
losses, checkpoints and resuming, test mode, and one-line errors."""

import json
import math
import os
import subprocess
import sys

from absl import flags
import numpy as np
import tensorflow as tf

import experiment
from tests import pipeline_util

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHORT_RUN = dict(level_name='atari/pong', num_actors=4, num_actor_threads=2,
                 batch_size=4, unroll_length=5, core='lstm')
FRAMES_PER_UPDATE = 5 * 4 * 4  # T * B * action repeats.


def run_experiment(*flags):
  return subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, 'experiment.py'), *flags],
      capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)


class ExperimentTest(tf.test.TestCase):

  def test_pong_trains_resumes_and_tests(self):
    logdir = self.create_tempdir().full_path
    first = pipeline_util.train(logdir=logdir, total_environment_frames=800,
                                **SHORT_RUN)
    self.assertEqual(10, first['updates'])
    self.assertEqual(first['updates'] * FRAMES_PER_UPDATE, first['frames'])
    for name, value in first['last_stats'].items():
      self.assertTrue(math.isfinite(value), name)
    self.assertIsNotNone(tf.train.latest_checkpoint(
        os.path.join(logdir, 'checkpoints')))

    # The same command with a larger budget continues where it stopped.
    lines = []
    second = pipeline_util.train(logdir=logdir, total_environment_frames=1600,
                                 print_fn=lines.append,
                                 **SHORT_RUN)
    self.assertIn('Resuming from', lines[0])
    self.assertIn('at 800 frames', lines[0])
    self.assertEqual(20, second['updates'])
    self.assertEqual(1600, second['frames'])
    # The last update used the schedule at 1520 frames of 1600.
    self.assertAllClose(0.0006 * (1 - 1520 / 1600),
                        second['last_stats']['learning_rate'])

    results = experiment.evaluate(pipeline_util.config(
        mode='test', logdir=logdir, test_num_episodes=2, **SHORT_RUN),
                                  print_fn=lambda line: None)
    with open(os.path.join(logdir, 'test_results.json')) as f:
      written = json.load(f)
    self.assertEqual(results, written)
    self.assertEqual(1600, written['environment_frames'])
    pong = written['levels']['atari/pong']
    self.assertEqual(2, pong['episodes'])
    # A Pong game ends at 21 points: the return lies in [-21, 21].
    self.assertBetween(pong['mean'], -21, 21)
    self.assertAllClose(100 * (pong['mean'] + 20.7) / (14.6 + 20.7),
                        pong['human_normalized'])
    self.assertAllClose({'median': pong['human_normalized'],
                         'mean': pong['human_normalized']},
                        written['human_normalized'])

  def test_several_games_share_the_full_action_set_and_are_scored(self):
    logdir = self.create_tempdir().full_path
    games = dict(SHORT_RUN, level_name='atari/breakout,atari/space_invaders',
                 core='feedforward')
    lines = []
    result = pipeline_util.train(logdir=logdir, total_environment_frames=800,
                                 print_fn=lines.append, **games)
    self.assertEqual(800, result['frames'])
    self.assertIn('(2 levels, 18 actions): 4 actors', lines[0])
    with open(os.path.join(logdir, 'flags.json')) as f:
      self.assertTrue(json.load(f)['full_action_set'])

    results = experiment.evaluate(pipeline_util.config(
        mode='test', logdir=logdir, test_num_episodes=1, **games),
                                  print_fn=lambda line: None)
    baselines = {'atari/breakout': (1.7, 30.5),
                 'atari/space_invaders': (148.0, 1668.7)}
    normalized = []
    for level, (random, human) in baselines.items():
      level_result = results['levels'][level]
      self.assertEqual(1, level_result['episodes'])
      normalized.append(100 * (level_result['mean'] - random) /
                        (human - random))
      self.assertAllClose(normalized[-1], level_result['human_normalized'])
    self.assertAllClose({'median': np.median(normalized),
                         'mean': np.mean(normalized)},
                        results['human_normalized'])

  def test_sigint_writes_a_checkpoint_and_the_same_command_resumes(self):
    status, errors, frames, first_line = pipeline_util.interrupt_and_resume(
        self.create_tempdir().full_path, timeout=60, **SHORT_RUN)
    self.assertEqual(0, status, errors[-2000:])
    self.assertIsNotNone(frames, errors[-2000:])
    self.assertGreater(frames, 0)
    self.assertEqual(0, frames % FRAMES_PER_UPDATE)
    self.assertIn(f'at {frames:,} frames', first_line)

  def test_resuming_with_another_network_is_refused(self):
    logdir = self.create_tempdir().full_path
    pipeline_util.train(logdir=logdir, total_environment_frames=80,
                        **SHORT_RUN)
    with self.assertRaisesRegex(experiment.UsageError, '--core=lstm'):
      pipeline_util.train(logdir=logdir, total_environment_frames=160,
                          **dict(SHORT_RUN, core='feedforward'))

  def test_a_run_starts_with_its_own_line(self):
    # TensorFlow's start-up lines (oneDNN, CPU features, the CUDA probe)
    # stay off the screen unless TF_CPP_MIN_LOG_LEVEL asks for them.
    logdir = self.create_tempdir().full_path
    quiet = run_experiment('--level_name=catch/plain', f'--logdir={logdir}',
                           '--total_environment_frames=80',
                           '--num_actors=4', '--batch_size=4')
    self.assertEqual(0, quiet.returncode, quiet.stderr[-2000:])
    self.assertStartsWith(quiet.stdout, 'Training shallow feedforward agent')
    for startup_line in ('oneDNN', 'cpu_feature_guard', 'cuInit',
                         'cudart_stub'):
      self.assertNotIn(startup_line, quiet.stderr)
    verbose = subprocess.run(
        [sys.executable, '-c', 'import experiment'], capture_output=True,
        text=True, timeout=120, cwd=REPO_ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='0'))
    self.assertIn('oneDNN', verbose.stderr)

  def test_bad_input_gets_one_line_errors(self):
    # A process per way out: a configuration error (`UsageError`; the rest
    # of them in-process, below), absl's flag check, and two found later.
    logdir = self.create_tempdir().full_path
    a_file = self.create_tempfile().full_path
    for flags, message in [
        (['--level_name=atari/pongg'], 'unknown Atari game'),
        (['--batch_size=0'], 'batch_size'),
        (['--mode=test', f'--logdir={logdir}'], 'no checkpoint'),
        ([f'--logdir={a_file}'], 'it is a file'),
    ]:
      result = run_experiment(*flags)
      self.assertNotEqual(0, result.returncode, flags)
      self.assertNotIn('Traceback', result.stderr, flags)
      # The error is one line at the end (absl adds a --help hint after a
      # bad flag value); TensorFlow's import messages come before it.
      last_lines = '\n'.join(result.stderr.strip().splitlines()[-2:])
      self.assertIn(message, last_lines, flags)

  def test_bad_levels_are_refused(self):
    for overrides, message in [
        (dict(level_name='doom/e1m1'), 'unknown level'),
        (dict(level_name='atari/pong,atari/pongg'), 'unknown Atari game'),
        (dict(level_name='atari57', num_actors=8), 'fewer than the 57'),
    ]:
      with self.assertRaisesRegex(experiment.UsageError, message,
                                  msg=overrides):
        pipeline_util.config(**overrides)

  def test_every_hyperparameter_is_range_checked(self):
    for name, bad_value in [
        ('learning_rate', 0.0), ('learning_rate', float('inf')),
        ('discounting', 1.5), ('discounting', -0.1),
        ('entropy_cost', float('nan')), ('baseline_cost', -1.0),
        ('epsilon', 0.0), ('decay', 1.0), ('momentum', -0.5),
        ('max_grad_norm', -1.0), ('total_environment_frames', float('nan')),
        ('learning_rate_anneal_frames', float('inf')),
        ('vtrace_lambda', 1.01), ('vtrace_lambda', -0.1),
        ('learning_rate', -1.0),
    ]:
      with self.assertRaisesRegex(experiment.UsageError,
                                  f'--{name}=.* is out of range', msg=name):
        pipeline_util.config(**{name: bad_value})
    # The edges of each range are allowed.
    config = pipeline_util.config(discounting=1.0, entropy_cost=0.0,
                                  momentum=0.0, max_grad_norm=0.0,
                                  vtrace_lambda=0.0)
    self.assertEqual(1.0, config.learner.discounting)
    self.assertEqual(0.0, config.learner.vtrace_lambda)

  def test_no_float_flag_takes_nan(self):
    floats = [flag.name for flag in flags.FLAGS.get_key_flags_for_module(
        experiment) if flag.flag_type() == 'float']
    self.assertIn('pbt_burn_in_frames', floats)
    for name in floats:
      with self.assertRaisesRegex(experiment.UsageError,
                                  f'--{name}=nan is out of range', msg=name):
        pipeline_util.config(**{name: float('nan')})

  def test_the_learning_rate_anneals_over_the_run_unless_told(self):
    config = pipeline_util.config(total_environment_frames=1e6)
    self.assertEqual(1_000_000, config.learner.learning_rate_anneal_frames)
    config = pipeline_util.config(total_environment_frames=1e6,
                                  learning_rate_anneal_frames=4e6)
    self.assertEqual(4_000_000, config.learner.learning_rate_anneal_frames)
    self.assertEqual(1_000_000, config.total_environment_frames)

  def test_an_unwritable_logdir_is_one_line(self):
    result = run_experiment('--logdir=/proc/impala_tf_forbidden')
    self.assertEqual(1, result.returncode)
    self.assertNotIn('Traceback', result.stderr)
    self.assertIn('cannot write in --logdir=/proc/impala_tf_forbidden',
                  result.stderr.strip().splitlines()[-1])


if __name__ == '__main__':
  tf.test.main()
