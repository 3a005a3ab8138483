"""Training wired up: on one machine (actors in threads, a local queue) or
as one learner task of a distributed run (actors over RPC, synchronous
learners through `tf.distribute`). Here is which experience source (local
actors, the RPC service, replay around either) and which strategy; the
update loop itself, with what it reports, is `learner_loop.py`."""

import collections
import functools
import os
import threading

import tensorflow as tf

from impala_tf import builders
from impala_tf import checkpointing
from impala_tf import cluster as cluster_lib
from impala_tf import learner_loop
from impala_tf import local_actors
from impala_tf import pbt
from impala_tf import periodic_test
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
    checkpointing.check_resumable(config, domain.run_defining_flags)
  info = domain.environment_info(config.suite, config.levels[0])
  learner = builders.build_learner(config, info, strategy)
  # The first learner keeps the checkpoints; the others start from its
  # weights.
  manager = checkpointing.manager(learner, config.logdir)
  restored, status = _restore(config, learner, manager, is_chief, print_fn)
  game_log = progress.GameLog()
  member = _population_member(config, domain, learner, game_log, restored,
                              print_fn)
  learner.broadcast_from_first()
  num_updates = int(learner.num_updates.numpy())
  # Fresh random streams after a restart, not a replay of the first run's.
  tf.random.set_seed(config.seed + num_updates)
  replay_mib = _replay_size_mib(config, learner.agent, info)
  experience = _experience(config, domain, learner, info, game_log,
                           config.seed * 1_000_003 + num_updates, print_fn)
  batches = _batches_from(config, experience, num_updates)
  batch_size = config.batch_size // num_learners
  schedule = checkpointing.Schedule(
      manager, config.checkpoint_interval_secs, is_chief,
      num_updates if restored else None)
  tests = _periodic_test(config, is_chief, print_fn)
  loop = learner_loop.LearnerLoop(
      learner, staging.StagingArea(batches, batch_size, device=_device()),
      config.total_environment_frames,
      _reporter(config, domain, game_log, status, is_chief, batches.fill,
                print_fn),
      schedule,
      [part.after_update for part in (experience, member, tests) if part])
  print_fn(_start_line(config, info, experience.description, batch_size,
                       replay_mib))
  try:
    loop.run(stop)
  except transport_lib.Closed:
    experience.check_actors()  # An actor crashed: say so.
  finally:
    if stop.is_set():
      print_fn('Stop requested: writing a checkpoint.')
    _shut_down(experience, loop.finished, tests)
    # Also when an actor failed: nothing trained so far is lost.
    schedule.save_final(loop.num_updates)
  print_fn(_stopped_line(loop, schedule, learner, is_chief))
  return loop.results()


def _stopped_line(loop, schedule, learner, is_chief):
  return (f'Stopped at {loop.frames:,} frames, {loop.num_updates:,} '
          'updates; ' + (f'checkpoint {schedule.latest}' if is_chief else
                         'checkpoints are the first learner\'s') +
          '; weights fingerprint '
          f'{learner_loop.weights_fingerprint(learner.agent):.6f}.')


def _population_member(config, domain, learner, game_log, restored,
                       print_fn):
  """This run's `pbt.Member`, started (a fresh one draws its
  hyperparameters); None outside a population, where the flags' values
  hold, also over a resumed checkpoint's."""
  if config.pbt is None:
    learner.evolving.assign(config.learner._asdict())
    return None
  if len(config.levels) > 1 and domain.benchmark is None:
    raise UsageError('a population member on several levels needs their '
                     'suite\'s human-normalised scores for its fitness')
  member = pbt.Member(config.pbt, learner, game_log, config.levels,
                      domain.benchmark, config.seed, print_fn)
  member.start(resumed=bool(restored), sampled=config.pbt_sampled)
  return member


def _periodic_test(config, is_chief, print_fn):
  """The first learner's `periodic_test.PeriodicTest`, if asked for."""
  if not (config.periodic_test_episodes and is_chief):
    return None
  return periodic_test.PeriodicTest(config.flags, config.logdir,
                                    config.periodic_test_episodes, print_fn)


def _device():
  """Where batches are staged: the GPU if there is one."""
  return '/GPU:0' if tf.config.list_logical_devices('GPU') else None


def _reporter(config, domain, game_log, status, is_chief, queue_fill,
              print_fn):
  return learner_loop.Reporter(
      config.levels, domain.benchmark, game_log, status,
      _learner_directory(config, is_chief),
      progress.ProgressLine(config.total_environment_frames,
                            config.progress_interval_secs, print_fn),
      queue_fill)


def _restore(config, learner, manager, is_chief, print_fn):
  """Restores the first learner's newest readable checkpoint; returns its
  path (or None) and this learner's `run_status.RunStatus`, written."""
  restored, unreadable = (checkpointing.restore_latest(manager, print_fn)
                          if is_chief else (None, []))
  frames = int(learner.num_environment_frames.numpy())
  if restored:
    print_fn(f'Resuming from {restored} at {frames:,} frames.')
  status = run_status.RunStatus(
      _learner_directory(config, is_chief), levels=list(config.levels),
      frames=frames,
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
  pbt_part = (f', PBT member {config.pbt.member} of {config.pbt.pbt_dir}'
              if config.pbt else '')
  normalized = (' with frames normalised per pixel'
                if config.agent.normalize_frames else '')
  return (f'Training {config.agent.torso} {config.agent.core} agent'
          f'{normalized} on '
          f'{config.level_name} ({len(config.levels)} level'
          f'{"s" if len(config.levels) > 1 else ""}, {info.num_actions} '
          f'actions): {experience_description}, batch {batch_size}, '
          f'unroll {config.actors.unroll_length}, '
          f'{config.total_environment_frames:,} frames, '
          f'{config.learner.off_policy_correction} correction'
          f'{replay_part}{pbt_part}; '
          f'logdir {config.logdir}.')


def _replay_size_mib(config, agent, info):
  """The replay buffer's size when full, or None without replay; a
  `UsageError` when it would not fit in memory."""
  if config.replay_proportion == 0:
    return None
  spec = trajectory_lib.unroll_spec(agent, config.actors.unroll_length,
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
        trajectory_lib.unroll_spec(learner.agent, config.actors.unroll_length,
                                   info.frame_shape, info.instruction_length),
        config.queue_capacity, learner.agent.acting_variables,
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
  description = f'{config.actors.num_actors} actors'
  if config.actor_weights_delay:
    actor_agent = builders.build_agent(config.agent, info, config.seed)
    delayed = weight_delay.DelayedWeights(
        learner.agent, actor_agent, config.actor_weights_delay,
        int(learner.num_updates.numpy()))
    after_update, policy_version = delayed.record, lambda: delayed.version
    description += (f' acting with weights {config.actor_weights_delay} '
                    'updates old')
  transport = transport_lib.LocalTransport(config.queue_capacity,
                                           policy_version)
  actors = local_actors.ActorPool.for_levels(
      config.actors,
      functools.partial(domain.training_environments, config.suite),
      local_actors.assign_levels(config.levels, config.actors.num_actors),
      actor_agent, transport, game_log.add, seed)
  return _Experience(transport,
                     f'{description} in {actors.num_threads} threads',
                     after_update, stop_actors=actors.stop,
                     check_actors=actors.check)


def _shut_down(experience, finished, tests):
  """When training `finished`, the actors are told (a learner only
  stopped, to be restarted, leaves remote actors retrying); then the
  transport closes and this process's actors stop, and a periodic test
  (`tests`, or None) still running."""
  if tests:
    tests.close()
  if finished:
    experience.transport.finish()
  experience.transport.close()
  experience.stop_actors()
