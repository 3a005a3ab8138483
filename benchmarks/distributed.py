r"""Distributed training on loopback against one process (a benchmark, not a
test).

Each configuration trains Pong (shallow feed-forward agent, unroll 20 and
batch 32 by default, the paper's; the smoke test makes both small; the
same `--num_actors` environments) in fresh processes for `--seconds` after
a warm-up, and prints one JSON line with the learner's
frames/s and its ratio to the single-process run:

  * local: experiment.py, actors as threads of the learner's process;
  * distributed_1_learner: launch.py, one learner and `--num_actor_tasks`
    actor processes talking over TensorFlow's RPC;
  * distributed_2_learners: the same with two synchronous learners (each
    half the batch; gradients all-reduced).

  .venv/bin/python -m benchmarks.distributed [--seconds=60] [--only=NAME]

(from the repository root, as every benchmark runs).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from absl import app
from absl import flags

from benchmarks import progress_window

progress_window.define_flags(warmup_seconds=30.0)
flags.adopt_module_key_flags(progress_window)
flags.DEFINE_integer('num_actors', 64, 'Environments in every '
                     'configuration.', lower_bound=1)
flags.DEFINE_integer('num_actor_tasks', 2, 'Actor processes of the '
                     'distributed configurations.', lower_bound=1)
FLAGS = flags.FLAGS


def configurations():
  common = ['--level_name=atari/pong', '--agent=shallow',
            '--core=feedforward', f'--unroll_length={FLAGS.unroll}',
            f'--batch_size={FLAGS.batch}',
            f'--num_actors={FLAGS.num_actors}',
            '--total_environment_frames=1e10', '--progress_interval_secs=1']
  launch = ['launch.py', f'--num_actor_tasks={FLAGS.num_actor_tasks}']
  # Free ports: configurations may run at once (the smoke tests' shards),
  # and a port in use stops a launch.
  return {
      'local': ['experiment.py', '--num_actor_threads=2'] + common,
      'distributed_1_learner': launch + ['--num_learners=1',
                                         '--base_port=0'] + common,
      'distributed_2_learners': launch + ['--num_learners=2',
                                          '--base_port=0'] + common,
  }


def measure(args):
  """Frames/s of the (first) learner over its measured window."""
  logdir = tempfile.mkdtemp()
  errors = open(os.path.join(logdir, 'stderr'), 'w+')  # pylint: disable=consider-using-with
  process = subprocess.Popen(
      [sys.executable] + args + [f'--logdir={logdir}'],
      stdout=subprocess.DEVNULL, stderr=errors, text=True)
  window = progress_window.Window(FLAGS.warmup_seconds, FLAGS.seconds)
  done = threading.Event()  # Measured, or the process ended first.
  threading.Thread(target=lambda: (process.wait(), done.set()),
                   daemon=True).start()
  # The first learner's status: its frames are the run's.
  watcher = threading.Thread(target=progress_window.watch,
                             args=(logdir, window, done), daemon=True)
  watcher.start()
  done.wait(FLAGS.max_seconds)
  done.set()
  process.send_signal(signal.SIGINT)
  process.wait(120)
  watcher.join(10)
  errors.seek(0)
  last_error = (errors.read().strip().splitlines() or [''])[-1]
  errors.close()
  shutil.rmtree(logdir, ignore_errors=True)
  try:
    return window.frames_per_second()
  except RuntimeError as error:
    raise RuntimeError(f'{args[0]}: {error}; last error line: '
                       f'{last_error}') from error


def main(argv):
  del argv
  results = {}
  for name, args in configurations().items():
    if FLAGS.only and name not in FLAGS.only:
      continue
    try:
      fps = measure(args)
    except RuntimeError as error:
      print(json.dumps({'configuration': name, 'error': str(error)}),
            flush=True)
      continue
    results[name] = fps
    local = results.get('local')
    print(json.dumps({
        'configuration': name,
        'frames_per_second': round(fps),
        'vs_local': round(fps / local, 3) if local else None,
        'num_actors': FLAGS.num_actors,
        'num_actor_tasks': (None if name == 'local' else
                            FLAGS.num_actor_tasks),
        'seconds': FLAGS.seconds,
    }), flush=True)


if __name__ == '__main__':
  app.run(main)
