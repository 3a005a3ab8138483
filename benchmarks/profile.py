r"""Where the cores go in a training run (a benchmark, not a test).

Starts `experiment.py` with `--experiment_flag`s (default: `make train`'s
Pong job) in a fresh logdir, waits `--warmup_seconds` after its first
frames, samples every thread of the process with Linux `perf` for
`--seconds`, stops the run and prints one JSON line per part of the
pipeline: CPU in cores (samples / sampling rate / seconds) and its share,
then one line with frames/s and learner updates/s between the status
reports around the window.

Parts: `benchmarks/perf_samples.py`. TensorFlow's pools run the kernels
of both the learner step and inference; `benchmarks/learner_step.py
--shape=atari` measures the CPU each costs alone.

Needs `perf` (Debian: `apt-get install linux-perf`).

  make benchmark BENCHMARK=profile [ARGS="--seconds=30 --warmup_seconds=60"]
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

from benchmarks import perf_samples
from benchmarks import progress_window
from impala_tf import run_status

MAKE_TRAIN_FLAGS = ['--flagfile=atari57/atari_10m.flags',
                    '--level_name=atari/pong']

progress_window.define_window_flags(seconds=30.0, warmup_seconds=60.0)
flags.adopt_module_key_flags(progress_window)
flags.DEFINE_integer('frequency', 199, 'Samples per second of CPU time of '
                     'each thread.', lower_bound=1, upper_bound=10000)
flags.DEFINE_multi_string('experiment_flag', MAKE_TRAIN_FLAGS,
                          'An experiment.py flag for the profiled run.')
FLAGS = flags.FLAGS


def _status_when(ready, logdir, process, deadline):
  """The run's first status for which `ready(status)` holds."""
  while time.time() < deadline:
    if process.poll() is not None:
      raise SystemExit(f'profile: the run exited with {process.returncode}; '
                       f'see {logdir}/train.log')
    status = run_status.read(logdir)
    if status and ready(status):
      return status
    time.sleep(0.2)
  raise SystemExit(f'profile: not done after {FLAGS.max_seconds:.0f} s '
                   '(--max_seconds)')


def _record(process, logdir, deadline):
  """Samples the run; returns (perf.data path, the status reports just
  before and just after the sampled window)."""
  data = os.path.join(logdir, 'perf.data')
  before = run_status.read(logdir)
  result = subprocess.run(
      ['perf', 'record', '--quiet', '-F', str(FLAGS.frequency), '-g',
       '-p', str(process.pid), '-o', data, '--', 'sleep', str(FLAGS.seconds)],
      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
      check=False)
  if result.returncode != 0:
    raise SystemExit('profile: perf record failed: '
                     + (result.stderr.strip().splitlines() or ['?'])[-1])
  end = time.time()
  return data, before, _status_when(lambda status: status['time'] > end,
                                    logdir, process, deadline)


def _rates(before, after):
  seconds = after['time'] - before['time']
  return {
      'frames_per_second': round(
          (after['frames'] - before['frames']) / seconds, 1),
      'updates_per_second': round(
          (after['updates'] - before['updates']) / seconds, 2),
  }


def _stop(process):
  """Ctrl-C for the run (it writes a checkpoint); killed if it lingers."""
  process.send_signal(signal.SIGINT)
  try:
    process.wait(timeout=60)
  except subprocess.TimeoutExpired:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def profile(logdir):
  command = [sys.executable, 'experiment.py', *FLAGS.experiment_flag,
             f'--logdir={logdir}']
  deadline = time.time() + FLAGS.max_seconds
  with open(os.path.join(logdir, 'train.log'), 'w') as log:
    process = subprocess.Popen(command, stdout=log,
                               stderr=subprocess.STDOUT,
                               start_new_session=True)
  try:
    _status_when(lambda status: status['frames'] > 0, logdir, process,
                 deadline)
    time.sleep(FLAGS.warmup_seconds)
    data, before, after = _record(process, logdir, deadline)
  finally:
    _stop(process)
  script = subprocess.run(
      ['perf', 'script', '-i', data, '-F', 'comm,tid,ip,sym,dso'],
      check=True, capture_output=True, text=True).stdout
  samples = perf_samples.parse_perf_script(script)
  parts = perf_samples.cores_by_part(samples, process.pid, FLAGS.frequency,
                                     FLAGS.seconds)
  return parts, _rates(before, after)


def main(argv):
  del argv
  if shutil.which('perf') is None:
    raise SystemExit('profile: needs Linux perf (apt-get install linux-perf)')
  # A SIGTERM ends it as Ctrl-C would: the run is stopped, not orphaned.
  signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(
      'profile: stopped by SIGTERM'))
  logdir = tempfile.mkdtemp(prefix='impala_profile_')
  parts, rates = profile(logdir)
  total = sum(parts.values())
  for part, cores in parts.items():
    print(json.dumps({'part': part, 'cores': round(cores, 3),
                      'share': round(cores / total, 3)}))
  print(json.dumps({'total_cores': round(total, 3), **rates,
                    'seconds': FLAGS.seconds,
                    'experiment_flags': FLAGS.experiment_flag}))
  shutil.rmtree(logdir)


if __name__ == '__main__':
  app.run(main)
