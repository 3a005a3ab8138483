"""Test mode's results file (`<logdir>/test_results.json`, and each periodic
test's `periodic_tests/ckpt-N.json`): `build` makes it, `read` is its one
reader (compare, curves, periodic tests). No TensorFlow here, so the tools
that only read results start fast."""

import json
import math

import numpy as np


class FormatError(Exception):
  """A file that is not test mode's results: one line for the user."""


def build(checkpoint, environment_frames, test_num_episodes, returns,
          benchmark, trained_on=None):
  """The results test mode writes (a dict, as JSON).

  Args:
    checkpoint: str, the checkpoint's path.
    environment_frames: int, its frames.
    test_num_episodes: int, games per level asked for.
    returns: {level: [float game returns]}.
    benchmark: a `scoring.Benchmark` or None; where it knows every level,
      the human-normalised means and the suite's summary are added.
    trained_on: {level played: level trained} for levels tested under
      another name (DMLab's `..._test` levels of the `..._train` ones), kept
      as the level's `trained_on`, so a run's curve finds its tests.
  """
  per_level = {
      level: {'mean': float(np.mean(level_returns)),
              'std': float(np.std(level_returns)),
              'episodes': len(level_returns)}
      for level, level_returns in returns.items()
  }
  for level, trained in (trained_on or {}).items():
    if trained != level:
      per_level[level]['trained_on'] = trained
  results = {
      'checkpoint': checkpoint,
      'environment_frames': environment_frames,
      'test_num_episodes': test_num_episodes,
      'levels': per_level,
  }
  if benchmark and all(benchmark.knows(level) for level in returns):
    normalized = benchmark.normalized(
        {level: result['mean'] for level, result in per_level.items()})
    for level, value in normalized.items():
      per_level[level]['human_normalized'] = value
    results['human_normalized'] = benchmark.summary(normalized)
  return results


def of_level(results, level):
  """`results`' entry for `level` (played under its own name or trained as
  it), or None."""
  if level in results['levels']:
    return results['levels'][level]
  return next((result for result in results['levels'].values()
               if result.get('trained_on') == level), None)


def _is_number(value):
  return (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value))


def read(path):
  """The results `build` made, read back from `path` and checked.

  Raises:
    FormatError: the file cannot be read, is not JSON, lacks `levels`, a
      level's numeric `mean` or `std` or its count of `episodes`, or the
      checkpoint's `environment_frames`.
  """
  try:
    with open(path) as f:
      results = json.load(f)
  except OSError as error:
    raise FormatError(f'cannot read {path}: {error.strerror}') from None
  except (json.JSONDecodeError, UnicodeDecodeError) as error:
    raise FormatError(f'{path} is not JSON: {error}') from None
  levels = results.get('levels') if isinstance(results, dict) else None
  if not isinstance(levels, dict) or not levels:
    raise FormatError(f'{path} has no "levels" object of per-level results '
                      '(as experiment.py --mode=test writes)')
  for level, result in levels.items():
    result = result if isinstance(result, dict) else {}
    for key in ('mean', 'std'):
      if not _is_number(result.get(key)):
        raise FormatError(f'{path}: {level!r} lacks a numeric "{key}"')
    if not isinstance(result.get('episodes'), int):
      raise FormatError(f'{path}: {level!r} lacks a count of "episodes"')
  if not isinstance(results.get('environment_frames'), int):
    raise FormatError(f'{path} lacks the checkpoint\'s "environment_frames"')
  return results
