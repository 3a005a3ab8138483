"""Independent numpy computations of the learner's targets, in float64,
shared by the tests of `vtrace.py` and `corrections.py`."""

import numpy as np


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


def log_softmax(logits):
  """float `[..., A]` -> log-probabilities `[..., A]`."""
  shifted = logits - logits.max(axis=-1, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def taken(values, actions):
  """`values[..., actions]`: `[T, B, A]`, int `[T, B]` -> `[T, B]`."""
  return np.take_along_axis(values, actions[..., None], axis=-1)[..., 0]


def n_step_returns(discounts, rewards, bootstrap_value):
  """The on-policy bootstrapped return of each step, summed term by term:
  G_s = sum_{t>=s} (prod_{i=s}^{t-1} gamma_i) r_t
        + (prod_{i=s}^{T-1} gamma_i) V(x_T), all `[T, B]` but
  `bootstrap_value` `[B]`."""
  num_steps = rewards.shape[0]
  returns = np.zeros(rewards.shape, np.float64)
  for s in range(num_steps):
    for t in range(s, num_steps):
      returns[s] += np.prod(discounts[s:t], axis=0) * rewards[t]
    returns[s] += np.prod(discounts[s:], axis=0) * bootstrap_value
  return returns
