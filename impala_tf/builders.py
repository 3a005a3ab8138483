"""The agent and learner a run's configuration describes."""

from impala_tf import agents
from impala_tf import learner as learner_lib


def build_agent(config, info):
  """The agent for `info`, a `domain.EnvironmentInfo`."""
  return agents.Agent(info.num_actions, info.frame_shape, torso=config.agent,
                      core=config.core,
                      use_instruction=info.instruction_length > 0,
                      seed=config.seed)


def build_learner(config, info, strategy=None):
  """The learner of an agent for `info`; `strategy`: see `learner.Learner`."""
  agent = build_agent(config, info)
  hparams = learner_lib.LearnerHParams(
      learning_rate=config.learning_rate,
      learning_rate_anneal_frames=config.learning_rate_anneal_frames,
      num_action_repeats=config.num_action_repeats, decay=config.decay,
      momentum=config.momentum, epsilon=config.epsilon,
      max_grad_norm=config.max_grad_norm,
      discounting=config.discounting, baseline_cost=config.baseline_cost,
      entropy_cost=config.entropy_cost,
      reward_clipping=config.reward_clipping,
      off_policy_correction=config.off_policy_correction)
  return learner_lib.Learner(agent, hparams, xla=config.xla,
                             strategy=strategy)
