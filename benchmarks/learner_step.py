r"""Learner and inference speed of the paper's agents (a benchmark, not a test).

Prints one JSON line per configuration:
  * learner: shallow/deep torso, T=20 and T=100, B=32, XLA on and off, with
    learner steps/s and frames/s (frames = T * B * 4 action repeats);
  * inference: single agent steps at each of --inference_batch_sizes
    (1, 8 and 32), steps/s.
Each line also gives the CPU seconds (all threads of the process) per call,
the cost that `benchmarks/profile.py` cannot split between the two.
Agents are DMLab-shaped (72x96 RGB, 9 actions, LSTM 256 core) or, with
`--shape=atari`, Atari-shaped (84x84 grey, 4 stacked frames, Pong's 6
actions, feed-forward core: the paper's Atari agent). `--normalize_frames`
measures the agents with per-pixel frame normalisation.

  .venv/bin/python -m benchmarks.learner_step [--seconds=5] [--shape=atari]
      [--normalize_frames]

(from the repository root, as every benchmark runs).
"""

import collections
import json
import time

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

from impala_tf import agents
from impala_tf import learner as learner_lib
from impala_tf import trajectory as trajectory_lib

Shape = collections.namedtuple('Shape', ['observation', 'num_actions', 'core'])
SHAPES = {
    'dmlab': Shape((72, 96, 3), 9, 'lstm'),
    'atari': Shape((84, 84, 4), 6, 'feedforward'),
}

flags.DEFINE_float('seconds', 5.0, 'Timed seconds per configuration.',
                   lower_bound=0.01)
flags.DEFINE_list('torsos', ['shallow', 'deep'], 'Torsos to measure.')
flags.DEFINE_list('unroll_lengths', ['20', '100'], 'Unroll lengths T.')
flags.DEFINE_integer('batch_size', 32, 'Learner batch size B.',
                     lower_bound=1)
flags.DEFINE_list('inference_batch_sizes', ['1', '8', '32'],
                  'Batch sizes of the inference steps.')
flags.DEFINE_enum('shape', 'dmlab', list(SHAPES), 'The agents\' inputs, '
                  'actions and core.')
flags.DEFINE_bool('normalize_frames', False, 'Agents normalise their frames '
                  'per pixel (experiment.py\'s --normalize_frames).')
FLAGS = flags.FLAGS

NUM_ACTION_REPEATS = 4


def make_agent(torso):
  shape = SHAPES[FLAGS.shape]
  return agents.Agent(
      num_actions=shape.num_actions,
      observation_shape=shape.observation,
      torso=torso,
      core=shape.core,
      normalize_frames=FLAGS.normalize_frames)


def timed(fn, seconds):
  """Calls fn (after two warm-up calls) for about `seconds`; returns
  (calls/s, CPU seconds of the whole process per call)."""
  fn()
  fn()
  calls = 0
  start = time.perf_counter()
  start_cpu = time.process_time()
  while time.perf_counter() - start < seconds:
    fn()
    calls += 1
  cpu_per_call = (time.process_time() - start_cpu) / calls
  return calls / (time.perf_counter() - start), cpu_per_call


def benchmark_learner(torso, unroll_length, batch_size, xla, seconds):
  agent = make_agent(torso)
  hparams = learner_lib.LearnerHParams(
      learning_rate=0.00048, learning_rate_anneal_frames=int(1e9),
      num_action_repeats=NUM_ACTION_REPEATS, decay=0.99, momentum=0.0,
      epsilon=0.1, max_grad_norm=40.0, discounting=0.99, baseline_cost=0.5,
      entropy_cost=0.00025, reward_clipping='abs_one',
      off_policy_correction='vtrace', vtrace_lambda=1.0)
  learner = learner_lib.Learner(agent, hparams, xla=xla)
  batch = tf.nest.map_structure(
      tf.convert_to_tensor,
      trajectory_lib.random_trajectory(
          np.random.default_rng(0), agent, unroll_length, batch_size,
          agent.num_actions, agent.observation_shape,
          done_probability=0.01))

  def step():
    # Reading the loss waits for the step to finish.
    learner.train_step(batch)['total_loss'].numpy()

  steps_per_second, cpu_seconds = timed(step, seconds)
  return {
      'benchmark': 'learner_step',
      'shape': FLAGS.shape,
      'torso': torso,
      'unroll_length': unroll_length,
      'batch_size': batch_size,
      'xla': xla,
      'normalize_frames': FLAGS.normalize_frames,
      'parameters': agent.num_parameters(),
      'steps_per_second': round(steps_per_second, 3),
      'cpu_seconds_per_step': round(cpu_seconds, 5),
      'frames_per_second': round(
          steps_per_second * unroll_length * batch_size * NUM_ACTION_REPEATS,
          1),
  }


def benchmark_inference(torso, batch_size, seconds):
  agent = make_agent(torso)
  # The first step of a random trajectory is one batched environment output.
  env_output = tf.nest.map_structure(
      lambda x: tf.convert_to_tensor(x[0]),
      trajectory_lib.random_trajectory(
          np.random.default_rng(0), agent, 0, batch_size, agent.num_actions,
          agent.observation_shape).env_outputs)
  last_action = tf.zeros([batch_size], tf.int32)
  state = agent.initial_state(batch_size)
  step_fn = tf.function(agent.step)

  def step():
    step_fn(last_action, env_output, state)[0].action.numpy()

  steps_per_second, cpu_seconds = timed(step, seconds)
  return {
      'benchmark': 'inference',
      'shape': FLAGS.shape,
      'torso': torso,
      'batch_size': batch_size,
      'normalize_frames': FLAGS.normalize_frames,
      'steps_per_second': round(steps_per_second, 1),
      'cpu_seconds_per_step': round(cpu_seconds, 6),
      'agent_steps_per_second': round(steps_per_second * batch_size, 1),
  }


def main(argv):
  del argv
  print(json.dumps({'tensorflow': tf.__version__,
                    'gpus': len(tf.config.list_physical_devices('GPU'))}))
  for torso in FLAGS.torsos:
    for unroll_length in map(int, FLAGS.unroll_lengths):
      for xla in (False, True):
        print(json.dumps(benchmark_learner(torso, unroll_length,
                                           FLAGS.batch_size, xla,
                                           FLAGS.seconds)), flush=True)
    for batch_size in map(int, FLAGS.inference_batch_sizes):
      print(json.dumps(benchmark_inference(torso, batch_size, FLAGS.seconds)),
            flush=True)


if __name__ == '__main__':
  app.run(main)
