"""The Atari wrapper on real ALE games."""

import functools

import ale_py
import dm_env
import numpy as np
import tensorflow as tf

from atari57 import environment
from atari57 import scores
from impala_tf import environments


class AtariEnvironmentTest(tf.test.TestCase):

  def test_bad_names_get_a_clear_error(self):
    with self.assertRaisesRegex(ValueError, 'get_all_rom_ids'):
      environment.AtariEnvironment('atari/pongg')
    with self.assertRaisesRegex(ValueError, 'atari/<game>'):
      environment.AtariEnvironment('pong')

  def test_resize_averages_and_keeps_constants(self):
    matrix = environment._area_resize_matrix(210, 84)
    self.assertAllClose(np.ones(84), matrix.sum(axis=1), atol=1e-5)
    self.assertEqual((84, 210), matrix.shape)

  def test_pong_random_play(self):
    env = environment.AtariEnvironment('atari/pong', seed=1)
    self.assertEqual(6, env.action_spec().num_values)
    full = environment.AtariEnvironment('atari/pong', full_action_set=True)
    self.assertEqual(18, full.action_spec().num_values)
    timestep = env.reset()
    self.assertTrue(timestep.first())
    self.assertEqual((84, 84, 4), timestep.observation.shape)
    self.assertEqual(np.uint8, timestep.observation.dtype)
    rng = np.random.default_rng(0)
    rewards, frames = [], [timestep.observation]
    for _ in range(400):
      timestep = env.step(rng.integers(6))
      rewards.append(timestep.reward)
      frames.append(timestep.observation)
    self.assertTrue(set(rewards) <= {-1.0, 0.0, 1.0})
    self.assertIn(-1.0, rewards)  # Random play concedes points in 1600 frames.
    self.assertAllClose(sum(rewards), env.game_return)
    # The stack shifts: the newest frame becomes the one before it next step.
    self.assertAllEqual(frames[-2][..., 1:], frames[-1][..., :-1])
    self.assertGreater(np.std(frames[-1][..., -1].astype(float)), 10.0)

  def test_life_loss_ends_learning_episodes_but_not_the_game(self):
    env = environment.AtariEnvironment('atari/breakout', seed=0)
    env.reset()
    episodes, game_steps = 0, 0
    while not env.game_over:
      timestep = env.step(1)  # FIRE launches the ball after each lost life.
      game_steps += 1
      if timestep.last():
        episodes += 1
        self.assertEqual(0.0, timestep.discount)
        if not env.game_over:
          self.assertTrue(env.reset().first())
      self.assertLess(game_steps, 5000)
    self.assertEqual(5, episodes)  # Breakout has 5 lives.

  def test_the_stack_goes_on_after_a_lost_life_and_restarts_with_a_game(self):
    env = environment.AtariEnvironment('atari/breakout', seed=0)
    timestep = env.reset()
    lives_lost = 0
    while not env.game_over:
      previous = timestep.observation
      timestep = env.step(1)  # FIRE launches the ball after each lost life.
      if timestep.last() and not env.game_over:
        lives_lost += 1
        first = env.reset().observation
        # The stack holds the frames before the lost life, as in training.
        self.assertAllEqual(timestep.observation, first)
        self.assertAllEqual(previous[..., 1:], first[..., :-1])
        self.assertAllGreater(first.max(axis=(0, 1)), 0)
        timestep = env.step(1)
        self.assertAllEqual(first[..., 1:], timestep.observation[..., :-1])
    self.assertEqual(4, lives_lost)
    # A new game starts with its first frame alone.
    first = env.reset().observation
    self.assertEqual(0, first[..., :-1].max())
    self.assertGreater(first[..., -1].max(), 0)

  def test_noop_starts_vary_the_first_frame(self):
    first_frames = []
    for seed in range(4):
      env = environment.AtariEnvironment('atari/breakout', seed=seed,
                                         noop_starts=True)
      env.reset()
      first_frames.append(env.step(1).observation)
    self.assertTrue(any(
        np.any(first_frames[0] != frame) for frame in first_frames[1:]))



class _ReversedResults:
  """An `ale_py.ALEVectorInterface` that reports its environments last
  first, as ale-py's contract allows: results name their environments in
  `info['env_id']`, and `send` pairs action i with the environment of
  result i of the last `recv` (or `reset`)."""

  def __init__(self, ale):
    self._ale = ale

  def get_action_set(self):
    return self._ale.get_action_set()

  def reset(self, indices, seeds):
    frames, info = self._ale.reset(indices, seeds)
    return frames[::-1], {key: value[::-1] for key, value in info.items()}

  def send(self, actions, paddle_strength):
    # Result i was environment n - 1 - i.
    self._ale.send(actions[::-1], paddle_strength[::-1])

  def recv(self):
    *results, info = self._ale.recv()
    return (*[result[::-1] for result in results],
            {key: value[::-1] for key, value in info.items()})


class _ReversedVectorEnvironment(environment.AtariVectorEnvironment):

  @staticmethod
  def _vector_interface(*args):
    return _ReversedResults(
        environment.AtariVectorEnvironment._vector_interface(*args))


class AtariVectorEnvironmentTest(tf.test.TestCase):

  def test_noop_starts_vary_the_games_in_training(self):
    # The same actions from the one start state give the same frames in
    # every game; after 1-30 no-ops the games are out of step.
    def frames_after_40_steps(noop_starts):
      env = environment.AtariVectorEnvironment(
          ['atari/pong'] * 6, seed=1, noop_starts=noop_starts)
      env.reset()
      for _ in range(40):
        output, _ = env.step(np.zeros([6], np.int32))
      env.close()
      return output.frame

    same = frames_after_40_steps(noop_starts=False)
    self.assertTrue(all(np.array_equal(same[0], frame) for frame in same))
    varied = frames_after_40_steps(noop_starts=True)
    distinct = {frame.tobytes() for frame in varied}
    self.assertGreater(len(distinct), 3)

  def test_frames_match_the_numpy_wrapper(self):
    # Without sticky actions or no-ops both emulate the same game; only the
    # resize differs (ale-py's C++ one against our exact area average).
    vector = environment.AtariVectorEnvironment(['atari/breakout'] * 2)
    single = environment.AtariEnvironment('atari/breakout')
    vector_output = vector.reset()
    frame = single.reset().observation
    self.assertEqual((2, 84, 84, 4), vector_output.frame.shape)
    for step in range(40):
      action = step % 4
      difference = np.abs(vector_output.frame[0].astype(float) - frame)
      self.assertLess(difference.mean(), 2.0, step)
      vector_output, _ = vector.step(np.full([2], action))
      frame = single.step(action).observation
    vector.close()

  def test_the_stack_holds_consecutive_frames_newest_last(self):
    env = environment.AtariVectorEnvironment(['atari/pong'] * 2)
    output = env.reset()
    # A game starts with its first frame alone, in the last channel.
    self.assertEqual(0, output.frame[..., :3].max())
    self.assertAllGreater(output.frame[..., 3].max(axis=(1, 2)), 0)
    rng = np.random.default_rng(0)
    newest_changed = 0
    for step in range(100):
      previous = output.frame
      output, _ = env.step(rng.integers(0, 6, size=2))
      self.assertFalse(output.done.any())  # Pong's first game goes on.
      # Each step drops the oldest frame and appends the newest.
      self.assertAllEqual(previous[..., 1:], output.frame[..., :-1], step)
      newest_changed += np.sum(np.any(
          output.frame[..., 3] != output.frame[..., 2], axis=(1, 2)))
    # Real, moving game frames in every channel, not repeats or padding.
    self.assertGreater(newest_changed, 0.9 * 2 * 100)
    self.assertAllGreater(output.frame.std(axis=(1, 2)), 10.0)
    env.close()

  def test_rewards_and_episode_ends_match_the_numpy_wrapper(self):
    # The numpy wrapper in its own process, as test mode runs it: the same
    # actions give the same rewards, lost lives and game ends on the same
    # steps, and a game's end comes with the next game's first frame.
    vector = environment.AtariVectorEnvironment(['atari/breakout'])
    single = environments.ProcessEnvironments(
        [functools.partial(environment.AtariEnvironment, 'atari/breakout')],
        ['atari/breakout'], num_action_repeats=4)
    self.addCleanup(single.close)
    vector.reset()
    single.reset()
    rng = np.random.default_rng(0)
    rewards, episode_ends, games, steps_after_game = 0, 0, [], 0
    for step in range(400):
      actions = rng.integers(0, 4, size=1)
      vector_output, vector_games = vector.step(actions)
      single_output, single_games = single.step(actions)
      self.assertEqual(single_output.reward[0], vector_output.reward[0], step)
      self.assertEqual(single_output.done[0], vector_output.done[0], step)
      self.assertEqual(single_games, vector_games, step)
      # Whole stacks: both keep theirs after a lost life and restart them
      # with a new game (only the resize differs).
      difference = np.abs(vector_output.frame[0].astype(float) -
                          single_output.frame[0])
      self.assertLess(difference.mean(), 2.0, step)
      if vector_output.done[0] and not vector_games:
        self.assertAllGreater(vector_output.frame[0].max(axis=(0, 1)), 0)
      if vector_games:
        self.assertEqual(0, vector_output.frame[0, ..., :3].max())
        self.assertEqual(0, single_output.frame[0, ..., :3].max())
      rewards += vector_output.reward[0] != 0
      episode_ends += vector_output.done[0]
      games += vector_games
      steps_after_game += bool(games)
      if steps_after_game == 20:  # Both went on with the same new game.
        break
    self.assertLen(games, 1)
    self.assertEqual(5, episode_ends)  # 4 lost lives, then the game's end.
    self.assertGreater(rewards, 0)
    vector.close()

  def test_life_loss_ends_learning_episodes_but_not_the_game(self):
    env = environment.AtariVectorEnvironment(['atari/breakout'])
    self.assertEqual(4, env.num_actions)
    self.assertTrue(env.reset().done[0])
    episode_ends, rewards, steps = 0, 0.0, 0
    games = []
    while not games:
      output, games = env.step(np.ones([1], np.int32))  # FIRE.
      rewards += output.reward[0]
      steps += 1
      episode_ends += int(output.done[0])
      self.assertLess(steps, 5000)
    self.assertEqual(5, episode_ends)  # 4 lost lives, then the game's end.
    (game,) = games
    self.assertEqual('atari/breakout', game.level_name)
    self.assertEqual(rewards, game.episode_return)
    self.assertEqual(steps * 4, game.episode_frames)
    # The game was reset: the step returned the new game's first frame,
    # whose stack holds a single frame.
    self.assertEqual(0, output.frame[0, ..., :3].max())
    env.close()

  def test_several_games_play_as_each_alone(self):
    # Environment i is seeded seed + i and plays its own game: the same
    # frames, rewards and finished games as that game in a vector of one.
    mixed = environment.AtariVectorEnvironment(
        ['atari/pong', 'atari/breakout', 'atari/pong'], seed=5,
        full_action_set=True)
    alone = [
        environment.AtariVectorEnvironment([level], seed=5 + index,
                                           full_action_set=True)
        for index, level in enumerate(
            ['atari/pong', 'atari/breakout', 'atari/pong'])
    ]
    self.assertEqual(18, mixed.num_actions)
    mixed_output = mixed.reset()
    alone_outputs = [env.reset() for env in alone]
    rng = np.random.default_rng(0)
    finished = []
    for step in range(700):
      for index, output in enumerate(alone_outputs):
        for field in ('frame', 'reward', 'done'):
          self.assertAllEqual(getattr(output, field)[0],
                              getattr(mixed_output, field)[index],
                              f'{field} of env {index} at step {step}')
      actions = rng.integers(0, 18, size=3)
      mixed_output, games = mixed.step(actions)
      finished += [(game.level_name, game.env_index, game.episode_return)
                   for game in games]
      alone_outputs = [env.step(actions[index:index + 1])[0]
                       for index, env in enumerate(alone)]
    # Random play loses a Breakout game within 700 steps.
    self.assertIn('atari/breakout', [level for level, _, _ in finished])
    self.assertEqual({1}, {index for level, index, _ in finished
                           if level == 'atari/breakout'})

  def test_actions_and_results_pair_with_their_environments_in_any_order(self):
    # ale-py pairs the actions it is sent with the environments of its last
    # results, in their order, which need not be ours (its synchronous mode
    # keeps ours): every environment must still get its own action and
    # return its own results.
    levels = ['atari/pong', 'atari/breakout', 'atari/pong', 'atari/pong']
    ordered = environment.AtariVectorEnvironment(levels, seed=3,
                                                 full_action_set=True)
    reversed_ = _ReversedVectorEnvironment(levels, seed=3,
                                           full_action_set=True)
    ordered_output, reversed_output = ordered.reset(), reversed_.reset()
    rng = np.random.default_rng(0)
    for step in range(50):
      for field in ('frame', 'reward', 'done'):
        self.assertAllEqual(getattr(ordered_output, field),
                            getattr(reversed_output, field),
                            f'{field} at step {step}')
      actions = rng.integers(0, 18, size=len(levels))
      ordered_output, _ = ordered.step(actions)
      reversed_output, _ = reversed_.step(actions)
    ordered.close()
    reversed_.close()

  def test_all_18_actions_act_in_every_game(self):
    # ale-py gives Skiing 9 legal actions (no fire button; its vector
    # environment stalled on the others): fire actions move as without it.
    env = environment.AtariVectorEnvironment(
        ['atari/skiing'] * 18 + ['atari/pong'], full_action_set=True)
    env.reset()
    for _ in range(30):
      output, _ = env.step(np.arange(19) % 18)  # Environment i: action i.
    names = [action.name for action in ale_py.Action]
    right = output.frame[names.index('RIGHT')]
    self.assertAllEqual(right, output.frame[names.index('RIGHTFIRE')])
    self.assertAllEqual(output.frame[names.index('NOOP')],
                        output.frame[names.index('FIRE')])
    self.assertNotAllEqual(right, output.frame[names.index('LEFT')])
    numpy_skiing = environment.AtariEnvironment('atari/skiing',
                                                full_action_set=True)
    self.assertEqual(18, numpy_skiing.action_spec().num_values)

  def test_several_games_need_the_full_action_set(self):
    with self.assertRaisesRegex(ValueError, 'full action set'):
      environment.AtariVectorEnvironment(['atari/pong', 'atari/breakout'])

  def test_every_game_of_the_suite_loads_with_18_actions(self):
    env = environment.AtariVectorEnvironment(scores.LEVELS,
                                             full_action_set=True)
    self.assertEqual(18, env.num_actions)
    self.assertEqual((57, 84, 84, 4), env.reset().frame.shape)
    for _ in range(30):
      output, _ = env.step(np.zeros([57], np.int32))  # NOOP.
    # 57 different games on screen: 57 different frames.
    self.assertLen({frame.tobytes() for frame in output.frame[..., -1]}, 57)


if __name__ == '__main__':
  tf.test.main()
