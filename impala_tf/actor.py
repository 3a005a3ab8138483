"""Actors: they only act. Each drives a batch of environments with the
newest policy and sends unrolls of `unroll_length` steps to the learner.

Inference goes through `Policy`, which either calls the agent directly or
merges the concurrent calls of all actors into one batched forward pass
(`dynamic_batching`), as the paper's actors do.
"""

import time

import numpy as np
import tensorflow as tf
import tree

from impala_tf import agents
from impala_tf import dynamic_batching
from impala_tf import trajectory as trajectory_lib
from impala_tf import transport as transport_lib


class Policy:
  """The agent's `step` for actors: numpy in, numpy out.

  With `dynamic_batching`, calls from several threads are merged into one
  forward pass of at most `maximum_batch_size` rows, waiting at most
  `timeout_ms` for `minimum_batch_size` rows.
  """

  def __init__(self, agent, dynamic_batching_enabled=True,
               minimum_batch_size=1, maximum_batch_size=1024,
               timeout_ms=100):
    # agent.step has no Python control flow on tensors: no AutoGraph.
    self._step = tf.function(agent.step, reduce_retracing=True,
                             autograph=False)
    self._batcher = None
    if dynamic_batching_enabled:
      self._batcher = dynamic_batching.DynamicBatcher(
          self._infer, minimum_batch_size, maximum_batch_size, timeout_ms)

  def _infer(self, last_action, env_output, core_state):
    outputs = self._step(last_action, env_output, core_state)
    return tree.map_structure(lambda x: x.numpy(), outputs)

  def __call__(self, last_action, env_output, core_state):
    """Acts for `[N]` environments.

    Args:
      last_action: int32 `[N]`.
      env_output: `agents.EnvOutput` of `[N, ...]`.
      core_state: the agent's core state for these N environments.

    Returns:
      (`agents.AgentOutput` of numpy `[N, ...]`, the new core state).
    """
    if self._batcher:
      return self._batcher(last_action, env_output, core_state)
    return self._infer(last_action, env_output, core_state)

  def close(self):
    if self._batcher:
      self._batcher.close()


class Actor:
  """Steps a `BatchedEnvironment` and sends its unrolls through a transport.

  Every unroll is one `Trajectory` over the N environments; the transport
  splits it into N single-environment trajectories for the learner's queue.
  """

  def __init__(self, environment, policy, transport, unroll_length,
               initial_state, num_actions, on_finished_game=None):
    """Args:
      environment: `environments.BatchedEnvironment` of N environments.
      policy: `Policy` (or any callable with its signature).
      transport: a `transport.ActorSide`.
      unroll_length: T.
      initial_state: the agent's core state for N environments, numpy.
      num_actions: A, for the zero agent output before the first step.
      on_finished_game: called with each `environments.FinishedGame`.
    """
    self._environment = environment
    self._policy = policy
    self._transport = transport
    self._unroll_length = unroll_length
    self._core_state = initial_state
    self._num_actions = num_actions
    self._on_finished_game = on_finished_game or (lambda game: None)
    # For hang detection: when the actor last stepped or sent, and whether
    # it waits on the learner now (a full queue is no hang).
    self.last_progress = time.monotonic()
    self.waiting_on_learner = False
    self.level_names = list(environment.level_names)

  def run(self):
    """Acts until the transport closes."""
    num_envs = self._environment.num_envs
    level_names = np.array(self.level_names)
    env_output = self._environment.reset()
    agent_output = agents.AgentOutput(
        action=np.zeros([num_envs], np.int32),
        policy_logits=np.zeros([num_envs, self._num_actions], np.float32),
        baseline=np.zeros([num_envs], np.float32))
    try:
      while True:
        self.waiting_on_learner = True
        policy_version = self._transport.policy_version()
        self.waiting_on_learner = False
        self.last_progress = time.monotonic()
        initial_state = self._core_state
        env_outputs, agent_outputs = [env_output], [agent_output]
        for _ in range(self._unroll_length):
          agent_output, self._core_state = self._policy(
              agent_output.action, env_output, self._core_state)
          env_output, games = self._environment.step(agent_output.action)
          self.last_progress = time.monotonic()
          for game in games:
            self._on_finished_game(game)
          env_outputs.append(env_output)
          agent_outputs.append(agent_output)
        unroll = trajectory_lib.Trajectory(
            level_name=level_names,
            policy_version=np.full([num_envs], policy_version, np.int64),
            replayed=np.zeros([num_envs], bool),
            agent_state=initial_state,
            env_outputs=tree.map_structure(lambda *xs: np.stack(xs),
                                           *env_outputs),
            agent_outputs=tree.map_structure(lambda *xs: np.stack(xs),
                                             *agent_outputs))
        self.waiting_on_learner = True
        self._transport.send(unroll)
        self.waiting_on_learner = False
        self.last_progress = time.monotonic()
    except transport_lib.Closed:
      return


class ActorError(RuntimeError):
  """An actor thread (or the environment it steps) failed."""


class ActorHang(RuntimeError):
  """An actor made no step for longer than the hang limit."""
