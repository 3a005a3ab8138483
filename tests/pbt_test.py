"""Population-based training against the paper's Appendix F: Table D.1's
initial values, readiness after the burn-in and enough games, the 5%
margin, copying weights and hyperparameters (not the counts), the
perturbation's probability and factors; snapshots and records in the shared
directory."""

import json
import math
import os

from absl import flags
from absl.testing import flagsaver
import numpy as np
import tensorflow as tf

from dmlab30 import scores as dmlab_scores
import experiment
from impala_tf import builders
from impala_tf import environments
from impala_tf import learner as learner_lib
from impala_tf import learner_loop
from impala_tf import pbt
from impala_tf import pbt_curves
from impala_tf import progress
from tests import pipeline_util

LEVEL = 'catch/plain'


def _settings(pbt_dir, member, **overrides):
  values = dict(pbt_dir=pbt_dir, member=member,
                evolve=('learning_rate', 'entropy_cost', 'epsilon',
                        'max_grad_norm'),
                burn_in_frames=0, ready_episodes=10, exploit_threshold=0.05,
                perturb_probability=0.0, perturb_factor=1.2)
  values.update(overrides)
  return pbt.PbtSettings(**values)


def _learner(seed):
  config = pipeline_util.config(level_name=LEVEL, seed=seed)
  info = experiment.domain_of(LEVEL).environment_info(config.suite, LEVEL)
  return builders.build_learner(config, info)


def _play(game_log, returns, level=LEVEL):
  for episode_return in returns:
    game_log.add(environments.FinishedGame(level, episode_return, 40, 0))


class RuleTest(tf.test.TestCase):

  def test_initial_values_follow_table_d1(self):
    rng = np.random.default_rng(0)
    draws = [pbt.sample_initial(rng, learner_lib.EVOLVING)
             for _ in range(4000)]
    for name, (low, high) in pbt.LOG_UNIFORM_RANGES.items():
      logs = np.log([draw[name] for draw in draws])
      self.assertBetween(logs.min(), math.log(low), math.log(high))
      self.assertBetween(logs.max(), math.log(low), math.log(high))
      # Log-uniform: each quarter of the log range holds a quarter.
      quarters = np.histogram(logs, bins=4,
                              range=(math.log(low), math.log(high)))[0]
      self.assertAllClose([0.25] * 4, quarters / len(draws), atol=0.03)
    epsilons = [draw['epsilon'] for draw in draws]
    for choice in (1e-1, 1e-3, 1e-5, 1e-7):
      self.assertAllClose(0.25, epsilons.count(choice) / len(draws),
                          atol=0.03)
    self.assertNotIn('max_grad_norm', draws[0])  # Table D.1 has none.

  def test_ready_after_the_burn_in_and_enough_games(self):
    settings = _settings('', 0, burn_in_frames=20_000_000,
                         ready_episodes=5_000)
    self.assertFalse(pbt.is_ready(19_999_999, 10_000, settings))
    self.assertFalse(pbt.is_ready(20_000_000, 4_999, settings))
    self.assertTrue(pbt.is_ready(20_000_000, 5_000, settings))

  def test_exploit_only_beyond_the_margin(self):
    self.assertFalse(pbt.should_exploit(40.0, 45.0, 5.0))
    self.assertTrue(pbt.should_exploit(40.0, 45.01, 5.0))
    self.assertFalse(pbt.should_exploit(50.0, 40.0, 5.0))

  def test_each_hyperparameter_moves_by_the_factor_a_third_of_the_time(self):
    rng = np.random.default_rng(1)
    start = {'learning_rate': 1e-3, 'entropy_cost': 1e-2, 'epsilon': 0.1}
    ratios = {name: [] for name in start}
    for _ in range(6000):
      moved = pbt.perturb(start, ['learning_rate', 'entropy_cost'], rng,
                          1 / 3, 1.2)
      for name, value in moved.items():
        ratios[name].append(value / start[name])
    self.assertEqual({1.0}, set(ratios['epsilon']))  # Not evolved.
    for name in ('learning_rate', 'entropy_cost'):
      ratio = np.array(ratios[name])
      self.assertAllClose(1 / 3, np.mean(ratio != 1.0), atol=0.02)
      self.assertAllClose([1 / 1.2, 1.0, 1.2], np.unique(ratio))
      self.assertAllClose(np.mean(ratio > 1.0), np.mean(ratio < 1.0),
                          atol=0.02)

  def test_fitness_is_the_return_or_the_capped_mean_score(self):
    benchmark = experiment.domain_of(LEVEL).benchmark
    self.assertEqual(0.25, pbt.fitness({LEVEL: (9, 0.25)}, [LEVEL], None))
    levels = ['catch/memory', 'catch/timing']
    self.assertIsNone(pbt.fitness({levels[0]: (3, 1.0)}, levels, benchmark))
    # Catch's baselines: -1 is 0%, +1 is 100%; 3.0 would be 200%, capped.
    self.assertAllClose(
        (100.0 + 50.0) / 2,
        pbt.fitness({levels[0]: (3, 3.0), levels[1]: (3, 0.0)}, levels,
                    benchmark))


class GameLogTest(tf.test.TestCase):

  def test_recent_means_since_a_mark(self):
    game_log = progress.GameLog()
    _play(game_log, [0.0] * 150)
    mark = game_log.counts()
    self.assertEqual({LEVEL: 150}, mark)
    self.assertEqual({}, game_log.recent_means(since=mark))
    _play(game_log, [3.0] * 2)
    self.assertEqual({LEVEL: (152, 3.0)}, game_log.recent_means(since=mark))
    self.assertEqual({LEVEL: (152, 0.06)}, game_log.recent_means())
    _play(game_log, [1.0] * (progress.RECENT_GAMES + 5))
    # Never more than the last RECENT_GAMES: the 3.0s are gone.
    self.assertEqual(1.0, game_log.recent_means(since=mark)[LEVEL][1])


class FlagsTest(tf.test.TestCase):

  def test_a_member_is_configured_from_the_papers_defaults(self):
    with flagsaver.flagsaver():
      flags.FLAGS(['experiment.py', f'--level_name={LEVEL}',
                   '--pbt_dir=/tmp/pop', '--pbt_member=3',
                   '--learning_rate=0.001'])
      config = experiment.make_config(flags.FLAGS)
    self.assertEqual(
        pbt.PbtSettings('/tmp/pop', 3, learner_lib.EVOLVING, 2e7, 5000, 5.0,
                        1 / 3, 1.2), config.pbt)
    # Given as a flag: kept as the start value, not drawn.
    self.assertEqual(('entropy_cost', 'epsilon', 'max_grad_norm'),
                     config.pbt_sampled)
    self.assertIsNone(pipeline_util.config(level_name=LEVEL).pbt)

  def test_bad_settings_get_one_line_errors(self):
    for overrides, message in [
        (dict(pbt_evolve=['learning_rate', 'momentum']), 'names momentum'),
        (dict(pbt_perturb_probability=float('nan')), 'nan is out of range'),
        (dict(pbt_exploit_threshold=float('nan')), 'nan is out of range'),
        (dict(learner_hosts='localhost:1,localhost:3', job_name='learner'),
         'one learner'),
    ]:
      with self.assertRaisesRegex(experiment.UsageError, message,
                                  msg=overrides):
        pipeline_util.config(level_name=LEVEL, pbt_dir='/tmp/pop',
                             **overrides)


class DmLabFitnessTest(tf.test.TestCase):

  def test_dmlab30_fitness_is_the_papers_capped_mean(self):
    # A third of the levels at twice the human margin (200%, capped to
    # 100%), a third at random play (0%), a third half-way (50%): 50%.
    benchmark = experiment.DOMAINS['dmlab'].benchmark
    levels = list(dmlab_scores.TRAIN_LEVELS)
    recent = {}
    for index, level in enumerate(levels):
      random, human = benchmark.baselines[
          benchmark.scored_as.get(level, level)]
      recent[level] = (10, random + (human - random) *
                       (2.0, 0.0, 0.5)[index % 3])
    self.assertAllClose(50.0, pbt.fitness(recent, levels, benchmark))


class MemberTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.pbt_dir = self.create_tempdir().full_path
    self.learners = [_learner(seed) for seed in (1, 2)]
    self.logs = [progress.GameLog(), progress.GameLog()]

  def _member(self, index, **overrides):
    return pbt.Member(_settings(self.pbt_dir, index, **overrides),
                      self.learners[index], self.logs[index], [LEVEL], None,
                      seed=1, print_fn=lambda line: None)

  def test_a_worse_member_copies_weights_and_hyperparameters(self):
    good, bad = self._member(1), self._member(0)
    self.learners[1].evolving.assign({'learning_rate': 0.002,
                                     'entropy_cost': 0.02})
    self.learners[0].evolving.assign({'learning_rate': 1e-7})
    self.learners[0].num_environment_frames.assign(1234)
    self.learners[0].num_updates.assign(56)
    _play(self.logs[1], [1.0] * 10)
    good.after_update(7)  # Publishes a record of fitness 1.0.
    _play(self.logs[0], [-1.0] * 10)
    bad.after_update(56)
    for mine, theirs in zip(self.learners[0].agent.trainable_variables,
                            self.learners[1].agent.trainable_variables):
      self.assertAllEqual(theirs, mine)
    self.assertEqual(self.learners[1].evolving.values(),
                     self.learners[0].evolving.values())
    self.assertEqual(1234, int(self.learners[0].num_environment_frames))
    self.assertEqual(56, int(self.learners[0].num_updates))
    event = pbt.read_events(self.pbt_dir, 0)[-1]
    self.assertEqual(('exploit', 1, -1.0, 1.0),
                     (event['event'], event['copied'], event['fitness'],
                      event['copied_fitness']))
    record = pbt.read_records(self.pbt_dir)[0]
    self.assertEqual(-1.0, record['fitness'])

  def test_after_a_copy_only_the_new_weights_games_count(self):
    good, bad = self._member(1), self._member(0)
    _play(self.logs[1], [1.0] * 10)
    good.after_update(1)
    _play(self.logs[0], [-1.0] * 10)
    bad.after_update(1)  # Copies member 1.
    _play(self.logs[0], [1.0] * 10)  # The copied weights play as well.
    bad.after_update(2)
    event = pbt.read_events(self.pbt_dir, 0)[-1]
    # Judged on the ten games since the copy (1.0), not on all twenty (0.0).
    self.assertEqual(('explore', 1.0), (event['event'], event['fitness']))

  def test_with_several_levels_each_plays_since_the_change(self):
    levels = ['catch/memory', 'catch/timing']  # Catch: -1 is 0%, +1 100%.
    member = pbt.Member(_settings(self.pbt_dir, 0), self.learners[0],
                        self.logs[0], levels,
                        experiment.domain_of(LEVEL).benchmark, seed=1,
                        print_fn=lambda line: None)
    for level in levels:
      _play(self.logs[0], [1.0] * 5, level)
    member.after_update(1)
    _play(self.logs[0], [-1.0] * 10, levels[0])
    member.after_update(2)  # Ten games, but none of catch/timing: waits.
    self.assertLen(pbt.read_events(self.pbt_dir, 0), 1)
    _play(self.logs[0], [-1.0], levels[1])
    member.after_update(3)
    self.assertEqual([100.0, 0.0], [event['fitness'] for event in
                                    pbt.read_events(self.pbt_dir, 0)])

  def test_no_copy_within_the_margin_or_before_ready(self):
    other, member = self._member(1), self._member(0, exploit_threshold=0.5)
    _play(self.logs[1], [0.4] * 10)
    other.after_update(1)
    _play(self.logs[0], [0.0] * 9)
    member.after_update(1)  # Nine games: not ready.
    self.assertEqual([], pbt.read_events(self.pbt_dir, 0))
    _play(self.logs[0], [0.0])
    member.after_update(2)  # Ready, 0.4 above: within the margin.
    self.assertEqual('explore', pbt.read_events(self.pbt_dir, 0)[-1]['event'])
    self.assertNotEqual(
        learner_loop.weights_fingerprint(self.learners[1].agent),
        learner_loop.weights_fingerprint(self.learners[0].agent))
    self.assertLen(pbt.read_events(self.pbt_dir, 1), 1)

  def test_an_unreadable_snapshot_is_passed_over(self):
    other, member = self._member(1), self._member(0)
    _play(self.logs[1], [1.0] * 10)
    other.after_update(1)
    for path in tf.io.gfile.glob(os.path.join(
        pbt.member_directory(self.pbt_dir, 1), 'snapshot-*')):
      tf.io.gfile.remove(path)
    before = [v.numpy() for v in self.learners[0].agent.trainable_variables]
    _play(self.logs[0], [-1.0] * 10)
    member.after_update(1)
    self.assertEqual('explore', pbt.read_events(self.pbt_dir, 0)[-1]['event'])
    for value, variable in zip(before,
                               self.learners[0].agent.trainable_variables):
      self.assertAllEqual(value, variable)

  def test_two_snapshots_are_kept_and_the_record_names_the_newest(self):
    member = self._member(0)
    for update in range(1, 5):
      _play(self.logs[0], [0.0] * 10)
      member.after_update(update)
    directory = pbt.member_directory(self.pbt_dir, 0)
    indexes = sorted(os.path.basename(path) for path in tf.io.gfile.glob(
        os.path.join(directory, 'snapshot-*.index')))
    self.assertEqual(['snapshot-3.index', 'snapshot-4.index'], indexes)
    with open(os.path.join(directory, 'record.json')) as f:
      self.assertEqual('snapshot-4', json.load(f)['snapshot'])

  def test_the_populations_history_is_drawn(self):
    good, bad = self._member(1), self._member(0)
    good.start(resumed=False, sampled=[])
    _play(self.logs[1], [1.0] * 10)
    good.after_update(1)
    _play(self.logs[0], [-1.0] * 10)
    bad.after_update(1)
    events = pbt_curves.population_events(self.pbt_dir)
    self.assertEqual([0, 1], list(events))
    rows = pbt_curves.to_csv(events).splitlines()
    self.assertEqual('member,frames,event,fitness,copied,entropy_cost,'
                     'epsilon,learning_rate,max_grad_norm', rows[0])
    self.assertEqual(['0,0,exploit,-1,1', '1,0,start,,', '1,0,explore,1,'],
                     [','.join(row.split(',')[:5]) for row in rows[1:]])
    self.assertStartsWith(pbt_curves.to_png(events, 'catch'), b'\x89PNG')

  def test_a_fresh_member_samples_a_resumed_one_keeps(self):
    member = self._member(0)
    member.start(resumed=False, sampled=['learning_rate', 'epsilon'])
    values = self.learners[0].evolving.values()
    self.assertBetween(values['learning_rate'], 5e-6, 5e-3)
    # float32 in the learner.
    self.assertLen([choice for choice in pbt.EPSILON_CHOICES
                    if np.isclose(values['epsilon'], choice, rtol=1e-6)], 1)
    self.assertAllClose(0.01, values['entropy_cost'])  # Given: kept.
    self.learners[0].evolving.assign({'learning_rate': 0.123})
    self._member(0).start(resumed=True, sampled=['learning_rate'])
    self.assertAllClose(0.123, self.learners[0].evolving.values()[
        'learning_rate'])


if __name__ == '__main__':
  tf.test.main()
