"""V-trace against the direct sum of the paper's eq. 1 (not the recursion)."""

import numpy as np
import tensorflow as tf

from impala_tf import vtrace
from tests.reference_targets import direct_sum_vtrace
from tests.reference_targets import random_inputs


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

  def test_mismatched_shapes_are_rejected(self):
    inputs = random_inputs(np.random.default_rng(8), (5, 3))
    inputs['values'] = inputs['values'][:4]
    with self.assertRaises(ValueError):
      vtrace.from_importance_weights(**inputs)


if __name__ == '__main__':
  tf.test.main()
