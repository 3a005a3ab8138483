"""The DMLab-30 wrapper on the `deepmind_lab` stand-in (tests/dmlab_stand_in),
and the stand-in's own keeping of DeepMind Lab's contract."""

import os
import subprocess
import sys
from unittest import mock

import dm_env
import numpy as np
import tensorflow as tf

from dmlab30 import environment

# The stand-in is importable only from here, never as the real module.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                'dmlab_stand_in'))
import deepmind_lab  # pylint: disable=g-import-not-at-top,wrong-import-position

_REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Table D.2 of the paper, written out independently of the module.
TABLE_D2 = (
    (0, 0, 0, 1, 0, 0, 0),
    (0, 0, 0, -1, 0, 0, 0),
    (0, 0, -1, 0, 0, 0, 0),
    (0, 0, 1, 0, 0, 0, 0),
    (-20, 0, 0, 0, 0, 0, 0),
    (20, 0, 0, 0, 0, 0, 0),
    (-20, 0, 0, 1, 0, 0, 0),
    (20, 0, 0, 1, 0, 0, 0),
    (0, 0, 0, 0, 1, 0, 0),
)
FORWARD, BACKWARD, FIRE = 0, 1, 8


def forward_pays(timestep):
  """The stand-in shows in red that moving forward pays, in blue backward."""
  return timestep.observation.frame[0, 0, 0] == 255


def play_episode(env, policy):
  """Returns (rewards, observations) of one episode from reset to its end."""
  timestep = env.reset()
  rewards, observations = [], [timestep.observation]
  while not timestep.last():
    timestep = env.step(policy(timestep))
    rewards.append(timestep.reward)
    observations.append(timestep.observation)
  return rewards, observations


class DmLabEnvironmentTest(tf.test.TestCase):

  def test_shapes_dtypes_and_specs(self):
    env = environment.DmLabEnvironment('dmlab/rooms_watermaze', seed=1)
    timestep = env.reset()
    self.assertTrue(timestep.first())
    self.assertEqual((72, 96, 3), timestep.observation.frame.shape)
    self.assertEqual(np.uint8, timestep.observation.frame.dtype)
    self.assertEqual((16,), timestep.observation.instruction.shape)
    self.assertEqual(np.int32, timestep.observation.instruction.dtype)
    spec = env.observation_spec()
    spec.frame.validate(timestep.observation.frame)
    spec.instruction.validate(timestep.observation.instruction)
    self.assertEqual(9, env.action_spec().num_values)
    small = environment.DmLabEnvironment('dmlab/rooms_watermaze', width=32,
                                         height=24)
    self.assertEqual((24, 32, 3), small.reset().observation.frame.shape)

  def test_actions_are_table_d2_repeated(self):
    calls = []
    original_step = deepmind_lab.Lab.step

    def recording_step(lab, action, num_steps=1):
      calls.append((action.copy(), num_steps))
      return original_step(lab, action, num_steps)

    env = environment.DmLabEnvironment('dmlab/rooms_watermaze',
                                       num_action_repeats=3)
    env.reset()
    with mock.patch.object(deepmind_lab.Lab, 'step', recording_step):
      for action in range(9):
        env.step(action)
    self.assertAllEqual(np.array(TABLE_D2), np.stack([a for a, _ in calls]))
    self.assertEqual([3] * 9, [num_steps for _, num_steps in calls])
    self.assertEqual(np.intc, calls[0][0].dtype)
    self.assertEqual(TABLE_D2, environment.DEFAULT_ACTION_SET)

  def test_rewards_are_summed_over_the_repeats(self):
    for repeats in (1, 4):
      env = environment.DmLabEnvironment('dmlab/rooms_watermaze', seed=2,
                                         num_action_repeats=repeats)
      rewards, _ = play_episode(
          env, lambda t: FORWARD if forward_pays(t) else BACKWARD)
      # The episode's last step may be cut short by its end.
      self.assertEqual([float(repeats)] * (len(rewards) - 1), rewards[:-1])
      self.assertBetween(rewards[-1], 1.0, repeats)
      wrong, _ = play_episode(
          env, lambda t: BACKWARD if forward_pays(t) else FORWARD)
      self.assertEqual(0.0, sum(wrong))

  def test_episode_end_repeats_the_last_observation(self):
    env = environment.DmLabEnvironment('dmlab/language_execute_random_task',
                                       seed=3)
    timestep = env.reset()
    observations = [timestep.observation]
    while not timestep.last():
      timestep = env.step(FIRE)
      observations.append(timestep.observation)
    self.assertEqual(0.0, timestep.discount)  # A termination.
    self.assertBetween(len(observations), 51, 101)  # 200-399 frames / 4.
    self.assertAllEqual(observations[-2].frame, observations[-1].frame)
    self.assertAllEqual(observations[-2].instruction,
                        observations[-1].instruction)
    self.assertTrue(np.any(observations[-1].instruction > 0))
    self.assertTrue(env.reset().first())
    self.assertEqual(dm_env.StepType.MID, env.step(FORWARD).step_type)

  def test_episodes_are_deterministic_given_the_seed(self):
    def frames(seed, is_test=False):
      env = environment.DmLabEnvironment('dmlab/rooms_watermaze', seed=seed,
                                         is_test=is_test)
      _, observations = play_episode(env, lambda t: FORWARD)
      return np.stack([o.frame[0, 0] for o in observations])

    self.assertAllEqual(frames(5), frames(5))
    self.assertFalse(np.array_equal(frames(5), frames(6)))
    # The evaluation mixer seed gives other episodes for the same seed.
    self.assertFalse(np.array_equal(frames(5), frames(5, is_test=True)))

  def test_episode_seeds_as_the_official_code(self):
    env = environment.DmLabEnvironment('dmlab/rooms_watermaze', seed=7)
    with mock.patch.object(deepmind_lab.Lab, 'reset', autospec=True,
                           side_effect=deepmind_lab.Lab.reset) as reset:
      env.reset()
      env.reset()
    seeds = [call.kwargs['seed'] for call in reset.call_args_list]
    random_state = np.random.RandomState(7)
    self.assertEqual([random_state.randint(0, 2**31 - 1) for _ in range(2)],
                     seeds)

  def test_instructions_on_language_levels_only(self):
    language = environment.DmLabEnvironment(
        'dmlab/language_select_described_object', seed=1)
    ids = language.reset().observation.instruction
    self.assertTrue(np.all(ids[:4] > 0))
    self.assertAllEqual(np.zeros(12), ids[4:])
    self.assertAllInRange(ids, 0, 1000)
    other = environment.DmLabEnvironment('dmlab/explore_goal_locations_small')
    self.assertAllEqual(np.zeros(16), other.reset().observation.instruction)

  def test_config_reaches_the_lab(self):
    environment.DmLabEnvironment('dmlab/rooms_collect_good_objects_train')
    arguments = deepmind_lab.LAB_ARGUMENTS[-1]
    self.assertEqual('contributed/dmlab30/rooms_collect_good_objects_train',
                     arguments['level'])
    self.assertEqual(['RGB_INTERLEAVED', 'INSTR'], arguments['observations'])
    self.assertEqual({'width': '96', 'height': '72', 'logLevel': 'WARN'},
                     arguments['config'])
    environment.DmLabEnvironment('dmlab/rooms_collect_good_objects_test',
                                 is_test=True, dataset_path='/data/brady')
    self.assertEqual(
        {'width': '96', 'height': '72', 'logLevel': 'WARN',
         'allowHoldOutLevels': 'true', 'mixerSeed': str(0x600D5EED),
         'datasetPath': '/data/brady'},
        deepmind_lab.LAB_ARGUMENTS[-1]['config'])

  def test_held_out_levels_need_test_mode(self):
    with self.assertRaisesRegex(RuntimeError, 'evaluation'):
      environment.DmLabEnvironment('dmlab/rooms_collect_good_objects_test')

  def test_unknown_levels_are_refused(self):
    with self.assertRaisesRegex(ValueError, 'bad DeepMind Lab level name'):
      environment.DmLabEnvironment('rooms_watermaze')
    # A well-formed name is the engine's to refuse.
    with self.assertRaisesRegex(RuntimeError, 'Invalid levelName'):
      environment.DmLabEnvironment('dmlab/rooms_watermazes')

  def test_levels_outside_dmlab30_load_their_own_script(self):
    environment.DmLabEnvironment('dmlab/seekavoid_arena_01').reset()
    self.assertEqual('seekavoid_arena_01',
                     deepmind_lab.LAB_ARGUMENTS[-1]['level'])

  def test_level_cache_is_handed_to_the_engine(self):
    directory = self.get_temp_dir()
    environment.DmLabEnvironment('dmlab/rooms_watermaze',
                                 level_cache_dir=directory)
    cache = deepmind_lab.LAB_ARGUMENTS[-1]['level_cache']
    source = os.path.join(directory, 'compiled.pk3')
    with open(source, 'wb') as f:
      f.write(b'map bytes')
    cache.write('explore_maze_noaas_0123', source)
    copy = os.path.join(self.get_temp_dir(), 'fetched.pk3')
    self.assertTrue(cache.fetch('explore_maze_noaas_0123', copy))
    with open(copy, 'rb') as f:
      self.assertEqual(b'map bytes', f.read())
    self.assertFalse(cache.fetch('another_key', copy))
    environment.DmLabEnvironment('dmlab/rooms_watermaze')
    self.assertIsNone(deepmind_lab.LAB_ARGUMENTS[-1]['level_cache'])

  def test_missing_deepmind_lab_and_no_tensorflow(self):
    # A fresh process without the stand-in on its path, as an environment
    # process on a machine without DeepMind Lab.
    script = (
        'import sys\n'
        "sys.modules['deepmind_lab'] = None  # Absent even if installed.\n"
        'from dmlab30 import environment\n'
        "assert 'tensorflow' not in sys.modules\n"
        "environment.DmLabEnvironment('dmlab/rooms_watermaze')\n")
    result = subprocess.run([sys.executable, '-c', script], cwd=_REPOSITORY,
                            capture_output=True, text=True, check=False)
    self.assertNotEqual(0, result.returncode)
    last_line = result.stderr.strip().splitlines()[-1]
    self.assertEqual(
        "ImportError: DeepMind Lab's Python module deepmind_lab is missing; "
        'build and install it as the README says (section "DeepMind Lab")',
        last_line)
    self.assertNotIn('During handling', result.stderr)


class StandInContractTest(tf.test.TestCase):

  def lab(self, level='contributed/dmlab30/rooms_watermaze', **config):
    return deepmind_lab.Lab(level, ['RGB_INTERLEAVED', 'INSTR'],
                            config={'width': '8', 'height': '6', **config})

  def test_action_dtype_and_shape(self):
    lab = self.lab()
    lab.reset(seed=1)
    with self.assertRaisesRegex(ValueError, 'dtype np.intc'):
      lab.step(np.zeros(7, np.int64))
    with self.assertRaisesRegex(ValueError, r'shape \(7\)'):
      lab.step(np.zeros(9, np.intc))
    with self.assertRaisesRegex(ValueError, r'shape \(7\)'):
      lab.step(np.zeros((1, 7), np.intc))
    with self.assertRaises(TypeError):
      lab.step([0] * 7)
    self.assertEqual(0, lab.num_steps())
    lab.step(np.zeros(7, np.intc), num_steps=4)
    self.assertEqual(4, lab.num_steps())

  def test_config_values_must_be_strings(self):
    with self.assertRaises(TypeError):
      self.lab(width=96)
    with self.assertRaisesRegex(RuntimeError, 'Failed to apply setting'):
      self.lab(widht='96')
    lab = self.lab(datasetPath='/d', logLevel='WARN', mixerSeed='1',
                   allowHoldOutLevels='true')
    lab.reset(seed=0)
    self.assertEqual((6, 8, 3), lab.observations()['RGB_INTERLEAVED'].shape)

  def test_levels_seeds_and_observations(self):
    with self.assertRaisesRegex(RuntimeError, 'Invalid levelName'):
      self.lab('rooms_watermaze')
    with self.assertRaisesRegex(ValueError, 'Unknown observation'):
      deepmind_lab.Lab('contributed/dmlab30/rooms_watermaze', ['RGBD'])
    lab = self.lab()
    with self.assertRaisesRegex(ValueError, "'seed' must be int"):
      lab.reset(seed=np.int64(1))
    with self.assertRaisesRegex(RuntimeError, 'wrong status'):
      lab.observations()
    lab.reset(seed=1)
    self.assertEqual('', lab.observations()['INSTR'])
    self.assertEqual(['RGB_INTERLEAVED', 'INSTR'],
                     [spec['name'] for spec in lab.observation_spec()])
    self.assertEqual(
        ['LOOK_LEFT_RIGHT_PIXELS_PER_FRAME', 'LOOK_DOWN_UP_PIXELS_PER_FRAME',
         'STRAFE_LEFT_RIGHT', 'MOVE_BACK_FORWARD', 'FIRE', 'JUMP', 'CROUCH'],
        [spec['name'] for spec in lab.action_spec()])

  def test_finished_episodes_have_no_observations(self):
    lab = self.lab()
    lab.reset(seed=1)
    while lab.is_running():
      lab.step(np.zeros(7, np.intc), num_steps=100)
    self.assertGreaterEqual(lab.num_steps(), 200)
    with self.assertRaisesRegex(RuntimeError, 'wrong status'):
      lab.observations()
    with self.assertRaisesRegex(RuntimeError, 'wrong status'):
      lab.step(np.zeros(7, np.intc))
    self.assertTrue(lab.close())
    self.assertFalse(lab.close())
    self.assertFalse(lab.is_running())


if __name__ == '__main__':
  tf.test.main()
