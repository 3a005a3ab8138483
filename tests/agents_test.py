"""The paper's agents: sizes, unroll == repeated steps, XLA, instructions."""

import numpy as np
import tensorflow as tf

from impala_tf import agents
from impala_tf import environments

DMLAB_FRAME, DMLAB_ACTIONS = (72, 96, 3), 9
ATARI_FRAME, ATARI_ACTIONS = (84, 84, 4), 6
NUM_STEPS, BATCH_SIZE = 4, 2


def random_steps(num_actions, observation_shape, inner_reset=True,
                 instruction_words=0, batch_size=BATCH_SIZE, seed=0):
  """Random last actions `[T, B]` and `EnvOutput` `[T, B, ...]`.

  With `inner_reset`, an episode starts at t = 2 in column 0. Instructions
  have 1 to `instruction_words - 1` words, then padding; column 1 at t = 1
  has none.
  """
  rng = np.random.default_rng(seed)
  shape = (NUM_STEPS, batch_size)
  done = np.zeros(shape, bool)
  done[0, :] = True
  done[2, 0] = inner_reset
  instruction = rng.integers(
      1, environments.INSTRUCTION_HASH_BUCKETS + 1,
      size=shape + (instruction_words,)).astype(np.int32)
  if instruction_words:
    num_words = rng.integers(1, instruction_words, size=shape)
    num_words[1, 1] = 0
    instruction[np.arange(instruction_words) >= num_words[..., None]] = 0
  env_outputs = agents.EnvOutput(
      reward=rng.normal(scale=2.0, size=shape).astype(np.float32),
      done=done,
      frame=rng.integers(0, 256, shape + observation_shape, np.uint8),
      instruction=instruction)
  last_actions = rng.integers(0, num_actions, shape).astype(np.int32)
  return last_actions, env_outputs


def at_step(env_outputs, t):
  return tf.nest.map_structure(lambda x: x[t], env_outputs)


class AgentsTest(tf.test.TestCase):

  def test_parameter_counts_are_the_documented_ones(self):
    # docs/benchmarks.md states these; the paper's Figure 3: about 1.2M
    # (shallow) and 1.6M (deep) for the DMLab agents.
    for torso, use_instruction, documented in (
        ('shallow', True, 1_230_446), ('deep', True, 1_628_030),
        ('shallow', False, 1_123_130), ('deep', False, 1_520_714)):
      agent = agents.Agent(DMLAB_ACTIONS, DMLAB_FRAME, torso, 'lstm',
                           use_instruction=use_instruction)
      self.assertEqual(documented, agent.num_parameters(),
                       (torso, use_instruction))
    for torso, documented in (('shallow', 677_992), ('deep', 1_091_080)):
      agent = agents.Agent(ATARI_ACTIONS, ATARI_FRAME, torso, 'feedforward')
      self.assertEqual(documented, agent.num_parameters(), torso)

  def test_initial_states(self):
    lstm_agent = agents.Agent(DMLAB_ACTIONS, DMLAB_FRAME, 'shallow', 'lstm')
    state = lstm_agent.initial_state(3)
    self.assertAllEqual(np.zeros((3, agents.CORE_SIZE)), state.c)
    self.assertAllEqual(np.zeros((3, agents.CORE_SIZE)), state.h)
    feedforward_agent = agents.Agent(ATARI_ACTIONS, ATARI_FRAME, 'shallow',
                                     'feedforward')
    self.assertEqual((), feedforward_agent.initial_state(3))

  def _check_unroll_equals_steps(self, agent, num_actions, observation_shape,
                                 inner_reset=True, instruction_words=0):
    last_actions, env_outputs = random_steps(
        num_actions, observation_shape, inner_reset, instruction_words)
    # A nonzero starting state, so that the reset at t = 0 matters too.
    state = tf.nest.map_structure(lambda x: x + 0.5,
                                  agent.initial_state(BATCH_SIZE))
    outputs, final_state, _ = agent.unroll(last_actions, env_outputs, state)
    for t in range(NUM_STEPS):
      step_output, state = agent.step(last_actions[t],
                                      at_step(env_outputs, t), state)
      self.assertAllClose(step_output.policy_logits, outputs.policy_logits[t],
                          atol=1e-5)
      self.assertAllClose(step_output.baseline, outputs.baseline[t], atol=1e-5)
    self.assertAllClose(state, final_state, atol=1e-5)
    return outputs

  def test_shallow_lstm_unroll_equals_steps(self):
    agent = agents.Agent(DMLAB_ACTIONS, DMLAB_FRAME, 'shallow', 'lstm')
    for inner_reset in (True, False):
      self._check_unroll_equals_steps(agent, DMLAB_ACTIONS, DMLAB_FRAME,
                                      inner_reset)

  def test_deep_feedforward_unroll_equals_steps(self):
    agent = agents.Agent(ATARI_ACTIONS, ATARI_FRAME, 'deep', 'feedforward')
    self._check_unroll_equals_steps(agent, ATARI_ACTIONS, ATARI_FRAME)

  def test_instruction_unroll_equals_steps(self):
    agent = agents.Agent(DMLAB_ACTIONS, DMLAB_FRAME, 'shallow', 'lstm',
                         use_instruction=True)
    self._check_unroll_equals_steps(agent, DMLAB_ACTIONS, DMLAB_FRAME,
                                    instruction_words=5)

  def test_output_shapes_and_dtypes(self):
    agent = agents.Agent(DMLAB_ACTIONS, DMLAB_FRAME, 'shallow', 'lstm',
                         use_instruction=True)
    last_actions, env_outputs = random_steps(DMLAB_ACTIONS, DMLAB_FRAME,
                                             instruction_words=3)
    outputs, state, _ = agent.unroll(last_actions, env_outputs,
                                     agent.initial_state(BATCH_SIZE))
    step_output, step_state = agent.step(last_actions[0],
                                         at_step(env_outputs, 0),
                                         agent.initial_state(BATCH_SIZE))
    for output, prefix in ((outputs, (NUM_STEPS, BATCH_SIZE)),
                           (step_output, (BATCH_SIZE,))):
      self.assertEqual(prefix, tuple(output.action.shape))
      self.assertEqual(tf.int32, output.action.dtype)
      self.assertEqual(prefix + (DMLAB_ACTIONS,),
                       tuple(output.policy_logits.shape))
      self.assertEqual(tf.float32, output.policy_logits.dtype)
      self.assertEqual(prefix, tuple(output.baseline.shape))
      self.assertEqual(tf.float32, output.baseline.dtype)
      self.assertAllInRange(output.action, 0, DMLAB_ACTIONS - 1)
    for core_state in (state, step_state):
      self.assertEqual((BATCH_SIZE, agents.CORE_SIZE), tuple(core_state.h.shape))

  def test_xla_matches_eager(self):
    for torso, core, num_actions, frame, words in (
        ('shallow', 'lstm', DMLAB_ACTIONS, DMLAB_FRAME, 3),
        ('deep', 'feedforward', ATARI_ACTIONS, ATARI_FRAME, 0)):
      agent = agents.Agent(num_actions, frame, torso, core,
                           use_instruction=bool(words))
      last_actions, env_outputs = random_steps(num_actions, frame,
                                               instruction_words=words)
      state = agent.initial_state(BATCH_SIZE)
      eager, eager_state, _ = agent.unroll(last_actions, env_outputs, state)
      compiled, compiled_state, _ = tf.function(
          agent.unroll, jit_compile=True)(last_actions, env_outputs, state)
      self.assertAllClose(eager.policy_logits, compiled.policy_logits,
                          atol=1e-4)
      self.assertAllClose(eager.baseline, compiled.baseline, atol=1e-4)
      self.assertAllClose(eager_state, compiled_state, atol=1e-4)
      step_eager, _ = agent.step(last_actions[0], at_step(env_outputs, 0),
                                 state)
      step_compiled, _ = tf.function(agent.step, jit_compile=True)(
          last_actions[0], at_step(env_outputs, 0), state)
      self.assertAllClose(step_eager.policy_logits,
                          step_compiled.policy_logits, atol=1e-4)

  def test_xla_gradients_match_eager(self):
    agent = agents.Agent(DMLAB_ACTIONS, DMLAB_FRAME, 'shallow', 'lstm',
                         use_instruction=True)
    last_actions, env_outputs = random_steps(DMLAB_ACTIONS, DMLAB_FRAME,
                                             instruction_words=3)

    def gradients():
      with tf.GradientTape() as tape:
        outputs = agent.unroll(last_actions, env_outputs,
                               agent.initial_state(BATCH_SIZE)).agent_outputs
        loss = tf.reduce_sum(outputs.baseline) + tf.reduce_sum(
            tf.square(outputs.policy_logits))
      # Dense, for the embedding's IndexedSlices.
      return [
          tf.convert_to_tensor(g)
          for g in tape.gradient(loss, agent.trainable_variables)
      ]

    for eager, compiled in zip(gradients(),
                               tf.function(gradients, jit_compile=True)()):
      self.assertAllClose(eager, compiled, atol=1e-4, rtol=1e-4)

  def test_sampled_actions_follow_the_policy(self):
    agent = agents.Agent(3, (36, 36, 1), 'shallow', 'feedforward')
    agent.policy.w.assign(tf.zeros_like(agent.policy.w))
    agent.policy.b.assign([0.0, 2.0, 0.0])
    last_actions, env_outputs = random_steps(3, (36, 36, 1), batch_size=2000)
    output, _ = agent.step(last_actions[0], at_step(env_outputs, 0), ())
    probability = np.exp(2.0) / (np.exp(2.0) + 2.0)  # 0.79.
    self.assertNear(probability, np.mean(output.action.numpy() == 1), 0.04)

  def test_reward_is_clipped(self):
    agent = agents.Agent(3, (36, 36, 1), 'shallow', 'feedforward')
    last_actions, env_outputs = random_steps(3, (36, 36, 1))
    step_inputs = at_step(env_outputs, 0)
    outputs = [
        agent.step(last_actions[0], step_inputs._replace(reward=reward),
                   ())[0].baseline
        for reward in (np.full([BATCH_SIZE], 1.0, np.float32),
                       np.full([BATCH_SIZE], 7.0, np.float32))
    ]
    self.assertAllEqual(outputs[0], outputs[1])

  def test_normalised_frames_reach_the_torso_and_the_actors(self):
    frame_shape = (36, 36, 2)
    last_actions, env_outputs = random_steps(3, frame_shape)
    frames = env_outputs.frame[0].astype(np.float32) / 255
    rng = np.random.default_rng(3)
    mean = rng.random(frame_shape).astype(np.float32)
    variance = rng.random(frame_shape).astype(np.float32) / 10
    learner_agent, actor_agent = [
        agents.Agent(3, frame_shape, 'shallow', 'feedforward',
                     normalize_frames=True) for _ in range(2)]
    learner_agent.frame_normalizer.mean.assign(mean)
    learner_agent.frame_normalizer.variance.assign(variance)
    expected = learner_agent.torso(
        np.clip((frames - mean) / np.sqrt(variance + 1e-5), -5, 5))
    step = learner_agent.step(last_actions[0], at_step(env_outputs, 0), ())
    unrolled = learner_agent.unroll(last_actions, env_outputs, ())
    self.assertAllClose(expected, unrolled.torso[0], atol=1e-5)
    # What the actors are sent carries the statistics: the same policy.
    for source, target in zip(learner_agent.acting_variables,
                              actor_agent.acting_variables):
      target.assign(source)
    acted = actor_agent.step(last_actions[0], at_step(env_outputs, 0), ())
    self.assertAllClose(step[0].policy_logits, acted[0].policy_logits)
    plain = agents.Agent(3, frame_shape, 'shallow', 'feedforward')
    self.assertEqual([v.name for v in plain.trainable_variables],
                     [v.name for v in plain.acting_variables])

  def test_instruction_encoder(self):
    encoder = agents.InstructionEncoder(seed=0)
    ids = np.stack([environments.instruction_ids(text, max_words=6)
                    for text in ('pick the red ball', '', 'pick')])
    encoded = encoder(ids).numpy()
    self.assertEqual((3, agents.InstructionEncoder.HIDDEN_SIZE), encoded.shape)
    self.assertAllEqual(np.zeros(agents.InstructionEncoder.HIDDEN_SIZE),
                        encoded[1])
    self.assertGreater(np.abs(encoded[0]).sum(), 0.0)
    # More padding does not change an encoding; no words at all gives zeros.
    self.assertAllClose(encoded[2], encoder(ids[2:, :1])[0], atol=1e-6)
    self.assertAllEqual(np.zeros((3, agents.InstructionEncoder.HIDDEN_SIZE)),
                        encoder(tf.zeros([3, 0], tf.int32)))
    # The output at the last word is the LSTM's after reading the words.
    words = encoder.embedding(ids[0, :4])[:, None]  # [4, 1, 20].
    outputs, _ = encoder.lstm.unroll_fused(words,
                                           encoder.lstm.initial_state(1))
    self.assertAllClose(outputs[-1, 0], encoded[0], atol=1e-6)

  def test_bad_names_are_rejected(self):
    with self.assertRaisesRegex(ValueError, 'torso'):
      agents.Agent(3, (36, 36, 1), torso='resnet')
    with self.assertRaisesRegex(ValueError, 'core'):
      agents.Agent(3, (36, 36, 1), core='gru')


if __name__ == '__main__':
  tf.test.main()
