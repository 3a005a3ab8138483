"""Batched environments: processes and in-process stepping agree, episode
ends follow the official convention, errors reach the caller."""

import functools
import multiprocessing
import os
import signal

import numpy as np
import tensorflow as tf

from catch import environment as catch
from impala_tf import environments


class EnvironmentsTest(tf.test.TestCase):

  def test_instruction_ids(self):
    # zlib.crc32 of each word mod 1000, plus 1: fixed across processes.
    self.assertAllEqual([924, 79, 456, 538, 0, 0],
                        environments.instruction_ids('pick the red hat', 6))
    self.assertAllEqual([79, 79], environments.instruction_ids(
        ' the\tthe  the ', max_words=2))
    self.assertAllEqual(np.zeros(16), environments.instruction_ids('', 16))
    self.assertEqual(np.int32, environments.instruction_ids('a', 1).dtype)

  def test_processes_outlive_a_terminal_ctrl_c(self):
    # Ctrl-C signals the whole process group; the environments must keep
    # serving until the learner has written its checkpoint and closes them.
    processes = environments.ProcessEnvironments(
        [functools.partial(catch.Catch, seed=index) for index in range(2)],
        ['catch/plain'] * 2, 1)
    try:
      processes.reset()
      children = multiprocessing.active_children()
      self.assertNotEmpty(children)
      for child in children:
        os.kill(child.pid, signal.SIGINT)
      for _ in range(5):
        output, _ = processes.step(np.zeros(2, np.int32))
      self.assertEqual((2,), output.reward.shape)
      self.assertTrue(all(child.is_alive() for child in children))
    finally:
      processes.close()

  def test_processes_match_in_process_stepping(self):
    num_envs = 3
    names = ['catch/plain'] * num_envs
    in_process = environments.InProcessEnvironments(
        [catch.Catch(seed=index) for index in range(num_envs)], names, 1)
    processes = environments.ProcessEnvironments(
        [functools.partial(catch.Catch, seed=index)
         for index in range(num_envs)], names, 1)
    try:
      expected, actual = in_process.reset(), processes.reset()
      self.assertTrue(actual.done.all())
      rng = np.random.default_rng(0)
      all_games = []
      for step in range(30):
        actions = rng.integers(0, catch.NUM_ACTIONS, num_envs)
        (expected, expected_games), (actual, games) = (
            in_process.step(actions), processes.step(actions))
        for field in expected._fields:
          self.assertAllEqual(getattr(expected, field),
                              getattr(actual, field), f'{field} @ {step}')
        self.assertEqual(expected_games, games)
        all_games += games
        # An episode's last reward arrives with the next episode's first
        # frame and done = True (the ball back in the top row).
        for index in np.flatnonzero(actual.done):
          self.assertIn(actual.reward[index], (-1.0, 1.0))
          self.assertEqual(255, actual.frame[index, :catch.PIXELS_PER_CELL]
                           .max())
      # Catch episodes last 9 steps: 3 per environment in 30 steps.
      self.assertLen(all_games, 3 * num_envs)
      self.assertEqual({9}, {game.episode_frames for game in all_games})
      self.assertCountEqual(list(range(num_envs)) * 3,
                            [game.env_index for game in all_games])
    finally:
      processes.close()

  def test_a_failing_constructor_is_reported(self):
    with self.assertRaisesRegex(RuntimeError, 'unexpected keyword'):
      environments.ProcessEnvironments(
          [functools.partial(catch.Catch, no_such_argument=1)], ['x'], 1)

  def test_constructors_from_the_main_script_are_refused(self):
    def constructor():
      return catch.Catch()
    constructor.__module__ = '__main__'
    with self.assertRaisesRegex(ValueError, 'main script'):
      environments.ProcessEnvironments([constructor], ['x'], 1)


if __name__ == '__main__':
  tf.test.main()
