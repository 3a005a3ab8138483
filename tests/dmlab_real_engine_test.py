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
import signal
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
# What the engine says when a level's map or texture is missing from the
# build.
MISSING_FILE = re.compile(r'(could not|couldn\'t|can\'t|cannot|failed to) '
                          r'(find|load|open)|not found|no such file',
                          re.IGNORECASE)
SHORT_RUN = dict(level_name='dmlab/seekavoid_arena_01', num_actors=2,
                 num_actor_threads=2, batch_size=2, unroll_length=10)


def _constructor(level_name, seed, is_test=False):
  return functools.partial(
      environment.DmLabEnvironment, level_name, seed=seed, is_test=is_test,
      dataset_path='dummy' if level_name in NEEDS_DATASET else None)


def _first_steps(level_name, num_steps, seed=0, is_test=False):
  """The first observation and `num_steps` steps of a level, in its own
  process (a failed load cannot take the test down)."""
  env = environments.ProcessEnvironments(
      [_constructor(level_name, seed, is_test)], [level_name], 4)
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
      try:
        outputs = _first_steps(level, 3,
                               is_test=level not in scores.TRAIN_LEVELS)
      except RuntimeError as error:
        cannot_load[level] = str(error)
        continue
      for output in outputs:
        self.assertEqual((1, 72, 96, 3), output.frame.shape, level)
        self.assertEqual(np.uint8, output.frame.dtype, level)
        self.assertEqual((1, environment.MAX_INSTRUCTION_WORDS),
                         output.instruction.shape, level)
      self.assertGreater(np.ptp(outputs[-1].frame), 0, level)  # Rendered.
    for level, reason in cannot_load.items():
      logging.warning('%s cannot load in this build: %s', level,
                      reason.splitlines()[0])
      self.assertRegex(reason, MISSING_FILE, level)
    self.assertLessEqual(len(cannot_load), 3, sorted(cannot_load))

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
    logdir = self.create_tempdir().full_path
    command = [sys.executable, os.path.join(REPO_ROOT, 'experiment.py'),
               f'--logdir={logdir}', '--progress_interval_secs=1',
               '--total_environment_frames=1e9'] + [
                   f'--{name}={value}' for name, value in SHORT_RUN.items()]
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               cwd=REPO_ROOT)
    for line in process.stdout:  # Wait until it trains.
      if line.startswith('frames '):
        break
    process.send_signal(signal.SIGINT)
    output, errors = process.communicate(timeout=120)
    self.assertEqual(0, process.returncode, errors[-2000:])
    stopped = re.search(r'Stopped at ([\d,]+) frames', output)
    self.assertIsNotNone(stopped, output)
    frames = int(stopped.group(1).replace(',', ''))
    self.assertGreater(frames, 0)
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True,
                               cwd=REPO_ROOT)
    first_line = process.stdout.readline()
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=120)
    self.assertIn(f'at {frames:,} frames', first_line)


if __name__ == '__main__':
  tf.test.main()
