"""The four off-policy corrections of the paper's Table 2 against
independent numpy computations of their targets and advantages."""

import numpy as np
import tensorflow as tf

from impala_tf import corrections
from tests import reference_targets as reference

NUM_STEPS, BATCH_SIZE, NUM_ACTIONS = 7, 4, 5


def _inputs(seed):
  """Random `corrections.targets` keyword arguments with episode ends."""
  rng = np.random.default_rng(seed)
  inputs = reference.random_inputs(rng, (NUM_STEPS, BATCH_SIZE))
  del inputs['log_rhos']
  logits_shape = (NUM_STEPS, BATCH_SIZE, NUM_ACTIONS)
  inputs['behaviour_policy_logits'] = rng.normal(
      scale=2.0, size=logits_shape).astype(np.float32)
  inputs['target_policy_logits'] = rng.normal(
      scale=2.0, size=logits_shape).astype(np.float32)
  inputs['actions'] = rng.integers(
      0, NUM_ACTIONS, size=(NUM_STEPS, BATCH_SIZE)).astype(np.int32)
  return inputs


def _log_rhos(inputs):
  return (reference.taken(reference.log_softmax(
      inputs['target_policy_logits'].astype(np.float64)), inputs['actions'])
          - reference.taken(reference.log_softmax(
              inputs['behaviour_policy_logits'].astype(np.float64)),
                            inputs['actions']))


def _on_policy(inputs):
  """(n-step returns, their advantages r_s + gamma_s G_{s+1} - V(x_s))."""
  returns = reference.n_step_returns(inputs['discounts'], inputs['rewards'],
                                     inputs['bootstrap_value'])
  next_returns = np.concatenate([returns[1:], inputs['bootstrap_value'][None]])
  advantages = (inputs['rewards'] + inputs['discounts'] * next_returns -
                inputs['values'])
  return returns, advantages


class CorrectionsTest(tf.test.TestCase):

  def _check(self, correction, expected_vs, expected_advantages, inputs):
    targets = corrections.targets(correction, **inputs)
    self.assertAllClose(expected_vs, targets.vs, rtol=1e-4, atol=1e-4)
    self.assertAllClose(expected_advantages, targets.pg_advantages,
                        rtol=1e-4, atol=1e-4)
    self.assertAllClose(_log_rhos(inputs), targets.log_rhos, atol=1e-4)

  def test_vtrace_is_the_papers_equation_1(self):
    inputs = _inputs(0)
    expected_vs, expected_advantages = reference.direct_sum_vtrace(
        log_rhos=_log_rhos(inputs), rho_bar=1.0, pg_rho_bar=1.0, c_bar=1.0,
        lambda_=1.0, **{k: inputs[k] for k in (
            'discounts', 'rewards', 'values', 'bootstrap_value')})
    self._check('vtrace', expected_vs, expected_advantages, inputs)

  def test_lambda_scales_the_traces_of_every_correction(self):
    inputs = _inputs(3)
    for correction, log_rhos in [('vtrace', _log_rhos(inputs)),
                                 ('none', np.zeros_like(_log_rhos(inputs)))]:
      expected_vs, expected_advantages = reference.direct_sum_vtrace(
          log_rhos=log_rhos, rho_bar=1.0, pg_rho_bar=1.0, c_bar=1.0,
          lambda_=0.8, **{k: inputs[k] for k in (
              'discounts', 'rewards', 'values', 'bootstrap_value')})
      targets = corrections.targets(correction, vtrace_lambda=0.8, **inputs)
      self.assertAllClose(expected_vs, targets.vs, rtol=1e-4, atol=1e-4)
      self.assertAllClose(expected_advantages, targets.pg_advantages,
                          rtol=1e-4, atol=1e-4)
    # Below 1, the targets differ from the paper's lambda of 1.
    self.assertNotAllClose(corrections.targets('vtrace', **inputs).vs,
                           targets.vs)

  def test_no_correction_treats_experience_as_on_policy(self):
    inputs = _inputs(1)
    self._check('none', *_on_policy(inputs), inputs)
    self._check('epsilon', *_on_policy(inputs), inputs)

  def test_one_step_weights_only_the_advantage(self):
    inputs = _inputs(2)
    returns, advantages = _on_policy(inputs)
    weights = np.minimum(1.0, np.exp(_log_rhos(inputs)))
    self.assertTrue((weights < 0.5).any(), 'need strongly off-policy steps')
    self._check('one_step', returns, weights * advantages, inputs)

  def test_only_vtrace_and_one_step_read_the_behaviour_policy(self):
    inputs, shifted = _inputs(3), _inputs(3)
    shifted['behaviour_policy_logits'] = np.roll(
        shifted['behaviour_policy_logits'], 1, axis=-1)
    for correction, reads in (('vtrace', True), ('one_step', True),
                              ('epsilon', False), ('none', False)):
      before = corrections.targets(correction, **inputs)
      after = corrections.targets(correction, **shifted)
      changed = not np.allclose(before.pg_advantages, after.pg_advantages)
      self.assertEqual(reads, changed, correction)

  def test_epsilon_floors_the_probability_inside_the_log(self):
    inputs = _inputs(4)
    inputs['target_policy_logits'][0, 0] = [40.0, 0.0, 0.0, 0.0, 0.0]
    inputs['actions'][0, 0] = 1  # pi(a) ~ 4e-18.
    epsilon = corrections.targets('epsilon', **inputs).action_log_probs
    plain = corrections.targets('none', **inputs).action_log_probs
    self.assertAllClose(np.log(1e-6), epsilon[0, 0], rtol=1e-3)
    self.assertLess(float(plain[0, 0]), -39.0)
    probabilities = np.exp(reference.taken(reference.log_softmax(
        inputs['target_policy_logits'].astype(np.float64)),
                                           inputs['actions']))
    self.assertAllClose(np.log(probabilities + 1e-6), epsilon, atol=1e-5)
    self.assertAllClose(np.log(probabilities), plain, atol=1e-5)

  def test_only_the_log_probabilities_carry_gradient(self):
    inputs = {k: tf.constant(v) for k, v in _inputs(5).items()}
    for correction in corrections.CORRECTIONS:
      with tf.GradientTape(persistent=True) as tape:
        tape.watch([inputs['target_policy_logits'], inputs['values']])
        targets = corrections.targets(correction, **inputs)
        total = (tf.reduce_sum(targets.vs) +
                 tf.reduce_sum(targets.pg_advantages))
        log_probs = tf.reduce_sum(targets.action_log_probs)
      self.assertEqual([None, None], tape.gradient(
          total, [inputs['target_policy_logits'], inputs['values']]),
                       correction)
      self.assertIsNotNone(tape.gradient(
          log_probs, inputs['target_policy_logits']), correction)

  def test_unknown_correction_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'one_step'):
      corrections.targets('retrace', **_inputs(6))


if __name__ == '__main__':
  tf.test.main()
