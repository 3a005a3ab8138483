"""The agent and learner a run's configuration describes."""

from impala_tf import agents
from impala_tf import learner as learner_lib


def build_agent(spec, info, seed):
  """The agent `spec` (an `agents.AgentSpec`) describes, for `info`, a
  `domain.EnvironmentInfo`."""
  return agents.Agent(info.num_actions, info.frame_shape, torso=spec.torso,
                      core=spec.core,
                      use_instruction=info.instruction_length > 0,
                      normalize_frames=spec.normalize_frames, seed=seed)


def build_learner(config, info, strategy=None):
  """The learner of the run `config` describes, for `info`; `strategy`:
  see `learner.Learner`."""
  return learner_lib.Learner(build_agent(config.agent, info, config.seed),
                             config.learner, xla=config.xla,
                             strategy=strategy)
