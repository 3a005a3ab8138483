"""What the agent sees on DeepMind Lab levels: a strip of frames of random
play per level, exactly as the agent gets them (96x72 RGB by default),
enlarged for the eye, as one PNG.

  python -m experiments.dmlab_frames --levels=dmlab/seekavoid_arena_01,\
dmlab/explore_goal_locations_small --output=docs/dmlab/frames.png
"""

import sys

from absl import app
from absl import flags
import numpy as np

from dmlab30 import environment

FLAGS = flags.FLAGS
flags.DEFINE_list('levels', ['dmlab/seekavoid_arena_01'], 'dmlab/ levels.')
flags.DEFINE_string('output', None, 'The PNG to write.')
flags.DEFINE_integer('frames_per_level', 4, 'Frames shown per level.',
                     lower_bound=1)
flags.DEFINE_integer('steps_between', 15, 'Random agent steps between two '
                     'shown frames.', lower_bound=1)
flags.DEFINE_integer('seed', 1, 'Seed of the episodes and the actions.',
                     lower_bound=0)


def frames_of(level_name, num_frames, steps_between, seed):
  """`num_frames` uint8 frames `[H, W, 3]` of random play on a level."""
  env = environment.DmLabEnvironment(level_name, seed=seed)
  rng = np.random.default_rng(seed)
  try:
    frames = [env.reset().observation.frame]
    while len(frames) < num_frames:
      for _ in range(steps_between):
        timestep = env.step(int(rng.integers(
            len(environment.DEFAULT_ACTION_SET))))
      frames.append(timestep.observation.frame)
  finally:
    env.close()
  return frames


def main(argv):
  del argv
  if not FLAGS.output:
    sys.exit('dmlab_frames: error: give --output=FILE.png')
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  figure, axes = plt.subplots(
      len(FLAGS.levels), FLAGS.frames_per_level, squeeze=False,
      figsize=(2.4 * FLAGS.frames_per_level, 2.0 * len(FLAGS.levels)))
  for row, level in enumerate(FLAGS.levels):
    frames = frames_of(level, FLAGS.frames_per_level, FLAGS.steps_between,
                       FLAGS.seed)
    for column, frame in enumerate(frames):
      axes[row, column].imshow(frame, interpolation='nearest')
      axes[row, column].set_axis_off()
    axes[row, 0].set_title(level, loc='left', fontsize=9)
  figure.tight_layout()
  figure.savefig(FLAGS.output, dpi=100)
  print(f'wrote {FLAGS.output}')


if __name__ == '__main__':
  app.run(main)
