"""Human-normalised scores, and published results to compare against.

A suite (Atari-57, DMLab-30) is a `Benchmark`: its levels' random and human
baseline scores and the statistics the paper reports over levels. Published
per-level results are `PaperRun`s. Scores are percent: 0 is the random
baseline, 100 the human one.
"""

import collections

import numpy as np

PaperRun = collections.namedtuple(
    'PaperRun',
    [
        'title',  # str: the agent as the paper names it.
        'source',  # str: where `published` comes from.
        'scores',  # {level_name: float or None (not reported)}.
        'published',  # {statistic: percent or None}: the paper's summary.
    ])


def human_normalized(score, random, human, cap=None):
  """100 * (score - random) / (human - random), at most `cap` if given.

  Args:
    score: float or array `[...]`: raw scores.
    random: float or array broadcasting with `score`: random-play scores.
    human: float or array broadcasting with `score`: human scores.
    cap: None or float: the largest value returned.

  Returns:
    float64 array `[...]`, percent.
  """
  normalized = 100.0 * (np.asarray(score, np.float64) - random) / (
      np.asarray(human, np.float64) - random)
  return normalized if cap is None else np.minimum(normalized, cap)


class Benchmark:
  """A suite's levels, baseline scores and summary statistics."""

  def __init__(self, name, baselines, statistics, scored_as=None):
    """
    Args:
      name: str, e.g. 'Atari-57'.
      baselines: {level_name: (random score, human score)}, in the paper's
        order.
      statistics: {name: function(float64 `[L]` percent) -> float}, the
        summaries the paper reports, in order (e.g. median, mean).
      scored_as: {level_name: level_name}: levels trained on one level but
        scored on another's baselines (DMLab-30's train/test pairs).
    """
    self.name = name
    self.baselines = dict(baselines)
    self.statistics = dict(statistics)
    self.scored_as = dict(scored_as or {})

  @property
  def levels(self):
    """The suite's levels, in the paper's order."""
    return list(self.baselines)

  def knows(self, level_name):
    return self.scored_as.get(level_name, level_name) in self.baselines

  def normalized(self, scores):
    """{level_name: raw score} -> {level_name: percent}; unknown levels
    raise KeyError."""
    normalized = {}
    for level_name, score in scores.items():
      random, human = self.baselines[self.scored_as.get(level_name,
                                                        level_name)]
      normalized[level_name] = float(human_normalized(score, random, human))
    return normalized

  def summary(self, normalized):
    """{statistic: percent} over the values of {level_name: percent}."""
    values = np.array(list(normalized.values()), np.float64)
    return {name: float(statistic(values))
            for name, statistic in self.statistics.items()}
