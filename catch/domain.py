"""Catch as a `Domain`, the smallest suite (no flags of its own): levels
`catch/plain`, `catch/memory` and `catch/timing`, the suite `catch_lstm`,
and hyperparameters tuned once so that the plain game is learned well
inside the default budget."""

import collections

import numpy as np

from catch import environment
from impala_tf import domain
from impala_tf import environments
from impala_tf import scoring

# Level name -> (seed) -> dm_env.Environment.
LEVELS = {
    'catch/plain': environment.Catch,
    'catch/memory': lambda seed: environment.Catch(seed, memory=True),
    'catch/timing': environment.Timing,
}

# Stand-in baselines, so that the human-normalised summaries run on Catch:
# "random" loses every game, "human" wins every one.
BENCHMARK = scoring.Benchmark(
    'Catch', baselines={level: (-1.0, 1.0) for level in LEVELS},
    statistics={'median': np.median, 'mean': np.mean})


# The suite's configuration.
CatchConfig = collections.namedtuple('CatchConfig', ['num_action_repeats'])


def _make_config(flag_values, level_names):
  del level_names  # Every level takes the same settings.
  return CatchConfig(flag_values.num_action_repeats)


def _environments(config, level_names, seed):
  return environments.InProcessEnvironments(
      [LEVELS[level_name](seed + index)
       for index, level_name in enumerate(level_names)],
      level_names, config.num_action_repeats)


def _check_level(level_name):
  if level_name not in LEVELS:
    raise ValueError(f'unknown Catch level {level_name!r}; one of '
                     f'{", ".join(LEVELS)}')


def _environment_info(config, level_name):
  del config  # Every level's shape is fixed.
  return domain.EnvironmentInfo(
      environment.NUM_ACTIONS,
      LEVELS[level_name](0).observation_spec().shape, 0)


DOMAIN = domain.Domain(
    make_config=_make_config,
    run_defining_flags=(),
    check_level=_check_level,
    # Levels of one suite must share an observation shape.
    suites={'catch_lstm': ('catch/memory', 'catch/timing')},
    benchmark=BENCHMARK,
    defaults=dict(
        core='feedforward', unroll_length=5,
        total_environment_frames=lambda num_levels: 1e5 * num_levels,
        entropy_cost=0.01, baseline_cost=0.5, discounting=0.99,
        reward_clipping='abs_one', learning_rate=0.002, decay=0.99,
        momentum=0.0, epsilon=0.01, max_grad_norm=40.0),
    environment_info=_environment_info,
    training_environments=_environments,
    test_level=lambda level_name: level_name,
    test_environments=_environments)
