"""A uniformly random policy on a run's levels, measured by the training
code: the same environments (`--num_actors` of them, the domain's own
batched environments) and the same per-game summaries (`<level>/
episode_return` against frames), so `python -m impala_tf.curves` draws it
beside a trained run. What a learning curve must beat.

  python -m experiments.random_policy --flagfile=dmlab30/dmlab_single.flags \
      --level_name=dmlab/seekavoid_arena_01 --total_environment_frames=1e6 \
      --logdir=/tmp/runs/seekavoid_random

Give a learning run's flags; `--total_environment_frames` is how much to
play. Prints the mean return of its games at the end.
"""

import sys
import time

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

import experiment
from impala_tf import local_actors
from impala_tf import progress
from impala_tf.domain import UsageError

FLAGS = flags.FLAGS


def play(config, print_fn=print):
  """Plays random actions for `config.total_environment_frames` frames,
  writing every finished game to `config.logdir`'s summaries.

  Returns:
    list of `environments.FinishedGame`.
  """
  domain = experiment.domain_of(config.levels[0])
  level_names = local_actors.assign_levels(config.levels,
                                             config.actors.num_actors)
  num_actions = domain.environment_info(config.suite,
                                        config.levels[0]).num_actions
  env = domain.training_environments(config.suite, level_names,
                                     config.seed)
  writer = tf.summary.create_file_writer(config.logdir)
  game_summaries = progress.GameSummaries(writer, domain.benchmark)
  rng = np.random.default_rng(config.seed)
  frames, games = 0, []
  start = last_line = time.monotonic()
  try:
    env.reset()
    while frames < config.total_environment_frames:
      _, finished = env.step(rng.integers(0, num_actions, env.num_envs))
      frames += env.num_envs * config.num_action_repeats
      game_summaries.write(frames, finished)
      games += finished
      if time.monotonic() - last_line >= config.progress_interval_secs:
        last_line = time.monotonic()
        print_fn(_progress_line(frames, config.total_environment_frames,
                                last_line - start, games))
  finally:
    env.close()
    writer.flush()
  returns = [game.episode_return for game in games]
  print_fn(f'random policy: {len(games)} games in {frames:,} frames, mean '
           f'return {np.mean(returns) if returns else float("nan"):.2f}')
  return games


def _progress_line(frames, total_frames, seconds, games):
  rate = frames / max(seconds, 1e-9)
  recent = [game.episode_return for game in games[-100:]]
  return (f'frames {frames:,} / {total_frames:,} | {rate:,.0f} frames/s | '
          f'{(total_frames - frames) / max(rate, 1e-9) / 60:.1f} min left | '
          f'return {np.mean(recent) if recent else float("nan"):.2f} '
          f'(last {len(recent)} of {len(games)} games)')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'unexpected arguments: {" ".join(argv[1:])}')
  try:
    play(experiment.make_config(FLAGS))
  except UsageError as error:
    sys.exit(f'random_policy: error: {error}')


if __name__ == '__main__':
  app.run(main)
