r"""Learner and inference speed of the paper's agents (a benchmark, not a test).

Prints one JSON line per configuration:
  * learner: shallow/deep torso, T=20 and T=100, B=32, XLA on and off, with
    learner steps/s and frames/s (frames = T * B * 4 action repeats);
  * inference: single agent steps at batch 1, 8 and 32, steps/s.
Agents are DMLab-shaped (72x96 RGB, 9 actions, LSTM 256 core).

  .venv/bin/python benchmarks/learner_step.py [--seconds=5]
"""

import json
import time

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

from impala_tf import agents
from impala_tf import learner as learner_lib
from impala_tf import trajectory as trajectory_lib

flags.DEFINE_float('seconds', 5.0, 'Timed seconds per configuration.',
                   lower_bound=0.01)
flags.DEFINE_list('torsos', ['shallow', 'deep'], 'Torsos to measure.')
flags.DEFINE_list('unroll_lengths', ['20', '100'], 'Unroll lengths T.')
flags.DEFINE_integer('batch_size', 32, 'Learner batch size B.',
                     lower_bound=1)
FLAGS = flags.FLAGS

OBSERVATION_SHAPE = (72, 96, 3)
NUM_ACTIONS = 9
NUM_ACTION_REPEATS = 4


def make_agent(torso):
  return agents.Agent(
      num_actions=NUM_ACTIONS,
      observation_shape=OBSERVATION_SHAPE,
      torso=torso,
      core='lstm')


def timed(fn, seconds):
  """Calls fn (after two warm-up calls) for about `seconds`; returns calls/s."""
  fn()
  fn()
  calls = 0
  start = time.perf_counter()
  while time.perf_counter() - start < seconds:
    fn()
    calls += 1
  return calls / (time.perf_counter() - start)


def benchmark_learner(torso, unroll_length, batch_size, xla, seconds):
  agent = make_agent(torso)
  hparams = learner_lib.LearnerHParams(
      learning_rate=0.00048, learning_rate_anneal_frames=int(1e9),
      num_action_repeats=NUM_ACTION_REPEATS, decay=0.99, momentum=0.0,
      epsilon=0.1, max_grad_norm=40.0, discounting=0.99, baseline_cost=0.5,
      entropy_cost=0.00025, reward_clipping='abs_one',
      off_policy_correction='vtrace')
  learner = learner_lib.Learner(agent, hparams, xla=xla)
  batch = tf.nest.map_structure(
      tf.convert_to_tensor,
      trajectory_lib.random_trajectory(
          np.random.default_rng(0), agent, unroll_length, batch_size,
          NUM_ACTIONS, OBSERVATION_SHAPE, done_probability=0.01))

  def step():
    # Reading the loss waits for the step to finish.
    learner.train_step(batch)['total_loss'].numpy()

  steps_per_second = timed(step, seconds)
  return {
      'benchmark': 'learner_step',
      'torso': torso,
      'unroll_length': unroll_length,
      'batch_size': batch_size,
      'xla': xla,
      'parameters': agent.num_parameters(),
      'steps_per_second': round(steps_per_second, 3),
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
          np.random.default_rng(0), agent, 0, batch_size, NUM_ACTIONS,
          OBSERVATION_SHAPE).env_outputs)
  last_action = tf.zeros([batch_size], tf.int32)
  state = agent.initial_state(batch_size)
  step_fn = tf.function(agent.step)

  def step():
    step_fn(last_action, env_output, state)[0].action.numpy()

  steps_per_second = timed(step, seconds)
  return {
      'benchmark': 'inference',
      'torso': torso,
      'batch_size': batch_size,
      'steps_per_second': round(steps_per_second, 1),
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
    for batch_size in (1, 8, 32):
      print(json.dumps(benchmark_inference(torso, batch_size, FLAGS.seconds)),
            flush=True)


if __name__ == '__main__':
  app.run(main)
