"""Child processes a launcher starts, logs, restarts and stops: the tasks of
a distributed run on one machine (launch.py) and the members of a
population (population.py)."""

import signal
import subprocess
import sys
import threading
import time

STOP_GRACE_SECS = 60  # For a training run's last checkpoint.


class ChildProcess:
  """One command run as a child process of its own session, its output
  appended to a log file (and echoed, if asked); started again by `start`
  after it died."""

  def __init__(self, name, argv, log_path, echo=False):
    self.name = name
    self.log_path = log_path
    self._argv = argv
    self._echo = echo
    self.restarts = 0
    self.process = None

  def start(self):
    log = open(self.log_path, 'ab')  # pylint: disable=consider-using-with
    # A session of its own: Ctrl-C reaches the launcher, which stops the
    # children in order.
    self.process = subprocess.Popen(
        self._argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True)
    threading.Thread(target=self._copy, args=(self.process, log),
                     daemon=True).start()

  def _copy(self, process, log):
    for line in process.stdout:
      log.write(line)
      log.flush()
      if self._echo:
        sys.stdout.buffer.write(line)
        sys.stdout.flush()
    log.close()

  def signal(self, signum):
    if self.process and self.process.poll() is None:
      self.process.send_signal(signum)


def stop_all(children):
  """Sends every child SIGINT at once (as a terminal's Ctrl-C would), then
  waits up to `STOP_GRACE_SECS` in all before killing those left."""
  for child in children:
    child.signal(signal.SIGINT)
  deadline = time.monotonic() + STOP_GRACE_SECS
  for child in children:
    try:
      child.process.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
      child.process.kill()
      child.process.wait()


def restart_dead(children, max_restarts, say):
  """Starts again each child that exited with an error (one that exited
  with 0 is done); False, after a line to `say`, once one has died more
  than `max_restarts` times."""
  for child in children:
    code = child.process.poll()
    if code is None or code == 0:
      continue
    if child.restarts >= max_restarts:
      say(f'{child.name} exited ({code}) {child.restarts + 1} times; '
          f'stopping (its output: {child.log_path}).')
      return False
    child.restarts += 1
    say(f'{child.name} exited ({code}); starting it again '
        f'({child.restarts} of {max_restarts}).')
    child.start()
  return True


def forwarded_flags(argv, withheld):
  """The flags of `argv` (a launcher's own command line, program first)
  but those named in `withheld` (and their --no forms): what its children
  get."""
  return [arg for arg in argv[1:] if not any(
      arg.lstrip('-').split('=')[0] in (name, 'no' + name)
      for name in withheld)]


def stop_requested_by_signals():
  """An event set by SIGINT or SIGTERM: a launcher's cue to stop its
  children together."""
  stop = threading.Event()

  def request_stop(signum, frame):
    del signum, frame
    stop.set()

  signal.signal(signal.SIGINT, request_stop)
  signal.signal(signal.SIGTERM, request_stop)
  return stop
