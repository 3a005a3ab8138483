"""The learner's update loop, and what it reports: batches in, updates out,
with progress lines, summaries, the status file and checkpoints on the way.
Where the batches come from (local actors, remote ones, replay) and how
learners synchronise is wired in `training.py`.

  while frames < total_frames and no learner is asked to stop:
    batch = batches.get()          # Staged: already on the device.
    learner.train_step(batch)
    for callback in after_update:  # Delayed weights, a PBT member.
      callback(num_updates)
    reporter.after_update(...)     # Games, progress line, summaries.
    schedule.save_if_due(num_updates)
"""

import numpy as np
import tensorflow as tf

from impala_tf import progress


def batch_lags(num_updates, batch):
  """Updates since acting began, from the learner's `num_updates`: the
  mean over the batch's new trajectories, and over its replayed ones (None
  without any)."""
  lags = num_updates - batch.policy_version
  replayed = np.asarray(batch.replayed)
  return (lags[~replayed].mean(),
          lags[replayed].mean() if replayed.any() else None)


def weights_fingerprint(agent):
  """The sum of the absolute values of the agent's weights (and frame
  statistics): equal on learners that hold one set of them."""
  return float(sum(tf.reduce_sum(tf.abs(tf.cast(v, tf.float64)))
                   for v in agent.acting_variables))


class Reporter:
  """A learner's progress lines, TensorBoard summaries and status file."""

  def __init__(self, levels, benchmark, game_log, status, directory,
               progress_line, queue_fill):
    """Args:
      levels: the run's level names.
      benchmark: the suite's `scoring.Benchmark`, or None.
      game_log: `progress.GameLog` the actors add finished games to.
      status: this learner's `run_status.RunStatus`.
      directory: where its summaries go.
      progress_line: a `progress.ProgressLine`.
      queue_fill: () -> the queue's fill, in [0, 1].
    """
    self._levels = levels
    self._benchmark = benchmark
    self._game_log = game_log
    self._status = status
    self._writer = tf.summary.create_file_writer(directory)
    self._game_summaries = progress.GameSummaries(self._writer, benchmark)
    self._progress_line = progress_line
    self._queue_fill = queue_fill
    # Replayed trajectories' age is logged apart, so that the policy lag
    # stays the actors'.
    self._policy_lags, self._replayed_ages = [], []

  def start(self, frames):
    self._progress_line.rate_if_due(frames)

  def record_lags(self, num_updates, batch):
    new, replayed = batch_lags(num_updates, batch)
    self._policy_lags.append(new)
    if replayed is not None:
      self._replayed_ages.append(replayed)

  def _lags(self):
    """The mean policy lag (and replayed age) since the last report."""
    lags = {'policy_lag': float(np.mean(self._policy_lags))}
    if self._replayed_ages:
      lags['replayed_policy_lag'] = float(np.mean(self._replayed_ages))
    return lags

  def after_update(self, frames, num_updates, stats):
    """Finished games to the summaries; a progress line, the learner's
    diagnostics and the status every progress interval."""
    self._game_summaries.write(frames, self._game_log.take_unwritten())
    fps = self._progress_line.rate_if_due(frames)
    if fps is None:
      return
    recent_means = self._game_log.recent_means()
    summary = progress.human_normalized_summary(recent_means, self._levels,
                                                self._benchmark)
    lags, queue_fill = self._lags(), self._queue_fill()
    self._progress_line.show(
        frames, fps,
        progress.describe_returns(recent_means, self._levels, summary),
        extra=f'updates {num_updates:,} | loss '
        f'{float(stats["total_loss"]):.2f} | queue '
        f'{queue_fill:.0%} | ' + ', '.join(
            f'{name.replace("_", " ")} {value:.1f}'
            for name, value in lags.items()))
    self._status.update(
        frames=frames, updates=num_updates, frames_per_second=fps,
        recent_returns={level: mean
                        for level, (_, mean) in recent_means.items()})
    scalars = {name: float(value) for name, value in stats.items()}
    scalars.update(lags, queue_fill=queue_fill)
    progress.write_scalars(self._writer, frames, scalars, 'learner')
    progress.write_scalars(self._writer, frames,
                           {'frames_per_second': fps}, 'throughput')
    if summary:
      progress.write_scalars(self._writer, frames, summary,
                             'human_normalized')
    self._policy_lags, self._replayed_ages = [], []

  def finish(self, frames, num_updates, finished, checkpoint):
    """The status at the end; the recent returns and their summary."""
    self._writer.flush()
    recent_means = self._game_log.recent_means()
    self._status.update(state='finished' if finished else 'stopped',
                        frames=frames, updates=num_updates,
                        checkpoint=checkpoint,
                        recent_returns={level: mean for level, (_, mean)
                                        in recent_means.items()})
    return {
        'recent_returns': recent_means,
        'human_normalized': progress.human_normalized_summary(
            recent_means, self._levels, self._benchmark)}


class LearnerLoop:
  """Batches to updates until the frame budget is spent or any learner is
  asked to stop."""

  def __init__(self, learner, batches, total_frames, reporter, schedule,
               after_update):
    """Args:
      learner: a `learner.Learner`.
      batches: has `get(stop)` -> a batch, e.g. a `staging.StagingArea`.
      total_frames: the frame budget.
      reporter: a `Reporter`.
      schedule: a `checkpointing.Schedule`.
      after_update: callables, each called with the update count after
        each update.
    """
    self._learner = learner
    self._batches = batches
    self._total_frames = total_frames
    self._reporter = reporter
    self._schedule = schedule
    self._after_update = after_update
    self.frames = int(learner.num_environment_frames.numpy())
    self.num_updates = int(learner.num_updates.numpy())
    self.stats = {}

  @property
  def finished(self):
    return self.frames >= self._total_frames

  def run(self, stop):
    """Trains until finished or `stop` (a `threading.Event`) is set on
    any learner."""
    self._reporter.start(self.frames)
    while (not self.finished and
           not self._learner.any_learner(stop.is_set())):
      batch = self._batches.get(stop)
      # Before the update is queued: reading the marks waits for nothing.
      self._reporter.record_lags(self.num_updates, batch)
      self.stats = self._learner.train_step(batch)
      self.num_updates += 1
      for callback in self._after_update:
        callback(self.num_updates)
      self.frames = int(self._learner.num_environment_frames.numpy())
      self._reporter.after_update(self.frames, self.num_updates, self.stats)
      self._schedule.save_if_due(self.num_updates)

  def results(self):
    """The run's results, after the final checkpoint."""
    results = {'frames': self.frames, 'updates': self.num_updates,
               'last_stats': {name: float(value)
                              for name, value in self.stats.items()}}
    results.update(self._reporter.finish(self.frames, self.num_updates,
                                         self.finished,
                                         self._schedule.latest))
    return results
