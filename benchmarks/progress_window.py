"""The measured window of a training benchmark, from the run's status
file (`impala_tf/run_status.py`).

A window opens at the first status written `warmup` seconds or more after
the first one, and closes once it spans `seconds` and the frame count has
moved. Measuring from the run's own reports rather than a wall-clock window
keeps a short run on a slow machine from ending before it has anything to
measure (graph building alone can take longer than a smoke test's seconds).

`define_window_flags` defines the window's flags every benchmark of a
training run shares (`profile.py` too); `define_flags` adds the training
benchmarks' configuration flags.
"""

from absl import flags

from impala_tf import run_status


def define_window_flags(seconds, warmup_seconds):
  """--seconds and --warmup_seconds (defaults as given) and --max_seconds:
  the window every benchmark of a training run measures."""
  flags.DEFINE_float('seconds', seconds, 'Measured seconds per '
                     'configuration.', lower_bound=0.01)
  flags.DEFINE_float('warmup_seconds', warmup_seconds,
                     'Seconds of training before measuring (replay fills, '
                     'functions are traced).', lower_bound=0)
  flags.DEFINE_float('max_seconds', 900.0, 'Seconds after which a '
                     'configuration that has not measured gives up (and '
                     'stops its run).', lower_bound=1)


def define_flags(warmup_seconds):
  """The window's flags (60 s measured after `warmup_seconds`), --only,
  --batch and --unroll (the paper's 32 and 20 by default): the training
  benchmarks' configurations."""
  define_window_flags(60.0, warmup_seconds)
  flags.DEFINE_list('only', [], 'Run only these configurations.')
  flags.DEFINE_integer('batch', 32, 'Trajectories per learner batch '
                       '(experiment.py\'s --batch_size).', lower_bound=1)
  flags.DEFINE_integer('unroll', 20, 'Agent steps per trajectory '
                       '(experiment.py\'s --unroll_length).', lower_bound=1)


def watch(logdir, window, done, poll_secs=0.2):
  """Adds every new status that the run in `logdir` writes after a progress
  interval to `window`, until `done` (a threading.Event) is set; sets it
  once the window is complete."""
  last_time = None
  while not done.wait(poll_secs):
    status = run_status.read(logdir)
    if (status and status['frames_per_second'] is not None and
        status['time'] != last_time):
      last_time = status['time']
      if window.add(status['time'], status['frames']):
        done.set()


class Window:
  """Collects (time, frames) marks; `add` says when the window is done."""

  def __init__(self, warmup, seconds):
    self._warmup = warmup
    self._seconds = seconds
    self._first_time = None
    self._window = []

  def add(self, time, frames):
    """Records a frame count at `time` (seconds); True once complete."""
    if self._first_time is None:
      self._first_time = time
    if time >= self._first_time + self._warmup:
      self._window.append((time, frames))
    return self.complete()

  def complete(self):
    if len(self._window) < 2:
      return False
    (t0, f0), (t1, f1) = self._window[0], self._window[-1]
    return t1 - t0 >= self._seconds and f1 > f0

  def frames_per_second(self):
    """Frames/s over the window; RuntimeError when it is not complete."""
    if not self.complete():
      raise RuntimeError(
          f'no complete window: {len(self._window)} reports after '
          'the warm-up, and the frame count must move between two of them')
    (t0, f0), (t1, f1) = self._window[0], self._window[-1]
    return (f1 - f0) / (t1 - t0)

  def slowest_and_fastest(self, span):
    """The lowest and highest frames/s over consecutive stretches of at
    least `span` seconds in the window (stalls show here, not in the mean);
    None when the window holds no such stretch."""
    rates = []
    start_time, start_frames = self._window[0] if self._window else (0, 0)
    for time, frames in self._window[1:]:
      if time - start_time >= span:
        rates.append((frames - start_frames) / (time - start_time))
        start_time, start_frames = time, frames
    return (min(rates), max(rates)) if rates else None
