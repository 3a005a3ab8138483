"""experiments/random_policy.py on Catch: random play's games reach the
summaries the learning curves read, and score as random play does."""

from unittest import mock

import numpy as np
import tensorflow as tf

from catch import domain as catch_domain
from catch import environment as catch
from experiments import random_policy
from impala_tf import curves
from impala_tf import environments
from tests import pipeline_util


class RandomPolicyTest(tf.test.TestCase):

  def test_games_reach_the_summaries_and_score_as_random_play(self):
    logdir = self.create_tempdir().full_path
    config = pipeline_util.config(level_name='catch/plain', num_actors=4,
                                  logdir=logdir,
                                  total_environment_frames=8_000)._replace(
                                      progress_interval_secs=0)
    lines, actions = [], []
    original_step = environments.InProcessEnvironments.step

    def recording_step(env, batch_actions):
      actions.extend(batch_actions)
      return original_step(env, batch_actions)

    with mock.patch.object(environments.InProcessEnvironments, 'step',
                           recording_step):
      games = random_policy.play(config, print_fn=lines.append)
    # Uniform over Catch's 3 actions.
    counts = np.bincount(actions, minlength=catch.NUM_ACTIONS)
    self.assertLen(counts, catch.NUM_ACTIONS)
    self.assertAllClose(counts / len(actions),
                        np.full(catch.NUM_ACTIONS, 1 / catch.NUM_ACTIONS),
                        atol=0.05)
    returns = [game.episode_return for game in games]
    # A ball falls for about 9 steps of 4 frames: 500 steps of 4
    # environments are about 220 games.
    self.assertBetween(len(games), 180, 240)
    written = curves.read_scalars(logdir, 'catch/plain/episode_return')
    self.assertEqual(returns, [point.value for point in written])
    self.assertEqual(sorted(point.step for point in written),
                     [point.step for point in written])
    self.assertLessEqual(written[-1].step, 8_000 + 4 * 4)
    # Each game's length and human-normalised score beside its return, at
    # the same frame count.
    lengths = curves.read_scalars(logdir, 'catch/plain/episode_frames')
    self.assertEqual([game.episode_frames for game in games],
                     [point.value for point in lengths])
    self.assertEqual([point.step for point in written],
                     [point.step for point in lengths])
    random_score, human_score = catch_domain.BENCHMARK.baselines[
        'catch/plain']
    self.assertAllClose(
        [100 * (r - random_score) / (human_score - random_score)
         for r in returns],
        [point.value for point in curves.read_scalars(
            logdir, 'catch/plain/human_normalized')])
    # Random play catches about one ball in five: mean about -0.6.
    self.assertBetween(np.mean(returns), -0.9, -0.2)
    self.assertIn(f'{len(games)} games', lines[-1])
    # Progress on the way: frames, frames/s, recent returns, time left.
    self.assertRegex(lines[0], r'^frames [\d,]+ / 8,000 \| [\d,]+ frames/s '
                     r'\| [\d.]+ min left \| return (-?[\d.]+|nan) \(last \d+ '
                     r'of')


if __name__ == '__main__':
  tf.test.main()
