"""DeepMind Lab as a `impala_tf.domain.Domain`: its flags and configuration,
any level the engine has (`levels`), the DMLab-30 suite (training levels; test mode plays the
held-out twins), one DeepMind Lab process per environment, the capped
human-normalised benchmark and the official DMLab-30 run's hyperparameters
(Table D.3, scalable_agent's README)."""

import collections
import functools
import os
import tempfile

from absl import flags

from dmlab30 import environment as dmlab_environment
from dmlab30 import levels
from dmlab30 import scores
from impala_tf import domain
from impala_tf import environments

flags.DEFINE_string('dataset_path', None, 'DMLab: the directory of the '
                    'Brady-Konkle-Oliva images the psychlab levels need.')
flags.DEFINE_string('level_cache_dir', os.path.join(
    tempfile.gettempdir(), 'impala_tf_dmlab_level_cache'), 'DMLab: the '
    'directory of compiled maps the environments share (scalable_agent\'s '
    'level cache); empty: compile every map.')
flags.DEFINE_integer('width', 96, 'DMLab: frame width in pixels.',
                     lower_bound=1)
flags.DEFINE_integer('height', 72, 'DMLab: frame height in pixels.',
                     lower_bound=1)

# The suite's configuration: its flags' values.
DmLabConfig = collections.namedtuple(
    'DmLabConfig', ['num_action_repeats', 'dataset_path', 'level_cache_dir',
                    'width', 'height'])


def _make_config(flag_values, level_names):
  del level_names  # Every level takes the same settings.
  return DmLabConfig(*(flag_values[name].value
                       for name in DmLabConfig._fields))


def _check_level(level_name):
  levels.level_script(level_name)
  if (level_name in scores.TEST_LEVELS and
      level_name not in scores.TRAIN_LEVELS):
    (train_level,) = [train for train, test in scores.TEST_LEVEL_OF.items()
                      if test == level_name]
    raise ValueError(f'{level_name} is held out for testing: train on '
                     f'{train_level} (test mode plays {level_name} for it)')
  dmlab_environment.check_installed()
  levels.check_engine_has(level_name)


def _environment_info(config, level_name):
  del level_name  # Every level has the same observations and actions.
  return domain.EnvironmentInfo(len(dmlab_environment.DEFAULT_ACTION_SET),
                                (config.height, config.width, 3),
                                dmlab_environment.MAX_INSTRUCTION_WORDS)


def _processes(config, level_names, seed, is_test):
  constructors = [
      functools.partial(
          dmlab_environment.DmLabEnvironment, level_name, seed=seed + index,
          num_action_repeats=config.num_action_repeats, is_test=is_test,
          dataset_path=config.dataset_path, width=config.width,
          height=config.height,
          level_cache_dir=config.level_cache_dir)
      for index, level_name in enumerate(level_names)
  ]
  return environments.ProcessEnvironments(constructors, level_names,
                                          config.num_action_repeats)


DOMAIN = domain.Domain(
    make_config=_make_config,
    run_defining_flags=('width', 'height'),
    check_level=_check_level,
    suites={scores.SUITE: scores.TRAIN_LEVELS},
    benchmark=scores.BENCHMARK,
    # The official DMLab-30 run (scalable_agent's README); Table D.1 gives
    # no decay or gradient clipping: the official 0.99 and none. 1B frames
    # per level as the paper's experts, 10B at most (the DMLab-30 agents).
    defaults=dict(
        core='lstm', unroll_length=100,
        total_environment_frames=lambda num_levels: min(
            1e9 * num_levels, 1e10),
        entropy_cost=0.0033391318945337044, baseline_cost=0.5,
        discounting=0.99, reward_clipping='soft_asymmetric',
        learning_rate=0.00031866995608948655, decay=0.99, momentum=0.0,
        epsilon=0.1, max_grad_norm=0.0),
    environment_info=_environment_info,
    training_environments=functools.partial(_processes, is_test=False),
    # Levels outside DMLab-30 are tested on themselves.
    test_level=lambda level: scores.TEST_LEVEL_OF.get(level, level),
    test_environments=functools.partial(_processes, is_test=True))
