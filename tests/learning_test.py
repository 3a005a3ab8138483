"""IMPALA learns: the whole pipeline (actors, queue, staging, V-trace
learner) trained on small real environments (the `catch` suite) must reach a
high return in a bounded number of frames. What breaking the algorithm does
to these tests is in tests/README.md."""

import tensorflow as tf

from tests import pipeline_util

# The best return is +1 in all three games; a random policy's about -0.6
# (Catch) or below 0 (Timing).
GOOD_RETURN = 0.8
MEMORY_RETURN = 0.5
# Catch with the feed-forward agent ended at 0.72-0.96 over its last 100
# games in CI and local runs (0.80 in one CI run that failed at > 0.8); the
# broken variants this test catches end at -1.00 and -0.56
# (tests/README.md).
FEEDFORWARD_RETURN = 0.5


class LearningTest(tf.test.TestCase):

  def _train(self, level_name, core, total_environment_frames, **overrides):
    """The mean return of the last 100 games at the end of training."""
    result = pipeline_util.train(
        level_name=level_name, core=core, logdir=self.create_tempdir().full_path,
        num_actors=32, num_actor_threads=2, batch_size=16,
        num_action_repeats=1, total_environment_frames=total_environment_frames,
        **overrides)
    games, mean_return = result['recent_returns'][level_name]
    print(f'{level_name} {core}: {result["frames"]} frames, {games} games, '
          f'mean return of the last 100: {mean_return:.2f}')
    return mean_return

  def _seeds_until_one_passes(self, threshold, *args, **overrides):
    """Trains seed 1, and seed 2 only if seed 1 ends at or below
    `threshold`; the final mean returns of the seeds trained. A sound
    learner's rare stall (actor timing makes every run different) then
    fails the test only if both seeds stall; a broken learner
    (tests/README.md) fails every seed."""
    returns = []
    for seed in (1, 2):
      returns.append(self._train(*args, seed=seed, **overrides))
      if returns[-1] > threshold:
        break
    return returns

  def test_feedforward_agent_learns_catch(self):
    # Usually 0.84-0.96 at 120k frames; seed 1 once ended at 0.48 in CI
    # (and earlier at 0.72 when the threshold was 0.8). Seeds 1 and 2 beside
    # a Pong training run crossed 0.5 by 50-60k frames and were at 0.86 and
    # 1.00 at 80k.
    returns = self._seeds_until_one_passes(
        FEEDFORWARD_RETURN, 'catch/plain', 'feedforward', 80_000)
    self.assertGreater(max(returns), FEEDFORWARD_RETURN,
                       f'every seed stalled: {returns}')

  def test_lstm_agent_learns_catch_from_memory(self):
    # The ball is only shown on the first frame: the LSTM must keep it.
    # Without memory no policy does better than -0.6 (one column in five);
    # above MEMORY_RETURN it wins 3 games in 4. With Catch's entropy cost of
    # 0.01, 2 of 6 runs stalled at 0.28 and 0.52: their policy entropy fell
    # below 0.1 (ln 3 = 1.1) by 110k frames, before the ball's column was
    # remembered, and with a near-deterministic policy the advantages
    # vanish (the baseline explained 0.99 of the returns or more). An
    # entropy cost of 0.03 keeps it exploring longer, but 2 of 8 runs still
    # stalled, at 0.50 (seed 1, once in CI and once alone; the other six
    # ended at 0.98-1.0). So a second seed runs when the first stalls: a
    # sound learner fails both about 1 time in 16, a broken one
    # (tests/README.md) every time. Beside a Pong training run seeds 2 and 3
    # were at 0.96-1.00 from 100k frames; seed 1 wavered between 0.50 and
    # 0.72 from 60k to 200k.
    returns = self._seeds_until_one_passes(
        MEMORY_RETURN, 'catch/memory', 'lstm', 150_000, entropy_cost=0.03)
    self.assertGreater(max(returns), MEMORY_RETURN,
                       f'every seed stalled: {returns}')

  def test_lstm_agent_learns_timing_from_its_state_reset(self):
    # Only the core state's reset at episode starts tells the first step.
    # At 80k frames: 0.97 and 0.98 (seeds 1 and 2 beside a Pong run), 0.78
    # once; 0.97-1.00 at 120k.
    returns = self._seeds_until_one_passes(
        GOOD_RETURN, 'catch/timing', 'lstm', 90_000)
    self.assertGreater(max(returns), GOOD_RETURN,
                       f'every seed stalled: {returns}')


if __name__ == '__main__':
  tf.test.main()
