"""experiments/agent_health.py: it sees a torso whose units died and an
LSTM whose gates saturated (the LSTM core's collapse on Atari), and it
reads every checkpoint of a run."""

import contextlib
import io

from absl import flags
from absl.testing import flagsaver
import numpy as np
import tensorflow as tf

import experiment
from experiments import agent_health
from impala_tf import agents
from impala_tf import builders
from tests import pipeline_util

FLAGS = flags.FLAGS
NUM_DEAD = 240


class AgentHealthTest(tf.test.TestCase):

  def _agent_and_steps(self):
    config = pipeline_util.config(level_name='catch/plain', core='lstm',
                                  logdir=self.create_tempdir().full_path)
    domain = experiment.domain_of('catch/plain')
    agent = builders.build_agent(
        config.agent, domain.environment_info(config.suite, 'catch/plain'),
        config.seed)
    steps = agent_health.random_play(config, domain, num_envs=4,
                                     num_steps=30, seed=1)
    return agent, steps

  def test_a_dead_torso_and_saturated_gates_show(self):
    agent, steps = self._agent_and_steps()
    healthy = agent_health.health(agent, steps)
    self.assertLess(healthy['torso_dead'], 0.5)
    self.assertEqual(0.0, healthy['gates_saturated'])
    self.assertAllInRange([healthy['entropy']], 1.0, np.log(3))
    # The collapse: most units never fire, a few fire at about 100.
    bias = np.full([agents.CORE_SIZE], -100.0, np.float32)
    bias[NUM_DEAD:] = 100.0
    agent.torso.fc.b.assign(bias)
    collapsed = agent_health.health(agent, steps)
    self.assertEqual(NUM_DEAD / agents.CORE_SIZE, collapsed['torso_dead'])
    self.assertGreater(collapsed['torso_mean'], 5.0)
    self.assertGreater(collapsed['gates_saturated'], 0.5)

  def test_reads_every_checkpoint_of_a_run(self):
    logdir = self.create_tempdir().full_path
    settings = dict(level_name='catch/plain', core='lstm', logdir=logdir,
                    num_actors=4, batch_size=4, num_action_repeats=1,
                    total_environment_frames=400, health_steps=5,
                    health_envs=2)
    pipeline_util.train(**settings)
    output = io.StringIO()
    with flagsaver.flagsaver(**settings), contextlib.redirect_stdout(output):
      agent_health.main([])
    lines = output.getvalue().splitlines()
    self.assertLen(lines, 1)
    self.assertRegex(lines[0], r'^updates \d+  frames \d+  torso_mean ')
    self.assertIn('gates_saturated', lines[0])

  def test_no_checkpoints_is_one_line(self):
    with flagsaver.flagsaver(level_name='catch/plain',
                             logdir=self.create_tempdir().full_path):
      with self.assertRaises(SystemExit) as stop:
        agent_health.main([])
    self.assertRegex(str(stop.exception), r'^agent_health: error: no ckpt-N '
                     r'files in \S+$')


if __name__ == '__main__':
  tf.test.main()
