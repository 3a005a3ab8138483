"""IMPALA learns: the whole pipeline (actors, queue, staging, V-trace
learner) trained on small real environments (tests/catch.py) must reach a
high return in a bounded number of frames. What breaking the algorithm does
to these tests is in the README."""

import re

import tensorflow as tf

from tests import pipeline_util

# The best return is +1 in all three games; a random policy's about -0.6
# (Catch) or below 0 (Timing).
GOOD_RETURN = 0.8
MEMORY_RETURN = 0.5
# Catch with the feed-forward agent ended at 0.72-0.96 over its last 100
# games in CI and local runs (0.80 in one CI run that failed at > 0.8); the
# broken variants this test catches end at -1.00 and -0.56 (README).
FEEDFORWARD_RETURN = 0.5


class LearningTest(tf.test.TestCase):

  def _train(self, level_name, core, total_environment_frames):
    """(mean return of the last 100 games at the end, the best such mean at
    any progress line, every second)."""
    lines = []
    result = pipeline_util.train(
        level_name=level_name, core=core, logdir=self.create_tempdir().full_path,
        num_actors=32, num_actor_threads=2, batch_size=16,
        num_action_repeats=1, progress_interval_secs=1,
        total_environment_frames=total_environment_frames,
        print_fn=lines.append)
    games, mean_return = result['recent_returns'][level_name]
    # The stand-in baselines (-1, +1) make the normalised score a return
    # with 3 decimals: return = 2 * score / 100 - 1.
    best_return = max([2 * float(score) / 100 - 1 for score in re.findall(
        r'human-normalised median (-?[\d.]+)%', '\n'.join(lines))] +
                      [mean_return])
    print(f'{level_name} {core}: {result["frames"]} frames, {games} games, '
          f'mean return of the last 100: {mean_return:.2f} (best '
          f'{best_return:.3f})')
    return mean_return, best_return

  def test_feedforward_agent_learns_catch(self):
    final, _ = self._train('catch/plain', 'feedforward', 120_000)
    self.assertGreater(final, FEEDFORWARD_RETURN)

  def test_lstm_agent_learns_catch_from_memory(self):
    # The ball is only shown on the first frame: the LSTM must keep it.
    # Without memory no policy does better than -0.6 (one column in five);
    # above MEMORY_RETURN it wins 3 games in 4. Judged on the best 100-game
    # mean during training: runs here reached 1.0 by 90k-120k frames, but
    # one then fell back to 0.1 by 200k, and two CI runs stalled near 0.7.
    _, best = self._train('catch/memory', 'lstm', 200_000)
    self.assertGreater(best, MEMORY_RETURN)

  def test_lstm_agent_learns_timing_from_its_state_reset(self):
    # Only the core state's reset at episode starts tells the first step.
    final, _ = self._train('catch/timing', 'lstm', 120_000)
    self.assertGreater(final, GOOD_RETURN)


if __name__ == '__main__':
  tf.test.main()
