"""The RPC transport in one process, its service and its client: what
actors send is what the learner receives, field by field (instructions,
LSTM state, unrolls split into chunks under gRPC's message limit), games
arrive, weights follow the learner's, and the learner finishing or closing
ends the actors' calls."""

import socket
from unittest import mock

import numpy as np
import tensorflow as tf
import tree

from impala_tf import agents
from impala_tf import environments
from impala_tf import rpc_client
from impala_tf import rpc_protocol
from impala_tf import rpc_service
from impala_tf import trajectory as trajectory_lib
from impala_tf import transport as transport_lib

FRAME_SHAPE, INSTRUCTION_LENGTH, NUM_ACTIONS, UNROLL_LENGTH = (
    (24, 32, 3), 16, 9, 4)


def free_port():
  with socket.socket() as probe:
    probe.bind(('localhost', 0))
    return probe.getsockname()[1]


def random_unroll(rng, agent, num_envs):
  unroll = trajectory_lib.random_trajectory(
      rng, agent, UNROLL_LENGTH, num_envs, NUM_ACTIONS, FRAME_SHAPE,
      done_probability=0.3)
  shape = (UNROLL_LENGTH + 1, num_envs, INSTRUCTION_LENGTH)
  return unroll._replace(
      level_name=np.array([f'level{i}' for i in range(num_envs)]),
      policy_version=np.arange(num_envs, dtype=np.int64),
      agent_state=tree.map_structure(
          lambda x: rng.normal(size=x.shape).astype(np.float32),
          unroll.agent_state),
      env_outputs=unroll.env_outputs._replace(
          instruction=rng.integers(0, 1001, shape).astype(np.int32)))


class RpcTransportTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.learner_agent = agents.Agent(NUM_ACTIONS, FRAME_SHAPE, core='lstm',
                                      use_instruction=True, seed=1)
    self.actor_agent = agents.Agent(NUM_ACTIONS, FRAME_SHAPE, core='lstm',
                                    use_instruction=True, seed=2)
    self.spec = trajectory_lib.unroll_spec(
        self.learner_agent, UNROLL_LENGTH, FRAME_SHAPE, INSTRUCTION_LENGTH)
    self.num_updates = tf.Variable(0, dtype=tf.int64)
    self.games = []
    address = f'localhost:{free_port()}'
    self.service = rpc_service.LearnerService(
        address, self.spec, capacity=64,
        variables=self.learner_agent.trainable_variables,
        num_updates=self.num_updates, actor_names={0: 'actor0'},
        on_finished_game=self.games.append, print_fn=lambda line: None)
    self.addCleanup(self.service.close)
    self.client = rpc_client.RemoteTransport(
        address, 0, self.actor_agent.trainable_variables,
        connect_timeout_secs=20, print_fn=lambda line: None)

  def test_service_and_client_are_the_learners_and_the_actors_sides(self):
    self.assertIsInstance(self.service, transport_lib.LearnerSide)
    self.assertNotIsInstance(self.service, transport_lib.ActorSide)
    self.assertIsInstance(self.client, transport_lib.ActorSide)
    self.assertNotIsInstance(self.client, transport_lib.LearnerSide)

  def test_what_is_sent_is_what_is_received(self):
    unroll = random_unroll(np.random.default_rng(0), self.actor_agent, 6)
    game = environments.FinishedGame('level3', 12.5, 400, 3)
    self.client.add_game(game)
    # Small messages: the 6 environments travel in 3 chunks of 2.
    per_env = sum(np.asarray(x).nbytes for x in tree.flatten(unroll)) // 6
    with mock.patch.object(rpc_protocol, 'MESSAGE_BYTES', 2 * per_env + 1):
      self.client.send(unroll)
    received = self.service.receive(6)
    for expected, actual in zip(trajectory_lib.split(unroll), received):
      self.assertEqual(str(expected.level_name), actual.level_name)
      tree.map_structure(self.assertAllEqual,
                         expected._replace(level_name=None),
                         actual._replace(level_name=None))
    self.assertEqual(6 * UNROLL_LENGTH, self.client.steps_sent)
    self.assertEqual([game._replace(env_index=-1)], self.games)

  def test_weight_groups_stay_under_the_message_size(self):
    variables = self.learner_agent.trainable_variables
    budget = 2**18
    with mock.patch.object(rpc_protocol, 'MESSAGE_BYTES', budget):
      groups = rpc_protocol.weight_groups(variables)
    self.assertEqual(list(range(len(variables))),
                     [index for group in groups for index in group])
    self.assertGreater(len(groups), 2)
    for group in groups:
      sizes = [variables[i].shape.num_elements() * 4 for i in group]
      self.assertTrue(sum(sizes) <= budget or len(group) == 1, sizes)

  def test_weights_follow_the_learner(self):
    self.assertEqual(0, self.client.policy_version())
    tree.map_structure(self.assertAllEqual,
                       self.learner_agent.trainable_variables,
                       self.actor_agent.trainable_variables)
    for variable in self.learner_agent.trainable_variables:
      variable.assign_add(tf.ones_like(variable))
    self.num_updates.assign(5)
    self.assertEqual(5, self.client.policy_version())
    tree.map_structure(self.assertAllEqual,
                       self.learner_agent.trainable_variables,
                       self.actor_agent.trainable_variables)

  def test_finish_and_close(self):
    self.assertEqual(0, self.client.policy_version())
    with mock.patch.object(rpc_service, 'FINISH_GRACE_SECS', 0):
      self.service.finish()
    with self.assertRaises(transport_lib.Closed):
      self.client.policy_version()
    self.assertTrue(self.client.closed)
    self.service.close()
    with self.assertRaises(transport_lib.Closed):
      self.service.receive(1)


if __name__ == '__main__':
  tf.test.main()
