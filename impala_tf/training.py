"""The learner's training loop: on one machine (actors in threads, a local
queue) or as one learner task of a distributed run (actors over RPC,
synchronous learners through `tf.distribute`). Batches come through the
staging area; progress, summaries and checkpoints go out as it trains."""

import collections
import os
import threading
import time

import numpy as np
import tensorflow as tf

from impala_tf import builders
from impala_tf import checkpointing
from impala_tf import cluster as cluster_lib
from impala_tf import local_actors
from impala_tf import progress
from impala_tf import replay
from impala_tf import rpc_service
from impala_tf import run_status
from impala_tf import staging
from impala_tf import trajectory as trajectory_lib
from impala_tf import transport as transport_lib
from impala_tf import weight_delay
from impala_tf.domain import UsageError

# Where the learner's trajectories come from.
_Experience = collections.namedtuple(
    '_Experience',
    [
        'transport',  # Its learner side, a transport.LearnerSide.
        'description',  # For the start line.
        'after_update',  # Called with the update count after each update.
        'stop_actors',  # Stops the actors of this process, if any.
        'check_actors',  # Raises the error one of them failed with.
    ])


def train(config, domain, stop=None, print_fn=print):
  """Trains until `total_environment_frames` or `stop` (a
  `threading.Event`) is set: on one machine (`job_name` local), or as one
  learner task of a distributed run.

  Returns a dict with the final frame and update counts, the last
  learner diagnostics and the recent returns.
  """
  stop = stop or threading.Event()
  distributed = config.job_name == 'learner'
  num_learners = len(config.learner_hosts) if distributed else 1
  is_chief = config.task == 0 or not distributed
  # Created first: the strategy configures TensorFlow's runtime.
  strategy = _synchronous_strategy(config) if num_learners > 1 else None
  if is_chief:
    checkpointing.check_resumable(config)
  info = domain.environment_info(config, config.levels[0])
  learner = builders.build_learner(config, info, strategy)
  # The first learner keeps the checkpoints; the others start from its
  # weights.
  manager = checkpointing.manager(learner, config.logdir)
  restored, status = _restore(config, learner, manager, is_chief, print_fn)
  learner.broadcast_from_first()
  num_updates = int(learner.num_updates.numpy())
  # Fresh random streams after a restart, not a replay of the first run's.
  tf.random.set_seed(config.seed + num_updates)
  replay_mib = _replay_size_mib(config, learner.agent, info)
  game_log = progress.GameLog()
  experience = _experience(config, domain, learner, info, game_log,
                           config.seed * 1_000_003 + num_updates, print_fn)
  loop = _TrainingLoop(config, domain, learner,
                       _batches_from(config, experience, num_updates),
                       game_log, stop,
                       batch_size=config.batch_size // num_learners,
                       is_chief=is_chief, print_fn=print_fn,
                       after_update=experience.after_update,
                       restored=bool(restored), status=status)
  print_fn(_start_line(config, info, experience.description, loop.batch_size,
                       replay_mib))
  try:
    loop.run(manager)
  except transport_lib.Closed:
    experience.check_actors()  # An actor crashed: say so.
  finally:
    if stop.is_set():
      print_fn('Stop requested: writing a checkpoint.')
    _shut_down(experience, loop.frames >= config.total_environment_frames)
    # Also when an actor failed: nothing trained so far is lost. Not when
    # the newest checkpoint holds this very state: TensorFlow rewrites a
    # checkpoint's index file in place, and a kill then would lose it.
    if is_chief and loop.num_updates != loop.checkpointed_updates:
      checkpointing.save(manager, loop.num_updates)
  return loop.finish(manager)


def _restore(config, learner, manager, is_chief, print_fn):
  """Restores the first learner's newest readable checkpoint; returns its
  path (or None) and this learner's `run_status.RunStatus`, written."""
  restored, unreadable = (checkpointing.restore_latest(manager, print_fn)
                          if is_chief else (None, []))
  frames = int(learner.num_environment_frames.numpy())
  if restored:
    print_fn(f'Resuming from {restored} at {frames:,} frames.')
  status = run_status.RunStatus(
      _learner_directory(config, is_chief), frames=frames,
      total_frames=config.total_environment_frames,
      updates=int(learner.num_updates.numpy()), resumed_from=restored,
      resumed_at_frames=frames if restored else None,
      unreadable_checkpoints=unreadable)
  return restored, status


def _learner_directory(config, is_chief):
  """Where a learner's summaries and status go: the run's log directory
  for the first, a folder in it for the others."""
  return (config.logdir if is_chief else
          os.path.join(config.logdir, f'learner_{config.task}'))


def _batches_from(config, experience, num_updates):
  """What the staging area takes batches from: the transport, or replay
  around it."""
  if config.replay_proportion == 0:
    return experience.transport
  return replay.ReplayTransport(experience.transport,
                                config.replay_proportion,
                                config.replay_capacity,
                                config.seed + num_updates)


def _start_line(config, info, experience_description, batch_size,
                replay_mib):
  replay_part = (f', replay {config.replay_proportion:.0%} of each batch '
                 f'from up to {config.replay_capacity:,} trajectories '
                 f'({replay_mib:,.0f} MiB)' if replay_mib is not None else '')
  return (f'Training {config.agent} {config.core} agent on '
          f'{config.level_name} ({len(config.levels)} level'
          f'{"s" if len(config.levels) > 1 else ""}, {info.num_actions} '
          f'actions): {experience_description}, batch {batch_size}, '
          f'unroll {config.unroll_length}, '
          f'{config.total_environment_frames:,} frames, '
          f'{config.off_policy_correction} correction{replay_part}; '
          f'logdir {config.logdir}.')


def _replay_size_mib(config, agent, info):
  """The replay buffer's size when full, or None without replay; a
  `UsageError` when it would not fit in memory."""
  if config.replay_proportion == 0:
    return None
  spec = trajectory_lib.unroll_spec(agent, config.unroll_length,
                                    info.frame_shape, info.instruction_length)
  try:
    return replay.check_capacity(config.replay_capacity,
                                 replay.trajectory_bytes(spec))
  except ValueError as error:
    raise UsageError(error) from None


def _synchronous_strategy(config):
  return tf.distribute.MultiWorkerMirroredStrategy(
      cluster_resolver=cluster_lib.collective_cluster_resolver(
          cluster_lib.Cluster(config.learner_hosts, config.actor_hosts),
          config.task),
      communication_options=tf.distribute.experimental.CommunicationOptions(
          timeout_seconds=config.connect_timeout_secs))


def _experience(config, domain, learner, info, game_log, seed, print_fn):
  """Local actors in threads, or the service remote actor tasks send to."""
  if config.job_name != 'learner':
    return _local_experience(config, domain, learner, info, game_log, seed)
  num_learners = len(config.learner_hosts)
  served = {index: address for index, address in
            enumerate(config.actor_hosts)
            if index % num_learners == config.task}
  try:
    transport = rpc_service.LearnerService(
        config.learner_hosts[config.task],
        trajectory_lib.unroll_spec(learner.agent, config.unroll_length,
                                   info.frame_shape, info.instruction_length),
        config.queue_capacity, learner.agent.trainable_variables,
        learner.num_updates, served, game_log.add, print_fn,
        silence_secs=config.actor_silence_secs)
  except ValueError as error:
    raise UsageError(error) from None
  return _Experience(
      transport,
      f'learner {config.task} of {num_learners} on '
      f'{config.learner_hosts[config.task]}, serving actor tasks '
      f'{", ".join(str(index) for index in served)}',
      after_update=lambda num_updates: None, stop_actors=lambda: None,
      check_actors=lambda: None)


def _local_experience(config, domain, learner, info, game_log, seed):
  """Actors in threads acting with the learner's own variables, or with a
  copy `actor_weights_delay` updates behind."""
  actor_agent, after_update = learner.agent, lambda num_updates: None
  policy_version = lambda: int(learner.num_updates.numpy())
  description = f'{config.num_actors} actors'
  if config.actor_weights_delay:
    actor_agent = builders.build_agent(config, info)
    delayed = weight_delay.DelayedWeights(
        learner.agent, actor_agent, config.actor_weights_delay,
        int(learner.num_updates.numpy()))
    after_update, policy_version = delayed.record, lambda: delayed.version
    description += (f' acting with weights {config.actor_weights_delay} '
                    'updates old')
  transport = transport_lib.LocalTransport(config.queue_capacity,
                                           policy_version)
  actors = local_actors.ActorPool.for_levels(
      config, domain,
      local_actors.assign_levels(config.levels, config.num_actors),
      actor_agent, transport, game_log.add, seed)
  return _Experience(transport,
                     f'{description} in {actors.num_threads} threads',
                     after_update, stop_actors=actors.stop,
                     check_actors=actors.check)


def _shut_down(experience, finished):
  """When training `finished`, the actors are told (a learner only
  stopped, to be restarted, leaves remote actors retrying); then the
  transport closes and this process's actors stop."""
  if finished:
    experience.transport.finish()
  experience.transport.close()
  experience.stop_actors()


def batch_lags(num_updates, batch):
  """Updates since acting began, from the learner's `num_updates`: the
  mean over the batch's new trajectories, and over its replayed ones (None
  without any)."""
  lags = num_updates - batch.policy_version
  replayed = np.asarray(batch.replayed)
  return (lags[~replayed].mean(),
          lags[replayed].mean() if replayed.any() else None)


class _TrainingLoop:
  """Batches to updates, with progress lines, summaries and checkpoints."""

  def __init__(self, config, domain, learner, transport, game_log, stop,
               batch_size, is_chief, print_fn, after_update, restored,
               status):
    self._config = config
    self._domain = domain
    self._learner = learner
    self._transport = transport
    self._game_log = game_log
    self._stop = stop
    self.batch_size = batch_size
    self._is_chief = is_chief
    self._print = print_fn
    self._after_update = after_update
    self._status = status
    self._staging_area = staging.StagingArea(
        transport, batch_size,
        device='/GPU:0' if tf.config.list_logical_devices('GPU') else None)
    self._writer = tf.summary.create_file_writer(
        _learner_directory(config, is_chief))
    self._progress_line = progress.ProgressLine(
        config.total_environment_frames, config.progress_interval_secs,
        print_fn)
    self.frames = int(learner.num_environment_frames.numpy())
    self.num_updates = int(learner.num_updates.numpy())
    # The update count the newest checkpoint holds, if this run knows it.
    self.checkpointed_updates = self.num_updates if restored else None
    self._stats = {}
    # Replayed trajectories' age is logged apart, so that the policy lag
    # stays the actors'.
    self._policy_lags, self._replayed_ages = [], []

  def run(self, manager):
    """Trains until the frame budget is spent or a stop is requested."""
    last_checkpoint = time.monotonic()
    self._progress_line.rate_if_due(self.frames)
    while (self.frames < self._config.total_environment_frames and
           not self._learner.any_learner(self._stop.is_set())):
      batch = self._staging_area.get(self._stop)
      # Before the update is queued: reading the marks waits for nothing.
      self._record_lags(batch)
      self._stats = self._learner.train_step(batch)
      self.num_updates += 1
      self._after_update(self.num_updates)
      self.frames = int(self._learner.num_environment_frames.numpy())
      self._report()
      if (self._is_chief and time.monotonic() - last_checkpoint >
          self._config.checkpoint_interval_secs):
        checkpointing.save(manager, self.num_updates)
        self.checkpointed_updates = self.num_updates
        last_checkpoint = time.monotonic()

  def _record_lags(self, batch):
    new, replayed = batch_lags(self.num_updates, batch)
    self._policy_lags.append(new)
    if replayed is not None:
      self._replayed_ages.append(replayed)

  def _lags(self):
    """The mean policy lag (and replayed age) since the last report."""
    lags = {'policy_lag': float(np.mean(self._policy_lags))}
    if self._replayed_ages:
      lags['replayed_policy_lag'] = float(np.mean(self._replayed_ages))
    return lags

  def _report(self):
    """Finished games to the summaries; a progress line and the learner's
    diagnostics every `progress_interval_secs`."""
    levels, benchmark = self._config.levels, self._domain.benchmark
    progress.write_games(self._writer, self.frames,
                         self._game_log.take_unwritten(), benchmark)
    fps = self._progress_line.rate_if_due(self.frames)
    if fps is None:
      return
    recent_means = self._game_log.recent_means()
    summary = progress.human_normalized_summary(recent_means, levels,
                                                benchmark)
    lags, queue_fill = self._lags(), self._transport.fill()
    self._progress_line.show(
        self.frames, fps,
        progress.describe_returns(recent_means, levels, summary),
        extra=f'updates {self.num_updates:,} | loss '
        f'{float(self._stats["total_loss"]):.2f} | queue '
        f'{queue_fill:.0%} | ' + ', '.join(
            f'{name.replace("_", " ")} {value:.1f}'
            for name, value in lags.items()))
    self._status.update(
        frames=self.frames, updates=self.num_updates, frames_per_second=fps,
        recent_returns={level: mean
                        for level, (_, mean) in recent_means.items()})
    scalars = {name: float(value) for name, value in self._stats.items()}
    scalars.update(lags, queue_fill=queue_fill)
    progress.write_scalars(self._writer, self.frames, scalars, 'learner')
    progress.write_scalars(self._writer, self.frames,
                           {'frames_per_second': fps}, 'throughput')
    if summary:
      progress.write_scalars(self._writer, self.frames, summary,
                             'human_normalized')
    self._policy_lags, self._replayed_ages = [], []

  def finish(self, manager):
    """The run's results, after its final checkpoint (first learner)."""
    self._writer.flush()
    finished = self.frames >= self._config.total_environment_frames
    self._status.update(
        state='finished' if finished else 'stopped', frames=self.frames,
        updates=self.num_updates,
        checkpoint=manager.latest_checkpoint if self._is_chief else None)
    self._print(
        f'Stopped at {self.frames:,} frames, {self.num_updates:,} updates; ' +
        (f'checkpoint {manager.latest_checkpoint}' if self._is_chief else
         'checkpoints are the first learner\'s') +
        f'; weights fingerprint {weights_fingerprint(self._learner.agent):.6f}.')
    recent_means = self._game_log.recent_means()
    return {
        'frames': self.frames, 'updates': self.num_updates,
        'last_stats': {name: float(value)
                       for name, value in self._stats.items()},
        'recent_returns': recent_means,
        'human_normalized': progress.human_normalized_summary(
            recent_means, self._config.levels, self._domain.benchmark)}


def weights_fingerprint(agent):
  """The sum of the agent's weights' absolute values: equal on learners
  that hold one set of weights."""
  return float(sum(tf.reduce_sum(tf.abs(tf.cast(v, tf.float64)))
                   for v in agent.trainable_variables))
