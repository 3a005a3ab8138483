"""IMPALA's loss terms and reward transformations.

All losses are summed over time and batch, as the paper (Table D.1 note) and
its code do. Shapes: T is the unroll length, B the batch size, A the number
of actions.
"""

import tensorflow as tf

REWARD_CLIPPING_MODES = ('abs_one', 'soft_asymmetric', 'none')


def policy_gradient_loss(action_log_probs, advantages):
  """-sum_t log pi(a_t|x_t) * A_t, with the advantages held constant.

  Args:
    action_log_probs: float32 `[T, B]` the learner's log pi(a_t|x_t) of the
      actions taken (`corrections.Targets.action_log_probs`).
    advantages: float32 `[T, B]` policy-gradient advantages.

  Returns:
    Scalar float32 loss.
  """
  return -tf.reduce_sum(action_log_probs * tf.stop_gradient(advantages))


def baseline_loss(advantages):
  """0.5 * sum_t (v_s - V(x_s))^2 for `advantages = vs - values`, `[T, B]`."""
  return 0.5 * tf.reduce_sum(tf.square(advantages))


def entropy(policy_logits):
  """Entropy of the softmax policy per step: `[T, B, A]` -> `[T, B]`."""
  policy = tf.nn.softmax(policy_logits)
  log_policy = tf.nn.log_softmax(policy_logits)
  return -tf.reduce_sum(policy * log_policy, axis=-1)


def entropy_loss(policy_logits):
  """Negative summed entropy of `[T, B, A]` logits: minimising it explores."""
  return -tf.reduce_sum(entropy(policy_logits))


def clip_rewards(rewards, mode):
  """Applies the paper's reward clipping.

  Args:
    rewards: float32 `[T, B]` (any shape) raw rewards.
    mode: 'abs_one' clips to [-1, 1] (Atari and single DMLab tasks);
      'soft_asymmetric' is the official code's DMLab-30 squashing
      5 * tanh(r / 5), with negative rewards scaled by 0.3; 'none'.

  Returns:
    The clipped rewards, same shape.
  """
  if mode == 'abs_one':
    return tf.clip_by_value(rewards, -1.0, 1.0)
  if mode == 'soft_asymmetric':
    squeezed = tf.tanh(rewards / 5.0)
    return 5.0 * tf.where(rewards < 0, 0.3 * squeezed, squeezed)
  if mode == 'none':
    return rewards
  raise ValueError(f'reward clipping must be one of {REWARD_CLIPPING_MODES}, '
                   f'got {mode!r}')


def discounts_from_done(done, discounting):
  """gamma * (1 - done): `[T, B]` bool -> `[T, B]` float32."""
  return tf.cast(~done, tf.float32) * discounting
