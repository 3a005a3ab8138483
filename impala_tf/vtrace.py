"""V-trace off-policy targets (Espeholt et al. 2018, section 4.1, eq. 1).

Pure functions, time-major. With T the unroll length and B the batch size,
every per-step argument is shaped `[T, B, ...]` (trailing dimensions are
allowed as long as all arguments share them) and `bootstrap_value` is
`[B, ...]`.

The v-trace target for step s is

  v_s = V(x_s) + sum_{t=s}^{s+n-1} gamma^{t-s} (prod_{i=s}^{t-1} c_i) delta_t V,
  delta_t V = rho_t (r_t + gamma V(x_{t+1}) - V(x_t)),

with rho_t = min(rho_bar, pi/mu) and c_i = lambda * min(c_bar, pi/mu)
(Remark 2). It is computed here by the equivalent backward recursion
v_s - V(x_s) = delta_s V + gamma_s c_s (v_{s+1} - V(x_{s+1})).
The policy-gradient advantage is rho_s (r_s + gamma v_{s+1} - V(x_s)) with its
own clipping threshold. Neither output carries gradients.
"""

import collections

import tensorflow as tf

VTraceReturns = collections.namedtuple('VTraceReturns', 'vs pg_advantages')


def action_log_probs(policy_logits, actions):
  """Log-probabilities of the taken actions.

  Args:
    policy_logits: float32 `[T, B, ..., num_actions]` unnormalised logits.
    actions: int32 `[T, B, ...]` action indices.

  Returns:
    float32 `[T, B, ...]` log pi(actions).
  """
  return -tf.nn.sparse_softmax_cross_entropy_with_logits(
      logits=policy_logits, labels=actions)


def _clipped(rhos, threshold):
  return rhos if threshold is None else tf.minimum(
      tf.cast(threshold, rhos.dtype), rhos)


def _corrections_to_values(discounts, cs, deltas):
  """v_s - V(x_s) for every s, by the recursion
  v_s - V(x_s) = delta_s V + gamma_s c_s (v_{s+1} - V(x_{s+1})), from s = T - 1
  (where v_T - V(x_T) = 0) back to 0. All arguments `[T, B, ...]`."""

  def backward_step(vs_minus_v_next, step_inputs):
    discount_t, c_t, delta_t = step_inputs
    return delta_t + discount_t * c_t * vs_minus_v_next

  return tf.scan(backward_step, elems=(discounts, cs, deltas),
                 initializer=tf.zeros_like(deltas[0]), reverse=True)


def from_importance_weights(log_rhos,
                            discounts,
                            rewards,
                            values,
                            bootstrap_value,
                            clip_rho_threshold=1.0,
                            clip_pg_rho_threshold=1.0,
                            clip_c_threshold=1.0,
                            lambda_=1.0,
                            name='vtrace_from_importance_weights'):
  """V-trace from log importance weights log(pi(a_t|x_t) / mu(a_t|x_t)).

  Args:
    log_rhos: float32 `[T, B, ...]` log importance weights.
    discounts: float32 `[T, B, ...]` gamma_t, 0 where the episode ended at t.
    rewards: float32 `[T, B, ...]` r_t.
    values: float32 `[T, B, ...]` V(x_t).
    bootstrap_value: float32 `[B, ...]` V(x_T).
    clip_rho_threshold: rho_bar, or None for no clipping.
    clip_pg_rho_threshold: rho_bar of the policy-gradient advantage, or None.
    clip_c_threshold: c_bar, or None for no clipping.
    lambda_: lambda of Remark 2, scales every c_i.
    name: name scope.

  Returns:
    `VTraceReturns(vs, pg_advantages)`, both float32 `[T, B, ...]`, with
    gradients stopped.
  """
  with tf.name_scope(name):
    log_rhos = tf.convert_to_tensor(log_rhos, tf.float32)
    discounts = tf.convert_to_tensor(discounts, tf.float32)
    rewards = tf.convert_to_tensor(rewards, tf.float32)
    values = tf.convert_to_tensor(values, tf.float32)
    bootstrap_value = tf.convert_to_tensor(bootstrap_value, tf.float32)
    # Catch mismatched shapes early: broadcasting would silently mix steps.
    values.shape.assert_is_compatible_with(log_rhos.shape)
    discounts.shape.assert_is_compatible_with(log_rhos.shape)
    rewards.shape.assert_is_compatible_with(log_rhos.shape)
    bootstrap_value.shape.assert_is_compatible_with(log_rhos.shape[1:])

    rhos = tf.exp(log_rhos)
    clipped_rhos = _clipped(rhos, clip_rho_threshold)
    cs = lambda_ * _clipped(rhos, clip_c_threshold)

    values_t_plus_1 = tf.concat([values[1:], bootstrap_value[None]], axis=0)
    deltas = clipped_rhos * (rewards + discounts * values_t_plus_1 - values)

    vs = _corrections_to_values(discounts, cs, deltas) + values

    vs_t_plus_1 = tf.concat([vs[1:], bootstrap_value[None]], axis=0)
    clipped_pg_rhos = _clipped(rhos, clip_pg_rho_threshold)
    pg_advantages = clipped_pg_rhos * (
        rewards + discounts * vs_t_plus_1 - values)
    return VTraceReturns(
        vs=tf.stop_gradient(vs), pg_advantages=tf.stop_gradient(pg_advantages))
