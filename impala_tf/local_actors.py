"""Actors in threads of this process: which levels they play, and the
pool of their environments, threads and shared policy."""

import collections
import threading
import time

import numpy as np
import tensorflow as tf

from impala_tf import actor as actor_lib
from impala_tf import os_threads


# The actors' configuration.
ActorSettings = collections.namedtuple(
    'ActorSettings',
    [
        'num_actors',  # Environments acting, over all actor tasks.
        'num_actor_threads',  # Threads per process; each steps a batch.
        'unroll_length',  # T of a trajectory.
        'dynamic_batching',  # Merge the threads' inference calls.
        'inference_min_batch_size',  # Dynamic batching's minimum rows.
        'inference_timeout_ms',  # Its longest wait for them.
        'actor_hang_secs',  # A thread without a step this long: an error.
    ])


def assign_levels(levels, num_actors):
  """The level of each actor: round-robin, as the paper's multi-task runs."""
  return [levels[index % len(levels)] for index in range(num_actors)]


def split_evenly(items, parts):
  """`items` cut into `parts` contiguous runs differing in length by <= 1."""
  bounds = np.linspace(0, len(items), parts + 1).round().astype(int)
  return [items[start:end] for start, end in zip(bounds[:-1], bounds[1:])]


def actor_level_names(levels, num_actors, num_tasks, task):
  """The levels actor task `task` of `num_tasks` plays: its share of the
  `num_actors` environments, whose levels go round-robin over all of
  them."""
  return split_evenly(assign_levels(levels, num_actors), num_tasks)[task]


class ActorPool:
  """This process's actors: one `Actor` per batched environment, each in
  its own thread, sharing one `Policy`; started at once.

  An actor's crash, or a hang of more than `hang_secs` without a step while
  not waiting on the learner, closes the transport and is re-raised by
  `check`. It lives here, not in actor.py, beside the level assignment it
  serves: it alone knows the actors' settings (`for_levels`), which `Actor`
  and `Policy` stay free of.
  """

  WATCH_SECONDS = 1.0  # How often the watchdog looks.

  def __init__(self, environments, agent, transport, unroll_length,
               on_finished_game=None, hang_secs=None,
               dynamic_batching_enabled=False, minimum_batch_size=1,
               timeout_ms=100):
    """Args:
      environments: `environments.BatchedEnvironment`s, one per thread; the
        pool closes them in `stop`.
      agent: acts through a `Policy` of at most all environments' rows.
      transport: a `transport.ActorSide`.
      unroll_length: T.
      on_finished_game: called with each `environments.FinishedGame`.
      hang_secs: the hang limit; None for no watch.
      dynamic_batching_enabled, minimum_batch_size, timeout_ms: `Policy`'s.
    """
    self._environments = environments
    self._transport = transport
    self._hang_secs = hang_secs
    self._errors = []
    self._policy = actor_lib.Policy(
        agent, dynamic_batching_enabled, minimum_batch_size=minimum_batch_size,
        maximum_batch_size=sum(env.num_envs for env in environments),
        timeout_ms=timeout_ms)
    self._actors = [
        actor_lib.Actor(
            env, self._policy, transport, unroll_length,
            initial_state=tf.nest.map_structure(
                lambda x: x.numpy(), agent.initial_state(env.num_envs)),
            num_actions=agent.num_actions, on_finished_game=on_finished_game)
        for env in environments
    ]
    self._threads = [
        threading.Thread(target=self._run, args=(actor,), daemon=True,
                         name=f'actor_{index}')
        for index, actor in enumerate(self._actors)
    ]
    if hang_secs:
      self._threads.append(threading.Thread(
          target=self._watch, daemon=True, name='actor_watchdog'))
    for thread in self._threads:
      thread.start()

  @classmethod
  def for_levels(cls, settings, make_environments, level_names, agent,
                 transport, on_finished_game, seed):
    """Actors for `level_names` in `num_actor_threads` threads.

    Args:
      settings: `ActorSettings`.
      make_environments: (level_names, seed) -> a BatchedEnvironment, the
        suite's training environments.
      level_names: one per environment.
      agent, transport, on_finished_game: as `__init__`'s.
      seed: of the first thread's environments.
    """
    environments = [
        make_environments(names, seed + 10_000 * index)
        for index, names in enumerate(
            split_evenly(level_names, min(settings.num_actor_threads,
                                          len(level_names))))
    ]
    return cls(environments, agent, transport, settings.unroll_length,
               on_finished_game, hang_secs=settings.actor_hang_secs,
               dynamic_batching_enabled=settings.dynamic_batching,
               minimum_batch_size=settings.inference_min_batch_size,
               timeout_ms=settings.inference_timeout_ms)

  @property
  def num_threads(self):
    return len(self._environments)

  def _run(self, actor):
    os_threads.name_current_thread()
    try:
      actor.run()
    except Exception as error:  # pylint: disable=broad-except
      self._errors.append(error)
      self._transport.close()

  def _watch(self):
    while not self._transport.closed:
      time.sleep(self.WATCH_SECONDS)
      now = time.monotonic()
      for index, actor in enumerate(self._actors):
        if (not actor.waiting_on_learner
            and now - actor.last_progress > self._hang_secs):
          levels = sorted(set(actor.level_names))
          self._errors.append(actor_lib.ActorHang(
              f'actor thread {index} ({", ".join(levels)}) made no step '
              f'for {self._hang_secs:g} s (--actor_hang_secs)'))
          self._transport.close()
          return

  @property
  def errors(self):
    """The exceptions that ended actor threads."""
    return list(self._errors)

  def check(self):
    """Raises the first actor error, if any."""
    if self._errors:
      error = self._errors[0]
      # The first line only: an environment process's error carries its
      # traceback after it.
      message = str(error).strip().splitlines()[0] if str(error) else ''
      raise actor_lib.ActorError(
          f'an actor failed: {type(error).__name__}: {message}') from error

  def stop(self):
    """Closes the transport, then joins the threads (not a hung one: it
    would never return) and frees the policy and environments."""
    self._transport.close()
    if not any(isinstance(error, actor_lib.ActorHang)
               for error in self._errors):
      for thread in self._threads:
        thread.join(timeout=30)
    self._policy.close()
    for env in self._environments:
      env.close()
