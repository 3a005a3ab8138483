"""What a run shows while it trains: finished games per level, a console
progress line, and TensorBoard summaries."""

import collections
import threading
import time

import numpy as np
import tensorflow as tf

RECENT_GAMES = 100  # Games per level in the recent mean return.


class GameLog:
  """Finished games from every actor thread, per level."""

  def __init__(self):
    self._lock = threading.Lock()
    self._recent = collections.defaultdict(
        lambda: collections.deque(maxlen=RECENT_GAMES))
    self._counts = collections.Counter()
    self._unwritten = []

  def add(self, game):
    """Records an `environments.FinishedGame` (thread-safe)."""
    with self._lock:
      self._recent[game.level_name].append(game.episode_return)
      self._counts[game.level_name] += 1
      self._unwritten.append(game)

  def take_unwritten(self):
    """The games added since the last call."""
    with self._lock:
      games, self._unwritten = self._unwritten, []
    return games

  def recent_means(self):
    """{level: (games so far, mean return of the last RECENT_GAMES)}."""
    with self._lock:
      return {
          level: (self._counts[level], float(np.mean(returns)))
          for level, returns in sorted(self._recent.items())
      }


def _duration(seconds):
  seconds = int(seconds)
  if seconds >= 3600:
    return f'{seconds // 3600}h{seconds % 3600 // 60:02d}m'
  return f'{seconds // 60}m{seconds % 60:02d}s'


class ProgressLine:
  """Prints frames, frames/s, recent returns and time left every
  `interval_secs`."""

  def __init__(self, total_frames, interval_secs=10.0, print_fn=print):
    self._total_frames = total_frames
    self._interval = interval_secs
    self._print = print_fn
    self._last_time = None
    self._last_frames = None

  def maybe_print(self, frames, game_log, extra=''):
    """Prints if `interval_secs` passed since the last line (or first call
    only records the start); returns frames/s when it printed, else None."""
    now = time.monotonic()
    if self._last_time is None:
      self._last_time, self._last_frames = now, frames
      return None
    if now - self._last_time < self._interval:
      return None
    fps = (frames - self._last_frames) / (now - self._last_time)
    self._last_time, self._last_frames = now, frames
    left = (_duration((self._total_frames - frames) / fps)
            if fps > 0 else '?')
    returns = ' '.join(
        f'{level}: {mean:.1f} ({count} games)'
        for level, (count, mean) in game_log.recent_means().items()) or (
            'no game finished yet')
    self._print(f'frames {frames:,} / {self._total_frames:,} | '
                f'{fps:,.0f} frames/s | {left} left | return {returns}'
                f'{" | " + extra if extra else ""}')
    return fps


def write_scalars(writer, step, scalars, prefix):
  """Writes a dict of scalars at `step` under `prefix/`."""
  with writer.as_default(step=step):
    for name, value in scalars.items():
      tf.summary.scalar(f'{prefix}/{name}', value)


def write_games(writer, frames, games):
  """Per-level episode return and length of each finished game."""
  with writer.as_default(step=frames):
    for game in games:
      tf.summary.scalar(f'{game.level_name}/episode_return',
                        game.episode_return)
      tf.summary.scalar(f'{game.level_name}/episode_frames',
                        game.episode_frames)
