r"""IMPALA on one machine: actors, a trajectory queue, staging and a learner.

Train the paper's shallow Atari agent on Pong, logging to logs/pong:

  .venv/bin/python experiment.py --level_name=atari/pong --logdir=logs/pong

or one agent on all 57 games (multi-task; games round-robin to actors):

  .venv/bin/python experiment.py --level_name=atari57 --logdir=logs/atari57

or the paper's deep agent on DMLab-30 (needs DeepMind Lab; see the README):

  .venv/bin/python experiment.py --level_name=dmlab30 --agent=deep \
      --num_actors=150 --logdir=logs/dmlab30

Stopping it (Ctrl-C, SIGTERM) writes a checkpoint; the same command resumes.
Evaluate the latest checkpoint with the test protocol:

  .venv/bin/python experiment.py --mode=test --level_name=atari/pong \
      --logdir=logs/pong --test_num_episodes=10

The same run as separate jobs (the paper's layout; TF_CONFIG may replace
the host and job flags), each process with the same flags:

  .venv/bin/python experiment.py --job_name=learner --task=0 \
      --learner_hosts=hostA:8000 --actor_hosts=hostB:8001,hostC:8001 ...
  .venv/bin/python experiment.py --job_name=actor --task=1 ...  # on hostC

or all of them on this machine: launch.py.

Flags left unset take the paper's values for the level's domain (Atari:
Table G.1; DMLab: the official DMLab-30 run; see DOMAINS).
"""

import collections
import functools
import json
import os
import signal
import sys
import threading
import time

from absl import app
from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

from atari57 import environment as atari_environment
from atari57 import scores as atari_scores
from dmlab30 import environment as dmlab_environment
from dmlab30 import scores as dmlab_scores
from impala_tf import actor as actor_lib
from impala_tf import agents
from impala_tf import cluster as cluster_lib
from impala_tf import environments
from impala_tf import learner as learner_lib
from impala_tf import output_files
from impala_tf import progress
from impala_tf import rpc_transport
from impala_tf import staging
from impala_tf import transport as transport_lib

# The paper's flag names (scalable_agent's experiment.py).
flags.DEFINE_enum('mode', 'train', ['train', 'test'], 'Training or test.')
flags.DEFINE_string('logdir', 'logs/impala', 'Checkpoints, summaries, '
                    'flags and test results.')
flags.DEFINE_string('level_name', 'atari/pong',
                    'A level (atari/<game>: an ale-py ROM id; '
                    'dmlab/<level>: a DMLab-30 level), a suite (atari57, '
                    'dmlab30) or a comma-separated list of levels: one '
                    'agent learns them all, levels assigned round-robin to '
                    'actors.')
flags.DEFINE_enum('agent', 'shallow', list(agents.TORSOS), 'The torso.')
flags.DEFINE_enum('core', None, list(agents.CORES),
                  'The core; default per domain (Atari: feedforward, '
                  'DMLab: lstm).')
flags.DEFINE_integer('num_actors', 64, 'Environments acting in parallel, '
                     'each an actor of the paper (64 keeps 2 CPU cores busy '
                     'for Atari; see the README).', lower_bound=1)
flags.DEFINE_integer('num_actor_threads', 2, 'Threads the actors are '
                     'spread over; each steps its environments as a batch.',
                     lower_bound=1)
flags.DEFINE_integer('batch_size', 32, 'Trajectories per learner batch.',
                     lower_bound=1)
flags.DEFINE_integer('unroll_length', None, 'Steps per trajectory (T).',
                     lower_bound=1)
flags.DEFINE_integer('num_action_repeats', 4, 'Frames per agent step.',
                     lower_bound=1)
flags.DEFINE_float('total_environment_frames', None,
                   'Frames to train for; the learning rate anneals to 0 '
                   'over them.', lower_bound=1)
flags.DEFINE_integer('seed', 1, 'Seed of the agent and the environments.')
flags.DEFINE_float('entropy_cost', None, 'Entropy loss weight.')
flags.DEFINE_float('baseline_cost', None, 'Baseline loss weight.')
flags.DEFINE_float('discounting', None, 'Discount gamma.')
flags.DEFINE_enum('reward_clipping', None, ['abs_one', 'soft_asymmetric'],
                  'Reward clipping.')
flags.DEFINE_float('learning_rate', None, 'Initial learning rate.')
flags.DEFINE_float('decay', None, 'RMSProp decay.')
flags.DEFINE_float('momentum', None, 'RMSProp momentum.')
flags.DEFINE_float('epsilon', None, 'RMSProp epsilon.')
flags.DEFINE_float('max_grad_norm', None,
                   'Global gradient-norm clipping; 0: none.')
flags.DEFINE_boolean('xla', False, 'Compile the learner step with XLA.')
flags.DEFINE_integer('test_num_episodes', 10, 'Games per level in test '
                     'mode (the paper: 200).', lower_bound=1)
flags.DEFINE_boolean('overwrite', False, 'Test mode: replace an existing '
                     'test_results.json without asking.')
# Distributed runs (the paper's jobs; see impala_tf/cluster.py).
flags.DEFINE_enum('job_name', 'local', ['local', 'learner', 'actor'],
                  'local: learner and actors in this process; learner or '
                  'actor: one task of a cluster (or from TF_CONFIG).')
flags.DEFINE_integer('task', 0, 'The task\'s index in its job.',
                     lower_bound=0)
flags.DEFINE_string('learner_hosts', 'localhost:8000', 'Comma-separated '
                    'learner addresses; several train synchronously '
                    '(each also uses port + 1 for the all-reduce).')
flags.DEFINE_string('actor_hosts', 'localhost:8002,localhost:8003',
                    'Comma-separated actor task addresses (they name the '
                    'actors; actors listen on nothing). --num_actors '
                    'environments are split over these tasks.')
flags.DEFINE_integer('connect_timeout_secs', 300, 'How long an actor '
                     'retries an unreachable learner (and learners each '
                     'other) before it gives up with an error.',
                     lower_bound=1)
flags.DEFINE_integer('actor_silence_secs', 30, 'A learner logs an actor '
                     'task that sent nothing for this long as lost.',
                     lower_bound=1)
# This implementation's own flags.
flags.DEFINE_boolean('dynamic_batching', False, 'Merge the actor threads\' '
                     'inference calls into one forward pass: pays with many '
                     'threads of few environments; with 2 threads of many '
                     'it stops one thread acting while the other infers '
                     '(see the README).')
flags.DEFINE_integer('inference_min_batch_size', 1, 'Dynamic batching: '
                     'rows to wait for, up to the timeout.', lower_bound=1)
flags.DEFINE_integer('inference_timeout_ms', 10, 'Dynamic batching: the '
                     'longest wait for the minimum batch.', lower_bound=0)
flags.DEFINE_enum('atari_environment', 'vector', ['vector', 'process'],
                  'Atari training environments: ale-py\'s C++ vector '
                  'environment, or one process per game (py_process).')
flags.DEFINE_boolean('full_action_set', None, 'Atari: all 18 actions; '
                     'default: with several games (their minimal sets '
                     'differ), else the game\'s minimal set.')
flags.DEFINE_string('dataset_path', None, 'DMLab: the directory of the '
                    'Brady-Konkle-Oliva images the psychlab levels need.')
flags.DEFINE_integer('width', 96, 'DMLab: frame width in pixels.',
                     lower_bound=1)
flags.DEFINE_integer('height', 72, 'DMLab: frame height in pixels.',
                     lower_bound=1)
flags.DEFINE_integer('queue_capacity', None, 'Trajectories the queue holds; '
                     'default: 2 batches.', lower_bound=1)
flags.DEFINE_integer('checkpoint_interval_secs', 300, 'Seconds between '
                     'checkpoints (one is also written at the end).',
                     lower_bound=1)
flags.DEFINE_integer('progress_interval_secs', 10, 'Seconds between '
                     'progress lines and learner summaries.', lower_bound=1)
FLAGS = flags.FLAGS

# Hyperparameters a domain decides when their flag is left unset.
DOMAIN_FLAGS = ('core', 'unroll_length', 'total_environment_frames',
                'entropy_cost', 'baseline_cost', 'discounting',
                'reward_clipping', 'learning_rate', 'decay', 'momentum',
                'epsilon', 'max_grad_norm')
# The flags a checkpoint's network and run depend on; a resumed run must
# keep them.
RUN_DEFINING_FLAGS = ('level_name', 'agent', 'core', 'full_action_set',
                      'num_action_repeats', 'width', 'height')
FINISH_GRACE_SECS = 3  # A finished learner still answers actors this long.

Domain = collections.namedtuple(
    'Domain',
    [
        # {flag name: value} for DOMAIN_FLAGS, but total_environment_frames
        # is (number of levels) -> frames.
        'defaults',
        # (level_name) -> None; ValueError if unknown, ImportError if its
        # environment is not installed.
        'check_level',
        'suites',  # {suite name: level names}, e.g. atari57.
        'benchmark',  # scoring.Benchmark for human-normalised scores, or None.
        'environment_info',  # (config, level_name) -> EnvironmentInfo.
        # (config, level_names, seed) -> BatchedEnvironment for training.
        'training_environments',
        # (level_name) -> the level test mode plays for it (DMLab-30 tests
        # two training levels on held-out twins).
        'test_level',
        # (config, level_names, seed) -> BatchedEnvironment for test mode.
        'test_environments',
    ])

# What the agent is built for.
EnvironmentInfo = collections.namedtuple(
    'EnvironmentInfo',
    [
        'num_actions',  # A.
        'frame_shape',  # (H, W, C) of the uint8 frames.
        'instruction_length',  # L of the instructions' word ids; 0: none.
    ])


def _atari_environment_info(config, level_name):
  game = atari_environment.AtariEnvironment(
      level_name, full_action_set=config.full_action_set)
  return EnvironmentInfo(game.action_spec().num_values,
                         game.observation_spec().shape, 0)


def _atari_processes(config, level_names, seed, noop_starts):
  constructors = [
      functools.partial(
          atari_environment.AtariEnvironment, level_name, seed=seed + index,
          num_action_repeats=config.num_action_repeats,
          full_action_set=config.full_action_set, noop_starts=noop_starts)
      for index, level_name in enumerate(level_names)
  ]
  return environments.ProcessEnvironments(constructors, level_names,
                                          config.num_action_repeats)


def _atari_training_environments(config, level_names, seed):
  if config.atari_environment == 'process':
    return _atari_processes(config, level_names, seed, noop_starts=False)
  return atari_environment.AtariVectorEnvironment(
      level_names, seed=seed,
      num_action_repeats=config.num_action_repeats,
      full_action_set=config.full_action_set)


def _dmlab_check_level(level_name):
  dmlab_scores.level_path(level_name)
  if level_name not in dmlab_scores.TRAIN_LEVELS:
    (train_level,) = [train for train, test in
                      dmlab_scores.TEST_LEVEL_OF.items() if test == level_name]
    raise ValueError(f'{level_name} is held out for testing: train on '
                     f'{train_level} (test mode plays {level_name} for it)')
  dmlab_environment.check_installed()


def _dmlab_environment_info(config, level_name):
  del level_name  # Every level has the same observations and actions.
  return EnvironmentInfo(len(dmlab_environment.DEFAULT_ACTION_SET),
                         (config.height, config.width, 3),
                         dmlab_environment.MAX_INSTRUCTION_WORDS)


def _dmlab_processes(config, level_names, seed, is_test):
  constructors = [
      functools.partial(
          dmlab_environment.DmLabEnvironment, level_name, seed=seed + index,
          num_action_repeats=config.num_action_repeats, is_test=is_test,
          dataset_path=config.dataset_path, width=config.width,
          height=config.height)
      for index, level_name in enumerate(level_names)
  ]
  return environments.ProcessEnvironments(constructors, level_names,
                                          config.num_action_repeats)


DOMAINS = {
    'atari': Domain(
        check_level=atari_environment.game_id,
        suites={atari_scores.SUITE: atari_scores.LEVELS},
        benchmark=atari_scores.BENCHMARK,
        defaults=dict(  # Table G.1; decay is not given: the official 0.99.
            core='feedforward', unroll_length=20,
            total_environment_frames=lambda num_levels: 2e8 * num_levels,
            entropy_cost=0.01,
            baseline_cost=0.5, discounting=0.99, reward_clipping='abs_one',
            learning_rate=0.0006, decay=0.99, momentum=0.0, epsilon=0.01,
            max_grad_norm=40.0),
        environment_info=_atari_environment_info,
        training_environments=_atari_training_environments,
        test_level=lambda level_name: level_name,
        test_environments=functools.partial(_atari_processes,
                                            noop_starts=True)),
    'dmlab': Domain(
        check_level=_dmlab_check_level,
        suites={dmlab_scores.SUITE: dmlab_scores.TRAIN_LEVELS},
        benchmark=dmlab_scores.BENCHMARK,
        # The official DMLab-30 run (scalable_agent's README); Table D.1
        # gives no decay or gradient clipping: the official 0.99 and none.
        # 1B frames per level as the paper's experts, 10B at most (the
        # DMLab-30 agents).
        defaults=dict(
            core='lstm', unroll_length=100,
            total_environment_frames=lambda num_levels: min(
                1e9 * num_levels, 1e10),
            entropy_cost=0.0033391318945337044, baseline_cost=0.5,
            discounting=0.99, reward_clipping='soft_asymmetric',
            learning_rate=0.00031866995608948655, decay=0.99, momentum=0.0,
            epsilon=0.1, max_grad_norm=0.0),
        environment_info=_dmlab_environment_info,
        training_environments=functools.partial(_dmlab_processes,
                                                is_test=False),
        test_level=dmlab_scores.TEST_LEVEL_OF.get,
        test_environments=functools.partial(_dmlab_processes, is_test=True)),
}


class UsageError(Exception):
  """Bad flags or levels: reported as one line, exit status 1 (as absl's
  own flag errors)."""


def domain_of(level_name):
  prefix = level_name.split('/', 1)[0]
  if prefix not in DOMAINS:
    suites = [suite for domain in DOMAINS.values() for suite in domain.suites]
    raise UsageError(
        f'unknown level {level_name!r}: levels look like '
        f'{" or ".join(name + "/<level>" for name in DOMAINS)}'
        f'{"; suites: " + ", ".join(suites) if suites else ""}')
  return DOMAINS[prefix]


def expand_levels(level_name):
  """The levels `--level_name` names: a level, a suite or a comma list of
  them, all of one domain, each once."""
  suites = {suite: levels for domain in DOMAINS.values()
            for suite, levels in domain.suites.items()}
  levels = []
  for item in level_name.split(','):
    item = item.strip()
    for level in suites.get(item, [item]):
      try:
        domain_of(level).check_level(level)
      except (ValueError, ImportError) as error:
        raise UsageError(error) from None
      if level in levels:
        raise UsageError(f'{level} is named twice in --level_name')
      levels.append(level)
  if len({level.split('/', 1)[0] for level in levels}) > 1:
    raise UsageError('--level_name mixes domains; one agent learns levels '
                     'of one domain')
  return levels


def make_config(flag_values):
  """The run's settings: every flag, with unset domain flags filled in, and
  `levels`, the level names the run plays."""
  levels = expand_levels(flag_values.level_name)
  config = {
      flag.name: flag.value
      for flag in flag_values.get_key_flags_for_module(sys.modules[__name__])
  }
  domain = domain_of(levels[0])
  for name in DOMAIN_FLAGS:
    if config[name] is None:
      config[name] = domain.defaults[name]
  if callable(config['total_environment_frames']):
    config['total_environment_frames'] = config['total_environment_frames'](
        len(levels))
  config['total_environment_frames'] = int(config['total_environment_frames'])
  if config['queue_capacity'] is None:
    config['queue_capacity'] = 2 * config['batch_size']
  if config['full_action_set'] is None:
    config['full_action_set'] = len(levels) > 1
  elif len(levels) > 1 and not config['full_action_set']:
    raise UsageError('several levels share one agent, which needs one '
                     'action set: drop --nofull_action_set')
  if config['mode'] == 'train' and config['num_actors'] < len(levels):
    raise UsageError(f'--num_actors={config["num_actors"]} is fewer than '
                     f'the {len(levels)} levels; each level needs an actor')
  config['levels'] = levels
  config.update(_cluster_settings(flag_values, config))
  return collections.namedtuple('Config', sorted(config))(**config)


_CLUSTER_FLAGS = ('job_name', 'task', 'learner_hosts', 'actor_hosts')


def _cluster_settings(flag_values, config):
  """job_name, task, learner_hosts and actor_hosts (tuples), from the flags
  or from TF_CONFIG, checked."""
  tf_config = os.environ.get('TF_CONFIG')
  try:
    if tf_config:
      given = [f'--{name}' for name in _CLUSTER_FLAGS
               if flag_values[name].present]
      if given:
        raise UsageError(f'TF_CONFIG and {", ".join(given)} both describe '
                         'the cluster; give one of them')
      cluster, job_name, task = cluster_lib.from_tf_config(tf_config)
    else:
      cluster = cluster_lib.from_hosts(config['learner_hosts'],
                                       config['actor_hosts'])
      job_name, task = config['job_name'], config['task']
      if job_name != 'local':
        cluster_lib.check_task(cluster, job_name, task)
  except ValueError as error:
    raise UsageError(error) from None
  if job_name != 'local':
    if config['mode'] == 'test':
      raise UsageError('test mode runs on one machine: drop --job_name')
    if config['num_actors'] < len(cluster.actors):
      raise UsageError(f'--num_actors={config["num_actors"]} is fewer than '
                       f'the {len(cluster.actors)} actor tasks')
    if config['batch_size'] % len(cluster.learners):
      raise UsageError(f'--batch_size={config["batch_size"]} does not split '
                       f'evenly over {len(cluster.learners)} learners')
  return dict(job_name=job_name, task=task, learner_hosts=cluster.learners,
              actor_hosts=cluster.actors)


def build_agent(config, info):
  """The agent for `info`, an `EnvironmentInfo`."""
  return agents.Agent(info.num_actions, info.frame_shape, torso=config.agent,
                      core=config.core,
                      use_instruction=info.instruction_length > 0,
                      seed=config.seed)


def build_learner(config, info, strategy=None):
  """The learner of an agent for `info`; `strategy`: see `learner.Learner`."""
  agent = build_agent(config, info)
  hparams = learner_lib.LearnerHParams(
      learning_rate=config.learning_rate,
      total_environment_frames=config.total_environment_frames,
      num_action_repeats=config.num_action_repeats, decay=config.decay,
      momentum=config.momentum, epsilon=config.epsilon,
      max_grad_norm=config.max_grad_norm,
      discounting=config.discounting, baseline_cost=config.baseline_cost,
      entropy_cost=config.entropy_cost,
      reward_clipping=config.reward_clipping)
  return learner_lib.Learner(agent, hparams, xla=config.xla,
                             strategy=strategy)


def check_resumable(config):
  """Writes the run's flags on the first start; refuses to resume a run in
  `logdir` whose network or level differ."""
  path = os.path.join(config.logdir, 'flags.json')
  settings = {name: value for name, value in config._asdict().items()
              if name != 'levels'}
  if os.path.exists(path):
    with open(path) as f:
      saved = json.load(f)
    # Runs saved before a flag existed ran with its default.
    changed = [name for name in RUN_DEFINING_FLAGS
               if name in saved and saved[name] != settings[name]]
    if changed:
      raise UsageError(
          f'{config.logdir} holds a run with other ' + ', '.join(
              f'--{name}={saved.get(name)}' for name in changed) +
          '; use another --logdir or the same flags')
  output_files.write_atomically(
      path, json.dumps(settings, indent=2, sort_keys=True))


def assign_levels(levels, num_actors):
  """The level of each actor: round-robin, as the paper's multi-task runs."""
  return [levels[index % len(levels)] for index in range(num_actors)]


def split_evenly(items, parts):
  """`items` cut into `parts` contiguous runs differing in length by <= 1."""
  bounds = np.linspace(0, len(items), parts + 1).round().astype(int)
  return [items[start:end] for start, end in zip(bounds[:-1], bounds[1:])]


class _Actors:
  """Actors for `level_names` in `num_actor_threads` threads, acting with
  `agent` and sending through `transport`; started at once."""

  def __init__(self, config, domain, level_names, agent, transport,
               on_finished_game, seed):
    self._transport = transport
    self._policy = actor_lib.Policy(
        agent, config.dynamic_batching,
        minimum_batch_size=config.inference_min_batch_size,
        maximum_batch_size=len(level_names),
        timeout_ms=config.inference_timeout_ms)
    self._environments = [
        domain.training_environments(config, names, seed + 10_000 * index)
        for index, names in enumerate(
            split_evenly(level_names, min(config.num_actor_threads,
                                          len(level_names))))
    ]
    self.threads = actor_lib.ActorThreads([
        actor_lib.Actor(
            env, self._policy, transport, config.unroll_length,
            initial_state=tf.nest.map_structure(
                lambda x: x.numpy(), agent.initial_state(env.num_envs)),
            num_actions=agent.num_actions, on_finished_game=on_finished_game)
        for env in self._environments
    ], transport)
    self.threads.start()

  @property
  def num_threads(self):
    return len(self._environments)

  def stop(self):
    """Closes the transport, then joins and frees everything."""
    self._transport.close()
    self.threads.join()
    self._policy.close()
    for env in self._environments:
      env.close()


def actor_level_names(config, task):
  """The levels actor task `task` plays: its share of the `num_actors`
  environments, whose levels go round-robin over all of them."""
  all_level_names = assign_levels(config.levels, config.num_actors)
  shares = split_evenly(all_level_names, len(config.actor_hosts))
  return shares[task]


def run_actor_task(config, stop, print_fn=print):
  """An actor job: acts with the newest weights the learner gives, sends
  trajectories to it, until the learner finishes or `stop` is set.

  Raises:
    rpc_transport.Unreachable: the learner did not answer within
      `connect_timeout_secs`.
  """
  domain = domain_of(config.levels[0])
  cluster = cluster_lib.Cluster(config.learner_hosts, config.actor_hosts)
  level_names = actor_level_names(config, config.task)
  info = domain.environment_info(config, config.levels[0])
  agent = build_agent(config, info)
  address = cluster_lib.learner_of_actor(cluster, config.task)
  transport = rpc_transport.RemoteTransport(
      address, config.task,
      rpc_transport.unroll_spec(agent, config.unroll_length,
                                info.frame_shape, info.instruction_length),
      agent.trainable_variables, config.connect_timeout_secs, print_fn)
  print_fn(f'Actor {config.task} ({config.actor_hosts[config.task]}): '
           f'{len(level_names)} environments of {config.level_name}, '
           f'sending to learner {address}.')
  actors = _Actors(config, domain, level_names, agent, transport,
                   transport.add_game,
                   seed=config.seed * 1_000_003 + 7_919 * (config.task + 1))
  try:
    while not stop.wait(config.progress_interval_secs):
      if transport.closed:
        break
      print_fn(f'actor {config.task}: {transport.steps_sent:,} steps sent, '
               f'learner update {transport.version:,}.'
               if transport.version >= 0 else
               f'actor {config.task}: waiting for learner {address}.')
  finally:
    actors.stop()
  unreachable = [error for error in actors.threads.errors
                 if isinstance(error, rpc_transport.Unreachable)]
  if unreachable:
    raise unreachable[0]
  actors.threads.check()
  print_fn(f'actor {config.task}: stopped after {transport.steps_sent:,} '
           'steps.')


def train(config, stop=None, print_fn=print):
  """Trains until `total_environment_frames` or `stop` is set: on one
  machine (`job_name` local), or as one task of a distributed run.

  Returns a dict with the final frame and update counts (learners).
  """
  stop = stop or threading.Event()
  if config.job_name == 'actor':
    return run_actor_task(config, stop, print_fn)
  levels = config.levels
  domain = domain_of(levels[0])
  distributed = config.job_name == 'learner'
  num_learners = len(config.learner_hosts) if distributed else 1
  is_chief = config.task == 0 or not distributed
  strategy = None
  if num_learners > 1:
    # Created first: the strategy configures TensorFlow's runtime.
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=cluster_lib.collective_cluster_resolver(
            cluster_lib.Cluster(config.learner_hosts, config.actor_hosts),
            config.task),
        communication_options=tf.distribute.experimental.CommunicationOptions(
            timeout_seconds=config.connect_timeout_secs))
  if is_chief:
    check_resumable(config)
  info = domain.environment_info(config, levels[0])
  learner = build_learner(config, info, strategy)
  checkpoint = tf.train.Checkpoint(learner=learner)
  # The first learner keeps the checkpoints; the others start from its
  # weights.
  manager = tf.train.CheckpointManager(
      checkpoint, os.path.join(config.logdir, 'checkpoints'), max_to_keep=3)
  if is_chief and manager.latest_checkpoint:
    checkpoint.restore(manager.latest_checkpoint).assert_consumed()
    print_fn(f'Resuming from {manager.latest_checkpoint} at '
             f'{int(learner.num_environment_frames.numpy()):,} frames.')
  learner.broadcast_from_first()
  num_updates = int(learner.num_updates.numpy())
  frames = int(learner.num_environment_frames.numpy())
  # Fresh random streams after a restart, not a replay of the first run's.
  tf.random.set_seed(config.seed + num_updates)
  run_seed = config.seed * 1_000_003 + num_updates

  game_log = progress.GameLog()
  if distributed:
    served = {index: address for index, address in
              enumerate(config.actor_hosts)
              if index % num_learners == config.task}
    try:
      transport = rpc_transport.LearnerService(
          config.learner_hosts[config.task],
          rpc_transport.unroll_spec(learner.agent, config.unroll_length,
                                    info.frame_shape,
                                    info.instruction_length),
          config.queue_capacity, learner.agent.trainable_variables,
          learner.num_updates, served, game_log.add, print_fn,
          silence_secs=config.actor_silence_secs)
    except ValueError as error:
      raise UsageError(error) from None
    where = (f'learner {config.task} of {num_learners} on '
             f'{config.learner_hosts[config.task]}, serving actor tasks '
             f'{", ".join(str(index) for index in served)}')
  else:
    transport = transport_lib.LocalTransport(
        config.queue_capacity, policy_version=lambda: num_updates)
    actors = _Actors(
        config, domain, assign_levels(levels, config.num_actors),
        learner.agent, transport, game_log.add, run_seed)
    where = f'{config.num_actors} actors in {actors.num_threads} threads'
  batch_size = config.batch_size // num_learners
  staging_area = staging.StagingArea(
      transport, batch_size,
      device='/GPU:0' if tf.config.list_logical_devices('GPU') else None)
  writer = tf.summary.create_file_writer(
      config.logdir if is_chief else os.path.join(
          config.logdir, f'learner_{config.task}'))
  progress_line = progress.ProgressLine(
      config.total_environment_frames, config.progress_interval_secs,
      print_fn)
  print_fn(f'Training {config.agent} {config.core} agent on '
           f'{config.level_name} ({len(levels)} level'
           f'{"s" if len(levels) > 1 else ""}, {info.num_actions} actions): '
           f'{where}, batch {batch_size}, unroll {config.unroll_length}, '
           f'{config.total_environment_frames:,} frames; logdir '
           f'{config.logdir}.')
  last_checkpoint = time.monotonic()
  policy_lags = []
  stats = {}
  progress_line.maybe_print(frames, '')
  try:
    while (frames < config.total_environment_frames and
           not learner.any_learner(stop.is_set())):
      batch = staging_area.get()
      stats = learner.train_step(batch)
      policy_lags.append(num_updates - batch.policy_version.mean())
      num_updates += 1
      frames = int(learner.num_environment_frames.numpy())
      progress.write_games(writer, frames, game_log.take_unwritten(),
                           domain.benchmark)
      recent_means = game_log.recent_means()
      summary = progress.human_normalized_summary(recent_means, levels,
                                                  domain.benchmark)
      fps = progress_line.maybe_print(
          frames, progress.describe_returns(recent_means, levels, summary),
          extra=f'updates {num_updates:,} | loss '
          f'{float(stats["total_loss"]):.2f} | queue '
          f'{transport.fill():.0%} | policy lag {np.mean(policy_lags):.1f}')
      if fps is not None:
        scalars = {name: float(value) for name, value in stats.items()}
        scalars.update(policy_lag=float(np.mean(policy_lags)),
                       queue_fill=transport.fill())
        progress.write_scalars(writer, frames, scalars, 'learner')
        progress.write_scalars(writer, frames, {'frames_per_second': fps},
                               'throughput')
        if summary:
          progress.write_scalars(writer, frames, summary, 'human_normalized')
        policy_lags = []
      if (is_chief and time.monotonic() - last_checkpoint >
          config.checkpoint_interval_secs):
        manager.save(checkpoint_number=num_updates)
        last_checkpoint = time.monotonic()
  except transport_lib.Closed:
    if not distributed:
      actors.threads.check()  # An actor crashed: say so.
  finally:
    if stop.is_set():
      print_fn('Stop requested: writing a checkpoint.')
    if distributed:
      if frames >= config.total_environment_frames:
        # Actors that ask in time stop; a learner only stopped (to be
        # restarted) leaves them retrying.
        transport.finish()
        time.sleep(FINISH_GRACE_SECS)
      transport.close()
    else:
      actors.stop()
  if is_chief:
    manager.save(checkpoint_number=num_updates)
  writer.flush()
  print_fn(f'Stopped at {frames:,} frames, {num_updates:,} updates; ' + (
      f'checkpoint {manager.latest_checkpoint}' if is_chief else
      'checkpoints are the first learner\'s') +
           f'; weights fingerprint {weights_fingerprint(learner.agent):.6f}.')
  recent_means = game_log.recent_means()
  return {'frames': frames, 'updates': num_updates,
          'last_stats': {name: float(value) for name, value in stats.items()},
          'recent_returns': recent_means,
          'human_normalized': progress.human_normalized_summary(
              recent_means, levels, domain.benchmark)}


def weights_fingerprint(agent):
  """The sum of the agent's weights' absolute values: equal on learners
  that hold one set of weights."""
  return float(sum(tf.reduce_sum(tf.abs(tf.cast(v, tf.float64)))
                   for v in agent.trainable_variables))


def evaluate(config, print_fn=print):
  """The test protocol on the latest checkpoint: `test_num_episodes` games
  per level; writes `<logdir>/test_results.json` and returns its content.

  The results hold, per level played (the domain's `test_level` of each
  trained level), the mean, std and count of game returns and, for a
  suite's levels, the human-normalised mean and the suite's summary (e.g.
  median and mean over levels).
  """
  domain = domain_of(config.levels[0])
  levels = [domain.test_level(level) for level in config.levels]
  path = os.path.join(config.logdir, 'test_results.json')
  try:
    output_files.check_overwrite(path, config.overwrite)
  except FileExistsError as error:
    raise UsageError(error) from None
  manager_dir = os.path.join(config.logdir, 'checkpoints')
  latest = tf.train.latest_checkpoint(manager_dir)
  if latest is None:
    raise UsageError(f'no checkpoint in {manager_dir}; train first')
  learner = build_learner(config,
                          domain.environment_info(config, config.levels[0]))
  tf.train.Checkpoint(learner=learner).restore(latest).expect_partial()
  # At most --num_actors environments (processes) in all, at least one per
  # level.
  envs_per_level = max(1, min(config.test_num_episodes,
                              config.num_actors // len(levels)))
  level_names = [level for level in levels for _ in range(envs_per_level)]
  env = domain.test_environments(config, level_names, config.seed + 7919)
  policy = actor_lib.Policy(learner.agent, dynamic_batching_enabled=False)
  # Each environment plays a fixed number of games, so short games are not
  # over-represented.
  quotas = [len(part) for part in split_evenly(
      range(config.test_num_episodes), envs_per_level)] * len(levels)
  returns = collections.defaultdict(list)
  finished = [0] * len(level_names)
  env_output = env.reset()
  action = np.zeros([len(level_names)], np.int32)
  state = tf.nest.map_structure(lambda x: x.numpy(),
                                learner.agent.initial_state(len(level_names)))
  print_fn(f'Testing {latest} on {config.level_name} ({len(levels)} level'
           f'{"s" if len(levels) > 1 else ""}): {config.test_num_episodes} '
           f'games per level, {len(level_names)} environments.')
  try:
    while any(done < quota for done, quota in zip(finished, quotas)):
      agent_output, state = policy(action, env_output, state)
      action = agent_output.action
      env_output, games = env.step(action)
      for game in games:
        if finished[game.env_index] < quotas[game.env_index]:
          finished[game.env_index] += 1
          returns[game.level_name].append(game.episode_return)
          print_fn(f'{game.level_name}: game {len(returns[game.level_name])}'
                   f' return {game.episode_return:g}')
  finally:
    env.close()
  per_level = {
      level: {'mean': float(np.mean(returns[level])),
              'std': float(np.std(returns[level])),
              'episodes': len(returns[level])}
      for level in levels
  }
  results = {
      'checkpoint': latest,
      'environment_frames': int(learner.num_environment_frames.numpy()),
      'test_num_episodes': config.test_num_episodes,
      'levels': per_level,
  }
  benchmark = domain.benchmark
  if benchmark and all(benchmark.knows(level) for level in levels):
    normalized = benchmark.normalized(
        {level: result['mean'] for level, result in per_level.items()})
    for level, value in normalized.items():
      per_level[level]['human_normalized'] = value
    results['human_normalized'] = benchmark.summary(normalized)
  output_files.write_atomically(path, json.dumps(results, indent=2))
  for level, result in per_level.items():
    print_fn(f'{level}: mean return {result["mean"]:.2f} '
             f'(std {result["std"]:.2f}, {result["episodes"]} games)' + (
                 f', human-normalised {result["human_normalized"]:.1f}%'
                 if 'human_normalized' in result else ''))
  if 'human_normalized' in results:
    print_fn(f'{benchmark.name}, {len(levels)} levels: human-normalised ' +
             ', '.join(f'{name} {value:.1f}%' for name, value in
                       results['human_normalized'].items()))
  print_fn(f'Wrote {path}.')
  return results


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {" ".join(argv[1:])}')
  sys.stdout.reconfigure(line_buffering=True)  # Progress shows at once.
  # TensorFlow's INFO lines (a line per collective, per checkpoint shard)
  # would drown the progress lines.
  logging.set_verbosity(logging.WARNING)
  try:
    config = make_config(FLAGS)
    if config.mode == 'train':
      stop = threading.Event()

      def request_stop(signum, frame):
        # Only set the flag: printing here could re-enter a print of the
        # main thread's (a RuntimeError). A second Ctrl-C aborts.
        del signum, frame
        stop.set()
        signal.signal(signal.SIGINT, signal.SIG_DFL)

      signal.signal(signal.SIGINT, request_stop)
      signal.signal(signal.SIGTERM, request_stop)
      train(config, stop)
    else:
      evaluate(config)
  except (UsageError, rpc_transport.Unreachable) as error:
    sys.exit(f'impala_tf: error: {error}')


if __name__ == '__main__':
  app.run(main)
