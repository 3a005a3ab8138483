r"""IMPALA (Espeholt et al., 2018): the composition root. It only wires parts
together: the flags (the paper's names; each suite defines its own), the
run's configuration with each part's own, the registry of suites by level
prefix, and main dispatching to training
(impala_tf/training.py), test mode (impala_tf/evaluation.py) or an actor
job (impala_tf/actor_task.py). Examples:

  .venv/bin/python experiment.py --level_name=atari/pong --logdir=logs/pong
  .venv/bin/python experiment.py --flagfile=atari57/atari_10m.flags \
      --level_name=atari/pong --logdir=logs/pong_10m     # a flag file
  .venv/bin/python experiment.py --level_name=atari57 --logdir=logs/atari57
  .venv/bin/python experiment.py --level_name=dmlab30 --agent=deep \
      --num_actors=150 --logdir=logs/dmlab30            # needs DeepMind Lab
  .venv/bin/python experiment.py --mode=test --level_name=atari/pong \
      --logdir=logs/pong --test_num_episodes=10
  .venv/bin/python experiment.py --job_name=learner --task=0 \
      --learner_hosts=hostA:8000 --actor_hosts=hostB:8001,hostC:8001 ...

Ctrl-C or SIGTERM writes a checkpoint; the same command resumes. Flags left
unset take the paper's values for the level's suite (each suite's
domain.py); launch.py runs a distributed job on this machine.
"""

from impala_tf import quiet_start

quiet_start.import_tensorflow()  # Before anything else imports it.

# pylint: disable=g-import-not-at-top,wrong-import-position
import collections
import math
import os
import signal
import sys
import threading

from absl import app
from absl import flags
from absl import logging

from impala_tf import actor as actor_lib
from impala_tf import actor_task
from impala_tf import agents
from impala_tf import checkpointing
from impala_tf import cluster as cluster_lib
from impala_tf import corrections
from impala_tf import domain as domain_lib
from impala_tf import evaluation
from impala_tf import learner as learner_lib
from impala_tf import local_actors
from impala_tf import pbt
from impala_tf import rpc_client
from impala_tf import training
from impala_tf.domain import UsageError
# pylint: enable=g-import-not-at-top,wrong-import-position

# The paper's flag names (scalable_agent's experiment.py).
flags.DEFINE_enum('mode', 'train', ['train', 'test'], 'Training or test.')
flags.DEFINE_string('logdir', 'logs/impala', 'Checkpoints, summaries, '
                    'flags and test results.')
flags.DEFINE_string('level_name', 'atari/pong',
                    'A level (atari/<game>: an ale-py ROM id; '
                    'dmlab/<level>: any DeepMind Lab level script, e.g. '
                    'dmlab/seekavoid_arena_01 or a DMLab-30 level), a suite '
                    '(atari57, dmlab30) or a comma-separated list of levels: '
                    'one agent learns them all, levels assigned round-robin '
                    'to actors.')
flags.DEFINE_enum('agent', 'shallow', list(agents.TORSOS), 'The torso.')
flags.DEFINE_enum('core', None, list(agents.CORES),
                  'The core; default per domain (Atari: feedforward, '
                  'DMLab: lstm).')
flags.DEFINE_boolean('normalize_frames', False, 'Normalise each pixel by '
                     'its running mean and standard deviation before the '
                     'torso (not the paper\'s: it feeds frames / 255); '
                     'impala_tf/frame_normalizer.py says why.')
flags.DEFINE_integer('num_actors', 64, 'Environments acting in parallel, '
                     'each an actor of the paper (64 keeps 2 CPU cores busy '
                     'for Atari; docs/benchmarks.md).', lower_bound=1)
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
                   'Frames to train for (and, unless '
                   '--learning_rate_anneal_frames, the frames the learning '
                   'rate anneals to 0 over).', lower_bound=1)
flags.DEFINE_integer('seed', 1, 'Seed of the agent and the environments.',
                     lower_bound=0)
flags.DEFINE_float('entropy_cost', None, 'Entropy loss weight.')
flags.DEFINE_float('baseline_cost', None, 'Baseline loss weight.')
flags.DEFINE_float('discounting', None, 'Discount gamma.')
flags.DEFINE_enum('reward_clipping', None, ['abs_one', 'soft_asymmetric'],
                  'Reward clipping.')
flags.DEFINE_enum('off_policy_correction', 'vtrace',
                  list(corrections.CORRECTIONS), 'The off-policy correction '
                  '(the paper\'s Sec. 5.2.1): vtrace, one_step (importance '
                  'weights on the policy gradient only), epsilon (log(pi + '
                  '1e-6), no correction) or none.')
flags.DEFINE_float('vtrace_lambda', 1.0, 'lambda of the paper\'s Remark 2: '
                   'every trace c_i is lambda * min(c_bar, pi/mu); 1 (the '
                   'paper\'s runs) gives V-trace as in its eq. 1, below 1 '
                   'shorter, lower-variance targets.')
flags.DEFINE_float('replay_proportion', 0.0, 'Experience replay (the '
                   'paper\'s Sec. 5.2.2, which uses 0.5): the part of each '
                   'batch drawn uniformly from the last --replay_capacity '
                   'trajectories; 0: none.')
flags.DEFINE_integer('replay_capacity', 10_000, 'Trajectories the replay '
                     'buffer holds, first in first out.', lower_bound=1)
flags.DEFINE_integer('actor_weights_delay', 0, 'Local runs: actors act '
                     'with weights this many learner updates old (the '
                     'paper\'s policy-lag analysis); 0: the newest.',
                     lower_bound=0)
flags.DEFINE_float('learning_rate', None, 'Initial learning rate.')
flags.DEFINE_float('learning_rate_anneal_frames', None, 'Frames over which '
                   'the learning rate anneals linearly to 0 (and stays '
                   'there); default: --total_environment_frames, as the '
                   'paper.', lower_bound=1)
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
flags.DEFINE_string('test_checkpoint', '', 'Test mode: the checkpoint to '
                    'play (a path as <logdir>/checkpoints/ckpt-N); default '
                    'the newest.')
flags.DEFINE_string('test_results_file', '', 'Test mode: where the results '
                    'go; default <logdir>/test_results.json.')
flags.DEFINE_integer('periodic_test_episodes', 0, 'Training: games per level '
                     'played in test mode on the newest checkpoint whenever '
                     'no such test runs, by a child process at a low CPU '
                     'priority; results in TensorBoard (test/...) and a '
                     'printed line (impala_tf/periodic_test.py). 0: none.',
                     lower_bound=0)
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
flags.DEFINE_integer('actor_hang_secs', 300, 'An actor thread that '
                     'makes no environment step for this long (not waiting '
                     'on the learner) ends the run with an error, after a '
                     'checkpoint.', lower_bound=1)
flags.DEFINE_integer('actor_silence_secs', 30, 'A learner logs an actor '
                     'task that sent nothing for this long as lost.',
                     lower_bound=1)
# Population-based training (the paper's Appendix F; impala_tf/pbt.py):
# this run as one member of a population. population.py starts one.
flags.DEFINE_string('pbt_dir', '', 'The population\'s shared directory '
                    '(a path or a bucket); empty: not a member.')
flags.DEFINE_integer('pbt_member', 0, 'This member\'s index.',
                     lower_bound=0)
flags.DEFINE_list('pbt_evolve', list(learner_lib.EVOLVING), 'The '
                  'hyperparameters that evolve (max_grad_norm only where '
                  'the run clips). Those not given as flags start from '
                  'Table D.1\'s distributions.')
flags.DEFINE_float('pbt_burn_in_frames', 2e7, 'Frames before the first '
                   'change (the paper: 20M).', lower_bound=0)
flags.DEFINE_integer('pbt_ready_episodes', 5000, 'Games between a '
                     'member\'s changes (the paper: 5,000).', lower_bound=1)
flags.DEFINE_float('pbt_exploit_threshold', 5.0, 'How much higher (in '
                   'absolute fitness: percentage points of the capped mean '
                   'human-normalised score with several levels, return '
                   'with one) another member must be to be copied (the '
                   'paper: 5%).', lower_bound=0)
flags.DEFINE_float('pbt_perturb_probability', 1 / 3, 'Each evolving '
                   'hyperparameter\'s chance to change at a member\'s '
                   'turn (the paper: 1/3).', lower_bound=0, upper_bound=1)
flags.DEFINE_float('pbt_perturb_factor', 1.2, 'A change multiplies by this '
                   'or its inverse (the paper: 1.2).', lower_bound=1)
# This implementation's own flags.
flags.DEFINE_boolean('dynamic_batching', False, 'Merge the actor threads\' '
                     'inference calls into one forward pass: pays with many '
                     'threads of few environments; with 2 threads of many '
                     'it stops one thread acting while the other infers '
                     '(docs/benchmarks.md).')
flags.DEFINE_integer('inference_min_batch_size', 1, 'Dynamic batching: '
                     'rows to wait for, up to the timeout.', lower_bound=1)
flags.DEFINE_integer('inference_timeout_ms', 10, 'Dynamic batching: the '
                     'longest wait for the minimum batch.', lower_bound=0)
flags.DEFINE_integer('queue_capacity', None, 'Trajectories the queue holds; '
                     'default: 2 batches.', lower_bound=1)
flags.DEFINE_integer('checkpoint_interval_secs', 300, 'Seconds between '
                     'checkpoints (one is also written at the end).',
                     lower_bound=1)
flags.DEFINE_integer('progress_interval_secs', 10, 'Seconds between '
                     'progress lines and learner summaries.', lower_bound=1)
FLAGS = flags.FLAGS

# The suites, by level prefix: a suite is its folder (whose domain.py
# defines its flags and its Domain) and a line here.
SUITES = {
    'atari': 'atari57.domain',
    'dmlab': 'dmlab30.domain',
    'catch': 'catch.domain',
}
DOMAINS = domain_lib.load_domains(SUITES)

# Hyperparameters a domain decides when their flag is left unset.
DOMAIN_FLAGS = ('core', 'unroll_length', 'total_environment_frames',
                'entropy_cost', 'baseline_cost', 'discounting',
                'reward_clipping', 'learning_rate', 'decay', 'momentum',
                'epsilon', 'max_grad_norm')

# A run's configuration: the settings of the run itself, then each part's
# own typed configuration.
Config = collections.namedtuple(
    'Config',
    [
        'mode', 'logdir', 'level_name', 'seed', 'num_action_repeats',
        'total_environment_frames', 'batch_size', 'queue_capacity',
        'replay_proportion', 'replay_capacity', 'actor_weights_delay', 'xla',
        'test_num_episodes', 'overwrite', 'test_checkpoint',
        'test_results_file',
        'periodic_test_episodes', 'checkpoint_interval_secs',
        'progress_interval_secs',
        # The cluster (cluster.TASK_FLAGS, hosts as tuples) and its timeouts.
        'job_name', 'task', 'learner_hosts', 'actor_hosts',
        'connect_timeout_secs', 'actor_silence_secs',
        'levels',  # The level names the run plays.
        'agent',  # agents.AgentSpec.
        'learner',  # learner.LearnerHParams.
        'actors',  # local_actors.ActorSettings.
        'suite',  # The suite's own configuration (its Domain.make_config).
        # pbt.PbtSettings with --pbt_dir, else None.
        'pbt',
        # The evolving hyperparameters a fresh member draws from Table D.1:
        # those not given as flags.
        'pbt_sampled',
        # {flag name: value} of every setting above, defaults filled in: what
        # flags.json keeps.
        'flags',
    ])


def domain_of(level_name):
  return domain_lib.domain_of(level_name, DOMAINS)


def make_config(flag_values):
  """The run's `Config` from `flag_values`, unset hyperparameters taking
  the suite's values."""
  levels = domain_lib.expand_levels(flag_values.level_name, DOMAINS)
  domain = domain_of(levels[0])
  settings = _settings(flag_values, domain, len(levels))
  _check(settings, levels)
  suite = domain.make_config(flag_values, levels)
  settings.update(suite._asdict())
  try:
    settings.update(cluster_lib.task_settings(
        os.environ.get('TF_CONFIG'),
        [name for name in cluster_lib.TASK_FLAGS if flag_values[name].present],
        settings))
  except ValueError as error:
    raise UsageError(error) from None
  return Config(
      levels=levels, suite=suite, flags=settings,
      pbt=_pbt_settings(settings),
      pbt_sampled=tuple(name for name in settings['pbt_evolve']
                        if not flag_values[name].present),
      agent=_part(agents.AgentSpec, settings, torso=settings['agent']),
      learner=_part(learner_lib.LearnerHParams, settings),
      actors=_part(local_actors.ActorSettings, settings),
      **{name: settings[name] for name in Config._fields
         if name not in ('levels', 'suite', 'flags', 'agent', 'learner',
                         'actors', 'pbt', 'pbt_sampled')})


def _pbt_settings(settings):
  """This member's `pbt.PbtSettings`, or None outside a population."""
  if not settings['pbt_dir']:
    return None
  unknown = set(settings['pbt_evolve']) - set(learner_lib.EVOLVING)
  if unknown:
    raise UsageError(f'--pbt_evolve names {", ".join(sorted(unknown))}; '
                     f'it takes {", ".join(learner_lib.EVOLVING)}')
  if len(settings['learner_hosts']) > 1:
    raise UsageError('a population member trains with one learner: drop '
                     'the other --learner_hosts')
  return pbt.PbtSettings(
      pbt_dir=settings['pbt_dir'], member=settings['pbt_member'],
      evolve=tuple(settings['pbt_evolve']),
      burn_in_frames=settings['pbt_burn_in_frames'],
      ready_episodes=settings['pbt_ready_episodes'],
      exploit_threshold=settings['pbt_exploit_threshold'],
      perturb_probability=settings['pbt_perturb_probability'],
      perturb_factor=settings['pbt_perturb_factor'])


def _settings(flag_values, domain, num_levels):
  """{name: value} of this module's flags, the domain's values for those
  left unset; range-checked."""
  settings = {
      flag.name: flag.value
      for flag in flag_values.get_key_flags_for_module(sys.modules[__name__])
  }
  # absl's bounds let NaN through (every comparison with it is false).
  for name, value in settings.items():
    if isinstance(value, float) and math.isnan(value):
      raise UsageError(f'--{name}=nan is out of range: it must be a number')
  for name in DOMAIN_FLAGS:
    if settings[name] is None:
      settings[name] = domain.defaults[name]
  if callable(settings['total_environment_frames']):
    settings['total_environment_frames'] = settings[
        'total_environment_frames'](num_levels)
  if settings['learning_rate_anneal_frames'] is None:
    settings['learning_rate_anneal_frames'] = settings[
        'total_environment_frames']
  try:
    learner_lib.check_hparams(settings)
  except ValueError as error:
    raise UsageError(error) from None
  for name in ('total_environment_frames', 'learning_rate_anneal_frames'):
    settings[name] = int(settings[name])
  if settings['queue_capacity'] is None:
    settings['queue_capacity'] = 2 * settings['batch_size']
  return settings


def _check(settings, levels):
  """Raises UsageError for settings that do not go together."""
  if settings['mode'] == 'train' and settings['num_actors'] < len(levels):
    raise UsageError(f'--num_actors={settings["num_actors"]} is fewer than '
                     f'the {len(levels)} levels; each level needs an actor')
  if settings['actor_weights_delay'] and settings['job_name'] != 'local':
    raise UsageError('--actor_weights_delay works in local runs only '
                     '(--job_name=local)')


def _part(part_type, settings, **given):
  """A part's configuration (a namedtuple) from the settings of its
  fields' names, but those `given`."""
  return part_type(**{name: given[name] if name in given else settings[name]
                      for name in part_type._fields})


def train(config, stop=None, print_fn=print):
  """Training (local or a learner job) or an actor job, by `job_name`."""
  domain = domain_of(config.levels[0])
  if config.job_name == 'actor':
    return actor_task.run_actor_task(config, domain,
                                     stop or threading.Event(), print_fn)
  return training.train(config, domain, stop, print_fn)


def evaluate(config, print_fn=print):
  """Test mode on the latest checkpoint; see `evaluation.evaluate`."""
  return evaluation.evaluate(config, domain_of(config.levels[0]), print_fn)


def _stop_on_signals():
  """An event set by SIGINT or SIGTERM; a second Ctrl-C aborts."""
  stop = threading.Event()

  def request_stop(signum, frame):
    # Only set the flag: printing here could re-enter a print of the main
    # thread's (a RuntimeError).
    del signum, frame
    stop.set()
    signal.signal(signal.SIGINT, signal.SIG_DFL)

  signal.signal(signal.SIGINT, request_stop)
  signal.signal(signal.SIGTERM, request_stop)
  return stop


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {" ".join(argv[1:])}')
  sys.stdout.reconfigure(line_buffering=True)  # Progress shows at once.
  # TensorFlow's INFO lines (a line per collective, per checkpoint shard)
  # would drown the progress lines.
  logging.set_verbosity(logging.WARNING)
  try:
    config = make_config(FLAGS)
    checkpointing.check_logdir(config.logdir)
    if config.mode == 'train':
      train(config, _stop_on_signals())
    else:
      evaluate(config)
  except (UsageError, rpc_client.Unreachable, actor_lib.ActorError,
          checkpointing.CheckpointWriteError) as error:
    sys.exit(f'impala_tf: error: {error}')


if __name__ == '__main__':
  app.run(main)
