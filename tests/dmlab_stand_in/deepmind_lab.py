"""A stand-in for DeepMind Lab's Python module `deepmind_lab`, for tests.

It follows the contract of `deepmind_lab.Lab` as DeepMind Lab documents it
(docs/users/python_api.md) and as its C module (python/dmlab_module.c)
enforces it: string-valued config, `reset(episode, seed)`, `step(action,
num_steps)` with an `np.intc` action of shape [7] returning the reward summed
over the frames, observations only while an episode runs, and the same
exception types. It is not an emulator: an episode is a few hundred frames in
which the frame's colour shows whether moving forward or backward pays, 1
per frame; language levels add an instruction of a few words. Stricter than
the real module in one way: unknown config keys are refused (the real one
hands them to the level script), to catch misspelt settings.

The directory holding this file is not a package; tests put it on `sys.path`
so that `import deepmind_lab` finds it there and nowhere else.
"""

import numpy as np

from dmlab30 import scores

# DMLab-30 and the paper's one level outside it (Tables 1 and 2).
_LEVELS = frozenset(
    [scores.level_path(level)
     for level in scores.TRAIN_LEVELS + scores.TEST_LEVELS] +
    ['seekavoid_arena_01'])
_CONFIG_KEYS = frozenset(('width', 'height', 'fps', 'datasetPath', 'logLevel',
                          'allowHoldOutLevels', 'mixerSeed'))
_OBSERVATIONS = ('RGB_INTERLEAVED', 'INSTR')
_ACTION_SPEC = (
    {'name': 'LOOK_LEFT_RIGHT_PIXELS_PER_FRAME', 'min': -512, 'max': 512},
    {'name': 'LOOK_DOWN_UP_PIXELS_PER_FRAME', 'min': -512, 'max': 512},
    {'name': 'STRAFE_LEFT_RIGHT', 'min': -1, 'max': 1},
    {'name': 'MOVE_BACK_FORWARD', 'min': -1, 'max': 1},
    {'name': 'FIRE', 'min': 0, 'max': 1},
    {'name': 'JUMP', 'min': 0, 'max': 1},
    {'name': 'CROUCH', 'min': 0, 'max': 1},
)
_MOVE_BACK_FORWARD = 3
_COLOURS = ('red', 'green', 'blue', 'yellow')
_OBJECTS = ('hat', 'can', 'ball', 'car')

# Every Lab's constructor arguments, in order of construction: what tests
# inspect to see what a wrapper asked for.
LAB_ARGUMENTS = []


class Lab:
  """One level; see the module docstring."""

  def __init__(self, level, observations, config=None, renderer='software',
               level_cache=None):
    if not isinstance(observations, list):
      raise TypeError('argument 2 must be list')
    config = dict(config or {})
    for key, value in config.items():
      if not isinstance(key, str) or not isinstance(value, str):
        raise TypeError('bad argument type for built-in operation')
      if key not in _CONFIG_KEYS:
        raise RuntimeError(f"Failed to apply setting '{key} = {value}'")
    if renderer not in ('software', 'hardware'):
      raise RuntimeError('Failed to set renderer must be "hardware" or '
                         f'"software" actual "{renderer}"!')
    if level not in _LEVELS:
      raise RuntimeError(f"Invalid levelName flag '{level}'")
    if (level.endswith('_test') and
        config.get('allowHoldOutLevels') != 'true'):
      # As DeepMind Lab's test_only decorator on the held-out levels.
      raise RuntimeError('Failed to init environment - "This level must only '
                         'be used during evaluation."')
    for name in observations:
      if name not in _OBSERVATIONS:
        raise ValueError(f"Unknown observation '{name}'.")
    LAB_ARGUMENTS.append({'level': level, 'observations': list(observations),
                          'config': config, 'renderer': renderer,
                          'level_cache': level_cache})
    self._observation_names = list(observations)
    self._shape = (int(config.get('height', 240)),
                   int(config.get('width', 320)), 3)
    self._mixer_seed = int(config.get('mixerSeed', 0))
    self._is_language = level.split('/')[-1].startswith('language_')
    self._closed = False
    self._running = False
    self._num_steps = 0

  def reset(self, episode=-1, seed=None):
    del episode  # Episodes are drawn from the seed alone here.
    if self._closed:
      raise RuntimeError('Failed to start environment - "closed"')
    if seed is None:
      seed = np.random.randint(2**31)
    elif not isinstance(seed, int):  # As the real one: numpy ints fail.
      raise ValueError(
          f"'seed' must be int or None, was '{type(seed).__name__}'.")
    self._random = np.random.RandomState([seed % 2**32, self._mixer_seed])
    self._episode_frames = int(self._random.randint(200, 400))
    self._goal = self._random.choice((-1, 1))
    self._instruction = ''
    if self._is_language:
      self._instruction = (f'pick the {self._random.choice(_COLOURS)} '
                           f'{self._random.choice(_OBJECTS)}')
    self._num_steps = 0
    self._running = True
    return True

  def step(self, action, num_steps=1):
    if not isinstance(action, np.ndarray):
      raise TypeError('argument 1 must be numpy.ndarray, not '
                      f'{type(action).__name__}')
    if not self._running:
      raise RuntimeError('Environment in wrong status to advance.')
    if action.shape != (len(_ACTION_SPEC),):
      raise ValueError(f'action must have shape ({len(_ACTION_SPEC)})')
    if action.dtype != np.intc:
      raise ValueError('action must have dtype np.intc')
    frames = min(num_steps, self._episode_frames - self._num_steps)
    reward = float(frames) if action[_MOVE_BACK_FORWARD] == self._goal else 0.0
    # As the real module, counts the frames asked for even past the end.
    self._num_steps += num_steps
    self._running = self._num_steps < self._episode_frames
    self._goal = self._random.choice((-1, 1))
    return reward

  def observations(self):
    if not self._running:
      raise RuntimeError(
          'Environment in wrong status for call to observations()')
    frame = np.zeros(self._shape, np.uint8)
    frame[..., 0 if self._goal == 1 else 2] = 255
    frame[..., 1] = self._num_steps % 256
    values = {'RGB_INTERLEAVED': frame, 'INSTR': self._instruction}
    return {name: values[name] for name in self._observation_names}

  def is_running(self):
    return self._running

  def num_steps(self):
    return self._num_steps

  def observation_spec(self):
    return [{'name': 'RGB_INTERLEAVED', 'shape': self._shape,
             'dtype': np.uint8},
            {'name': 'INSTR', 'shape': (), 'dtype': str}]

  def action_spec(self):
    return [dict(spec) for spec in _ACTION_SPEC]

  def close(self):
    closed_now = not self._closed
    self._closed = True
    self._running = False
    return closed_now
