"""Catch, a small real environment that learns in seconds (as bsuite's).

A ball starts in a random column of the top row and falls one row per step;
the agent moves a paddle along the bottom row (left, stay, right). When the
ball reaches the bottom row the episode ends with reward +1 if the paddle is
under it, else -1. A random policy scores about -0.6; a perfect one +1.

With `memory=True` the ball is only drawn on the episode's first frame, so
the agent must remember its column: only an agent whose core state carries
the first frame through the episode (and starts clean) can score well. The
memory game is played on 5 rows (4 steps), which an LSTM agent learns in
seconds.
"""

import dm_env
from dm_env import specs
import numpy as np

ROWS, MEMORY_ROWS, COLUMNS = 10, 5, 5
PIXELS_PER_CELL = 4  # Frames of 20 pixels or more suit the shallow torso.
NUM_ACTIONS = 3


def observation_shape(rows):
  return (rows * PIXELS_PER_CELL, COLUMNS * PIXELS_PER_CELL, 1)


class Catch(dm_env.Environment):

  def __init__(self, seed=0, memory=False):
    self._rng = np.random.default_rng(seed)
    self._memory = memory
    self._rows = MEMORY_ROWS if memory else ROWS
    self._ball_row = self._ball_column = self._paddle = 0

  def observation_spec(self):
    return specs.Array(observation_shape(self._rows), np.uint8, 'frame')

  def action_spec(self):
    return specs.DiscreteArray(NUM_ACTIONS, name='action')

  def reset(self):
    self._ball_row = 0
    self._ball_column = int(self._rng.integers(COLUMNS))
    self._paddle = COLUMNS // 2
    return dm_env.restart(self._frame(show_ball=True))

  def step(self, action):
    self._paddle = int(np.clip(self._paddle + int(action) - 1, 0,
                               COLUMNS - 1))
    self._ball_row += 1
    frame = self._frame(show_ball=not self._memory)
    if self._ball_row == self._rows - 1:
      return dm_env.termination(
          1.0 if self._paddle == self._ball_column else -1.0, frame)
    return dm_env.transition(0.0, frame)

  def _frame(self, show_ball):
    board = np.zeros((self._rows, COLUMNS), np.uint8)
    board[self._rows - 1, self._paddle] = 255
    if show_ball:
      board[self._ball_row, self._ball_column] = 255
    pixels = np.kron(board, np.ones((PIXELS_PER_CELL, PIXELS_PER_CELL),
                                    np.uint8))
    return pixels[..., None]


class Timing(dm_env.Environment):
  """Press first: blank frames, episodes of a random 4 to 8 steps; pressing
  (action 1) at an episode's first step earns +1, pressing at any other step
  -0.25, the other actions 0.

  Nothing in a frame, reward or last action marks where an episode begins:
  only the core state's reset at `done` does. An LSTM agent whose state is
  reset learns to press on a clean state (return near +1); a feed-forward
  agent, or an LSTM whose state is not reset, cannot tell the first step
  from any other (return near 0: pressing at random does not pay).
  """

  PRESS = 1
  TARGET_STEP = 0  # The first step.
  MIN_LENGTH, MAX_LENGTH = 4, 8
  WRONG_PRESS_REWARD = -0.25  # Mild: random pressing must still pay off.

  def __init__(self, seed=0):
    self._rng = np.random.default_rng(seed)
    self._frame = np.zeros(observation_shape(MEMORY_ROWS), np.uint8)
    self._step = self._length = 0

  def observation_spec(self):
    return specs.Array(self._frame.shape, np.uint8, 'frame')

  def action_spec(self):
    return specs.DiscreteArray(NUM_ACTIONS, name='action')

  def reset(self):
    self._step = 0
    self._length = int(self._rng.integers(self.MIN_LENGTH,
                                          self.MAX_LENGTH + 1))
    return dm_env.restart(self._frame)

  def step(self, action):
    reward = 0.0
    if int(action) == self.PRESS:
      reward = (1.0 if self._step == self.TARGET_STEP else
                self.WRONG_PRESS_REWARD)
    self._step += 1
    if self._step == self._length:
      return dm_env.termination(reward, self._frame)
    return dm_env.transition(reward, self._frame)
