r"""impala_tf's entry point.

The actor/learner training pipeline is not here yet (issue 3); until it is,
this checks that the installation works end to end: every dependency imports
and one compiled learner step of the shallow agent runs on a synthetic batch.

  .venv/bin/python experiment.py
"""

import importlib
import sys

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

from impala_tf import agents
from impala_tf import learner as learner_lib
from impala_tf import trajectory as trajectory_lib

flags.DEFINE_boolean('xla', False, 'Compile the learner step with XLA.')
FLAGS = flags.FLAGS

DEPENDENCIES = ('absl', 'ale_py', 'dm_env', 'tree', 'tensorflow_probability')


def check_learner_step(xla):
  """Runs one learner step on a Pong-shaped synthetic batch; returns stats."""
  num_actions, observation_shape, unroll_length, batch_size = 6, (84, 84, 4), 20, 4
  agent = agents.Agent(num_actions, observation_shape, torso='shallow',
                       core='feedforward')
  hparams = learner_lib.LearnerHParams(
      learning_rate=0.0006, total_environment_frames=int(2e8),
      num_action_repeats=4, decay=0.99, momentum=0.0, epsilon=0.01,
      max_grad_norm=40.0, discounting=0.99, baseline_cost=0.5,
      entropy_cost=0.01, reward_clipping='abs_one')
  learner = learner_lib.Learner(agent, hparams, xla=xla)
  batch = trajectory_lib.random_trajectory(
      np.random.default_rng(0), agent, unroll_length, batch_size, num_actions,
      observation_shape)
  return learner.train_step(batch)


def main(argv):
  del argv
  for name in DEPENDENCIES:
    try:
      importlib.import_module(name)
    except ImportError as error:
      sys.exit(f'impala_tf: dependency {name!r} is missing ({error}); run '
               '`make train` or `make test`, which install requirements.txt.')
  stats = check_learner_step(FLAGS.xla)
  print(f'impala_tf: installation OK (TensorFlow {tf.__version__}); one '
        f'learner step ran, loss {float(stats["total_loss"]):.3f}.')
  print('impala_tf: actor/learner training is not implemented yet (issue 3); '
        'nothing was trained.')


if __name__ == '__main__':
  app.run(main)
