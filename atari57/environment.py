"""Atari games preprocessed as in the paper, two ways.

Appendix G (after Mnih et al. 2016): 84x84 grayscale frames, each action
repeated 4 times with a max over the last 2 raw frames (Atari sprites
flicker), a stack of the last 4 frames, episodes ended on a life loss for
learning, no sticky actions, a 108,000-frame cap, and 1-30 random no-ops at
the start of test episodes.

- `AtariEnvironment`: one game as a `dm_env.Environment`, preprocessing in
  numpy. Test mode uses it (exact 1-30 no-op starts) through
  `environments.ProcessEnvironments`.
- `AtariVectorEnvironment`: many games stepped by ale-py's C++ vector
  environment (its own threads, preprocessing in C++), a
  `environments.BatchedEnvironment` for training: about 3x faster than the
  numpy wrapper (see docs/benchmarks.md).
"""

import collections

import ale_py
import ale_py.roms
import dm_env
from dm_env import specs
import numpy as np

from impala_tf import environments

FRAME_SIZE = 84
FRAME_STACK = 4
MAX_EPISODE_FRAMES = 108_000
MAX_NOOP_STARTS = 30
FULL_ACTION_SET_SIZE = 18


def game_id(level_name):
  """'atari/pong' -> 'pong', with a clear error for unknown games."""
  if not level_name.startswith('atari/'):
    raise ValueError(f'Atari level names look like atari/<game>, got '
                     f'{level_name!r}')
  game = level_name[len('atari/'):]
  if game not in ale_py.roms.get_all_rom_ids():
    raise ValueError(
        f'unknown Atari game {game!r}; the valid ids are listed by: python '
        '-c "import ale_py.roms; print(ale_py.roms.get_all_rom_ids())"')
  return game


def full_actions(legal_actions):
  """ALE's 18 actions, in order, as actions of a game whose legal set is
  `legal_actions` (one of them for each of the 18).

  ale-py gives every game but one all 18; Skiing gets 9, without the fire
  button, which the game does not use (acting with one of its fire actions
  does what NOOP does, and ale-py's vector environment stalls on them). The
  paper's ALE offered all 18 in every game, so a fire action here is the
  same move without fire.
  """
  legal_actions = list(legal_actions)
  actions = []
  for action in ale_py.Action:
    if action not in legal_actions:
      action = ale_py.Action[action.name.removesuffix('FIRE') or 'NOOP']
    actions.append(action)
  return actions


def _area_resize_matrix(in_size, out_size):
  """`[out, in]` weights that average each output pixel's input span."""
  matrix = np.zeros((out_size, in_size), np.float32)
  scale = in_size / out_size
  for out_index in range(out_size):
    start, end = out_index * scale, (out_index + 1) * scale
    for in_index in range(int(start), int(np.ceil(end))):
      overlap = min(end, in_index + 1) - max(start, in_index)
      matrix[out_index, in_index] = overlap / scale
  return matrix


class AtariEnvironment(dm_env.Environment):
  """One ALE game. Observations: uint8 `[84, 84, 4]`, the newest frame last.

  With `end_episode_on_life_loss`, losing a life ends the episode for the
  learner (discount 0) while the game and the frame stack go on;
  `game_over` and `game_return` describe whole games, which is what scores
  report.
  """

  def __init__(self,
               level_name,
               seed=0,
               num_action_repeats=4,
               full_action_set=False,
               end_episode_on_life_loss=True,
               noop_starts=False):
    self._ale = ale_py.ALEInterface()
    self._ale.setLoggerMode(ale_py.LoggerMode.Error)
    self._ale.setInt('random_seed', seed)
    self._ale.setFloat('repeat_action_probability', 0.0)
    self._ale.setInt('max_num_frames_per_episode', MAX_EPISODE_FRAMES)
    self._ale.loadROM(ale_py.roms.get_rom_path(game_id(level_name)))
    self._actions = (
        full_actions(self._ale.getLegalActionSet())
        if full_action_set else self._ale.getMinimalActionSet())
    self._num_action_repeats = num_action_repeats
    self._end_episode_on_life_loss = end_episode_on_life_loss
    self._noop_starts = noop_starts
    self._rng = np.random.default_rng(seed)
    height, width = self._ale.getScreenDims()
    self._raw_frames = np.zeros((2, height, width), np.uint8)
    self._resize_rows = _area_resize_matrix(height, FRAME_SIZE)
    self._resize_columns = _area_resize_matrix(width, FRAME_SIZE).T
    self._stack = np.zeros((FRAME_SIZE, FRAME_SIZE, FRAME_STACK), np.uint8)
    self._lives = 0
    self.game_over = True
    self.game_return = 0.0

  def observation_spec(self):
    return specs.Array((FRAME_SIZE, FRAME_SIZE, FRAME_STACK), np.uint8,
                       'frame')

  def action_spec(self):
    return specs.DiscreteArray(len(self._actions), name='action')

  def reset(self):
    """A new game and stack after a game's end; after a lost life the game
    and its stack go on, as in `AtariVectorEnvironment` (and envpool's
    `episodic_life`, ale-py's `life_loss_info`: no reset on a lost life)."""
    if self.game_over:
      self._ale.reset_game()
      self.game_over = False
      self.game_return = 0.0
      if self._noop_starts:
        for _ in range(self._rng.integers(1, MAX_NOOP_STARTS + 1)):
          self._ale.act(ale_py.Action.NOOP)
          if self._ale.game_over():
            self._ale.reset_game()
      self._lives = self._ale.lives()
      self._ale.getScreenGrayscale(self._raw_frames[0])
      self._stack[:] = 0
      self._push_frame(self._raw_frames[0])
    return dm_env.restart(self._stack.copy())

  def step(self, action):
    ale_action = self._actions[action]
    reward = 0.0
    for repeat in range(self._num_action_repeats):
      reward += self._ale.act(ale_action)
      if repeat >= self._num_action_repeats - 2:
        self._ale.getScreenGrayscale(
            self._raw_frames[repeat - self._num_action_repeats + 2])
      if self._ale.game_over():
        break
    if self._num_action_repeats == 1 or repeat < self._num_action_repeats - 1:
      # Fewer than 2 frames were captured; take the current screen alone.
      self._ale.getScreenGrayscale(self._raw_frames[0])
      self._raw_frames[1] = self._raw_frames[0]
    self._push_frame(np.maximum(self._raw_frames[0], self._raw_frames[1]))
    self.game_return += reward
    self.game_over = self._ale.game_over()
    lives = self._ale.lives()
    life_lost = lives < self._lives
    self._lives = lives
    observation = self._stack.copy()
    if self.game_over or (self._end_episode_on_life_loss and life_lost):
      if self._ale.game_truncated():
        return dm_env.truncation(reward, observation)
      return dm_env.termination(reward, observation)
    return dm_env.transition(reward, observation)

  def _push_frame(self, raw_frame):
    resized = self._resize_rows @ raw_frame.astype(np.float32) @ (
        self._resize_columns)
    self._stack[..., :-1] = self._stack[..., 1:]
    self._stack[..., -1] = np.rint(resized).astype(np.uint8)


_Game = collections.namedtuple(
    '_Game',
    [
        'indices',  # int `[n]`: the environments playing this game.
        'ale',  # Their ale_py.ALEVectorInterface.
        # int `[n]`: the environments of its last results, in their order,
        # which is the order `ale.send` takes actions in (see `_received`).
        'result_indices',
        'action_indices',  # int32 `[A]`: agent action -> the game's action.
        'paddle_strength',  # float32 `[n]` ones (no paddle control).
    ])


class AtariVectorEnvironment(environments.BatchedEnvironment):
  """N games stepped by ale-py's `ALEVectorInterface`, one per distinct game.

  The same preprocessing as `AtariEnvironment`: the C++ side repeats each
  action, max-pools, resizes, stacks and, with `noop_starts`, begins each
  game with up to 30 no-ops; here a drop in lives ends the learning episode while the game goes on, and
  whole games are reported as `FinishedGame`s. Several games (multi-task)
  need the full action set, so that an action means the same in all of them;
  every game's vector interface works in its own threads, all at once.
  """

  def __init__(self, level_names, seed=0, num_action_repeats=4,
               full_action_set=False, num_threads=2, noop_starts=False):
    self._level_names = list(level_names)
    games = {}  # level name -> indices of its environments, in order.
    for index, level_name in enumerate(self._level_names):
      games.setdefault(level_name, []).append(index)
    if len(games) > 1 and not full_action_set:
      raise ValueError('several games need the full action set '
                       '(their minimal sets differ)')
    self._num_action_repeats = num_action_repeats
    self._seed = seed
    self._games = []
    for level_name, indices in games.items():
      ale = self._vector_interface(level_name, len(indices),
                                   num_action_repeats, full_action_set,
                                   min(num_threads, len(indices)),
                                   noop_starts)
      available = list(ale.get_action_set())
      # The agent's action -> an index into the game's action set.
      action_indices = np.array(
          [available.index(action) for action in full_actions(available)]
          if full_action_set else range(len(available)), np.int32)
      self._games.append(_Game(np.array(indices), ale, np.array(indices),
                               action_indices,
                               np.ones(len(indices), np.float32)))
    self.num_actions = len(self._games[0].action_indices)
    self._lives = np.zeros(self.num_envs, np.int32)
    self._game_returns = np.zeros(self.num_envs, np.float64)
    self._game_steps = np.zeros(self.num_envs, np.int64)

  @staticmethod
  def _vector_interface(level_name, num_envs, num_action_repeats,
                        full_action_set, num_threads, noop_starts):
    return ale_py.ALEVectorInterface(
        rom_path=ale_py.roms.get_rom_path(game_id(level_name)),
        num_envs=num_envs,
        frame_skip=num_action_repeats,
        stack_num=FRAME_STACK,
        img_height=FRAME_SIZE,
        img_width=FRAME_SIZE,
        grayscale=True,
        maxpool=True,
        noop_max=MAX_NOOP_STARTS if noop_starts else 0,
        use_fire_reset=False,
        episodic_life=False,  # Life losses are ended here, games go on.
        life_loss_info=False,
        reward_clipping=False,  # The learner clips.
        max_episode_steps=MAX_EPISODE_FRAMES,  # Counted in frames.
        repeat_action_probability=0.0,
        full_action_space=full_action_set,
        batch_size=0,  # Synchronous: every step returns all N.
        num_threads=num_threads,
        thread_affinity_offset=-1,
        autoreset_mode='SameStep')  # A game's end returns the next's start.

  @property
  def level_names(self):
    return self._level_names

  def reset(self):
    observations = np.zeros(
        (self.num_envs, FRAME_STACK, FRAME_SIZE, FRAME_SIZE), np.uint8)
    for game in self._games:
      # Environment i is seeded seed + i whichever game it plays.
      frames, info = game.ale.reset(np.arange(len(game.indices)),
                                    self._seed + game.indices)
      targets = self._received(game, info)
      observations[targets] = frames
      self._lives[targets] = info['lives']
    self._game_returns[:] = 0.0
    self._game_steps[:] = 0
    return self._env_output(np.zeros(self.num_envs, np.float32),
                            np.ones(self.num_envs, bool), observations)

  def step(self, actions):
    actions = np.asarray(actions, np.int32)
    for game in self._games:  # Each starts at once; recv waits below.
      game.ale.send(game.action_indices[actions[game.result_indices]],
                    game.paddle_strength)
    observations = np.zeros(
        (self.num_envs, FRAME_STACK, FRAME_SIZE, FRAME_SIZE), np.uint8)
    rewards = np.zeros(self.num_envs, np.float32)
    game_over = np.zeros(self.num_envs, bool)
    lives = np.zeros(self.num_envs, np.int32)
    for game in self._games:
      frames, reward, terminated, truncated, info = game.ale.recv()
      targets = self._received(game, info)
      observations[targets] = frames
      rewards[targets] = reward
      game_over[targets] = terminated | truncated
      lives[targets] = info['lives']
    self._game_returns += rewards
    self._game_steps += 1
    life_lost = lives < self._lives
    self._lives = lives
    games = [
        environments.FinishedGame(
            self._level_names[index], float(self._game_returns[index]),
            int(self._game_steps[index]) * self._num_action_repeats,
            int(index))
        for index in np.flatnonzero(game_over)
    ]
    self._game_returns[game_over] = 0.0
    self._game_steps[game_over] = 0
    return self._env_output(rewards, game_over | life_lost,
                            observations), games

  @staticmethod
  def _received(game, info):
    """The environments of a game's results, in their order.

    ale-py names each result's environment in `info['env_id']` and pairs the
    actions of the next `send` with the environments in that order. Its
    synchronous mode (`batch_size=0`) keeps environment order, but nothing
    here relies on it.
    """
    game.result_indices[:] = game.indices[info['env_id']]
    return game.result_indices

  def _env_output(self, rewards, done, observations):
    """[N, stack, 84, 84] frames -> EnvOutput with [N, 84, 84, stack]."""
    return environments.EnvOutput(
        reward=rewards,
        done=done,
        frame=np.ascontiguousarray(observations.transpose(0, 2, 3, 1)),
        instruction=np.zeros((self.num_envs, 0), np.int32))
