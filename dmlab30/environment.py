"""DeepMind Lab levels as the paper plays them, as a `dm_env.Environment`.

Table D.3 and the official code (scalable_agent's `environments.py` and
`experiment.py`): 96x72 RGB frames, each of Table D.2's 9 actions repeated
4 times (DeepMind Lab sums the rewards of the frames), and the language
levels' instruction. Test mode loads the held-out levels and sets the
evaluation mixer seed, so test episodes are not the training ones.

DeepMind Lab is built from source (README, section "DeepMind Lab"); its
Python module `deepmind_lab` is imported only when an environment is made,
so the rest of the project works without it. Environments run in their own
processes: nothing here imports TensorFlow.
"""

import importlib.util

import dm_env
from dm_env import specs
import numpy as np

from dmlab30 import level_cache as level_cache_lib
from dmlab30 import levels
from impala_tf import environments

# Table D.2, as 7-element native actions: [look left/right (pixels), look
# down/up (pixels), strafe left/right, move back/forward, fire, jump, crouch].
DEFAULT_ACTION_SET = (
    (0, 0, 0, 1, 0, 0, 0),  # Forward.
    (0, 0, 0, -1, 0, 0, 0),  # Backward.
    (0, 0, -1, 0, 0, 0, 0),  # Strafe left.
    (0, 0, 1, 0, 0, 0, 0),  # Strafe right.
    (-20, 0, 0, 0, 0, 0, 0),  # Look left.
    (20, 0, 0, 0, 0, 0, 0),  # Look right.
    (-20, 0, 0, 1, 0, 0, 0),  # Forward + look left.
    (20, 0, 0, 1, 0, 0, 0),  # Forward + look right.
    (0, 0, 0, 0, 1, 0, 0),  # Fire.
)

MAX_INSTRUCTION_WORDS = 16
# The official code's mixer seed for evaluation (DeepMind Lab mixes it into
# every episode's seed).
EVALUATION_MIXER_SEED = 0x600D5EED

MISSING_MODULE = (
    "DeepMind Lab's Python module deepmind_lab is missing; build and "
    'install it as the README says (section "DeepMind Lab")')


def check_installed():
  """Raises ImportError(`MISSING_MODULE`) unless deepmind_lab can be
  imported; does not import it."""
  if importlib.util.find_spec('deepmind_lab') is None:
    raise ImportError(MISSING_MODULE)


class DmLabEnvironment(dm_env.Environment):
  """One DeepMind Lab level. Observations: `environments.Observation`.

  DeepMind Lab has no observation once an episode has ended, so the last
  step of an episode repeats the observation before it.
  """

  def __init__(self,
               level_name,
               seed=0,
               num_action_repeats=4,
               is_test=False,
               dataset_path=None,
               width=96,
               height=72,
               level_cache_dir=None):
    """
    Args:
      level_name: str, `dmlab/<level>` (`levels.level_script`); DMLab-30's
        held-out levels only with `is_test`.
      seed: int: seeds the episodes' seeds, as the official code.
      num_action_repeats: frames each action is repeated for.
      is_test: load held-out levels, with the evaluation mixer seed.
      dataset_path: str or None: the Brady-Konkle-Oliva images the
        psychlab levels need.
      width: frame width in pixels.
      height: frame height in pixels.
      level_cache_dir: str, None or '': where compiled maps are shared
        (`level_cache.LevelCache`); None or '': every map is compiled.

    Raises:
      ImportError: DeepMind Lab's Python module is not installed.
      ValueError: `level_name` is not of the form `dmlab/<level>`.
    """
    script = levels.level_script(level_name)
    try:
      import deepmind_lab  # pylint: disable=g-import-not-at-top
    except ImportError:
      raise ImportError(MISSING_MODULE) from None
    config = {'width': str(width), 'height': str(height), 'logLevel': 'WARN'}
    if dataset_path:
      config['datasetPath'] = dataset_path
    if is_test:
      config['allowHoldOutLevels'] = 'true'
      config['mixerSeed'] = str(EVALUATION_MIXER_SEED)
    cache = (level_cache_lib.LevelCache(level_cache_dir) if level_cache_dir
             else None)
    self._lab = deepmind_lab.Lab(script, ['RGB_INTERLEAVED', 'INSTR'],
                                 config=config, level_cache=cache)
    self._native_actions = np.array(DEFAULT_ACTION_SET, np.intc)
    self._num_action_repeats = num_action_repeats
    self._random_state = np.random.RandomState(seed)
    self._frame_shape = (height, width, 3)
    self._observation = None

  def observation_spec(self):
    return environments.Observation(
        frame=specs.Array(self._frame_shape, np.uint8, 'frame'),
        instruction=specs.Array((MAX_INSTRUCTION_WORDS,), np.int32,
                                'instruction'))

  def action_spec(self):
    return specs.DiscreteArray(len(DEFAULT_ACTION_SET), name='action')

  def reset(self):
    self._lab.reset(seed=self._random_state.randint(0, 2**31 - 1))
    return dm_env.restart(self._read_observation())

  def step(self, action):
    reward = self._lab.step(self._native_actions[action],
                            num_steps=self._num_action_repeats)
    if not self._lab.is_running():
      return dm_env.termination(reward, self._observation)
    return dm_env.transition(reward, self._read_observation())

  def close(self):
    self._lab.close()

  def _read_observation(self):
    observations = self._lab.observations()
    self._observation = environments.Observation(
        frame=observations['RGB_INTERLEAVED'],
        instruction=environments.instruction_ids(observations['INSTR'],
                                                 MAX_INSTRUCTION_WORDS))
    return self._observation
