"""Runs experiment.py's training and test modes in tests (on Catch, the
`catch` suite, mostly)."""

import os
import re
import signal
import subprocess
import sys

from absl import flags
from absl.testing import flagsaver

import experiment

if not flags.FLAGS.is_parsed():  # Under pytest; absltest parses them.
  flags.FLAGS.mark_as_parsed()


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
