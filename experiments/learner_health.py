"""The learner's health summaries of several runs at chosen frames, as a
Markdown table: e.g. how much of the torso was dead and how well the
baseline explained the returns at 0.1M, 1M and 3M frames.

  python -m experiments.learner_health "seed 1=RUN1" "seed 2=RUN2" \
      --tags=torso_dead_fraction,baseline_explained_variance --at_frames=1e5,1e6,3e6

Each cell is the run's summary nearest to the frames asked for (summaries
come every progress interval, about 20,000-60,000 frames apart on Atari
here). Reads the `learner/<tag>` summaries the learner writes; what they
showed about Pong is in docs/learning.md.
"""

import os
import sys

from absl import app
from absl import flags

from impala_tf import curves
from impala_tf import markdown_table

FLAGS = flags.FLAGS
flags.DEFINE_list('tags', ['torso_dead_fraction',
                           'baseline_explained_variance', 'entropy'],
                  'learner/<tag> summaries to show.')
flags.DEFINE_list('at_frames', ['1e5', '1e6', '3e6'],
                  'Environment frames at which to read each tag.')
flags.DEFINE_integer('decimals', 2, 'Decimals shown in each cell, 0-9 '
                     '(e.g. 4 for learner/update_to_weight_ratio, ~0.01).')


def nearest(points, frames):
  """The value of the `curves.Scalar` in `points` whose step is nearest to
  `frames`; None when there are none."""
  if not points:
    return None
  return min(points, key=lambda point: abs(point.step - frames)).value


def table(runs, tags, at_frames, decimals=2):
  """A Markdown table: one row per run, one column per (tag, frames).

  Args:
    runs: {label: {tag: [`curves.Scalar`]}}, in row order.
    tags: the tags, in column order.
    at_frames: the frames (floats), in column order within a tag.
    decimals: int, decimals shown in each cell.

  Returns:
    The table's text; '—' where a run has no such summary.
  """
  columns = [(tag, frames) for tag in tags for frames in at_frames]
  header = ['run'] + [f'{tag} at {frames / 1e6:g}M' for tag, frames in columns]
  rows = []
  for label, summaries in runs.items():
    cells = [nearest(summaries.get(tag, []), frames)
             for tag, frames in columns]
    rows.append([label] + ['—' if cell is None else f'{cell:.{decimals}f}'
                           for cell in cells])
  return '\n'.join(markdown_table.table(header, rows))


def _parse(argv):
  """({label: logdir}, [frames]) from the command line; exits with one line
  on bad input."""
  runs = {}
  for arg in argv:
    label, logdir = curves.split_label(arg)
    runs[curves.run_name(label, logdir)] = logdir
  try:
    at_frames = [float(frames) for frames in FLAGS.at_frames]
  except ValueError:
    sys.exit(f'learner_health: error: --at_frames={",".join(FLAGS.at_frames)}'
             ' must be numbers')
  if not 0 <= FLAGS.decimals <= 9:
    sys.exit(f'learner_health: error: --decimals={FLAGS.decimals} must be '
             '0-9')
  if not runs or not FLAGS.tags or not at_frames:
    sys.exit('learner_health: error: give one or more LABEL=LOGDIR runs, '
             '--tags and --at_frames')
  return runs, at_frames


def main(argv):
  runs, at_frames = _parse(argv[1:])
  summaries = {}
  for label, logdir in runs.items():
    if not os.path.isdir(logdir):
      sys.exit(f'learner_health: error: {logdir} is not a directory')
    events = curves.load_events(logdir)
    summaries[label] = {tag: curves.scalars(events, f'learner/{tag}')
                        for tag in FLAGS.tags}
    if not any(summaries[label].values()):
      sys.exit(f'learner_health: error: {logdir} has none of the learner/ '
               f'summaries {",".join(FLAGS.tags)}')
  print(table(summaries, FLAGS.tags, at_frames, FLAGS.decimals))


if __name__ == '__main__':
  app.run(main)
