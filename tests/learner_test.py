"""The learner step: it learns, XLA agrees, RMSProp and the schedule are right."""

import numpy as np
import tensorflow as tf

from impala_tf import agents
from impala_tf import learner as learner_lib
from impala_tf import trajectory as trajectory_lib

OBSERVATION_SHAPE = (36, 36, 2)
NUM_ACTIONS = 3


def make_hparams(**overrides):
  hparams = learner_lib.LearnerHParams(
      learning_rate=0.001, learning_rate_anneal_frames=10_000,
      num_action_repeats=4, decay=0.99, momentum=0.0, epsilon=0.01,
      max_grad_norm=40.0, discounting=0.99, baseline_cost=0.5,
      entropy_cost=0.01, reward_clipping='abs_one',
      off_policy_correction='vtrace', vtrace_lambda=1.0)
  return hparams._replace(**overrides)


def make_agent(core='lstm'):
  return agents.Agent(
      num_actions=NUM_ACTIONS,
      observation_shape=OBSERVATION_SHAPE,
      torso='shallow',
      core=core)


def fixed_batch(agent, unroll_length=5, batch_size=3, seed=0):
  batch = trajectory_lib.random_trajectory(
      np.random.default_rng(seed), agent, unroll_length, batch_size,
      NUM_ACTIONS, OBSERVATION_SHAPE)
  batch.env_outputs.done[3, 0] = True  # An episode boundary inside.
  return batch


def copy_weights(source, target):
  for source_variable, target_variable in zip(source.trainable_variables,
                                              target.trainable_variables):
    target_variable.assign(source_variable)


class RMSPropTest(tf.test.TestCase):

  def test_matches_tf1_update_rule(self):
    rng = np.random.default_rng(0)
    weights = rng.normal(size=(3, 2)).astype(np.float32)
    variable = tf.Variable(weights)
    optimizer = learner_lib.RMSProp([variable], decay=0.9, momentum=0.5)
    mean_square = np.ones_like(weights)
    moment = np.zeros_like(weights)
    for learning_rate in (0.1, 0.05, 0.01):
      gradient = rng.normal(size=weights.shape).astype(np.float32)
      optimizer.apply([tf.constant(gradient)], [variable], learning_rate,
                      epsilon=0.1)
      mean_square = 0.9 * mean_square + 0.1 * gradient**2
      moment = 0.5 * moment + learning_rate * gradient / np.sqrt(
          mean_square + 0.1)
      weights = weights - moment
    self.assertAllClose(weights, variable, atol=1e-6)


class LearnerTest(tf.test.TestCase):

  def test_steps_on_a_fixed_batch_lower_the_loss(self):
    # Reward +1 for action 0 and -1 otherwise, and a behaviour policy that
    # made the taken actions unlikely, so that every importance weight is
    # clipped to 1 and the loss weights stay fixed: the loss must fall.
    for core in ('lstm', 'feedforward'):
      agent = make_agent(core)
      learner = learner_lib.Learner(agent, make_hparams(discounting=0.0))
      batch = fixed_batch(agent)
      batch.env_outputs.reward[:] = np.where(batch.agent_outputs.action == 0,
                                             1.0, -1.0)
      batch.agent_outputs.policy_logits[:] = -10.0 * np.eye(NUM_ACTIONS)[
          batch.agent_outputs.action]
      first_loss, _ = learner.loss(batch)
      for _ in range(10):
        stats = learner.train_step(batch)
        self.assertTrue(np.isfinite(stats['total_loss'].numpy()))
      last_loss, _ = learner.loss(batch)
      self.assertLess(float(last_loss), float(first_loss) - 1.0, core)

  def test_xla_and_graph_steps_agree(self):
    batch = None
    learners = []
    for xla in (False, True):
      agent = make_agent()
      if learners:
        copy_weights(learners[0].agent, agent)
      else:
        batch = fixed_batch(agent)
      learners.append(learner_lib.Learner(agent, make_hparams(), xla=xla))
    for _ in range(2):
      stats = [learner.train_step(batch) for learner in learners]
      for key in ('total_loss', 'policy_gradient_loss', 'baseline_loss',
                  'entropy', 'gradient_norm'):
        self.assertAllClose(stats[0][key], stats[1][key], rtol=1e-3,
                            atol=1e-4, msg=key)
    for graph_variable, xla_variable in zip(
        learners[0].agent.trainable_variables,
        learners[1].agent.trainable_variables):
      self.assertAllClose(graph_variable, xla_variable, rtol=1e-3, atol=1e-5)

  def test_frame_counter_and_linear_annealing(self):
    agent = make_agent('feedforward')
    # Each step is 5 * 3 * 4 = 60 frames; 300 frames anneal to zero in 5.
    learner = learner_lib.Learner(
        agent, make_hparams(learning_rate_anneal_frames=300))
    batch = fixed_batch(agent)
    rates = [float(learner.train_step(batch)['learning_rate'])
             for _ in range(6)]
    self.assertEqual(360, int(learner.num_environment_frames.numpy()))
    self.assertEqual(6, int(learner.num_updates.numpy()))
    self.assertAllClose([0.001 * (1 - k / 5) for k in range(6)], rates)

  def test_replayed_trajectories_count_no_frames(self):
    # Their frames were counted when they were new; the mark, not their
    # place in the batch, says which they are.
    for xla in (False, True):
      agent = make_agent('feedforward')
      learner = learner_lib.Learner(agent, make_hparams(), xla=xla)
      batch = fixed_batch(agent)._replace(
          replayed=np.array([True, False, True]))
      learner.train_step(batch)
      self.assertEqual(5 * 1 * 4,
                       int(learner.num_environment_frames.numpy()))

  def test_frame_statistics_come_from_the_new_trajectories(self):
    for xla in (False, True):
      agent = agents.Agent(NUM_ACTIONS, OBSERVATION_SHAPE, 'shallow',
                           'feedforward', normalize_frames=True)
      learner = learner_lib.Learner(agent, make_hparams(), xla=xla)
      batch = fixed_batch(agent)._replace(
          replayed=np.array([True, False, True]))
      learner.train_step(batch)
      # Column 1, without the first frame (its predecessor's last).
      new = batch.env_outputs.frame[1:, 1].astype(np.float32) / 255
      normalizer = agent.frame_normalizer
      self.assertEqual(5, float(normalizer.count))
      self.assertAllClose(new.mean(0), normalizer.mean, atol=1e-6)
      self.assertAllClose(new.var(0), normalizer.variance, atol=1e-5)

  def test_annealed_rate_stops_learning(self):
    agent = make_agent('feedforward')
    learner = learner_lib.Learner(
        agent, make_hparams(learning_rate_anneal_frames=60))
    batch = fixed_batch(agent)
    learner.train_step(batch)  # Uses the full rate, then the counter is done.
    before = [v.numpy() for v in agent.trainable_variables]
    learner.train_step(batch)
    for old, new in zip(before, agent.trainable_variables):
      self.assertAllEqual(old, new)

  def test_gradient_clipping_applies_the_clipped_gradient(self):
    max_grad_norm = 0.01
    clipped_agent, reference_agent = make_agent(), make_agent()
    copy_weights(clipped_agent, reference_agent)
    batch = fixed_batch(clipped_agent)
    learner = learner_lib.Learner(
        clipped_agent, make_hparams(max_grad_norm=max_grad_norm))
    reference = learner_lib.Learner(reference_agent,
                                    make_hparams(max_grad_norm=None))
    with tf.GradientTape() as tape:
      loss, _ = reference.loss(batch)
    variables = reference_agent.trainable_variables
    gradients = tape.gradient(loss, variables)
    norm = tf.linalg.global_norm(gradients)
    self.assertGreater(float(norm), max_grad_norm)
    stats = learner.train_step(batch)
    self.assertAllClose(norm, stats['gradient_norm'], rtol=1e-4)
    # Apply the clipped gradient by hand to the reference.
    reference.optimizer.apply(
        [g * max_grad_norm / norm for g in gradients], variables,
        reference.learning_rate(), reference.evolving['epsilon'])
    for clipped, expected in zip(clipped_agent.trainable_variables, variables):
      self.assertAllClose(expected, clipped, atol=1e-6)

  def test_diagnostics_against_numpy(self):
    agent = make_agent('feedforward')
    batch = fixed_batch(agent)
    learner = learner_lib.Learner(agent, make_hparams())
    before = [v.numpy() for v in agent.trainable_variables]
    stats = learner.train_step(batch)
    after = [v.numpy() for v in agent.trainable_variables]
    step = np.sqrt(sum(np.sum((a - b)**2) for a, b in zip(after, before)))
    weights = np.sqrt(sum(np.sum(a**2) for a in after))
    self.assertGreater(step, 0)
    self.assertAllClose(step / weights, stats['update_to_weight_ratio'],
                        rtol=1e-3)

  def test_vtrace_lambda_reaches_the_loss(self):
    # corrections_test checks the targets for each lambda against the direct
    # sum; here: the learner's loss uses the lambda of its hparams.
    agent = make_agent('feedforward')
    batch = fixed_batch(agent)
    baseline_losses = [
        learner_lib.impala_loss(agent, make_hparams(vtrace_lambda=lambda_),
                                0.01, batch, use_cudnn=False)[1]
        ['baseline_loss'].numpy() for lambda_ in (1.0, 0.5, 1.0)]
    self.assertEqual(baseline_losses[0], baseline_losses[2])
    self.assertNotAllClose(baseline_losses[0], baseline_losses[1])

  def test_torso_dead_fraction_against_numpy(self):
    agent = make_agent('lstm')
    bias = np.zeros([agents.CORE_SIZE], np.float32)
    bias[:100] = -100.0  # These units never fire.
    agent.torso.fc.b.assign(bias)
    batch = fixed_batch(agent)
    torso = agent.unroll(batch.agent_outputs.action, batch.env_outputs,
                         batch.agent_state).torso
    self.assertEqual(batch.env_outputs.reward.shape + (agents.CORE_SIZE,),
                     torso.shape)
    expected = np.mean(np.all(torso.numpy() <= 0, axis=(0, 1)))
    self.assertGreaterEqual(expected, 100 / agents.CORE_SIZE)
    stats = learner_lib.Learner(agent, make_hparams()).train_step(batch)
    self.assertAllClose(expected, stats['torso_dead_fraction'])
    activations = np.ones([3, 2, 4], np.float32)
    activations[:, :, 1] = 0.0  # Dead.
    activations[:, :, 2] = -1.0  # Dead too.
    activations[:, :, 0] = 0.0
    activations[0, 0, 0] = 0.5  # Fires once: alive.
    self.assertAllClose(0.5, learner_lib.dead_fraction(activations))

  def test_explained_variance(self):
    targets = np.array([[1.0, 2.0], [3.0, 5.0]], np.float32)
    self.assertAllClose(1.0, learner_lib.explained_variance(targets, targets))
    self.assertAllClose(0.0, learner_lib.explained_variance(
        targets, np.full_like(targets, targets.mean())), atol=1e-6)
    predictions = np.array([[0.0, 2.0], [3.0, 4.0]], np.float32)
    expected = 1 - np.var(targets - predictions) / np.var(targets)
    self.assertAllClose(expected, learner_lib.explained_variance(
        targets, predictions), rtol=1e-5)


if __name__ == '__main__':
  tf.test.main()
