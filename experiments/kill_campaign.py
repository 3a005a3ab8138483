r"""Kill-at-random: a short training run on the test suite's Catch
(the `catch` suite), killed again and again at random moments and restarted
with the same command each time:

  python -m experiments.kill_campaign --kills=40 --run_dir=/tmp/kill_campaign

The kills cycle through five kinds in a random order: SIGKILL or SIGTERM
at a random moment, SIGKILL or SIGTERM as soon as a checkpoint write is
seen under way (checkpoints are written every second), and SIGTERM followed
by SIGKILL while the stop's own checkpoint is written (a supervisor that
loses patience). Checked for each: a SIGTERM stop exits 0 with a checkpoint
of the frames it stopped at; the newest checkpoint the run left is
readable; the restart resumes from it (no older one, no afresh start), so
the frame count never goes back past it; nothing fails to restore. A line
per kill, then a summary ("N kills (...), N resumes, 0 lost checkpoints,
..."); exit status 1 if any check failed. Each start's output is kept in
<run_dir>/kill_campaign/. (Flag names differ from experiment.py's, which
may share the process: the test suite under pytest.)
"""

import collections
import os
import random
import signal
import subprocess
import sys
import time

from absl import app
from absl import flags
import tensorflow as tf

from impala_tf import run_status

FLAGS = flags.FLAGS
flags.DEFINE_integer('kills', 40, 'How many times to kill the run.',
                     lower_bound=1)
flags.DEFINE_integer('kill_seed', 0, 'Seed of the kinds and moments of '
                     'kills.')
flags.DEFINE_float('max_wait_secs', 5.0, 'The longest random wait before '
                   'a kill, once the run trains.', lower_bound=0.1)
flags.DEFINE_string('run_dir', None, 'A new directory: the run\'s '
                    '--logdir.')

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The training run: small and checkpointing every second, so that kills
# often meet a checkpoint write.
TRAINING_FLAGS = ('--level_name=catch/plain', '--num_actors=4',
                  '--num_actor_threads=1', '--batch_size=4',
                  '--total_environment_frames=1e9',
                  '--checkpoint_interval_secs=1',
                  '--progress_interval_secs=1')
# (signals, moment): moment 'random' waits a random time; 'write' then waits
# for a checkpoint write; 'final write' sends the second signal during the
# checkpoint that the first one asked for.
KINDS = ((('SIGKILL',), 'random'), (('SIGTERM',), 'random'),
         (('SIGKILL',), 'write'), (('SIGTERM',), 'write'),
         (('SIGTERM', 'SIGKILL'), 'final write'))
START_TIMEOUT_SECS = 300  # Two loaded cores: TensorFlow's import is slow.
STOP_TIMEOUT_SECS = 120
WRITE_TIMEOUT_SECS = 10
FRAMES_KEY = 'learner/num_environment_frames/.ATTRIBUTES/VARIABLE_VALUE'

Kill = collections.namedtuple('Kill', [
    'signals',  # The signals sent, in order: ('SIGTERM', 'SIGKILL').
    'at_write',  # Whether the last one was sent during a checkpoint write.
    'half_written',  # Whether the run died with a checkpoint half-written.
    'newest',  # (path, frames) of the newest checkpoint the run left; frames
    # None if unreadable.
    'resumed',  # (path, frames) the restart resumed from, or None.
    'fallbacks',  # Checkpoints the restart reported unreadable.
    'failures',  # What went wrong, a line each.
])


class _Start:
  """One start of the training command, its output going to files."""

  def __init__(self, logdir, index):
    self.logdir = logdir
    outputs = os.path.join(logdir, 'kill_campaign')
    os.makedirs(outputs, exist_ok=True)
    self.out_path = os.path.join(outputs, f'start_{index:03d}.out')
    self.err_path = os.path.join(outputs, f'start_{index:03d}.err')
    self.started = time.time()
    with open(self.out_path, 'w') as out, open(self.err_path, 'w') as err:
      self.process = subprocess.Popen(
          [sys.executable, 'experiment.py',
           f'--logdir={logdir}', *TRAINING_FLAGS],
          stdout=out, stderr=err, cwd=REPO_ROOT)

  def errors(self):
    with open(self.err_path) as f:
      return f.read()

  def status(self):
    """The run's status file (`impala_tf/run_status.py`) if this start
    wrote it, else None."""
    status = run_status.read(self.logdir)
    return status if status and status['pid'] == self.process.pid else None

  def last_error_line(self):
    lines = self.errors().strip().splitlines()
    return lines[-1] if lines else '(nothing on stderr)'

  def wait_until_training(self, directory):
    """Waits until the run has made an update (its status has a frame rate)
    and a checkpoint exists; returns a failure line, or None."""
    deadline = time.monotonic() + START_TIMEOUT_SECS
    while time.monotonic() < deadline:
      if self.process.poll() is not None:
        return (f'the run ended (exit status {self.process.returncode}) '
                f'before training: {self.last_error_line()}')
      status = self.status()
      if (status and status['frames_per_second'] is not None and
          tf.train.get_checkpoint_state(directory) is not None):
        return None
      time.sleep(0.1)
    self.process.kill()
    self.process.wait()
    return f'the run made no update within {START_TIMEOUT_SECS} s'


def write_under_way(directory, since):
  """Whether `directory` holds part of a checkpoint write begun after
  `since` (a time.time()) and not finished: TensorFlow's `<prefix>_temp/`
  files and the `checkpoint.tmp*` state file exist only until the write
  ends."""
  try:
    for entry in os.scandir(directory):
      if (entry.name.startswith('checkpoint.tmp') and
          entry.stat().st_mtime >= since):
        return True
      if entry.name.endswith('_temp') and entry.is_dir():
        if any(inner.stat().st_mtime >= since
               for inner in os.scandir(entry.path)):
          return True
  except FileNotFoundError:  # Renamed or removed while looked at: a write.
    return True
  return False


def _wait_for_write(start, directory):
  """Polls until a checkpoint write is under way: True, or False if the run
  ended or none began within WRITE_TIMEOUT_SECS."""
  deadline = time.monotonic() + WRITE_TIMEOUT_SECS
  while start.process.poll() is None and time.monotonic() < deadline:
    if write_under_way(directory, start.started):
      return True
    time.sleep(0.0005)
  return False


def _newest_checkpoint(directory):
  """(path, frames) of the checkpoint `directory`'s state names; frames
  None if it cannot be read; None if there is none."""
  state = tf.train.get_checkpoint_state(directory)
  if state is None:
    return None
  path = state.model_checkpoint_path
  try:
    return path, int(tf.train.load_checkpoint(path).get_tensor(FRAMES_KEY))
  except (tf.errors.OpError, ValueError):
    return path, None


def _kill(start, directory, kind, rng, max_wait_secs):
  """Kills `start` as `kind` says and waits for its end; returns (signals
  sent, whether the last was sent during a checkpoint write)."""
  signals, moment = kind
  time.sleep(rng.uniform(0, max_wait_secs))
  at_write = moment == 'write' and _wait_for_write(start, directory)
  sent = []
  for name in signals:
    if name == 'SIGKILL' and moment == 'final write':
      at_write = _wait_for_write(start, directory)
    if start.process.poll() is not None:
      break
    start.process.send_signal(getattr(signal, name))
    sent.append(name)
  try:
    start.process.wait(timeout=STOP_TIMEOUT_SECS)
  except subprocess.TimeoutExpired:
    start.process.kill()
    start.process.wait()
  if start.process.returncode == 0 and sent[-1:] == ['SIGKILL']:
    sent.pop()  # The SIGTERM stop ended the run before the SIGKILL came.
  return tuple(sent), at_write


def _check_end(start, sent, newest):
  """Failure lines about how the killed run ended and what it left."""
  code = start.process.returncode
  if not sent:
    return [f'the run ended by itself (exit status {code}): '
            f'{start.last_error_line()}']
  failures = []
  if sent[-1] == 'SIGKILL' and code != -signal.SIGKILL:
    failures.append(f'the run ended with exit status {code} before its '
                    f'SIGKILL: {start.last_error_line()}')
  status = start.status()
  stopped = status and status['state'] == 'stopped'
  if sent == ('SIGTERM',):
    if code != 0 or not stopped:
      failures.append(f'SIGTERM ended the run with exit status {code}'
                      f'{"" if stopped else " and no stopped status"}: '
                      f'{start.last_error_line()}')
    elif newest and newest[1] != status['frames']:
      failures.append(f'the run stopped at {status["frames"]:,} frames, but '
                      f'its newest checkpoint holds {newest[1]:,}')
  if 'Traceback' in start.errors():
    failures.append(f'a traceback: {start.last_error_line()}')
  if newest is None:
    failures.append('no checkpoint left')
  elif newest[1] is None:
    failures.append(f'the newest checkpoint {newest[0]} is unreadable')
  return failures


def _check_resume(start, directory, newest):
  """(resumed, fallbacks, failure lines) of a restart after a kill."""
  failure = start.wait_until_training(directory)
  status = start.status() or {}
  fallbacks = len(status.get('unreadable_checkpoints', []))
  if failure:
    return None, fallbacks, [f'the restart failed: {failure}']
  if not status.get('resumed_from'):
    return None, fallbacks, ['the restart started afresh']
  resumed = status['resumed_from'], status['resumed_at_frames']
  if newest and newest[1] is not None and (resumed[0] != newest[0] or
                                           resumed[1] < newest[1]):
    return resumed, fallbacks, [
        f'resumed from {resumed[0]} at {resumed[1]:,} frames, not from the '
        f'newest checkpoint {newest[0]} at {newest[1]:,}']
  return resumed, fallbacks, []


def run_campaign(logdir, num_kills, seed=0, max_wait_secs=5.0,
                 print_fn=print):
  """Kills the training run in `logdir` `num_kills` times, restarting it
  after each; returns a `Kill` per kill, fewer if a restart failed.

  Raises:
    RuntimeError: the first start did not train.
  """
  rng = random.Random(seed)
  logdir = os.path.abspath(logdir)  # The run starts in REPO_ROOT.
  directory = os.path.join(logdir, 'checkpoints')
  start = _Start(logdir, 0)
  kills, kinds = [], []
  try:
    failure = start.wait_until_training(directory)
    if failure:
      raise RuntimeError(f'the first start failed: {failure}')
    while len(kills) < num_kills and start.process.poll() is None:
      kinds = kinds or rng.sample(KINDS, len(KINDS))
      sent, at_write = _kill(start, directory, kinds.pop(), rng,
                             max_wait_secs)
      half_written = write_under_way(directory, start.started)
      newest = _newest_checkpoint(directory)
      failures = _check_end(start, sent, newest)
      start = _Start(logdir, len(kills) + 1)
      resumed, fallbacks, more = _check_resume(start, directory, newest)
      kills.append(Kill(sent, at_write, half_written, newest, resumed,
                        fallbacks, failures + more))
      print_fn(describe(kills[-1], len(kills), num_kills))
  finally:
    if start.process.poll() is None:
      start.process.terminate()
      try:
        start.process.wait(timeout=STOP_TIMEOUT_SECS)
      except subprocess.TimeoutExpired:
        start.process.kill()
        start.process.wait()
  return kills


def describe(kill, number, num_kills):
  """A line about one kill."""
  def checkpoint(path_and_frames):
    if path_and_frames is None:
      return 'none'
    path, frames = path_and_frames
    return (f'{os.path.basename(path)} at ' +
            ('? (unreadable)' if frames is None else f'{frames:,}'))

  return (f'kill {number}/{num_kills}: {"+".join(kill.signals) or "none"}' +
          (' during a checkpoint write' if kill.at_write else '') +
          (' (left half-written)' if kill.half_written else '') +
          f'; newest checkpoint {checkpoint(kill.newest)}; resumed from '
          f'{checkpoint(kill.resumed)}' +
          (f' after {kill.fallbacks} unreadable' if kill.fallbacks else '') +
          ''.join(f'; FAILED: {failure}' for failure in kill.failures))


def summary(kills):
  """The campaign's figures in one line."""
  count = lambda test: sum(1 for kill in kills if test(kill))
  # Lost: unreadable, or not the one the restart resumed from.
  lost = count(lambda kill: kill.newest is None or kill.newest[1] is None or (
      kill.resumed is not None and kill.resumed[0] != kill.newest[0]))
  # Back: to an older checkpoint, or to none (a restart afresh or failed).
  went_back = count(lambda kill: kill.newest and (
      kill.resumed is None or kill.newest[1] is None or
      kill.resumed[1] < kill.newest[1]))
  failed = count(lambda kill: kill.failures)
  return (
      f'{len(kills)} kills ({count(lambda kill: "SIGKILL" in kill.signals)} '
      f'SIGKILL, {count(lambda kill: len(kill.signals) == 2)} of them after '
      f'a SIGTERM; {count(lambda kill: kill.signals == ("SIGTERM",))} '
      f'SIGTERM; {count(lambda kill: kill.at_write)} during a checkpoint '
      f'write, {count(lambda kill: kill.half_written)} of them leaving it '
      f'half-written), {count(lambda kill: kill.resumed)} resumes, {lost} '
      f'lost checkpoints, {sum(kill.fallbacks for kill in kills)} '
      'unreadable checkpoints skipped; frames ' +
      (f'went back past the newest checkpoint {went_back} times'
       if went_back else 'never went back past the newest checkpoint') +
      (f'; {failed} kills failed a check' if failed else
       '; every check passed'))


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {" ".join(argv[1:])}')
  sys.stdout.reconfigure(line_buffering=True)
  if not FLAGS.run_dir:
    sys.exit('kill_campaign: error: give --run_dir')
  if os.path.exists(FLAGS.run_dir) and (not os.path.isdir(FLAGS.run_dir) or
                                        os.listdir(FLAGS.run_dir)):
    sys.exit(f'kill_campaign: error: --run_dir={FLAGS.run_dir} exists and '
             'is not an empty directory; give a new one')
  try:
    os.makedirs(FLAGS.run_dir, exist_ok=True)
  except OSError as error:
    sys.exit(f'kill_campaign: error: cannot make --run_dir={FLAGS.run_dir}: '
             f'{error.strerror or error}')
  print(f'Killing a Catch run {FLAGS.kills} times (seed {FLAGS.kill_seed}): '
        f'python experiment.py --logdir={FLAGS.run_dir} '
        + ' '.join(TRAINING_FLAGS))
  try:
    kills = run_campaign(FLAGS.run_dir, FLAGS.kills, FLAGS.kill_seed,
                         FLAGS.max_wait_secs)
  except RuntimeError as error:
    sys.exit(f'kill_campaign: error: {error}')
  print(summary(kills))
  if len(kills) < FLAGS.kills or any(kill.failures for kill in kills):
    sys.exit(1)


if __name__ == '__main__':
  app.run(main)
