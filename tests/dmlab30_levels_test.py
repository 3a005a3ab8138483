"""DeepMind Lab levels by name (dmlab30/levels.py): DMLab-30 names, any
other level script, malformed names, and levels the installed engine lacks
(found on disk beside a fake installed module)."""

import importlib
import os
import sys
from unittest import mock

import tensorflow as tf

from dmlab30 import levels
import experiment
from tests import pipeline_util


def _fake_engine(root, scripts):
  """A `deepmind_lab` package laid out as DeepMind Lab's pip package, with
  empty level scripts at `scripts` (paths without .lua)."""
  package = os.path.join(root, 'deepmind_lab')
  for script in scripts:
    path = os.path.join(package, 'baselab', 'game_scripts', 'levels',
                        script + '.lua')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
      f.write('return {}\n')
  with open(os.path.join(package, '__init__.py'), 'w') as f:
    f.write('')
  return root


class LevelsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    # Found on sys.path, not as another test's import left it.
    self.enter_context(mock.patch.dict(sys.modules))
    sys.modules.pop('deepmind_lab', None)

  def test_dmlab30_names_are_the_contributed_scripts(self):
    self.assertEqual('contributed/dmlab30/rooms_watermaze',
                     levels.level_script('dmlab/rooms_watermaze'))
    self.assertEqual(
        'contributed/dmlab30/rooms_collect_good_objects_test',
        levels.level_script('dmlab/rooms_collect_good_objects_test'))

  def test_other_names_are_script_paths(self):
    self.assertEqual('seekavoid_arena_01',
                     levels.level_script('dmlab/seekavoid_arena_01'))
    self.assertEqual('contributed/psychlab/visual_search',
                     levels.level_script(
                         'dmlab/contributed/psychlab/visual_search'))

  def test_malformed_names_are_refused(self):
    for bad in ('seekavoid_arena_01', 'dmlab/', 'dmlab/../secret',
                'dmlab/a//b', 'dmlab/level.lua', 'atari/pong'):
      with self.assertRaisesRegex(ValueError, 'bad DeepMind Lab level name',
                                  msg=bad):
        levels.level_script(bad)

  def test_the_installed_engines_scripts_decide(self):
    root = _fake_engine(self.create_tempdir().full_path,
                        ['seekavoid_arena_01',
                         'contributed/dmlab30/rooms_watermaze'])
    sys.path.insert(0, root)
    importlib.invalidate_caches()
    self.addCleanup(sys.path.remove, root)
    self.assertEqual(
        os.path.join(root, 'deepmind_lab', 'baselab', 'game_scripts',
                     'levels'), levels.installed_levels_directory())
    levels.check_engine_has('dmlab/seekavoid_arena_01')
    levels.check_engine_has('dmlab/rooms_watermaze')
    with self.assertRaisesRegex(ValueError,
                                'DeepMind Lab has no level .*seekavoid_arena_02'):
      levels.check_engine_has('dmlab/seekavoid_arena_02')
    # Through the flags: one UsageError line, as any bad level.
    with self.assertRaisesRegex(experiment.UsageError,
                                '^DeepMind Lab has no level'):
      pipeline_util.config(level_name='dmlab/lt_chasm')
    config = pipeline_util.config(level_name='dmlab/seekavoid_arena_01')
    self.assertEqual(['dmlab/seekavoid_arena_01'], config.levels)

  def test_an_engine_without_its_scripts_beside_it_is_not_checked(self):
    # A module laid out otherwise (as tests' stand-in): the engine itself
    # refuses a level it lacks, in its environment process.
    root = self.create_tempdir().full_path
    with open(os.path.join(root, 'deepmind_lab.py'), 'w') as f:
      f.write('')
    sys.path.insert(0, root)
    importlib.invalidate_caches()
    self.addCleanup(sys.path.remove, root)
    self.assertIsNone(levels.installed_levels_directory())
    levels.check_engine_has('dmlab/any_level_at_all')


if __name__ == '__main__':
  tf.test.main()
