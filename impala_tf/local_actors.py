"""Actors in threads of this process: which levels they play, and the
bundle of their environments, threads and shared policy."""

import numpy as np
import tensorflow as tf

from impala_tf import actor as actor_lib


def assign_levels(levels, num_actors):
  """The level of each actor: round-robin, as the paper's multi-task runs."""
  return [levels[index % len(levels)] for index in range(num_actors)]


def split_evenly(items, parts):
  """`items` cut into `parts` contiguous runs differing in length by <= 1."""
  bounds = np.linspace(0, len(items), parts + 1).round().astype(int)
  return [items[start:end] for start, end in zip(bounds[:-1], bounds[1:])]


def actor_level_names(config, task):
  """The levels actor task `task` plays: its share of the `num_actors`
  environments, whose levels go round-robin over all of them."""
  all_level_names = assign_levels(config.levels, config.num_actors)
  shares = split_evenly(all_level_names, len(config.actor_hosts))
  return shares[task]


class Actors:
  """Actors for `level_names` in `num_actor_threads` threads, acting with
  `agent` and sending through `transport`; started at once."""

  def __init__(self, config, domain, level_names, agent, transport,
               on_finished_game, seed):
    self._transport = transport
    self._policy = actor_lib.Policy(
        agent, config.dynamic_batching,
        minimum_batch_size=config.inference_min_batch_size,
        maximum_batch_size=len(level_names),
        timeout_ms=config.inference_timeout_ms)
    self._environments = [
        domain.training_environments(config, names, seed + 10_000 * index)
        for index, names in enumerate(
            split_evenly(level_names, min(config.num_actor_threads,
                                          len(level_names))))
    ]
    self.threads = actor_lib.ActorThreads([
        actor_lib.Actor(
            env, self._policy, transport, config.unroll_length,
            initial_state=tf.nest.map_structure(
                lambda x: x.numpy(), agent.initial_state(env.num_envs)),
            num_actions=agent.num_actions, on_finished_game=on_finished_game)
        for env in self._environments
    ], transport, hang_secs=config.actor_hang_secs)
    self.threads.start()

  @property
  def num_threads(self):
    return len(self._environments)

  def stop(self):
    """Closes the transport, then joins and frees everything."""
    self._transport.close()
    self.threads.join()
    self._policy.close()
    for env in self._environments:
      env.close()
