"""DeepMind Lab levels by name: `dmlab/<level>` names any level script the
engine has, so the paper's single-level tasks (Table 1's and Table 2's
`seekavoid_arena_01`) run beside DMLab-30's.

- A DMLab-30 name (`dmlab/rooms_watermaze`) is DeepMind Lab's
  `contributed/dmlab30/rooms_watermaze`, as the official code names them.
- Any other name is the script's path under the engine's
  `game_scripts/levels/` without `.lua`: `dmlab/seekavoid_arena_01`,
  `dmlab/tests/empty_room_test`, `dmlab/contributed/psychlab/visual_search`.

Nothing here imports `deepmind_lab`: the installed module's level scripts
are found on disk next to it.
"""

import importlib.util
import os
import re

from dmlab30 import scores

PREFIX = 'dmlab/'
_SCRIPT_PATH = re.compile(r'[A-Za-z0-9_\-]+(/[A-Za-z0-9_\-]+)*')


def level_script(level_name):
  """The level script DeepMind Lab loads for `level_name`.

  Args:
    level_name: str, `dmlab/<level>`.

  Returns:
    str, e.g. 'contributed/dmlab30/rooms_watermaze' or 'seekavoid_arena_01'.

  Raises:
    ValueError: not of the form `dmlab/<level script path>`.
  """
  script = level_name[len(PREFIX):] if level_name.startswith(PREFIX) else ''
  if not _SCRIPT_PATH.fullmatch(script):
    raise ValueError(
        f'bad DeepMind Lab level name {level_name!r}: levels look like '
        f'dmlab/seekavoid_arena_01 or {scores.TRAIN_LEVELS[2]}')
  if level_name in scores.TEST_LEVEL_OF or level_name in scores.TEST_LEVELS:
    return scores.level_path(level_name)
  return script


def installed_levels_directory():
  """The installed engine's `game_scripts/levels` directory, or None when
  the module is missing or not laid out as DeepMind Lab's pip package (its
  runfiles beside the module)."""
  spec = importlib.util.find_spec('deepmind_lab')
  if spec is None:
    return None
  locations = list(spec.submodule_search_locations or [])
  if spec.origin:
    locations.append(os.path.dirname(spec.origin))
  for location in locations:
    directory = os.path.join(location, 'baselab', 'game_scripts', 'levels')
    if os.path.isdir(directory):
      return directory
  return None


def check_engine_has(level_name):
  """Raises ValueError unless the installed engine has `level_name`'s script
  (levels are not checked where the engine's files cannot be found)."""
  directory = installed_levels_directory()
  script = level_script(level_name)
  if directory and not os.path.isfile(
      os.path.join(directory, script + '.lua')):
    raise ValueError(
        f'DeepMind Lab has no level {level_name!r} (no {script}.lua under '
        f'{directory})')
