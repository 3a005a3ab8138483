"""The off-policy corrections the paper compares in Sec. 5.2.1 (Table 2).

Pure functions, time-major: T is the unroll length, B the batch size, A the
number of actions.

- 'vtrace': V-trace targets and advantages (`vtrace.py`).
- 'one_step': 1-step importance sampling. The value targets get no
  correction (on-policy n-step returns); the policy-gradient advantage at
  each step is multiplied by that step's importance weight, truncated at
  1 as V-trace's policy-gradient weight is, so that it differs from V-trace
  only by having no traces.
- 'epsilon': no correction, but log pi(a) in the policy gradient is
  log(pi(a) + 1e-6), which keeps it from blowing up for actions the learner
  finds unlikely (as Babaeizadeh et al. 2016).
- 'none': the experience is treated as on-policy: targets and advantages as
  if the actors' policy were the learner's.
"""

import collections

import tensorflow as tf

from impala_tf import vtrace

CORRECTIONS = ('vtrace', 'one_step', 'epsilon', 'none')

# The epsilon correction's floor on pi(a) inside the log (paper, Sec. 5.2.1).
PROBABILITY_EPSILON = 1e-6

Targets = collections.namedtuple(
    'Targets', 'vs pg_advantages log_rhos action_log_probs')


def targets(correction, behaviour_policy_logits, target_policy_logits,
            actions, discounts, rewards, values, bootstrap_value,
            vtrace_lambda=1.0):
  """Value targets and policy-gradient advantages under `correction`.

  Args:
    correction: one of `CORRECTIONS`.
    behaviour_policy_logits: float32 `[T, B, A]` logits of the actors'
      policy mu.
    target_policy_logits: float32 `[T, B, A]` logits of the learner's
      policy pi.
    actions: int32 `[T, B]` actions taken by mu.
    discounts: float32 `[T, B]` gamma_t, 0 where the episode ended at t.
    rewards: float32 `[T, B]` r_t.
    values: float32 `[T, B]` V(x_t).
    bootstrap_value: float32 `[B]` V(x_T).
    vtrace_lambda: lambda of Remark 2, scaling every trace c_i, whatever the
      correction: below 1 the value targets become lambda-returns (the
      on-policy ones of 'none', 'one_step' and 'epsilon' included).

  Returns:
    `Targets` of float32 `[T, B]`: `vs` (the baseline's targets),
    `pg_advantages`, `log_rhos` (log pi(a_t) / mu(a_t), for diagnostics) and
    `action_log_probs`, log pi(a_t) as the policy gradient uses it
    (log(pi(a_t) + 1e-6) under 'epsilon'). Gradients flow to
    `target_policy_logits` through `action_log_probs` only.
  """
  if correction not in CORRECTIONS:
    raise ValueError(f'off-policy correction must be one of {CORRECTIONS}, '
                     f'got {correction!r}')
  target_log_probs = vtrace.action_log_probs(target_policy_logits, actions)
  log_rhos = (target_log_probs -
              vtrace.action_log_probs(behaviour_policy_logits, actions))
  # rho = c = 1 everywhere turns V-trace into the on-policy n-step return.
  weights = log_rhos if correction == 'vtrace' else tf.zeros_like(log_rhos)
  returns = vtrace.from_importance_weights(
      log_rhos=weights, discounts=discounts, rewards=rewards, values=values,
      bootstrap_value=bootstrap_value, lambda_=vtrace_lambda)
  pg_advantages = returns.pg_advantages
  if correction == 'one_step':
    pg_advantages *= tf.stop_gradient(tf.minimum(1.0, tf.exp(log_rhos)))
  if correction == 'epsilon':
    target_log_probs = tf.math.log(
        tf.exp(target_log_probs) + PROBABILITY_EPSILON)
  return Targets(vs=returns.vs, pg_advantages=pg_advantages,
                 log_rhos=log_rhos, action_log_probs=target_log_probs)
