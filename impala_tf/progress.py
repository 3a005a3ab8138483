"""What a run shows while it trains: finished games per level, a console
progress line, and TensorBoard summaries."""

import collections
import threading
import time

import numpy as np
from tensorboard.plugins.scalar import metadata as scalar_metadata
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

  def counts(self):
    """{level: games finished so far}: a mark for `recent_means(since=)`."""
    with self._lock:
      return dict(self._counts)

  def recent_means(self, since=None):
    """{level: (games so far, mean return of the last RECENT_GAMES)}.

    Args:
      since: None, or a mark from `counts()`: then only the games finished
        after it count, and a level without one is left out (e.g. a PBT
        member judged on its weights since it last changed them).
    """
    since = since or {}
    with self._lock:
      means = {}
      for level, returns in sorted(self._recent.items()):
        newer = self._counts[level] - since.get(level, 0)
        if newer > 0:  # Slicing keeps at most the RECENT_GAMES held.
          means[level] = (self._counts[level],
                          float(np.mean(list(returns)[-newer:])))
      return means


def _duration(seconds):
  seconds = int(seconds)
  if seconds >= 3600:
    return f'{seconds // 3600}h{seconds % 3600 // 60:02d}m'
  return f'{seconds // 60}m{seconds % 60:02d}s'


MAX_LEVELS_LISTED = 4  # More levels: the progress line counts them.


def human_normalized_summary(recent_means, levels, benchmark):
  """The suite's statistics (e.g. median, mean) of the human-normalised
  recent mean returns, once every level in `levels` finished a game.

  Args:
    recent_means: {level: (games so far, mean recent return)}, as
      `GameLog.recent_means`.
    levels: the run's level names.
    benchmark: a `scoring.Benchmark`, or None.

  Returns:
    {statistic: percent}, or None before every level finished a game, or
    without a benchmark that knows every level.
  """
  if benchmark is None or any(level not in recent_means or
                              not benchmark.knows(level) for level in levels):
    return None
  return benchmark.summary(benchmark.normalized(
      {level: recent_means[level][1] for level in levels}))


def describe_returns(recent_means, levels, summary):
  """The progress line's part on returns: each level's recent mean return
  (for a few levels) or how many levels played, then `summary`."""
  if len(levels) <= MAX_LEVELS_LISTED:
    text = ' '.join(
        f'{level}: {mean:.1f} ({count} games)'
        for level, (count, mean) in recent_means.items()) or (
            'no game finished yet')
  else:
    text = (f'{sum(counts for counts, _ in recent_means.values()):,} games, '
            f'{len(recent_means)}/{len(levels)} levels played')
  if summary:
    text += ' | human-normalised ' + ' '.join(
        f'{name} {value:.1f}%' for name, value in summary.items())
  return text


class ProgressLine:
  """Prints frames, frames/s, time left and what the caller adds every
  `interval_secs`."""

  def __init__(self, total_frames, interval_secs=10.0, print_fn=print):
    self._total_frames = total_frames
    self._interval = interval_secs
    self._print = print_fn
    self._last_time = None
    self._last_frames = None

  def rate_if_due(self, frames):
    """Frames/s since the last line when `interval_secs` have passed, else
    None (the first call only records the start). The caller builds and
    `show`s the line only then, so that describing a run costs nothing
    between lines.

    Args:
      frames: int, environment frames so far.
    """
    now = time.monotonic()
    if self._last_time is None:
      self._last_time, self._last_frames = now, frames
      return None
    if now - self._last_time < self._interval:
      return None
    fps = (frames - self._last_frames) / (now - self._last_time)
    self._last_time, self._last_frames = now, frames
    return fps

  def head(self, frames, fps):
    """'frames F / TOTAL | R frames/s | D left', the start of every line.

    Args:
      frames: int, environment frames so far.
      fps: float, from `rate_if_due` (0: time left unknown).
    """
    left = (_duration((self._total_frames - frames) / fps)
            if fps > 0 else '?')
    return (f'frames {frames:,} / {self._total_frames:,} | '
            f'{fps:,.0f} frames/s | {left} left')

  def show(self, frames, fps, returns, extra=''):
    """Prints one line.

    Args:
      frames: int, environment frames so far.
      fps: float, from `rate_if_due`.
      returns: str, e.g. from `describe_returns`.
      extra: str appended to the line.
    """
    self._print(f'{self.head(frames, fps)} | return {returns}'
                f'{" | " + extra if extra else ""}')


def write_scalars(writer, step, scalars, prefix):
  """Writes a dict of scalars at `step` under `prefix/`."""
  with writer.as_default(step=step):
    for name, value in scalars.items():
      tf.summary.scalar(f'{prefix}/{name}', value)


class GameSummaries:
  """Each finished game's episode return and length, and its
  human-normalised score where the benchmark knows the level, as TensorBoard
  scalars at the frame count of the update that took them.

  One graph call writes all of an update's games: on Catch, thousands of
  games a second, one eager summary op per value took most of the
  learner thread's time and, holding the GIL, slowed the actors too."""

  def __init__(self, writer, benchmark=None):
    """`writer`: a summary file writer; `benchmark`: a `scoring.Benchmark`
    or None."""
    self._benchmark = benchmark
    # What tf.summary.scalar attaches, so that TensorBoard and
    # `impala_tf.curves` read these as scalars.
    metadata = scalar_metadata.create_summary_metadata(display_name=None,
                                                       description=None)

    @tf.function(input_signature=(tf.TensorSpec([], tf.int64),
                                  tf.TensorSpec([None], tf.string),
                                  tf.TensorSpec([None], tf.float32)))
    def write_all(step, tags, values):
      with writer.as_default(step=step):
        for index in tf.range(tf.size(tags)):
          tf.summary.write(tags[index], values[index], metadata=metadata)

    self._write_all = write_all

  def write(self, frames, games):
    """Writes `games` (`environments.FinishedGame`s) at step `frames`."""
    tags, values = [], []
    for game in games:
      tags += [f'{game.level_name}/episode_return',
               f'{game.level_name}/episode_frames']
      values += [game.episode_return, game.episode_frames]
      if self._benchmark is not None and self._benchmark.knows(
          game.level_name):
        (normalized,) = self._benchmark.normalized(
            {game.level_name: game.episode_return}).values()
        tags.append(f'{game.level_name}/human_normalized')
        values.append(normalized)
    if tags:
      self._write_all(tf.constant(frames, tf.int64), tf.constant(tags),
                      tf.constant(values, tf.float32))
