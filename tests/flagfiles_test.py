"""Every flag file a suite ships (atari57/*.flags, dmlab30/*.flags) parses,
sets only flags experiment.py knows, and gives a configuration that passes
its checks."""

import glob
import os

from absl import flags
from absl.testing import flagsaver
import tensorflow as tf

import experiment
from tests import pipeline_util  # pylint: disable=unused-import (parses flags)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FlagFilesTest(tf.test.TestCase):

  def test_flag_files_parse_into_checked_configurations(self):
    paths = sorted(glob.glob(os.path.join(REPO_ROOT, '*', '*.flags')))
    self.assertNotEmpty(paths)
    for path in paths:
      with flagsaver.flagsaver():
        argv = flags.FLAGS.read_flags_from_files([f'--flagfile={path}'])
        self.assertNotEmpty(argv, path)
        for argument in argv:
          name = argument.lstrip('-').split('=', 1)[0]
          self.assertIn(name, flags.FLAGS, f'{path}: unknown flag {name}')
        flags.FLAGS(['experiment.py'] + argv)
        config = experiment.make_config(flags.FLAGS)
        self.assertEqual('train', config.mode, path)

  def test_the_atari_preset_sets_what_it_says(self):
    path = os.path.join(REPO_ROOT, 'atari57', 'atari_10m.flags')
    with flagsaver.flagsaver():
      argv = flags.FLAGS.read_flags_from_files([f'--flagfile={path}'])
      flags.FLAGS(['experiment.py'] + argv)
      config = experiment.make_config(flags.FLAGS)
    self.assertEqual(8, config.batch_size)
    self.assertEqual(1e-5, config.learner.epsilon)
    self.assertEqual(6e-4, config.learner.learning_rate)  # The paper's.
    self.assertTrue(config.agent.normalize_frames)
    self.assertEqual(10_000_000, config.total_environment_frames)
    self.assertEqual(20_000_000, config.learner.learning_rate_anneal_frames)
    self.assertEqual(0.003, config.learner.entropy_cost)
    self.assertEqual(16, config.actors.num_actors)
    self.assertEqual(0.75, config.replay_proportion)
    self.assertEqual(10_000, config.replay_capacity)  # The paper's.
    # What the preset leaves alone stays the paper's (Table G.1).
    self.assertEqual(20, config.actors.unroll_length)
    self.assertEqual(40.0, config.learner.max_grad_norm)


if __name__ == '__main__':
  tf.test.main()
