"""V-trace against the direct sum of the paper's eq. 1 (not the recursion)."""

import numpy as np
import tensorflow as tf

from impala_tf import vtrace


def _clip(x, threshold):
  return x if threshold is None else np.minimum(threshold, x)


def direct_sum_vtrace(log_rhos, discounts, rewards, values, bootstrap_value,
                      rho_bar, pg_rho_bar, c_bar, lambda_):
  """Eq. 1 summed term by term in float64: v_s = V(x_s) + sum_t (...) dV_t."""
  rhos = np.exp(log_rhos.astype(np.float64))
  num_steps = log_rhos.shape[0]
  values_ext = np.concatenate([values, bootstrap_value[None]], axis=0)
  clipped_rhos = _clip(rhos, rho_bar)
  cs = lambda_ * _clip(rhos, c_bar)
  deltas = clipped_rhos * (
      rewards + discounts * values_ext[1:] - values_ext[:-1])
  vs = np.array(values, dtype=np.float64)
  for s in range(num_steps):
    for t in range(s, num_steps):
      # gamma^{t-s} with per-step discounts, and prod_{i=s}^{t-1} c_i.
      weight = np.prod(discounts[s:t], axis=0) * np.prod(cs[s:t], axis=0)
      vs[s] = vs[s] + weight * deltas[t]
  vs_ext = np.concatenate([vs, bootstrap_value[None]], axis=0)
  pg_advantages = _clip(rhos, pg_rho_bar) * (
      rewards + discounts * vs_ext[1:] - values)
  return vs, pg_advantages


def random_inputs(rng, shape, episode_end_probability=0.2):
  """Random V-trace inputs `[T, B, ...]` with episode ends (discount 0)."""
  done = rng.uniform(size=shape) < episode_end_probability
  return dict(
      # Wide spread so that some rhos exceed every threshold used below.
      log_rhos=rng.normal(scale=1.5, size=shape).astype(np.float32),
      discounts=(0.9 * ~done).astype(np.float32),
      rewards=rng.normal(size=shape).astype(np.float32),
      values=rng.normal(size=shape).astype(np.float32),
      bootstrap_value=rng.normal(size=shape[1:]).astype(np.float32))


class VTraceTest(tf.test.TestCase):

  def _check_against_direct_sum(self, shape, rho_bar, pg_rho_bar, c_bar,
                                lambda_, seed=0, jit_compile=None):
    inputs = random_inputs(np.random.default_rng(seed), shape)
    self.assertTrue((inputs['discounts'] == 0).any(), 'need episode ends')

    def compute(**kwargs):
      return vtrace.from_importance_weights(
          clip_rho_threshold=rho_bar,
          clip_pg_rho_threshold=pg_rho_bar,
          clip_c_threshold=c_bar,
          lambda_=lambda_,
          **kwargs)

    if jit_compile is not None:
      compute = tf.function(compute, jit_compile=jit_compile)
    returns = compute(**inputs)
    expected_vs, expected_pg = direct_sum_vtrace(
        rho_bar=rho_bar, pg_rho_bar=pg_rho_bar, c_bar=c_bar, lambda_=lambda_,
        **inputs)
    self.assertAllClose(expected_vs, returns.vs, rtol=1e-4, atol=1e-4)
    self.assertAllClose(expected_pg, returns.pg_advantages, rtol=1e-4,
                        atol=1e-4)

  def test_paper_defaults(self):
    self._check_against_direct_sum((7, 5), 1.0, 1.0, 1.0, 1.0)

  def test_rho_bar_differs_from_c_bar(self):
    self._check_against_direct_sum((9, 4), 3.7, 2.2, 0.8, 1.0, seed=1)

  def test_lambda_below_one(self):
    self._check_against_direct_sum((8, 3), 1.0, 1.0, 1.0, 0.6, seed=2)

  def test_no_clipping(self):
    self._check_against_direct_sum((6, 4), None, None, None, 1.0, seed=3)

  def test_extra_trailing_dimensions(self):
    self._check_against_direct_sum((6, 3, 2, 4), 2.0, 1.0, 1.5, 0.9, seed=4)

  def test_under_xla(self):
    self._check_against_direct_sum((10, 6), 1.5, 1.0, 0.9, 0.8, seed=5,
                                   jit_compile=True)

  def test_on_policy_with_unit_discount_is_n_step_return(self):
    # With pi == mu and lambda = 1, v_s is the discounted n-step return.
    rewards = np.arange(1, 5, dtype=np.float32)[:, None]  # [T=4, B=1]
    values = np.full((4, 1), 10.0, np.float32)
    returns = vtrace.from_importance_weights(
        log_rhos=np.zeros((4, 1), np.float32),
        discounts=np.full((4, 1), 0.5, np.float32),
        rewards=rewards,
        values=values,
        bootstrap_value=np.array([8.0], np.float32))
    # v_0 = 1 + .5*2 + .25*3 + .125*4 + .0625*8
    self.assertAllClose([3.75], returns.vs[0])
    self.assertAllClose([8.0 * 0.5 + 4.0], returns.vs[3])

  def test_no_gradient_through_targets(self):
    inputs = {
        k: tf.constant(v) for k, v in random_inputs(
            np.random.default_rng(6), (5, 2)).items()
    }
    with tf.GradientTape(persistent=True) as tape:
      tape.watch(list(inputs.values()))
      returns = vtrace.from_importance_weights(**inputs)
      total = tf.reduce_sum(returns.vs) + tf.reduce_sum(returns.pg_advantages)
    for value in inputs.values():
      self.assertIsNone(tape.gradient(total, value))

  def test_from_logits_matches_importance_weights(self):
    rng = np.random.default_rng(7)
    num_steps, batch_size, num_actions = 6, 4, 5
    inputs = random_inputs(rng, (num_steps, batch_size))
    del inputs['log_rhos']
    behaviour_logits = rng.normal(
        size=(num_steps, batch_size, num_actions)).astype(np.float32)
    target_logits = rng.normal(
        size=(num_steps, batch_size, num_actions)).astype(np.float32)
    actions = rng.integers(0, num_actions, size=(num_steps, batch_size))

    returns = vtrace.from_logits(
        behaviour_policy_logits=behaviour_logits,
        target_policy_logits=target_logits,
        actions=actions.astype(np.int32),
        clip_rho_threshold=2.0,
        clip_pg_rho_threshold=1.0,
        **inputs)

    def log_softmax(logits):
      shifted = logits - logits.max(axis=-1, keepdims=True)
      return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))

    def taken(log_probs):
      return np.take_along_axis(log_probs, actions[..., None], axis=-1)[..., 0]

    expected_target = taken(log_softmax(target_logits))
    expected_behaviour = taken(log_softmax(behaviour_logits))
    self.assertAllClose(expected_target, returns.target_action_log_probs,
                        atol=1e-5)
    self.assertAllClose(expected_behaviour, returns.behaviour_action_log_probs,
                        atol=1e-5)
    self.assertAllClose(expected_target - expected_behaviour, returns.log_rhos,
                        atol=1e-5)
    expected_vs, expected_pg = direct_sum_vtrace(
        log_rhos=expected_target - expected_behaviour,
        rho_bar=2.0, pg_rho_bar=1.0, c_bar=1.0, lambda_=1.0, **inputs)
    self.assertAllClose(expected_vs, returns.vs, rtol=1e-4, atol=1e-4)
    self.assertAllClose(expected_pg, returns.pg_advantages, rtol=1e-4,
                        atol=1e-4)

  def test_mismatched_shapes_are_rejected(self):
    inputs = random_inputs(np.random.default_rng(8), (5, 3))
    inputs['values'] = inputs['values'][:4]
    with self.assertRaises(ValueError):
      vtrace.from_importance_weights(**inputs)


if __name__ == '__main__':
  tf.test.main()
