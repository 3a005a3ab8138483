"""Actors, the transport and staging: what reaches the learner is exactly
what the behaviour policy did."""

import threading

import numpy as np
import tensorflow as tf

from atari57 import environment as atari_environment
from catch import environment as catch
from impala_tf import agents
from impala_tf import environments
from impala_tf import local_actors
from impala_tf import staging
from impala_tf import trajectory as trajectory_lib
from impala_tf import transport as transport_lib

NUM_ENVS = 4
UNROLL_LENGTH = 12  # Catch episodes are 9 steps: resets fall inside unrolls.


def run_actor(agent, num_trajectories, dynamic_batching_enabled=False,
              policy_version=7, env=None, unroll_length=UNROLL_LENGTH):
  """Runs one actor (on Catch unless `env` is given) until it sent
  `num_trajectories`."""
  if env is None:
    env = environments.InProcessEnvironments(
        [catch.Catch(seed=index) for index in range(NUM_ENVS)],
        ['catch/plain'] * NUM_ENVS, num_action_repeats=1)
  transport = transport_lib.LocalTransport(
      capacity=num_trajectories + env.num_envs,
      policy_version=lambda: policy_version)
  games = []
  pool = local_actors.ActorPool(
      [env], agent, transport, unroll_length, on_finished_game=games.append,
      dynamic_batching_enabled=dynamic_batching_enabled)
  trajectories = transport.receive(num_trajectories)
  pool.stop()
  pool.check()
  return trajectories, games


class ActorTest(tf.test.TestCase):

  def test_learner_reevaluates_the_behaviour_policy_exactly(self):
    # With the weights unchanged, the learner's unroll of a trajectory from
    # its stored initial core state must give the behaviour logits at every
    # step: the convention, the overlap and the LSTM resets all agree.
    agent = agents.Agent(catch.NUM_ACTIONS, catch.observation_shape(catch.ROWS),
                         core='lstm', seed=3)
    trajectories, games = run_actor(agent, 3 * NUM_ENVS)
    for unroll in range(3):
      batch = trajectory_lib.batch(
          trajectories[unroll * NUM_ENVS:(unroll + 1) * NUM_ENVS])
      self.assertTrue(batch.env_outputs.done[1:].any())
      outputs = agent.unroll(batch.agent_outputs.action, batch.env_outputs,
                             batch.agent_state).agent_outputs
      self.assertAllClose(batch.agent_outputs.policy_logits[1:],
                          outputs.policy_logits[:-1], atol=1e-5)
      self.assertAllClose(batch.agent_outputs.baseline[1:],
                          outputs.baseline[:-1], atol=1e-5)
    self.assertNotEmpty(games)
    self.assertTrue(all(game.episode_return in (-1.0, 1.0) for game in games))

  def test_learner_reevaluates_the_behaviour_policy_on_atari(self):
    # Real Pong frames through the vector environment, the paper's Atari
    # agent: frame t, the action that led to it and the logits that chose
    # action t + 1 must stay paired, or the re-evaluation is off by a step.
    env = atari_environment.AtariVectorEnvironment(['atari/pong'] * 3)
    agent = agents.Agent(env.num_actions, (84, 84, 4), torso='shallow',
                         core='feedforward', seed=1)
    trajectories, _ = run_actor(agent, 2 * env.num_envs, env=env,
                                unroll_length=5)
    for unroll in range(2):
      batch = trajectory_lib.batch(
          trajectories[unroll * env.num_envs:(unroll + 1) * env.num_envs])
      self.assertEqual((6, 3, 84, 84, 4), batch.env_outputs.frame.shape)
      outputs = agent.unroll(batch.agent_outputs.action, batch.env_outputs,
                             batch.agent_state).agent_outputs
      behaviour_logits = batch.agent_outputs.policy_logits[1:]
      self.assertAllClose(behaviour_logits, outputs.policy_logits[:-1],
                          atol=1e-5)
      # One step off is far off: the check can tell the pairings apart.
      self.assertGreater(
          np.abs(behaviour_logits[1:] - outputs.policy_logits[:-2]).max(),
          0.01)

  def test_unrolls_overlap_by_one_step_and_carry_their_metadata(self):
    agent = agents.Agent(catch.NUM_ACTIONS, catch.observation_shape(catch.ROWS),
                         core='feedforward')
    trajectories, _ = run_actor(agent, 2 * NUM_ENVS,
                                dynamic_batching_enabled=True)
    for env_index in range(NUM_ENVS):
      first, second = trajectories[env_index], trajectories[NUM_ENVS +
                                                            env_index]
      self.assertEqual((UNROLL_LENGTH + 1,) + catch.observation_shape(catch.ROWS),
                       first.env_outputs.frame.shape)
      self.assertAllEqual(first.env_outputs.frame[-1],
                          second.env_outputs.frame[0])
      self.assertEqual(first.agent_outputs.action[-1],
                       second.agent_outputs.action[0])
      self.assertEqual('catch/plain', first.level_name)
      self.assertEqual(7, first.policy_version)
    # The very first step of an actor starts an episode.
    self.assertTrue(trajectories[0].env_outputs.done[0])


def labelled_unroll(level_names):
  """A random unroll of len(level_names) environments, for queue tests."""
  agent = agents.Agent(catch.NUM_ACTIONS, catch.observation_shape(catch.ROWS),
                       core='feedforward')
  unroll = trajectory_lib.random_trajectory(
      np.random.default_rng(0), agent, unroll_length=2,
      batch_size=len(level_names), num_actions=catch.NUM_ACTIONS,
      observation_shape=catch.observation_shape(catch.ROWS))
  return unroll._replace(level_name=np.array(level_names))


class TransportTest(tf.test.TestCase):

  def test_local_transport_has_both_sides(self):
    transport = transport_lib.LocalTransport(capacity=2,
                                             policy_version=lambda: 0)
    self.assertIsInstance(transport, transport_lib.ActorSide)
    self.assertIsInstance(transport, transport_lib.LearnerSide)
    transport.finish()  # Local actors hear it as a close.
    self.assertTrue(transport.closed)

  def test_bounded_queue_and_close(self):
    transport = transport_lib.LocalTransport(capacity=2,
                                             policy_version=lambda: 0)
    transport.send(labelled_unroll(['a', 'b']))  # Split in two.
    self.assertEqual(1.0, transport.fill())
    blocked = threading.Thread(target=transport.send,
                               args=(labelled_unroll(['c']),))
    blocked.start()
    blocked.join(timeout=0.5)
    self.assertTrue(blocked.is_alive())  # Full: the sender waits.
    self.assertEqual(['a', 'b'],
                     [t.level_name for t in transport.receive(2)])
    blocked.join(timeout=5)  # 'c' got in once there was room.
    self.assertFalse(blocked.is_alive())
    self.assertEqual(['c'], [t.level_name for t in transport.receive(1)])
    # A receiver blocked on an empty queue is woken by close.
    errors = []

    def receive():
      try:
        transport.receive(1)
      except transport_lib.Closed as error:
        errors.append(error)

    waiting = threading.Thread(target=receive)
    waiting.start()
    transport.close()
    waiting.join(timeout=5)
    self.assertLen(errors, 1)
    with self.assertRaises(transport_lib.Closed):
      transport.send(labelled_unroll(['d']))


class StagingTest(tf.test.TestCase):

  def test_batches_are_time_major_tensors_in_order(self):
    agent = agents.Agent(catch.NUM_ACTIONS, catch.observation_shape(catch.ROWS),
                         core='lstm')
    unroll = trajectory_lib.random_trajectory(
        np.random.default_rng(0), agent, unroll_length=5, batch_size=6,
        num_actions=catch.NUM_ACTIONS,
        observation_shape=catch.observation_shape(catch.ROWS))
    unroll = unroll._replace(
        level_name=np.array([f'level{i}' for i in range(6)]),
        policy_version=np.arange(6))
    transport = transport_lib.LocalTransport(capacity=6,
                                             policy_version=lambda: 0)
    transport.send(unroll)
    staging_area = staging.StagingArea(transport, batch_size=3)
    first, second = staging_area.get(), staging_area.get()
    self.assertIsInstance(first.env_outputs.frame, tf.Tensor)
    self.assertEqual((6, 3) + catch.observation_shape(catch.ROWS),
                     tuple(first.env_outputs.frame.shape))
    self.assertAllEqual(unroll.env_outputs.frame[:, 3:],
                        second.env_outputs.frame)
    self.assertAllEqual(unroll.agent_state.h[:3], first.agent_state.h)
    self.assertAllEqual(['level3', 'level4', 'level5'], second.level_name)
    self.assertAllEqual([0, 1, 2], first.policy_version)
    transport.close()
    with self.assertRaises(transport_lib.Closed):
      staging_area.get()

  def test_a_stop_ends_the_wait_for_a_batch_that_never_comes(self):
    # A distributed learner whose actors stopped before it: nobody sends,
    # and the transport stays open for actors that may come back.
    transport = transport_lib.LocalTransport(capacity=6,
                                             policy_version=lambda: 0)
    staging_area = staging.StagingArea(transport, batch_size=3)
    stop = threading.Event()
    outcome = []

    def wait_for_a_batch():
      try:
        staging_area.get(stop)
      except transport_lib.Closed:
        outcome.append('closed')

    waiting = threading.Thread(target=wait_for_a_batch, daemon=True)
    waiting.start()
    stop.set()
    waiting.join(timeout=5)
    self.assertEqual(['closed'], outcome)
    self.assertFalse(transport.closed)
    transport.close()


if __name__ == '__main__':
  tf.test.main()
