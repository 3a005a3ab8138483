"""The paper's agents: sizes, unroll == repeated steps, XLA, instructions."""

import numpy as np
import tensorflow as tf

from impala_tf import agents
from impala_tf import trajectory as trajectory_lib

DMLAB_FRAME, DMLAB_ACTIONS = (72, 96, 3), 9


def random_steps(agent, num_actions, observation_shape, num_steps=4,
                 batch_size=2, instruction_words=0, seed=0):
  """Random `[T, B]` inputs with an episode start inside, and instructions."""
  batch = trajectory_lib.random_trajectory(
      np.random.default_rng(seed), agent, num_steps - 1, batch_size,
      num_actions, observation_shape)
  env_outputs = batch.env_outputs
  env_outputs.done[2, 0] = True
  if instruction_words:
    words = np.random.default_rng(seed).integers(
        0, agents.INSTRUCTION_HASH_BUCKETS + 1,
        size=(num_steps, batch_size, instruction_words))
    words[..., -1] = 0  # Trailing padding.
    env_outputs = env_outputs._replace(instruction=words.astype(np.int32))
  return batch.agent_outputs.action, env_outputs


class AgentsTest(tf.test.TestCase):

  def test_parameter_counts_match_the_paper(self):
    for torso, paper_count in (('shallow', 1.2e6), ('deep', 1.6e6)):
      agent = agents.Agent(DMLAB_ACTIONS, DMLAB_FRAME, torso=torso,
                           core='lstm', use_instruction=True)
      count = agent.num_parameters()
      print(f'DMLab {torso} agent: {count} parameters (paper: {paper_count:.1e})')
      self.assertBetween(count, 0.9 * paper_count, 1.1 * paper_count)

  def _check_unroll_equals_steps(self, agent, num_actions, observation_shape,
                                 instruction_words=0):
    last_actions, env_outputs = random_steps(
        agent, num_actions, observation_shape,
        instruction_words=instruction_words)
    state = agent.initial_state(2)
    outputs, final_state = agent.unroll(last_actions, env_outputs, state)
    for t in range(last_actions.shape[0]):
      step_output, state = agent.step(
          last_actions[t], tf.nest.map_structure(lambda x: x[t], env_outputs),
          state)
      self.assertAllClose(step_output.policy_logits, outputs.policy_logits[t],
                          atol=1e-5)
      self.assertAllClose(step_output.baseline, outputs.baseline[t], atol=1e-5)
    self.assertAllClose(state, final_state, atol=1e-5)
    self.assertEqual((4, 2), tuple(outputs.action.shape))
    self.assertEqual(tf.int32, outputs.action.dtype)
    self.assertEqual((4, 2, num_actions), tuple(outputs.policy_logits.shape))

  def test_shallow_lstm_unroll_equals_steps(self):
    agent = agents.Agent(DMLAB_ACTIONS, DMLAB_FRAME, 'shallow', 'lstm')
    self._check_unroll_equals_steps(agent, DMLAB_ACTIONS, DMLAB_FRAME)

  def test_deep_feedforward_unroll_equals_steps(self):
    agent = agents.Agent(6, (84, 84, 4), 'deep', 'feedforward')
    self._check_unroll_equals_steps(agent, 6, (84, 84, 4))

  def test_instruction_unroll_equals_steps(self):
    agent = agents.Agent(DMLAB_ACTIONS, DMLAB_FRAME, 'deep', 'lstm',
                         use_instruction=True)
    self._check_unroll_equals_steps(agent, DMLAB_ACTIONS, DMLAB_FRAME,
                                    instruction_words=5)

  def test_xla_unroll_matches_eager(self):
    agent = agents.Agent(DMLAB_ACTIONS, DMLAB_FRAME, 'shallow', 'lstm',
                         use_instruction=True)
    last_actions, env_outputs = random_steps(agent, DMLAB_ACTIONS, DMLAB_FRAME,
                                             instruction_words=3)
    state = agent.initial_state(2)
    eager, _ = agent.unroll(last_actions, env_outputs, state)
    compiled, _ = tf.function(agent.unroll, jit_compile=True)(
        last_actions, env_outputs, state)
    self.assertAllClose(eager.policy_logits, compiled.policy_logits, atol=1e-4)
    self.assertAllClose(eager.baseline, compiled.baseline, atol=1e-4)

  def test_sampled_actions_follow_the_policy(self):
    agent = agents.Agent(3, (36, 36, 1), 'shallow', 'feedforward')
    agent.policy.b.assign([0.0, 5.0, 0.0])  # Action 1 dominates.
    agent.policy.w.assign(tf.zeros_like(agent.policy.w))
    _, env_outputs = random_steps(agent, 3, (36, 36, 1), batch_size=200)
    output, _ = agent.step(tf.zeros([200], tf.int32),
                           tf.nest.map_structure(lambda x: x[0], env_outputs),
                           ())
    probability = np.exp(5.0) / (np.exp(5.0) + 2.0)
    self.assertBetween(np.mean(output.action.numpy() == 1),
                       probability - 0.1, min(1.0, probability + 0.1))

  def test_instruction_encoding(self):
    ids = agents.encode_instruction(
        tf.constant(['pick the red ball', '', 'pick']), max_words=3).numpy()
    self.assertEqual((3, 3), ids.shape)
    self.assertTrue(np.all(ids[0] > 0))  # Truncated to 3 words.
    self.assertAllEqual([0, 0, 0], ids[1])
    self.assertEqual(ids[0, 0], ids[2, 0])  # Deterministic hashing.
    self.assertAllEqual([0, 0], ids[2, 1:])
    self.assertTrue(np.all(ids <= agents.INSTRUCTION_HASH_BUCKETS))
    encoder = agents.InstructionEncoder(seed=0)
    encoded = encoder(tf.constant(ids)).numpy()
    self.assertAllEqual(np.zeros(64), encoded[1])
    self.assertGreater(np.abs(encoded[0]).sum(), 0.0)
    # Padding after the last word does not change the encoding.
    self.assertAllClose(encoded[2],
                        encoder(tf.constant(ids[2:, :1])).numpy()[0], atol=1e-6)

  def test_bad_names_are_rejected(self):
    with self.assertRaisesRegex(ValueError, 'torso'):
      agents.Agent(3, (36, 36, 1), torso='resnet')
    with self.assertRaisesRegex(ValueError, 'core'):
      agents.Agent(3, (36, 36, 1), core='gru')


if __name__ == '__main__':
  tf.test.main()
