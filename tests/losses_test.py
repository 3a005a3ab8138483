"""Loss terms and reward clipping against independent computations."""

import math

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from impala_tf import losses
from impala_tf import vtrace


class LossesTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    rng = np.random.default_rng(0)
    self.logits = rng.normal(size=(5, 3, 4)).astype(np.float32)
    self.actions = rng.integers(0, 4, size=(5, 3)).astype(np.int32)
    self.advantages = rng.normal(size=(5, 3)).astype(np.float32)

  def test_policy_gradient_loss_value_and_gradient(self):
    distribution = tfp.distributions.Categorical(logits=self.logits)
    expected = -np.sum(
        distribution.log_prob(self.actions).numpy() * self.advantages)
    logits = tf.Variable(self.logits)
    with tf.GradientTape() as tape:
      loss = losses.policy_gradient_loss(
          vtrace.action_log_probs(logits, self.actions), self.advantages)
    self.assertAllClose(expected, loss, rtol=1e-5)
    # d/dlogits of -A log softmax(logits)[a] = -A (onehot(a) - softmax).
    softmax = tf.nn.softmax(self.logits).numpy()
    onehot = np.eye(4, dtype=np.float32)[self.actions]
    expected_gradient = -self.advantages[..., None] * (onehot - softmax)
    self.assertAllClose(expected_gradient, tape.gradient(loss, logits),
                        atol=1e-5)

  def test_advantages_get_no_gradient(self):
    advantages = tf.Variable(self.advantages)
    with tf.GradientTape() as tape:
      loss = losses.policy_gradient_loss(
          vtrace.action_log_probs(self.logits, self.actions), advantages)
    self.assertIsNone(tape.gradient(loss, advantages))

  def test_baseline_loss(self):
    self.assertAllClose(0.5 * np.sum(self.advantages**2),
                        losses.baseline_loss(self.advantages), rtol=1e-5)

  def test_entropy_matches_tfp(self):
    expected = tfp.distributions.Categorical(logits=self.logits).entropy()
    self.assertAllClose(expected, losses.entropy(self.logits), atol=1e-5)
    self.assertAllClose(-np.sum(expected), losses.entropy_loss(self.logits),
                        rtol=1e-5)

  def test_uniform_policy_has_maximal_entropy(self):
    self.assertAllClose(
        math.log(4), losses.entropy(np.zeros((1, 1, 4), np.float32))[0, 0])

  def test_abs_one_clipping(self):
    rewards = np.array([-7.0, -1.0, -0.25, 0.0, 0.5, 3.0], np.float32)
    self.assertAllClose([-1.0, -1.0, -0.25, 0.0, 0.5, 1.0],
                        losses.clip_rewards(rewards, 'abs_one'))

  def test_soft_asymmetric_clipping_is_the_official_formula(self):
    rewards = [-10.0, -1.0, 0.0, 1.0, 10.0]
    expected = [
        5.0 * math.tanh(r / 5.0) * (0.3 if r < 0 else 1.0) for r in rewards
    ]
    self.assertAllClose(
        expected,
        losses.clip_rewards(np.array(rewards, np.float32), 'soft_asymmetric'))

  def test_no_clipping(self):
    rewards = np.array([-10.0, 10.0], np.float32)
    self.assertAllClose(rewards, losses.clip_rewards(rewards, 'none'))

  def test_unknown_clipping_mode(self):
    with self.assertRaisesRegex(ValueError, 'soft_asymmetric'):
      losses.clip_rewards(np.zeros(2, np.float32), 'tanh')

  def test_discounts_from_done(self):
    self.assertAllClose([0.99, 0.0, 0.99],
                        losses.discounts_from_done(
                            np.array([False, True, False]), 0.99))


if __name__ == '__main__':
  tf.test.main()
