"""The unit of experience that actors send and the learner trains on.

A trajectory of unroll length T holds T + 1 time steps: the last step of the
previous unroll followed by T new ones, so that consecutive unrolls overlap by
one step and every transition is learned from exactly once. Index t pairs
`env_outputs[t]`, the environment's answer to `agent_outputs[t].action`, with
the agent output that chose that action (computed from `env_outputs[t - 1]`).
The learner therefore evaluates its policy on `env_outputs[:-1]` and scores it
against the behaviour policy's `agent_outputs[1:]` and the rewards and episode
ends of `env_outputs[1:]`.
"""

import collections

import numpy as np

from impala_tf import agents

Trajectory = collections.namedtuple(
    'Trajectory',
    [
        'agent_state',  # The core state before env_outputs[0]: nest of [B, ...].
        'env_outputs',  # agents.EnvOutput, fields [T + 1, B, ...].
        'agent_outputs',  # agents.AgentOutput, fields [T + 1, B, ...].
    ])


def random_trajectory(rng, agent, unroll_length, batch_size, num_actions,
                      observation_shape, done_probability=0.0):
  """A trajectory of random data shaped for `agent`: benchmarks and checks.

  Args:
    rng: numpy `Generator`.
    agent: `agents.Agent`, for its initial core state.
    unroll_length: T; the trajectory has T + 1 steps.
    batch_size: B.
    num_actions: A.
    observation_shape: (H, W, C) of the uint8 frames.
    done_probability: chance of an episode end at each step.

  Returns:
    `Trajectory` of numpy arrays `[T + 1, B, ...]`.
  """
  shape = (unroll_length + 1, batch_size)
  return Trajectory(
      agent_state=agent.initial_state(batch_size),
      env_outputs=agents.EnvOutput(
          reward=rng.normal(size=shape).astype(np.float32),
          done=rng.uniform(size=shape) < done_probability,
          frame=rng.integers(0, 256, shape + tuple(observation_shape),
                             np.uint8),
          instruction=np.zeros(shape + (0,), np.int32)),
      agent_outputs=agents.AgentOutput(
          action=rng.integers(0, num_actions, shape).astype(np.int32),
          policy_logits=rng.normal(size=shape + (num_actions,)).astype(
              np.float32),
          baseline=np.zeros(shape, np.float32)))
