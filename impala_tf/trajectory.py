"""The unit of experience that actors send and the learner trains on.

A trajectory of unroll length T holds T + 1 time steps: the last step of the
previous unroll followed by T new ones, so that consecutive unrolls overlap by
one step and every transition is learned from exactly once. Index t pairs
`env_outputs[t]`, the environment's answer to `agent_outputs[t].action`, with
the agent output that chose that action (computed from `env_outputs[t - 1]`).
The learner therefore evaluates its policy on `env_outputs[:-1]` and scores it
against the behaviour policy's `agent_outputs[1:]` and the rewards and episode
ends of `env_outputs[1:]`.

An actor's unroll over its N environments is one `Trajectory` with batch
dimension N; `split` cuts it into N single-environment trajectories (no batch
dimension), which travel to the learner, and `batch` stacks B of them into
the learner's time-major batch.
"""

import collections

import numpy as np
import tensorflow as tf
import tree

from impala_tf import agents

Trajectory = collections.namedtuple(
    'Trajectory',
    [
        'level_name',  # str, or str [B]: the level that was played.
        'policy_version',  # int64 [B]: learner updates when acting began.
        # bool [B]: drawn again from replay (`replay.ReplayTransport`); what
        # actors send is new, False.
        'replayed',
        'agent_state',  # The core state before env_outputs[0]: nest of [B, ...].
        'env_outputs',  # agents.EnvOutput, fields [T + 1, B, ...].
        'agent_outputs',  # agents.AgentOutput, fields [T + 1, B, ...].
    ])

# The fields the learner's compiled step consumes (numbers only).
LEARNER_FIELDS = ('replayed', 'agent_state', 'env_outputs', 'agent_outputs')


def unroll_spec(agent, unroll_length, frame_shape, instruction_length):
  """`tf.TensorSpec`s of an actor's unroll of any number N of environments.

  Args:
    agent: the `agents.Agent` acting (for its actions and core state).
    unroll_length: T.
    frame_shape: (H, W, C) of the uint8 frames.
    instruction_length: L of the instructions' word ids (0: none).

  Returns:
    A `Trajectory` of specs: level_name, policy_version and replayed `[N]`,
    agent_state `[N, ...]`, env_outputs and agent_outputs `[T + 1, N, ...]`.
  """
  steps = (unroll_length + 1, None)
  return Trajectory(
      level_name=tf.TensorSpec([None], tf.string),
      policy_version=tf.TensorSpec([None], tf.int64),
      replayed=tf.TensorSpec([None], tf.bool),
      agent_state=tf.nest.map_structure(
          lambda x: tf.TensorSpec((None,) + tuple(x.shape[1:]), x.dtype),
          agent.initial_state(1)),
      env_outputs=agents.EnvOutput(
          reward=tf.TensorSpec(steps, tf.float32),
          done=tf.TensorSpec(steps, tf.bool),
          frame=tf.TensorSpec(steps + tuple(frame_shape), tf.uint8),
          instruction=tf.TensorSpec(steps + (instruction_length,),
                                    tf.int32)),
      agent_outputs=agents.AgentOutput(
          action=tf.TensorSpec(steps, tf.int32),
          policy_logits=tf.TensorSpec(steps + (agent.num_actions,),
                                      tf.float32),
          baseline=tf.TensorSpec(steps, tf.float32)))


def map_unroll(unroll, per_environment, per_step):
  """`per_environment` applied to an unroll's `[N, ...]` fields (level
  name, policy version, replayed, core state), `per_step` to its
  `[T + 1, N, ...]` ones (env and agent outputs); arrays, tensors or specs
  alike."""
  return Trajectory(
      level_name=per_environment(unroll.level_name),
      policy_version=per_environment(unroll.policy_version),
      replayed=per_environment(unroll.replayed),
      agent_state=tree.map_structure(per_environment, unroll.agent_state),
      env_outputs=tree.map_structure(per_step, unroll.env_outputs),
      agent_outputs=tree.map_structure(per_step, unroll.agent_outputs))


def split(trajectory):
  """A trajectory of batch N -> N trajectories without the batch dimension."""
  return [
      map_unroll(trajectory, lambda x, i=index: x[i],
                 lambda x, i=index: x[:, i])
      for index in range(len(trajectory.level_name))
  ]


def batch(trajectories):
  """B trajectories from `split` -> one time-major trajectory of batch B."""
  def stack_batch_major(*xs):
    return np.stack(xs)

  def stack_time_major(*xs):
    return np.stack(xs, axis=1)

  return Trajectory(
      level_name=np.array([t.level_name for t in trajectories]),
      policy_version=np.array([t.policy_version for t in trajectories],
                              np.int64),
      replayed=np.array([t.replayed for t in trajectories], bool),
      agent_state=tree.map_structure(
          stack_batch_major, *[t.agent_state for t in trajectories]),
      env_outputs=tree.map_structure(
          stack_time_major, *[t.env_outputs for t in trajectories]),
      agent_outputs=tree.map_structure(
          stack_time_major, *[t.agent_outputs for t in trajectories]))


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
      level_name=np.array(['random'] * batch_size),
      policy_version=np.zeros([batch_size], np.int64),
      replayed=np.zeros([batch_size], bool),
      agent_state=tree.map_structure(np.asarray,
                                     agent.initial_state(batch_size)),
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
