"""Actors that act with weights K learner updates old: the policy-lag knob
of the paper's V-trace analysis (Sec. 5.2), for local runs.

The actors get their own copy of the agent; after every update the learner
records its weights, and the copy takes those of K updates before.
"""

import collections


class DelayedWeights:
  """Keeps `actor_agent`'s weights `delay` updates behind `learner_agent`'s
  (fewer at the start of a run, when there have not been that many)."""

  def __init__(self, learner_agent, actor_agent, delay, num_updates):
    self._source = learner_agent.acting_variables
    self._target = actor_agent.acting_variables
    self._history = collections.deque(maxlen=delay + 1)
    self.version = num_updates
    self.record(num_updates)

  def record(self, num_updates):
    """After learner update `num_updates`: remember its weights and move the
    actors' copy to the oldest remembered."""
    self._history.append(
        (num_updates, [variable.numpy() for variable in self._source]))
    version, weights = self._history[0]
    for variable, value in zip(self._target, weights):
      variable.assign(value)
    self.version = version
