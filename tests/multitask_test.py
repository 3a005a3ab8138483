"""Multi-task runs through experiment.py on Catch: levels round-robin to
actors, per-level games, human-normalised summaries, test results, and the
level-list errors."""

import json
import os
from unittest import mock

import numpy as np
import tensorflow as tf

from catch import domain as catch_domain
import experiment
from impala_tf import local_actors
from impala_tf import progress
from tests import pipeline_util

SHORT_RUN = dict(level_name='catch_lstm', core='lstm', num_actors=4,
                 num_actor_threads=2, batch_size=4, unroll_length=5)


def catch_normalized(mean_return):
  # Stand-in baselines: random -1, human +1.
  return 100 * (mean_return + 1) / 2


class MultitaskTest(tf.test.TestCase):

  def test_levels_go_round_robin_to_actors(self):
    self.assertEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a'],
                     local_actors.assign_levels(['a', 'b', 'c'], 7))

  def test_a_suite_trains_and_tests_with_human_normalized_summaries(self):
    logdir = self.create_tempdir().full_path
    lines = []
    result = pipeline_util.train(logdir=logdir, print_fn=lines.append,
                                 total_environment_frames=4000,
                                 progress_interval_secs=1, **SHORT_RUN)
    recent = result['recent_returns']
    self.assertEqual(['catch/memory', 'catch/timing'], sorted(recent))
    for level, (games, _) in recent.items():
      self.assertGreater(games, 10, level)
    normalized = [catch_normalized(mean) for _, mean in recent.values()]
    self.assertAllClose(
        {'median': np.median(normalized), 'mean': np.mean(normalized)},
        result['human_normalized'])
    self.assertTrue(any('human-normalised median' in line for line in lines),
                    lines)
    self.assertIn('(2 levels', lines[0])

    results = experiment.evaluate(pipeline_util.config(
        mode='test', logdir=logdir, test_num_episodes=3, **SHORT_RUN),
                                  print_fn=lambda line: None)
    with open(os.path.join(logdir, 'test_results.json')) as f:
      self.assertEqual(results, json.load(f))
    values = []
    for level in ('catch/memory', 'catch/timing'):
      level_result = results['levels'][level]
      self.assertEqual(3, level_result['episodes'])
      values.append(catch_normalized(level_result['mean']))
      self.assertAllClose(values[-1], level_result['human_normalized'])
    self.assertAllClose(np.median(values),
                        results['human_normalized']['median'])
    self.assertAllClose(np.mean(values), results['human_normalized']['mean'])

    # The results are not overwritten without asking.
    with self.assertRaisesRegex(experiment.UsageError, 'pass --overwrite'):
      experiment.evaluate(pipeline_util.config(
          mode='test', logdir=logdir, test_num_episodes=1, **SHORT_RUN))
    again = experiment.evaluate(pipeline_util.config(
        mode='test', logdir=logdir, test_num_episodes=1, overwrite=True,
        **SHORT_RUN), print_fn=lambda line: None)
    self.assertEqual(1, again['levels']['catch/memory']['episodes'])

  def test_the_summary_waits_for_every_level(self):
    levels = ['catch/memory', 'catch/timing']
    benchmark = catch_domain.BENCHMARK
    self.assertIsNone(progress.human_normalized_summary(
        {'catch/memory': (3, 0.5)}, levels, benchmark))
    summary = progress.human_normalized_summary(
        {'catch/memory': (3, 0.5), 'catch/timing': (1, -0.5)}, levels,
        benchmark)
    self.assertAllClose({'median': 50.0, 'mean': 50.0}, summary)
    # Levels without baselines, or no benchmark: no summary.
    self.assertIsNone(progress.human_normalized_summary(
        {'catch/memory': (3, 0.5), 'other/level': (1, 0.0)},
        ['catch/memory', 'other/level'], benchmark))
    self.assertIsNone(progress.human_normalized_summary(
        {'catch/memory': (3, 0.5)}, ['catch/memory'], None))

  def test_the_progress_line_counts_levels_when_there_are_many(self):
    recent = {f'catch/{index}': (2, 0.0) for index in range(6)}
    text = progress.describe_returns(recent, list(recent) + ['catch/x'],
                                     {'median': 12.0, 'mean': 3.5})
    self.assertEqual('12 games, 6/7 levels played | human-normalised '
                     'median 12.0% mean 3.5%', text)
    self.assertEqual('catch/a: 0.5 (2 games)', progress.describe_returns(
        {'catch/a': (2, 0.5)}, ['catch/a'], None))

  def test_the_progress_line_comes_every_interval_with_time_left(self):
    lines, clock = [], [100.0]
    line = progress.ProgressLine(total_frames=10_000, interval_secs=10,
                                 print_fn=lines.append)
    with mock.patch.object(progress.time, 'monotonic', lambda: clock[0]):
      self.assertIsNone(line.rate_if_due(0))  # Records the start.
      clock[0] = 109.0
      self.assertIsNone(line.rate_if_due(900))
      clock[0] = 110.0
      fps = line.rate_if_due(1_000)
    self.assertAllClose(100.0, fps)
    line.show(1_000, fps, 'catch/a: 0.5 (2 games)', extra='updates 7')
    self.assertEqual(['frames 1,000 / 10,000 | 100 frames/s | 1m30s left | '
                      'return catch/a: 0.5 (2 games) | updates 7'], lines)

  def test_level_lists_are_checked(self):
    for overrides, message in [
        (dict(level_name='catch/memory,catch/memory'), 'named twice'),
        (dict(level_name='catch_lstm,catch/timing'), 'named twice'),
        (dict(level_name='catch/memory,atari/pong'), 'mixes domains'),
        (dict(level_name='catch/memory,catch/typo'), 'unknown Catch level'),
        (dict(level_name='catch_lstm,'), "unknown level ''"),
        (dict(level_name='catch_lstm', num_actors=1), 'fewer than the 2'),
        (dict(level_name='atari/pong,atari/boxing', full_action_set=False),
         'one action set'),
    ]:
      with self.assertRaisesRegex(experiment.UsageError, message,
                                  msg=overrides):
        pipeline_util.config(**overrides)
    config = pipeline_util.config(level_name='catch/memory, catch/timing')
    self.assertEqual(['catch/memory', 'catch/timing'], config.levels)
    # Atari games' minimal action sets differ: several share the full one.
    self.assertTrue(pipeline_util.config(
        level_name='atari/pong,atari/boxing').suite.full_action_set)
    self.assertFalse(pipeline_util.config(
        level_name='atari/pong').suite.full_action_set)
    # Unset, the frame budget is the domain's per level.
    self.assertEqual(2 * 100_000, config.total_environment_frames)


if __name__ == '__main__':
  tf.test.main()
