"""The DMLab code on the real DeepMind Lab engine, where its Python module
`deepmind_lab` is installed (README, section "DeepMind Lab"); every test is
skipped, saying why, where it is not.

Every DMLab-30 level the build can load starts and steps with 72x96x3 uint8
frames; levels that cannot load are named with the engine's reason, and
the only reason accepted is a file missing from the build (the snapshot of
DeepMind Lab's source used here lacks its large natlab maps). Language
levels give instruction ids; the test-level switch loads the held-out
levels and mixes the evaluation seed into episodes; a few updates train on
`seekavoid_arena_01`; Ctrl-C writes a checkpoint and the run resumes.
"""

import functools
import importlib.util
import os
import re
import subprocess
import sys

from absl import logging
import numpy as np
import tensorflow as tf

from dmlab30 import environment
from dmlab30 import scores
from impala_tf import environments
from tests import pipeline_util

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_ENGINE = importlib.util.find_spec('deepmind_lab') is not None
SKIP_REASON = ("DeepMind Lab's Python module deepmind_lab is not installed "
               '(README, section "DeepMind Lab")')
# Two psychlab levels read an image dataset; DeepMind Lab plays them on
# generated images with this path.
NEEDS_DATASET = ('dmlab/psychlab_arbitrary_visuomotor_mapping',
                 'dmlab/psychlab_continuous_recognition')
# What the engine says when a level's map is missing from the build (it
# then ends its process).
MISSING_FILE = re.compile(r"Didn't find map|could not find|not found|"
                          r'no such file', re.IGNORECASE)
# Plays a level's first steps in a process of its own and prints the
# frames' shape, dtype and spread.
_PLAY_LEVEL = """
import sys
import numpy as np
from dmlab30 import environment
env = environment.DmLabEnvironment(sys.argv[1], is_test=sys.argv[2] == '1',
                                   dataset_path=sys.argv[3] or None)
frames = [env.reset().observation.frame]
frames += [env.step(step % 9).observation.frame for step in range(3)]
print('PLAYED', frames[-1].shape, frames[-1].dtype, np.ptp(frames[-1]))
"""
SHORT_RUN = dict(level_name='dmlab/seekavoid_arena_01', num_actors=2,
                 num_actor_threads=2, batch_size=2, unroll_length=10)


def _first_steps(level_name, num_steps, seed=0, is_test=False):
  """The first observation and `num_steps` steps of a level, in its own
  process (a failed load cannot take the test down)."""
  env = environments.ProcessEnvironments(
      [functools.partial(environment.DmLabEnvironment, level_name, seed=seed,
                         is_test=is_test)], [level_name], 4)
  try:
    outputs = [env.reset()]
    for step in range(num_steps):
      outputs.append(env.step(np.array([step % 9]))[0])
  finally:
    env.close()
  return outputs


class RealEngineTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    if not HAVE_ENGINE:
      self.skipTest(SKIP_REASON)

  def test_every_dmlab30_level_loads_or_names_its_missing_file(self):
    cannot_load = {}
    for level in scores.TRAIN_LEVELS + tuple(
        level for level in scores.TEST_LEVELS
        if level not in scores.TRAIN_LEVELS):
      result = subprocess.run(
          [sys.executable, '-c', _PLAY_LEVEL, level,
           '1' if level not in scores.TRAIN_LEVELS else '0',
           'dummy' if level in NEEDS_DATASET else ''],
          # A map compile takes seconds alone, minutes on a loaded machine.
          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
          check=False)
      played = [line for line in result.stdout.splitlines()
                if line.startswith('PLAYED')]
      if result.returncode or not played:
        output = result.stdout + result.stderr
        reasons = [line for line in output.splitlines()
                   if MISSING_FILE.search(line)]
        cannot_load[level] = reasons[0] if reasons else output[-500:]
        continue
      self.assertRegex(played[0], r'PLAYED \(72, 96, 3\) uint8 [1-9]', level)
    for level, reason in sorted(cannot_load.items()):
      logging.warning('%s cannot load in this build: %s', level, reason)
      self.assertRegex(reason, MISSING_FILE, level)
    # The snapshot lacks the natlab maps only.
    self.assertContainsSubset(cannot_load, [
        level for level in scores.TRAIN_LEVELS if 'natlab' in level])

  def test_language_levels_give_instruction_ids(self):
    for level in ('dmlab/language_select_described_object',
                  'dmlab/language_execute_random_task'):
      instruction = _first_steps(level, 1)[0].instruction[0]
      self.assertGreater(instruction[0], 0, level)
      self.assertTrue(np.all(instruction <= 1000), level)
    silent = _first_steps('dmlab/rooms_watermaze', 1)[0].instruction
    self.assertAllEqual(np.zeros_like(silent), silent)

  def test_the_test_switch_plays_held_out_levels_with_the_mixer_seed(self):
    held_out = 'dmlab/rooms_collect_good_objects_test'
    with self.assertRaisesRegex(RuntimeError, 'evaluation'):
      _first_steps(held_out, 0)
    self.assertLen(_first_steps(held_out, 1, is_test=True), 2)
    level = 'dmlab/explore_goal_locations_small'
    training = _first_steps(level, 0, seed=3)[0].frame
    self.assertAllEqual(training, _first_steps(level, 0, seed=3)[0].frame)
    testing = _first_steps(level, 0, seed=3, is_test=True)[0].frame
    self.assertNotAllEqual(training, testing)

  def test_a_few_updates_train(self):
    logdir = self.create_tempdir().full_path
    result = pipeline_util.train(logdir=logdir, total_environment_frames=800,
                                 **SHORT_RUN)
    self.assertEqual(800, result['frames'])
    self.assertGreater(result['updates'], 0)
    for name, value in result['last_stats'].items():
      self.assertTrue(np.isfinite(value), name)

  def test_ctrl_c_writes_a_checkpoint_and_the_run_resumes(self):
    status, errors, frames, first_line = pipeline_util.interrupt_and_resume(
        self.create_tempdir().full_path, timeout=120, **SHORT_RUN)
    self.assertEqual(0, status, errors[-2000:])
    self.assertIsNotNone(frames, errors[-2000:])
    self.assertGreater(frames, 0)
    self.assertIn(f'at {frames:,} frames', first_line)


if __name__ == '__main__':
  tf.test.main()
