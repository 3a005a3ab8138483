"""Batched environments: what an actor steps.

An actor drives N environments at once so that one inference call serves all
of them. Every batched environment here speaks `EnvOutput` with
fields `[N, ...]` and follows the official code's convention: when an
episode ends, the environment is reset at once and the step returns the new
episode's first observation with the last reward and `done = True`.

A *game* is what scores report (an Atari game spans several life-loss
episodes); `step` lists the games that just finished.

Two implementations serve every domain:
- `ProcessEnvironments`: any `dm_env.Environment`, each in its own process
  (the paper's `py_process`), so stepping runs beside the learner;
- `atari57.environment.AtariVectorEnvironment`: ale-py's C++ vector
  environment, threads inside one process (faster for Atari; see
  docs/benchmarks.md).
"""

import abc
import collections
import contextlib
import multiprocessing
import os
import signal
import sys
import traceback
import zlib

import numpy as np

# Environments run in their own processes: nothing here imports TensorFlow.

EnvOutput = collections.namedtuple(
    'EnvOutput',
    [
        'reward',  # float32 [...]: reward of the step that led here.
        'done',  # bool [...]: True on the first observation of an episode.
        'frame',  # uint8 [..., H, W, C].
        'instruction',  # int32 [..., L]: word ids, trailing 0s pad (L >= 0).
    ])

# What an environment with language instructions (DMLab) observes; other
# environments observe the frame alone.
Observation = collections.namedtuple(
    'Observation',
    [
        'frame',  # uint8 [H, W, C].
        'instruction',  # int32 [L]: `instruction_ids`.
    ])

INSTRUCTION_HASH_BUCKETS = 1000  # As the official code; ids 1..1000.

FinishedGame = collections.namedtuple(
    'FinishedGame',
    [
        'level_name',  # str.
        'episode_return',  # float: the undiscounted, unclipped game return.
        'episode_frames',  # int: environment frames of the game.
        'env_index',  # int: which of the N environments played it.
    ])


class BatchedEnvironment(abc.ABC):
  """N environments stepped together."""

  @property
  @abc.abstractmethod
  def level_names(self):
    """list of N str: the level each environment plays."""

  @property
  def num_envs(self):
    return len(self.level_names)

  @abc.abstractmethod
  def reset(self):
    """Starts every environment; returns `EnvOutput` `[N, ...]`, done True."""

  @abc.abstractmethod
  def step(self, actions):
    """Steps every environment.

    Args:
      actions: int `[N]`.

    Returns:
      (`EnvOutput` `[N, ...]`, list of `FinishedGame`).
    """

  def close(self):
    """Frees the environments."""


def instruction_ids(text, max_words):
  """Hashes an instruction's words into padded word ids.

  Hashing happens in the environment, so that trajectories carry fixed-shape
  integers rather than strings. Each whitespace-separated word goes to one
  of `INSTRUCTION_HASH_BUCKETS` buckets by its CRC-32 (stable across
  processes, unlike `hash`); id 0 is padding.

  Args:
    text: str, '' for none.
    max_words: L; longer instructions are truncated.

  Returns:
    int32 `[L]`: word ids in [1, 1000], then trailing 0s.
  """
  ids = np.zeros([max_words], np.int32)
  words = text.split()[:max_words]
  ids[:len(words)] = [
      zlib.crc32(word.encode('utf-8')) % INSTRUCTION_HASH_BUCKETS + 1
      for word in words
  ]
  return ids


def env_output(reward, done, observation):
  """An `EnvOutput` of numpy arrays from one environment's values.

  Args:
    reward: float.
    done: bool.
    observation: uint8 `[H, W, C]` frame, or an `Observation`.
  """
  if not isinstance(observation, Observation):
    observation = Observation(observation, np.zeros([0], np.int32))
  return EnvOutput(
      reward=np.float32(reward),
      done=np.bool_(done),
      frame=observation.frame,
      instruction=observation.instruction)


class _GameTracker:
  """Turns a dm_env environment's time steps into `EnvOutput`s and games.

  An environment may describe games spanning several episodes by the
  attributes `game_over` and `game_return` (as `AtariEnvironment` does);
  otherwise each episode is a game.
  """

  def __init__(self, environment, level_name, env_index, num_action_repeats):
    self._environment = environment
    self._level_name = level_name
    self._env_index = env_index
    self._num_action_repeats = num_action_repeats
    self._episode_return = 0.0
    self._episode_steps = 0

  def reset(self):
    timestep = self._environment.reset()
    return env_output(0.0, True, timestep.observation)

  def step(self, action):
    """Steps, resets at episode ends; returns (EnvOutput, FinishedGame|None)."""
    timestep = self._environment.step(action)
    reward = timestep.reward or 0.0
    self._episode_return += reward
    self._episode_steps += 1
    if not timestep.last():
      return env_output(reward, False, timestep.observation), None
    game = None
    if getattr(self._environment, 'game_over', True):
      game_return = getattr(self._environment, 'game_return',
                            self._episode_return)
      game = FinishedGame(self._level_name, float(game_return),
                          self._episode_steps * self._num_action_repeats,
                          self._env_index)
      self._episode_return = 0.0
      self._episode_steps = 0
    first = self._environment.reset()
    return env_output(reward, True, first.observation), game


def _worker(connection, constructor, level_name, env_index,
            num_action_repeats):
  """A process's loop: serves 'reset', 'step' and 'close' for one env."""
  # A terminal's Ctrl-C reaches the whole process group; the parent stops
  # this process (with 'close') after its final checkpoint.
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  try:
    tracker = _GameTracker(constructor(), level_name, env_index,
                           num_action_repeats)
    connection.send(('ok', None))
    while True:
      command, argument = connection.recv()
      if command == 'reset':
        connection.send(('ok', tracker.reset()))
      elif command == 'step':
        connection.send(('ok', tracker.step(argument)))
      elif command == 'close':
        break
  except KeyboardInterrupt:
    pass
  except Exception as error:  # pylint: disable=broad-except
    connection.send(('error', f'{type(error).__name__}: {error}\n'
                     f'{traceback.format_exc()}'))
  finally:
    connection.close()


# One thread per environment process: numpy's BLAS would otherwise start a
# spinning thread pool per process, and 64 of them swamp the cores.
_SINGLE_THREADED = {'OPENBLAS_NUM_THREADS': '1', 'OMP_NUM_THREADS': '1',
                    'MKL_NUM_THREADS': '1'}


@contextlib.contextmanager
def _spawn_settings():
  """What spawned environment processes start with.

  - Single-threaded numerical libraries (`_SINGLE_THREADED`), through the
    environment variables the children inherit.
  - The parent's main script hidden: a spawned child imports the parent's
    `__main__` to find functions defined there, and ours is experiment.py,
    which imports TensorFlow (seconds and hundreds of MB per process).
    Constructors must therefore live in importable modules.
  """
  main = sys.modules['__main__']
  saved_main = {name: main.__dict__[name] for name in ('__file__', '__spec__')
                if name in main.__dict__}
  saved_environ = {name: os.environ.get(name) for name in _SINGLE_THREADED}
  main.__spec__ = None
  main.__dict__.pop('__file__', None)
  os.environ.update(_SINGLE_THREADED)
  try:
    yield
  finally:
    main.__dict__.update(saved_main)
    for name, value in saved_environ.items():
      if value is None:
        os.environ.pop(name)
      else:
        os.environ[name] = value


class ProcessEnvironments(BatchedEnvironment):
  """dm_env environments, each in its own process, stepped in parallel.

  `constructors[i]()` builds environment i inside its process, so it must be
  picklable (a top-level class or `functools.partial` of one). Processes are
  spawned, not forked: the parent holds TensorFlow's threads.
  """

  def __init__(self, constructors, level_names, num_action_repeats):
    if len(constructors) != len(level_names):
      raise ValueError('need one level name per constructor')
    for constructor in constructors:
      if getattr(constructor, 'func', constructor).__module__ == '__main__':
        raise ValueError(f'{constructor!r} is defined in the main script; '
                         'environment processes need it in a module')
    self._level_names = list(level_names)
    context = multiprocessing.get_context('spawn')
    self._connections = []
    self._processes = []
    with _spawn_settings():
      for index, (constructor, level_name) in enumerate(
          zip(constructors, level_names)):
        parent, child = context.Pipe()
        process = context.Process(
            target=_worker,
            args=(child, constructor, level_name, index, num_action_repeats),
            daemon=True)
        process.start()
        child.close()
        self._connections.append(parent)
        self._processes.append(process)
    self._gather()  # Every constructor ran.

  @property
  def level_names(self):
    return self._level_names

  def _gather(self):
    results = []
    for connection, level_name in zip(self._connections, self._level_names):
      try:
        status, value = connection.recv()
      except EOFError:
        raise RuntimeError(
            f'an environment process of {level_name} died') from None
      if status == 'error':
        raise RuntimeError(f'environment process failed: {value}')
      results.append(value)
    return results

  def reset(self):
    for connection in self._connections:
      connection.send(('reset', None))
    return _stack(self._gather())

  def step(self, actions):
    for connection, action in zip(self._connections, actions):
      connection.send(('step', int(action)))
    outputs, games = zip(*self._gather())
    return _stack(outputs), [game for game in games if game is not None]

  def close(self):
    for connection in self._connections:
      try:
        connection.send(('close', None))
      except (BrokenPipeError, OSError):
        pass
    for process in self._processes:
      process.join(timeout=5)
      if process.is_alive():
        process.terminate()


class InProcessEnvironments(BatchedEnvironment):
  """dm_env environments stepped in the caller's thread: for environments
  cheaper than a process round trip (tests, toy tasks)."""

  def __init__(self, environments, level_names, num_action_repeats):
    self._level_names = list(level_names)
    self._trackers = [
        _GameTracker(environment, level_name, index, num_action_repeats)
        for index, (environment, level_name) in enumerate(
            zip(environments, level_names))
    ]

  @property
  def level_names(self):
    return self._level_names

  def reset(self):
    return _stack([tracker.reset() for tracker in self._trackers])

  def step(self, actions):
    outputs, games = zip(*[
        tracker.step(int(action))
        for tracker, action in zip(self._trackers, actions)
    ])
    return _stack(outputs), [game for game in games if game is not None]


def _stack(env_outputs):
  return EnvOutput(*[np.stack(field) for field in zip(*env_outputs)])
