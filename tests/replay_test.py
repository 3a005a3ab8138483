"""Experience replay (the paper's Sec. 5.2.2) and the actors' weight delay
(its policy-lag analysis)."""

import collections

import numpy as np
import tensorflow as tf

from impala_tf import agents
from impala_tf import curves
from impala_tf import learner_loop
from impala_tf import replay
from impala_tf import staging
from impala_tf import trajectory as trajectory_lib
from impala_tf import transport as transport_lib
from impala_tf import weight_delay
from tests import pipeline_util


# A stand-in for a trajectory: its number and its mark.
_Numbered = collections.namedtuple('_Numbered', ['number', 'replayed'])


class _NumberedTransport:
  """Hands out trajectories 0, 1, 2, ... in order."""

  def __init__(self):
    self.sent = 0
    self.closed = False

  def receive(self, count):
    self.sent += count
    return [_Numbered(number, False)
            for number in range(self.sent - count, self.sent)]


def numbers(trajectories):
  return [trajectory.number for trajectory in trajectories]


class ReplayTest(tf.test.TestCase):

  def test_replayed_part_of_a_batch(self):
    self.assertEqual(4, replay.num_replayed(8, 0.5))
    self.assertEqual(0, replay.num_replayed(8, 0.0))
    self.assertEqual(7, replay.num_replayed(8, 0.99))  # One stays new.
    self.assertEqual(0, replay.num_replayed(1, 0.5))

  def test_half_new_half_replayed_from_the_last_capacity(self):
    source = _NumberedTransport()
    replayed = replay.ReplayTransport(source, 0.5, capacity=12, seed=0)
    self.assertEqual(8, len(replayed.receive(8)))
    draws = collections.Counter()
    for _ in range(300):
      before = source.sent
      batch = replayed.receive(8)
      # The new ones first, in order, and only 4 of them.
      self.assertEqual(list(range(before, before + 4)), numbers(batch[:4]))
      self.assertEqual([False] * 4 + [True] * 4,
                       [trajectory.replayed for trajectory in batch])
      # The replayed ones were among the 12 newest before this batch.
      for item in numbers(batch[4:]):
        self.assertTrue(before - 12 <= item < before, (item, before))
        draws[before - item] += 1
    # Uniform over the 12 places: each expects 100 of 1,200 draws.
    self.assertEqual(set(range(1, 13)), set(draws))
    self.assertLess(max(draws.values()) - min(draws.values()), 70)

  def test_first_batch_replays_its_own_new_trajectories(self):
    batch = replay.ReplayTransport(_NumberedTransport(), 0.5, capacity=10,
                                   seed=1).receive(4)
    self.assertEqual([0, 1], numbers(batch[:2]))
    self.assertTrue(set(numbers(batch[2:])) <= {0, 1})

  def test_atari_trajectory_size_and_capacity_check(self):
    agent = agents.Agent(6, (84, 84, 4), core='feedforward')
    spec = trajectory_lib.unroll_spec(agent, 20, (84, 84, 4), 0)
    (one,) = trajectory_lib.split(trajectory_lib.random_trajectory(
        np.random.default_rng(0), agent, 20, 1, 6, (84, 84, 4)))
    arrays = [np.asarray(x) for x in tf.nest.flatten(one)]
    expected = sum(x.nbytes for x in arrays if x.dtype.kind != 'U') + 64
    self.assertEqual(expected, replay.trajectory_bytes(spec))
    # 21 stacked 84x84x4 frames: 0.57 MiB; the paper's 10,000: 5.6 GiB.
    self.assertAllClose(0.57, replay.trajectory_bytes(spec) / 2**20,
                        atol=0.01)
    self.assertAllClose(10 * replay.trajectory_bytes(spec) / 2**20,
                        replay.check_capacity(10, replay.trajectory_bytes(spec)))
    with self.assertRaisesRegex(ValueError, r'--replay_capacity=10000000 '
                                r'needs [\d,]+ MiB .* available'):
      replay.check_capacity(10_000_000, replay.trajectory_bytes(spec))


class ReplayedMarkTest(tf.test.TestCase):

  def test_replay_is_a_learner_side(self):
    self.assertIsInstance(
        replay.ReplayTransport(_NumberedTransport(), 0.5, 10, seed=0),
        transport_lib.LearnerSide)

  def test_the_batch_marks_its_replayed_trajectories(self):
    # A quarter of each batch of 8 replayed, through the staging area: the
    # learner's batch says which trajectories are replayed.
    agent = agents.Agent(3, (8, 8, 1), core='feedforward')
    local = transport_lib.LocalTransport(capacity=24,
                                         policy_version=lambda: 0)
    for version in range(3):
      unroll = trajectory_lib.random_trajectory(
          np.random.default_rng(version), agent, 4, 8, 3, (8, 8, 1))
      local.send(unroll._replace(policy_version=np.full([8], version)))
    staging_area = staging.StagingArea(
        replay.ReplayTransport(local, 0.25, capacity=100, seed=0),
        batch_size=8)
    for index in range(3):
      batch = staging_area.get()
      self.assertAllEqual([False] * 6 + [True] * 2, batch.replayed)
      # The new ones in the order sent: trajectory n acted at version n // 8.
      self.assertAllEqual([n // 8 for n in range(6 * index, 6 * index + 6)],
                          batch.policy_version[:6])
    local.close()

  def test_policy_lags_read_the_mark(self):
    # Replayed trajectories anywhere in the batch, not only at its end.
    batch = trajectory_lib.Trajectory(
        level_name=None, policy_version=np.array([10, 2, 9, 3, 8]),
        replayed=np.array([False, True, False, True, False]),
        agent_state=None, env_outputs=None, agent_outputs=None)
    self.assertEqual((2.0, 8.5), learner_loop.batch_lags(11, batch))
    only_new = batch._replace(replayed=np.zeros([5], bool))
    self.assertEqual((4.6, None), learner_loop.batch_lags(11, only_new))


class ReplayedLagTest(tf.test.TestCase):

  def test_policy_lag_counts_new_trajectories_and_replayed_apart(self):
    logdir = self.create_tempdir().full_path
    pipeline_util.train(logdir=logdir, level_name='catch/plain',
                        num_actors=8, num_actor_threads=2, batch_size=4,
                        replay_proportion=0.5, total_environment_frames=20_000,
                        progress_interval_secs=1)
    lags = curves.read_scalars(logdir, 'learner/policy_lag')
    ages = curves.read_scalars(logdir, 'learner/replayed_policy_lag')
    self.assertGreaterEqual(len(ages), 3)
    # Two new trajectories of 4 per update: the actors stay a few updates
    # behind, while the buffer's trajectories grow older with every update.
    self.assertLess(lags[-1].value, 20)
    self.assertGreater(ages[-1].value, 3 * lags[-1].value)
    self.assertGreater(ages[-1].value, ages[0].value)


class WeightDelayTest(tf.test.TestCase):

  def test_actors_act_with_weights_delay_updates_old(self):
    learner_agent = agents.Agent(3, (8, 8, 1), core='feedforward', seed=0)
    actor_agent = agents.Agent(3, (8, 8, 1), core='feedforward', seed=1)
    delayed = weight_delay.DelayedWeights(learner_agent, actor_agent,
                                          delay=2, num_updates=5)
    first = learner_agent.trainable_variables[0]
    history = [first.numpy()]
    # At the start the actors take the newest weights there are.
    self.assertAllEqual(history[0], actor_agent.trainable_variables[0])
    for update in range(6, 11):
      first.assign_add(tf.ones_like(first))  # A learner update.
      history.append(first.numpy())
      delayed.record(update)
      expected_version = max(5, update - 2)
      self.assertEqual(expected_version, delayed.version)
      self.assertAllEqual(history[expected_version - 5],
                          actor_agent.trainable_variables[0])


if __name__ == '__main__':
  tf.test.main()
