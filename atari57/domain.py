"""Atari-57 as a `impala_tf.domain.Domain`: its flags and configuration, the
games, their environments for training (ale-py's C++ vector environment, or
one process per game) and for test mode (both with 1-30 no-op starts), the
human-normalised benchmark and the paper's Atari hyperparameters (Table
G.1)."""

import collections
import functools

from absl import flags

from atari57 import environment as atari_environment
from atari57 import scores
from impala_tf import domain
from impala_tf import environments

flags.DEFINE_enum('atari_environment', 'vector', ['vector', 'process'],
                  'Atari training environments: ale-py\'s C++ vector '
                  'environment, or one process per game (py_process).')
flags.DEFINE_boolean('full_action_set', None, 'Atari: all 18 actions; '
                     'default: with several games (their minimal sets '
                     'differ), else the game\'s minimal set.')

# The suite's configuration: its flags' values (full_action_set decided).
AtariConfig = collections.namedtuple(
    'AtariConfig', ['num_action_repeats', 'atari_environment',
                    'full_action_set'])


def _make_config(flag_values, level_names):
  full_action_set = flag_values.full_action_set
  if full_action_set is None:
    full_action_set = len(level_names) > 1
  elif len(level_names) > 1 and not full_action_set:
    raise domain.UsageError('several games share one agent, which needs one '
                            'action set: drop --nofull_action_set')
  return AtariConfig(flag_values.num_action_repeats,
                     flag_values.atari_environment, full_action_set)


def _environment_info(config, level_name):
  game = atari_environment.AtariEnvironment(
      level_name, full_action_set=config.full_action_set)
  return domain.EnvironmentInfo(game.action_spec().num_values,
                                game.observation_spec().shape, 0)


def _processes(config, level_names, seed, noop_starts):
  constructors = [
      functools.partial(
          atari_environment.AtariEnvironment, level_name, seed=seed + index,
          num_action_repeats=config.num_action_repeats,
          full_action_set=config.full_action_set, noop_starts=noop_starts)
      for index, level_name in enumerate(level_names)
  ]
  return environments.ProcessEnvironments(constructors, level_names,
                                          config.num_action_repeats)


def _training_environments(config, level_names, seed):
  # Games start after 1-30 no-ops, as in test mode: a Pong policy trained
  # from the one start state lost half its test games 21-0 or so
  # (docs/learning.md).
  if config.atari_environment == 'process':
    return _processes(config, level_names, seed, noop_starts=True)
  return atari_environment.AtariVectorEnvironment(
      level_names, seed=seed,
      num_action_repeats=config.num_action_repeats,
      full_action_set=config.full_action_set, noop_starts=True)


DOMAIN = domain.Domain(
    make_config=_make_config,
    run_defining_flags=('full_action_set',),
    check_level=atari_environment.game_id,
    suites={scores.SUITE: scores.LEVELS},
    benchmark=scores.BENCHMARK,
    defaults=dict(  # Table G.1; decay is not given: the official 0.99.
        core='feedforward', unroll_length=20,
        total_environment_frames=lambda num_levels: 2e8 * num_levels,
        entropy_cost=0.01,
        baseline_cost=0.5, discounting=0.99, reward_clipping='abs_one',
        learning_rate=0.0006, decay=0.99, momentum=0.0, epsilon=0.01,
        max_grad_norm=40.0),
    environment_info=_environment_info,
    training_environments=_training_environments,
    test_level=lambda level_name: level_name,
    test_environments=functools.partial(_processes, noop_starts=True))
