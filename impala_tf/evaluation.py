"""Test mode: the latest checkpoint (or `test_checkpoint`) plays a fixed
number of games per level under the suite's test protocol; the results
(per level, and human-normalised where the suite has a benchmark) go to
`<logdir>/test_results.json` or `test_results_file`."""

import collections
import json
import os

import numpy as np
import tensorflow as tf

from impala_tf import actor as actor_lib
from impala_tf import builders
from impala_tf import checkpointing
from impala_tf import local_actors
from impala_tf import output_files
from impala_tf import test_results
from impala_tf.domain import UsageError


def evaluate(config, domain, print_fn=print):
  """Plays `test_num_episodes` games per level (the domain's `test_level`
  of each trained level) and writes the results; returns them.

  The results hold, per level played, the mean, std and count of game
  returns and, for a suite's levels, the human-normalised mean and the
  suite's summary (e.g. median and mean over levels).
  """
  levels = [domain.test_level(level) for level in config.levels]
  path = config.test_results_file or os.path.join(config.logdir,
                                                  'test_results.json')
  try:
    output_files.check_overwrite(path, config.overwrite)
  except FileExistsError as error:
    raise UsageError(error) from None
  learner = builders.build_learner(
      config, domain.environment_info(config.suite, config.levels[0]))
  latest = checkpointing.restore_for_test(learner, config.logdir,
                                            config.test_checkpoint)
  returns = _play(config, domain, levels, learner.agent, latest, print_fn)
  results = test_results.build(
      latest, int(learner.num_environment_frames.numpy()),
      config.test_num_episodes, returns, domain.benchmark,
      trained_on=dict(zip(levels, config.levels)))
  output_files.write_atomically(path, json.dumps(results, indent=2))
  _print_results(results, domain.benchmark, print_fn)
  print_fn(f'Wrote {path}.')
  return results


def _play(config, domain, levels, agent, checkpoint, print_fn):
  """{level: [game returns]}, `test_num_episodes` games per level."""
  # At most --num_actors environments (processes) in all, at least one per
  # level.
  envs_per_level = max(1, min(config.test_num_episodes,
                              config.actors.num_actors // len(levels)))
  level_names = [level for level in levels for _ in range(envs_per_level)]
  env = domain.test_environments(config.suite, level_names,
                                config.seed + 7919)
  policy = actor_lib.Policy(agent, dynamic_batching_enabled=False)
  # Each environment plays a fixed number of games, so short games are not
  # over-represented.
  quotas = [len(part) for part in local_actors.split_evenly(
      range(config.test_num_episodes), envs_per_level)] * len(levels)
  returns = collections.defaultdict(list)
  finished = [0] * len(level_names)
  env_output = env.reset()
  action = np.zeros([len(level_names)], np.int32)
  state = tf.nest.map_structure(lambda x: x.numpy(),
                                agent.initial_state(len(level_names)))
  print_fn(f'Testing {checkpoint} on {config.level_name} ({len(levels)} '
           f'level{"s" if len(levels) > 1 else ""}): '
           f'{config.test_num_episodes} games per level, {len(level_names)} '
           'environments.')
  try:
    while any(done < quota for done, quota in zip(finished, quotas)):
      agent_output, state = policy(action, env_output, state)
      action = agent_output.action
      env_output, games = env.step(action)
      for game in games:
        if finished[game.env_index] < quotas[game.env_index]:
          finished[game.env_index] += 1
          returns[game.level_name].append(game.episode_return)
          print_fn(f'{game.level_name}: game {len(returns[game.level_name])}'
                   f' return {game.episode_return:g}')
  finally:
    env.close()
  return {level: returns[level] for level in levels}


def _print_results(results, benchmark, print_fn):
  for level, result in results['levels'].items():
    print_fn(f'{level}: mean return {result["mean"]:.2f} '
             f'(std {result["std"]:.2f}, {result["episodes"]} games)' + (
                 f', human-normalised {result["human_normalized"]:.1f}%'
                 if 'human_normalized' in result else ''))
  if 'human_normalized' in results:
    print_fn(f'{benchmark.name}, {len(results["levels"])} levels: '
             'human-normalised ' +
             ', '.join(f'{name} {value:.1f}%' for name, value in
                       results['human_normalized'].items()))
