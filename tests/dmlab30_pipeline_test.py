"""--level_name=dmlab30 end to end on the `deepmind_lab` stand-in
(tests/dmlab_stand_in): multi-task training on the 30 training levels, test
mode on the test levels, the comparison tool on its results; the DMLab
defaults, instructions through environment processes, and the errors."""

import functools
import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from dmlab30 import environment
from dmlab30 import paper_results
from dmlab30 import scores
import experiment
from impala_tf import builders
from impala_tf import environments
from tests import pipeline_util

# Only here is the stand-in importable as deepmind_lab (and, through the
# inherited path, in the environment processes the tests spawn).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                'dmlab_stand_in'))

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Small frames keep 30 levels cheap; the shallow torso needs 36 rows or so.
SHORT_RUN = dict(level_name='dmlab30', num_actors=30, num_actor_threads=2,
                 batch_size=4, unroll_length=5, width=48, height=36)


class DmLab30PipelineTest(tf.test.TestCase):

  def test_dmlab30_trains_tests_and_compares(self):
    logdir = self.create_tempdir().full_path
    lines = []
    result = pipeline_util.train(logdir=logdir, print_fn=lines.append,
                                 total_environment_frames=20_000,
                                 progress_interval_secs=1, **SHORT_RUN)
    # Every training level finished an episode, and the summaries score the
    # two rooms_*_train levels on their _test twins' baselines.
    recent = result['recent_returns']
    self.assertCountEqual(scores.TRAIN_LEVELS, recent)
    normalized = []
    for level, (games, mean_return) in recent.items():
      self.assertGreaterEqual(games, 1, level)
      random, human = dict(
          (f'dmlab/{name}', (r, h)) for name, r, h in scores.LEVEL_SCORES)[
              scores.TEST_LEVEL_OF[level]]
      normalized.append(100 * (mean_return - random) / (human - random))
    self.assertAllClose(
        {'mean_capped': np.mean(np.minimum(normalized, 100)),
         'mean': np.mean(normalized)}, result['human_normalized'])
    self.assertTrue(
        any('human-normalised mean_capped' in line for line in lines), lines)
    self.assertIn('(30 levels, 9 actions)', lines[0])

    results = experiment.evaluate(
        pipeline_util.config(mode='test', logdir=logdir, test_num_episodes=1,
                             **SHORT_RUN),
        print_fn=lambda line: None)
    # Test mode plays the test levels: the held-out twins replace the two
    # rooms_*_train levels.
    self.assertCountEqual(scores.TEST_LEVELS, results['levels'])
    for level, level_result in results['levels'].items():
      self.assertEqual(1, level_result['episodes'], level)
    # Each held-out twin names the level it was trained as.
    trained_as = {level: result['trained_on']
                  for level, result in results['levels'].items()
                  if 'trained_on' in result}
    self.assertEqual({test: train for train, test
                      in scores.TEST_LEVEL_OF.items() if train != test},
                     trained_as)
    normalized = scores.BENCHMARK.normalized(
        {level: r['mean'] for level, r in results['levels'].items()})
    self.assertAllClose(np.mean(np.minimum(list(normalized.values()), 100)),
                        results['human_normalized']['mean_capped'])

    results_path = os.path.join(logdir, 'test_results.json')
    plot_path = os.path.join(logdir, 'comparison.png')
    compare = subprocess.run(
        [sys.executable, '-m', 'dmlab30.compare', results_path,
         '--against=impala_experts', f'--plot={plot_path}'],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
        check=False)
    self.assertEqual(0, compare.returncode, compare.stderr)
    experts = paper_results.PAPER_RUNS['impala_experts']
    watermaze = [line for line in compare.stdout.splitlines()
                 if line.startswith('| dmlab/rooms_watermaze |')]
    self.assertLen(watermaze, 1)
    self.assertIn(f'{experts.scores["dmlab/rooms_watermaze"]:,.2f}',
                  watermaze[0])
    self.assertIn('**mean_capped** (30 levels)', compare.stdout)
    with open(plot_path, 'rb') as f:
      self.assertEqual(b'\x89PNG', f.read(4))
    with open(results_path) as f:
      self.assertEqual(results, json.load(f))

  def test_instructions_reach_the_batch_from_environment_processes(self):
    level_names = ['dmlab/language_select_described_object',
                   'dmlab/explore_goal_locations_small']
    env = environments.ProcessEnvironments(
        [functools.partial(environment.DmLabEnvironment, level, seed=index,
                           width=16, height=12)
         for index, level in enumerate(level_names)], level_names, 4)
    try:
      first = env.reset()
      stepped, _ = env.step(np.zeros([2], np.int32))
    finally:
      env.close()
    for output in (first, stepped):
      self.assertEqual((2, environment.MAX_INSTRUCTION_WORDS),
                       output.instruction.shape)
      self.assertEqual(np.int32, output.instruction.dtype)
      self.assertTrue(np.all(output.instruction[0, :4] > 0))  # Language.
      self.assertAllEqual(np.zeros(environment.MAX_INSTRUCTION_WORDS),
                          output.instruction[1])
      self.assertEqual((2, 12, 16, 3), output.frame.shape)

  def test_defaults_follow_the_official_dmlab30_run(self):
    config = pipeline_util.config(level_name='dmlab30')
    self.assertEqual(list(scores.TRAIN_LEVELS), config.levels)
    self.assertEqual(
        ('lstm', 100, 10**10, 'soft_asymmetric', 0.0033391318945337044,
         0.00031866995608948655, 0.1, 0.0),
        (config.agent.core, config.actors.unroll_length,
         config.total_environment_frames, config.learner.reward_clipping,
         config.learner.entropy_cost, config.learner.learning_rate,
         config.learner.epsilon, config.learner.max_grad_norm))
    single = pipeline_util.config(level_name='dmlab/rooms_watermaze')
    self.assertEqual(10**9, single.total_environment_frames)
    info = experiment.DOMAINS['dmlab'].environment_info(single.suite, None)
    agent = builders.build_learner(single, info).agent
    self.assertIsNotNone(agent.instruction_encoder)
    self.assertEqual((72, 96, 3), agent.observation_shape)

  def test_held_out_levels_are_not_trained_on(self):
    with self.assertRaisesRegex(experiment.UsageError,
                                'held out.*rooms_collect_good_objects_train'):
      pipeline_util.config(
          level_name='dmlab/rooms_collect_good_objects_test')

  def test_without_deepmind_lab_the_error_is_one_line(self):
    script = (
        'import runpy, sys\n'
        "sys.modules['deepmind_lab'] = None  # Absent even if installed.\n"
        "sys.argv = ['experiment.py', '--level_name=dmlab30']\n"
        "runpy.run_path('experiment.py', run_name='__main__')\n")
    result = subprocess.run([sys.executable, '-c', script], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=120,
                            check=False)
    self.assertEqual(1, result.returncode)
    self.assertEqual(
        "impala_tf: error: DeepMind Lab's Python module deepmind_lab is "
        'missing; build and install it as the README says (section '
        '"DeepMind Lab")',
        result.stderr.strip().splitlines()[-1])
    self.assertNotIn('Traceback', result.stderr)


if __name__ == '__main__':
  tf.test.main()
