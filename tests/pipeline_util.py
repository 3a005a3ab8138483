"""Runs experiment.py's training and test modes on Catch in tests."""

import os
import re
import signal
import subprocess
import sys

from absl import flags
from absl.testing import flagsaver
import numpy as np

import experiment
from impala_tf import domain
from impala_tf import environments
from impala_tf import scoring
from tests import catch

if not flags.FLAGS.is_parsed():  # Under pytest; absltest parses them.
  flags.FLAGS.mark_as_parsed()


LEVELS = {
    'catch/plain': catch.Catch,
    'catch/memory': lambda seed: catch.Catch(seed, memory=True),
    'catch/timing': catch.Timing,
}

# Stand-in baselines, so that the human-normalised summaries run on Catch:
# "random" loses every game, "human" wins every one.
BENCHMARK = scoring.Benchmark(
    'Catch', baselines={level: (-1.0, 1.0) for level in LEVELS},
    statistics={'median': np.median, 'mean': np.mean})


def _catch_environments(config, level_names, seed):
  return environments.InProcessEnvironments(
      [LEVELS[level_name](seed + index)
       for index, level_name in enumerate(level_names)],
      level_names, config.num_action_repeats)


def _check_level(level_name):
  if level_name not in LEVELS:
    raise ValueError(f'unknown Catch level {level_name!r}')


# Tuned once so that the plain game is learned well inside the budget.
experiment.DOMAINS['catch'] = domain.Domain(
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
    environment_info=lambda config, level_name: domain.EnvironmentInfo(
        catch.NUM_ACTIONS, LEVELS[level_name](0).observation_spec().shape, 0),
    training_environments=_catch_environments,
    test_level=lambda level_name: level_name,
    test_environments=_catch_environments)


def config(**overrides):
  """experiment.make_config with these flags set (others: defaults)."""
  with flagsaver.flagsaver(**overrides):
    return experiment.make_config(flags.FLAGS)


def train(print_fn=lambda line: None, **overrides):
  return experiment.train(config(**overrides), print_fn=print_fn)


REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def interrupt_and_resume(logdir, timeout, **flag_values):
  """Starts experiment.py with these flags, sends SIGINT once it trains,
  then starts the same command again and stops it after its first line.

  Returns:
    (exit status, stderr, frames of the "Stopped at" line or None, the
    resumed run's first line).
  """
  command = [sys.executable, os.path.join(REPO_ROOT, 'experiment.py'),
             f'--logdir={logdir}', '--progress_interval_secs=1',
             '--total_environment_frames=1e9'] + [
                 f'--{name}={value}' for name, value in flag_values.items()]
  process = subprocess.Popen(command, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
  for line in process.stdout:  # Wait until it trains.
    if line.startswith('frames '):
      break
  process.send_signal(signal.SIGINT)
  output, errors = process.communicate(timeout=timeout)
  stopped = re.search(r'Stopped at ([\d,]+) frames', output)
  frames = int(stopped.group(1).replace(',', '')) if stopped else None
  resumed = subprocess.Popen(command, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True,
                             cwd=REPO_ROOT)
  first_line = resumed.stdout.readline()
  resumed.send_signal(signal.SIGTERM)
  resumed.communicate(timeout=timeout)
  return process.returncode, errors, frames, first_line
