"""IMPALA learns: the whole pipeline (actors, queue, staging, V-trace
learner) trained on small real environments (tests/catch.py) must reach a
high return in a bounded number of frames. What breaking the algorithm does
to these tests is in the README."""

import tensorflow as tf

from tests import pipeline_util

# The best return is +1 in all three games; a random policy's about -0.6
# (Catch) or below 0 (Timing).
GOOD_RETURN = 0.8


class LearningTest(tf.test.TestCase):

  def _train(self, level_name, core, total_environment_frames):
    result = pipeline_util.train(
        level_name=level_name, core=core, logdir=self.create_tempdir().full_path,
        num_actors=32, num_actor_threads=2, batch_size=16,
        num_action_repeats=1,
        total_environment_frames=total_environment_frames)
    games, mean_return = result['recent_returns'][level_name]
    print(f'{level_name} {core}: {result["frames"]} frames, {games} games, '
          f'mean return of the last 100: {mean_return:.2f}')
    return mean_return

  def test_feedforward_agent_learns_catch(self):
    self.assertGreater(self._train('catch/plain', 'feedforward', 120_000),
                       GOOD_RETURN)

  def test_lstm_agent_learns_catch_from_memory(self):
    # The ball is only shown on the first frame: the LSTM must keep it.
    # Alone on this machine it passed 0.8 by 75k frames and held 1.0 from
    # 120k; a CI run reached only 0.70 at 120k, hence the margin.
    self.assertGreater(self._train('catch/memory', 'lstm', 200_000),
                       GOOD_RETURN)

  def test_lstm_agent_learns_timing_from_its_state_reset(self):
    # Only the core state's reset at episode starts tells the first step.
    self.assertGreater(self._train('catch/timing', 'lstm', 120_000),
                       GOOD_RETURN)


if __name__ == '__main__':
  tf.test.main()
