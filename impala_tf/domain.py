"""What a suite of levels (Atari-57, DMLab-30, ...) gives the shared
machinery: the interface each suite's `domain.py` implements, the run's
configuration errors, and level names resolved through a registry of
suites by level prefix (`atari/`, `dmlab/`).

A suite is a folder whose `domain.py` defines its own flags and a `DOMAIN`;
the library never imports one: `experiment.py` owns the registry, a line
per suite, and loads it with `load_domains`.
"""

import collections
import importlib


class UsageError(Exception):
  """Bad flags, levels or run directories: reported as one line, exit
  status 1 (as absl's own flag errors)."""


Domain = collections.namedtuple(
    'Domain',
    [
        # {flag name: value} for the hyperparameter flags a run leaves
        # unset (the paper's values for the suite), but
        # total_environment_frames is (number of levels) -> frames.
        'defaults',
        # (flag_values, level_names) -> the suite's own configuration: a
        # namedtuple of its flags' values (fields named as the flags) and
        # num_action_repeats; UsageError for a bad combination.
        'make_config',
        # The suite's flags a checkpoint depends on: a resumed run keeps
        # them.
        'run_defining_flags',
        # (level_name) -> None; ValueError if unknown, ImportError if its
        # environment is not installed.
        'check_level',
        'suites',  # {suite name: level names}, e.g. atari57.
        'benchmark',  # scoring.Benchmark for human-normalised scores, or None.
        # (suite_config, level_name) -> EnvironmentInfo; suite_config is
        # what make_config returned.
        'environment_info',
        # (suite_config, level_names, seed) -> BatchedEnvironment for
        # training.
        'training_environments',
        # (level_name) -> the level test mode plays for it (DMLab-30 tests
        # two training levels on held-out twins).
        'test_level',
        # (suite_config, level_names, seed) -> BatchedEnvironment for test
        # mode.
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


def load_domains(modules):
  """{prefix: Domain} from {prefix: module name}, each module a suite's
  `domain.py` (importing it defines the suite's flags)."""
  return {prefix: importlib.import_module(module).DOMAIN
          for prefix, module in modules.items()}


def domain_of(level_name, domains):
  """The `Domain` in `domains` ({prefix: Domain}) that `level_name` is of."""
  prefix = level_name.split('/', 1)[0]
  if prefix not in domains:
    suites = [suite for domain in domains.values() for suite in domain.suites]
    raise UsageError(
        f'unknown level {level_name!r}: levels look like '
        f'{" or ".join(name + "/<level>" for name in domains)}'
        f'{"; suites: " + ", ".join(suites) if suites else ""}')
  return domains[prefix]


def expand_levels(level_name, domains):
  """The levels `--level_name` names: a level, a suite or a comma list of
  them, all of one domain, each once."""
  suites = {suite: levels for domain in domains.values()
            for suite, levels in domain.suites.items()}
  levels = []
  for item in level_name.split(','):
    item = item.strip()
    for level in suites.get(item, [item]):
      try:
        domain_of(level, domains).check_level(level)
      except (ValueError, ImportError) as error:
        raise UsageError(error) from None
      if level in levels:
        raise UsageError(f'{level} is named twice in --level_name')
      levels.append(level)
  if len({level.split('/', 1)[0] for level in levels}) > 1:
    raise UsageError('--level_name mixes domains; one agent learns levels '
                     'of one domain')
  return levels
