r"""Training throughput on Atari and DeepMind Lab (a benchmark, not a test).

Each configuration runs in a fresh process for `--seconds` after a warm-up
and prints one JSON line: frames/s (environment frames = agent steps x 4)
and the peak resident memory of that process and its children together.

  * env_ceiling: random actions through the training environments alone,
    with the same actors and threads: what training could reach at most;
  * train: the full pipeline (actors, dynamic batching, queue, staging,
    learner), shallow agent, unroll 20, batch 32 (the paper's; the smoke
    test makes both small), 64 actors; feed-forward
    (the paper's Atari agent) and LSTM core; dynamic batching on and off;
    XLA on; environments in processes; 16 actor threads.

With a DeepMind Lab level (`--level=dmlab/...`) the configurations are
`DMLAB_CONFIGURATIONS`: the engine alone in processes, and training with
the shallow feed-forward, shallow LSTM and deep ResNet + LSTM agents (the
language LSTM is the DMLab agents' own), 2 threads of environments or one
thread each with dynamic batching (the paper's actors).

  .venv/bin/python -m benchmarks.throughput [--seconds=60] [--only=NAME,...]
      [--level=atari57]
  .venv/bin/python -m benchmarks.throughput --level=dmlab/seekavoid_arena_01 \
      --num_environments=16 --batch=32 --unroll=100

(from the repository root, as every benchmark runs).
"""

import json
import os
import subprocess
import sys
import threading
import time

from absl import app
from absl import flags
import numpy as np

from benchmarks import progress_window

progress_window.define_flags(warmup_seconds=20.0)
flags.adopt_module_key_flags(progress_window)
flags.DEFINE_string('level', 'atari/pong', 'The level, suite (atari57, '
                    'dmlab30) or comma-separated levels, as --level_name; '
                    'dmlab/ levels run DMLAB_CONFIGURATIONS.')
flags.DEFINE_integer('num_environments', 64, 'Environments in every '
                     'configuration (experiment.py\'s --num_actors).',
                     lower_bound=1)
flags.DEFINE_multi_string('experiment_flag', [], 'An experiment.py flag '
                          'added to every configuration, e.g. '
                          '--experiment_flag=--level_cache_dir=')
flags.DEFINE_string('child', None, 'Internal: run one configuration.')
FLAGS = flags.FLAGS

# name -> experiment.py flags. Every one also gets the shallow agent,
# --unroll_length, --batch_size and --num_environments environments.
COMMON = ['--agent=shallow', '--num_actor_threads=2']
_ONE_PER_ENVIRONMENT = 'NUM_ENVIRONMENTS'  # Replaced by --num_environments.
CONFIGURATIONS = {
    'env_ceiling_vector': COMMON + ['--atari_environment=vector'],
    'env_ceiling_process': COMMON + ['--atari_environment=process'],
    'train_feedforward': COMMON + ['--core=feedforward'],
    'train_feedforward_dynamic_batching': COMMON + [
        '--core=feedforward', '--dynamic_batching'],
    'train_lstm': COMMON + ['--core=lstm'],
    'train_lstm_dynamic_batching': COMMON + ['--core=lstm',
                                             '--dynamic_batching'],
    'train_lstm_xla_dynamic_batching': COMMON + [
        '--core=lstm', '--xla', '--dynamic_batching'],
    'train_feedforward_xla_dynamic_batching': COMMON + [
        '--core=feedforward', '--xla', '--dynamic_batching'],
    'train_lstm_process_environments_dynamic_batching': COMMON + [
        '--core=lstm', '--atari_environment=process', '--dynamic_batching'],
    # Many actor threads with few environments each: where the paper's
    # dynamic batching is meant to pay.
    'train_lstm_16_threads_dynamic_batching': COMMON + [
        '--core=lstm', '--num_actor_threads=16', '--dynamic_batching'],
    'train_lstm_16_threads': COMMON + [
        '--core=lstm', '--num_actor_threads=16'],
}

DMLAB_CONFIGURATIONS = {
    'env_ceiling': COMMON,
    'train_shallow_feedforward': COMMON + ['--core=feedforward'],
    'train_shallow_lstm': COMMON + ['--core=lstm'],
    'train_deep_lstm': ['--agent=deep', '--core=lstm',
                        '--num_actor_threads=2'],
    # One thread per environment: a slow episode start (a map compile)
    # stops its own environment only.
    'train_shallow_lstm_thread_per_environment_dynamic_batching': [
        '--agent=shallow', '--core=lstm', '--dynamic_batching',
        f'--num_actor_threads={_ONE_PER_ENVIRONMENT}'],
}


def configurations(level):
  """The configurations for `level`: DeepMind Lab's or Atari's."""
  return DMLAB_CONFIGURATIONS if level.startswith('dmlab') else CONFIGURATIONS


# Frames/s over stretches this long also give the slowest and the fastest:
# stalls (every environment compiling a map at once) show there.
STRETCH_SECONDS = 10


def _descendants(pid):
  children = []
  for task in os.listdir(f'/proc/{pid}/task'):
    try:
      with open(f'/proc/{pid}/task/{task}/children') as f:
        children += [int(child) for child in f.read().split()]
    except OSError:
      pass
  return children + [d for child in children for d in _descendants(child)]


def _rss_bytes(pid):
  try:
    with open(f'/proc/{pid}/status') as f:
      for line in f:
        if line.startswith('VmRSS:'):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  return 0


class PeakMemory:
  """Samples the RSS of this process and all its descendants."""

  def __init__(self, interval=0.5):
    self.peak = 0
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._sample, args=(interval,),
                                    daemon=True)
    self._thread.start()

  def _sample(self, interval):
    pid = os.getpid()
    while not self._stop.is_set():
      total = sum(_rss_bytes(p) for p in [pid] + _descendants(pid))
      self.peak = max(self.peak, total)
      time.sleep(interval)

  def stop(self):
    self._stop.set()
    self._thread.join()


def _give_up_later(stop):
  """A started timer that sets `stop` after --max_seconds, so that a
  configuration that never completes its window ends anyway."""
  timer = threading.Timer(FLAGS.max_seconds, stop.set)
  timer.daemon = True
  timer.start()
  return timer


def _environment_ceiling(config, seconds, warmup):
  """The measured window of random actions through the training
  environments."""
  import experiment  # pylint: disable=g-import-not-at-top
  from impala_tf import local_actors  # pylint: disable=g-import-not-at-top
  domain = experiment.domain_of(config.levels[0])
  parts = local_actors.split_evenly(
      local_actors.assign_levels(config.levels, config.actors.num_actors),
      config.actors.num_actor_threads)
  envs = [domain.training_environments(config.suite, names, 10_000 * index)
          for index, names in enumerate(parts)]
  num_actions = domain.environment_info(config.suite,
                                        config.levels[0]).num_actions
  counts = [0] * len(envs)
  stop = threading.Event()

  def act(index, env):
    rng = np.random.default_rng(index)
    env.reset()
    while not stop.is_set():
      env.step(rng.integers(0, num_actions, env.num_envs))
      counts[index] += env.num_envs * config.num_action_repeats

  threads = [threading.Thread(target=act, args=(i, env))
             for i, env in enumerate(envs)]
  for thread in threads:
    thread.start()
  # The same window as training's, over frame counts sampled every 50 ms.
  window = progress_window.Window(warmup, seconds)
  deadline = _give_up_later(stop)
  while not stop.is_set() and not window.add(time.monotonic(), sum(counts)):
    time.sleep(0.05)
  deadline.cancel()
  stop.set()
  for thread in threads:
    thread.join()
  for env in envs:
    env.close()
  return window


def _train(config, seconds, warmup):
  """The measured window of training, from the run's status file."""
  import experiment  # pylint: disable=g-import-not-at-top
  stop = threading.Event()
  window = progress_window.Window(warmup, seconds)
  threading.Thread(target=progress_window.watch,
                   args=(config.logdir, window, stop), daemon=True).start()
  deadline = _give_up_later(stop)
  experiment.train(config._replace(progress_interval_secs=1), stop,
                   print_fn=lambda line: None)
  deadline.cancel()
  return window


def _flags_of(name):
  """experiment.py's flags for configuration `name` at this run's sizes."""
  return [flag.replace(_ONE_PER_ENVIRONMENT, str(FLAGS.num_environments))
          for flag in configurations(FLAGS.level)[name]] + [
              f'--unroll_length={FLAGS.unroll}', f'--batch_size={FLAGS.batch}'
          ] + FLAGS.experiment_flag


def run_child(name):
  import tempfile  # pylint: disable=g-import-not-at-top
  import experiment  # pylint: disable=g-import-not-at-top
  flag_values = experiment.FLAGS
  flag_values([sys.argv[0], f'--level_name={FLAGS.level}',
               f'--logdir={tempfile.mkdtemp()}',
               '--total_environment_frames=1e12',
               f'--num_actors={FLAGS.num_environments}'] + _flags_of(name))
  config = experiment.make_config(flag_values)
  memory = PeakMemory()
  measure = _environment_ceiling if name.startswith('env_') else _train
  try:
    window = measure(config, FLAGS.seconds, FLAGS.warmup_seconds)
    fps = window.frames_per_second()
  except RuntimeError as error:
    print(json.dumps({'name': name, 'error': str(error)}), flush=True)
    return
  finally:
    memory.stop()
  stretches = window.slowest_and_fastest(STRETCH_SECONDS)
  print(json.dumps({
      'name': name, 'level': FLAGS.level, 'frames_per_second': round(fps),
      f'slowest_and_fastest_{STRETCH_SECONDS}s': stretches and [
          round(rate) for rate in stretches],
      'peak_rss_mib': round(memory.peak / 2**20),
      'num_actors': FLAGS.num_environments, 'flags': _flags_of(name)}),
        flush=True)


def main(argv):
  del argv
  if FLAGS.child:
    run_child(FLAGS.child)
    return
  known = configurations(FLAGS.level)
  for name in FLAGS.only or known:
    if name not in known:
      sys.exit(f'unknown configuration {name!r} for {FLAGS.level}; one of '
               f'{", ".join(known)}')
    result = subprocess.run(
        [sys.executable, '-m', 'benchmarks.throughput', f'--child={name}',
         f'--seconds={FLAGS.seconds}',
         f'--warmup_seconds={FLAGS.warmup_seconds}',
         f'--max_seconds={FLAGS.max_seconds}', f'--level={FLAGS.level}',
         f'--num_environments={FLAGS.num_environments}',
         f'--batch={FLAGS.batch}', f'--unroll={FLAGS.unroll}'] + [
             f'--experiment_flag={flag}' for flag in FLAGS.experiment_flag],
        capture_output=True, text=True)
    last_error = (result.stderr.strip().splitlines() or [''])[-1]
    print(result.stdout.strip() or json.dumps(
        {'name': name, 'error': f'exit status {result.returncode}: '
                                f'{last_error}'}), flush=True)


if __name__ == '__main__':
  app.run(main)
