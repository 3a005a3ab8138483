"""How healthy a run's network is at each of its checkpoints: the torso's
dead units, the LSTM gates' saturation, and how much the core's output and
the policy vary from frame to frame, all on the same frames of random play.

  python -m experiments.agent_health --flagfile=atari57/atari_10m.flags \
      --level_name=atari/breakout --core=lstm --logdir=RUN

Give the run's own flags (they build its agent). `--checkpoint_dir` reads
another folder of `ckpt-N` files (e.g. copies taken while the run went on,
since a run keeps only its last few). What it showed about the LSTM core on
Atari is in docs/learning.md ("Controls").
"""

import glob
import os
import re
import sys

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf
import tree

import experiment
from impala_tf import agents
from impala_tf import builders
from impala_tf import checkpointing
from impala_tf import learner as learner_lib
from impala_tf import lstm
from impala_tf.domain import UsageError

FLAGS = flags.FLAGS
flags.DEFINE_string('checkpoint_dir', None, 'Where the ckpt-N files are '
                    '(default: the run\'s checkpoint folder under --logdir).')
flags.DEFINE_integer('health_steps', 150, 'Steps of random play whose '
                     'frames every checkpoint is shown.')
flags.DEFINE_integer('health_envs', 8, 'Environments played side by side.')

# A gate whose pre-activation is beyond this barely moves with its input:
# sigmoid'(4) = 0.018, a 14th of its value at 0.
SATURATED = 4.0


def random_play(config, domain, num_envs, num_steps, seed):
  """[(last actions `[N]`, `EnvOutput` of `[N, ...]`)], one per step of
  uniformly random actions in `num_envs` environments of the first level."""
  env = domain.test_environments(config.suite,
                                [config.levels[0]] * num_envs, seed)
  num_actions = domain.environment_info(config.suite,
                                        config.levels[0]).num_actions
  rng = np.random.default_rng(seed)
  actions = np.zeros([num_envs], np.int32)
  steps = [(actions, env.reset())]
  for _ in range(num_steps - 1):
    actions = rng.integers(0, num_actions, num_envs).astype(np.int32)
    steps.append((actions, env.step(actions)[0]))
  env.close()
  return steps


def health(agent, steps):
  """The agent's activations over `steps` (see `random_play`), summarised.

  Returns:
    dict of floats: torso_mean and torso_max (its output), torso_dead (the
    fraction of its units zero on every frame); for an LSTM core,
    gates_saturated (the fraction of gate pre-activations beyond
    +-SATURATED) and core_variation (the core output's standard deviation
    over time, mean over units and environments); logits_variation
    likewise, and entropy (mean).
  """
  core_state = agent.initial_state(len(steps[0][0]))
  torso, saturated, core_outputs, logits = [], [], [], []
  for last_actions, env_output in steps:
    inputs = agent.core_inputs(last_actions, env_output, use_cudnn=False)
    torso.append(inputs[:, :agents.CORE_SIZE].numpy())
    if agent.core:
      gates = agent.core.gate_preactivations(
          inputs, lstm.reset_where_done(core_state, env_output.done))
      saturated.append(np.mean(np.abs(gates.numpy()) > SATURATED))
    output, core_state = agent.step(last_actions, env_output, core_state)
    if agent.core:
      core_outputs.append(core_state.h.numpy())
    logits.append(output.policy_logits.numpy())
  torso, logits = np.array(torso), np.array(logits)
  probabilities = tf.nn.softmax(logits).numpy()
  summary = {
      'torso_mean': float(torso.mean()),
      'torso_max': float(torso.max()),
      'torso_dead': float(learner_lib.dead_fraction(torso)),
      'logits_variation': float(logits.std(axis=0).mean()),
      'entropy': float(-np.sum(probabilities * np.log(probabilities + 1e-12),
                               axis=-1).mean()),
  }
  if agent.core:
    summary['gates_saturated'] = float(np.mean(saturated))
    summary['core_variation'] = float(np.array(core_outputs).std(0).mean())
  return summary


def checkpoint_paths(directory):
  """The `ckpt-N` prefixes in `directory`, by N."""
  paths = [path[:-len('.index')]
           for path in glob.glob(os.path.join(directory, 'ckpt-*.index'))]
  return sorted(paths, key=lambda path: int(re.findall(r'-(\d+)$', path)[0]))


def _format(summary):
  return '  '.join(f'{name} {value:.3g}' for name, value in summary.items())


def main(argv):
  del argv
  try:
    if FLAGS.health_steps < 2 or FLAGS.health_envs < 1:
      raise UsageError('--health_steps must be at least 2 and --health_envs '
                       'at least 1')
    config = experiment.make_config(FLAGS)
    directory = FLAGS.checkpoint_dir or checkpointing.directory(config.logdir)
    paths = checkpoint_paths(directory)
    if not paths:
      raise UsageError(f'no ckpt-N files in {directory}')
  except UsageError as error:
    sys.exit(f'agent_health: error: {error}')
  domain = experiment.domain_of(config.levels[0])
  steps = random_play(config, domain, FLAGS.health_envs, FLAGS.health_steps,
                      config.seed + 7919)
  steps = [(actions, tree.map_structure(tf.convert_to_tensor, env_output))
           for actions, env_output in steps]
  info = domain.environment_info(config.suite, config.levels[0])
  for path in paths:
    learner = builders.build_learner(config, info)
    tf.train.Checkpoint(learner=learner).restore(path).expect_partial()
    print(f'updates {int(learner.num_updates.numpy())}  frames '
          f'{int(learner.num_environment_frames.numpy())}  '
          f'{_format(health(learner.agent, steps))}', flush=True)


if __name__ == '__main__':
  app.run(main)
