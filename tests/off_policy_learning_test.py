"""The paper's V-trace analysis in miniature: with actors acting on
weights 50 learner updates old, V-trace still learns Catch (Sec. 5.2).

No correction is not tested here: at these settings it ended at -0.64 in
one run and at 0.60 in another (a CI run), too spread to assert that it
does worse; docs/vtrace_analysis.md has the numbers."""

import tensorflow as tf

from tests import pipeline_util

DELAY = 50  # Updates; the measured policy lag is about 56.
FRAMES = 120_000
# Measured (seed 1): V-trace 0.96, 0.80 and above 0.6 in CI; with its
# importance weights silently set to 1, -0.56 (random play: about -0.6).
VTRACE_RETURN = 0.6


class OffPolicyLearningTest(tf.test.TestCase):

  def _final_return(self, correction):
    result = pipeline_util.train(
        level_name='catch/plain', core='feedforward',
        logdir=self.create_tempdir().full_path, num_actors=32,
        num_actor_threads=2, batch_size=16, num_action_repeats=1,
        total_environment_frames=FRAMES, actor_weights_delay=DELAY,
        off_policy_correction=correction)
    games, mean_return = result['recent_returns']['catch/plain']
    print(f'{correction}, actors {DELAY} updates behind: {games} games, '
          f'mean return of the last 100: {mean_return:.2f}')
    return mean_return

  def test_vtrace_learns_despite_the_lag(self):
    self.assertGreater(self._final_return('vtrace'), VTRACE_RETURN)


if __name__ == '__main__':
  tf.test.main()
