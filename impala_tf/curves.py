"""Learning curves from runs' TensorBoard events (read with TensorBoard's own
event reader): the mean return of the last 100 games against frames, with
the policy's entropy in a second panel, as PNG and CSV; the form every
learning claim in `docs/` takes.

  python -m impala_tf.curves LOGDIR [LOGDIR ...] --level=atari/pong \
      --output=docs/curves/pong   # writes docs/curves/pong.csv and .png

Each LOGDIR is one run, labelled by the folder's name, or by LABEL when
given as LABEL=LOGDIR. A LOGDIR may also hold a Sample Factory run's events
(a peer to compare with, never a dependency): its `reward/reward`, already
the mean of its last 100 episodes against frames, is taken as the curve.
With `--target=18` it also prints when each run's running mean first
reached 18: frames, and wall-clock from the run's first event (the event
files' own times; a silence of more than 5 minutes in all of a run's
summaries is a stopped run that was resumed, and is left out).

A curve this tool wrote before comes back as `[LABEL=]FILE.csv#RUN` (RUN:
the run's name in the CSV's first column; `#RUN` may be left out when the
file holds one run): its running means at the CSV's rows, no entropy, no
wall-clock. With `--frames_per_level`, a run on G levels (its
`flags.json`) is drawn against frames / G, about the frames of each level,
since its actors play the levels round-robin: a multi-task run beside
single-level ones at the same frames per level.

A run's test-mode results are drawn on its curve as points with their
standard deviation: those of its periodic tests while training
(`--periodic_test_episodes`, `periodic_tests/ckpt-N.json`) and that of its
final checkpoint (`test_results.json`), and written to
`<output>_test_mode.csv`; a policy that got worse while the running mean,
which averages thousands of updates' policies, hid it shows there.
"""

import collections
import csv
import glob
import io
import json
import os
import sys

from absl import app
from absl import flags
import numpy as np

from impala_tf import output_files
from impala_tf import run_status
from impala_tf import test_results

# Where a drawing's test-mode results go: the output path, then this.
TEST_MODE_CSV = '_test_mode.csv'
# The window of the running mean, in games (as the progress line's).
WINDOW_GAMES = 100
# CSV rows: one per this many frames per run (the PNG shows every game).
CSV_EVERY_FRAMES = 50_000
# Sample Factory's summaries (torch's SummaryWriter): the mean return of its
# last 100 episodes (its --stats_avg) and the policy's entropy, against
# frames (it counts the frame skip, as this project does).
SAMPLE_FACTORY_RETURN = 'reward/reward'
SAMPLE_FACTORY_ENTROPY = 'train/entropy'
# A run whose event files say nothing for longer than this was stopped (and
# later resumed): the silence is not training time.
PAUSE_SECS = 300.0

Scalar = collections.namedtuple('Scalar', ['step', 'value', 'wall_time'])

Curve = collections.namedtuple(
    'Curve',
    [
        'frames',  # int64 [N]: the frame count at each finished game.
        'returns',  # float64 [N]: that game's return.
        'running_mean',  # float64 [N]: mean of the last WINDOW_GAMES games.
        'seconds',  # float64 [N]: training wall-clock at that game.
    ])

# One test-mode result of a checkpoint (experiment.py --mode=test).
TestPoint = collections.namedtuple(
    'TestPoint',
    [
        'frames',  # int: the checkpoint's environment frames.
        'mean_return',  # float: the mean return of its test games.
        'std_return',  # float: their standard deviation.
        'games',  # int: how many.
    ])


class InputError(Exception):
  """A log directory the tool cannot use: one line for the user."""


def read_scalars(logdir, tag):
  """[`Scalar`] of summary `tag` in `logdir`'s event files (a resumed run
  appends new files), sorted by step."""
  return scalars(load_events(logdir), tag)


def load_events(logdir):
  """TensorBoard's accumulator of every event file in `logdir`, read."""
  from tensorboard.backend.event_processing import event_accumulator
  accumulator = event_accumulator.EventAccumulator(
      logdir, size_guidance={event_accumulator.TENSORS: 0,
                             event_accumulator.SCALARS: 0})
  accumulator.Reload()
  return accumulator


def scalars(accumulator, tag):
  """[`Scalar`] of `tag`, sorted by step. TF2 writes scalars as tensors;
  torch (Sample Factory) as simple values."""
  from tensorboard.util import tensor_util
  tags = accumulator.Tags()
  if tag in tags['tensors']:
    points = [Scalar(event.step,
                     float(tensor_util.make_ndarray(event.tensor_proto)),
                     event.wall_time)
              for event in accumulator.Tensors(tag)]
  elif tag in tags['scalars']:
    points = [Scalar(event.step, event.value, event.wall_time)
              for event in accumulator.Scalars(tag)]
  else:
    return []
  points.sort(key=lambda point: point.step)
  return points


def curve(games, window=WINDOW_GAMES, activity=None):
  """A `Curve` from the `Scalar`s of finished games' returns; `activity`:
  the wall time of every event the run wrote (default: the games')."""
  frames = np.array([game.step for game in games], dtype=np.int64)
  returns = np.array([game.value for game in games], dtype=np.float64)
  sums = np.concatenate([[0.0], np.cumsum(returns)])
  ends = np.arange(1, len(returns) + 1)
  starts = np.maximum(ends - window, 0)
  return Curve(frames, returns, (sums[ends] - sums[starts]) / (ends - starts),
               training_seconds(games, activity))


def curve_of_running_means(means, activity=None):
  """A `Curve` from the `Scalar`s of means of the last games that another
  tool averaged already (Sample Factory); `returns` holds those means too."""
  frames = np.array([mean.step for mean in means], dtype=np.int64)
  values = np.array([mean.value for mean in means], dtype=np.float64)
  return Curve(frames, values, values, training_seconds(means, activity))


def training_seconds(points, activity=None):
  """float64 [N]: seconds of training from the run's first event to each of
  `points`. `activity`: the wall times of all the run's events (default:
  the points'); a silence between them longer than PAUSE_SECS is a stop,
  not training."""
  times = np.array([point.wall_time for point in points], dtype=np.float64)
  activity = np.sort(np.concatenate([
      times, times if activity is None else np.asarray(activity, np.float64)]))
  gaps = np.diff(activity)
  paused = np.concatenate([[0.0], np.cumsum(np.where(gaps > PAUSE_SECS,
                                                     gaps, 0.0))])
  # Each point is an activity time itself: the pauses before it are exact.
  before = np.searchsorted(activity, times, side='right') - 1
  return times - activity[0] - paused[before]


def wall_times(accumulator):
  """The wall time of every summary event and of the first event."""
  times = [accumulator.FirstEventTimestamp()]
  tags = accumulator.Tags()
  for tag in tags['tensors']:
    times.extend(event.wall_time for event in accumulator.Tensors(tag))
  for tag in tags['scalars']:
    times.extend(event.wall_time for event in accumulator.Scalars(tag))
  return times


def frames_to_reach(run_curve, target):
  """(frames, training seconds) when the running mean first reached
  `target`, or None."""
  (indices,) = np.nonzero(run_curve.running_mean >= target)
  if not len(indices):
    return None
  return int(run_curve.frames[indices[0]]), float(run_curve.seconds[indices[0]])


def to_csv(curves, every_frames=CSV_EVERY_FRAMES):
  """One CSV of {label: Curve}: run, frames, mean_return (of the last
  WINDOW_GAMES games), a row per run at the last game before each multiple
  of `every_frames` and at the end."""
  text = io.StringIO()
  writer = csv.writer(text, lineterminator='\n')  # Quotes labels with commas.
  writer.writerow(['run', 'frames', 'mean_return'])
  for label, run_curve in curves.items():
    buckets = run_curve.frames // every_frames
    last_of_bucket = np.flatnonzero(np.diff(buckets, append=np.inf))
    writer.writerows([label, run_curve.frames[i],
                      f'{run_curve.running_mean[i]:.3f}']
                     for i in last_of_bucket)
  return text.getvalue()


def tests_to_csv(tests):
  """One CSV of {label: [`TestPoint`]}: run, frames, test_mean_return,
  test_std_return, games."""
  text = io.StringIO()
  writer = csv.writer(text, lineterminator='\n')
  writer.writerow(['run', 'frames', 'test_mean_return', 'test_std_return',
                   'games'])
  for label, points in tests.items():
    writer.writerows([label, point.frames, f'{point.mean_return:.3f}',
                      f'{point.std_return:.3f}', point.games]
                     for point in points)
  return text.getvalue()


def to_png(curves, entropies, level, frames_label='environment frames',
           tests=None):
  """PNG bytes: each run's running mean return against frames, with its
  test-mode results (`tests`: {label: [`TestPoint`]}) as points and their
  standard deviations; below it, the policy's entropy (`entropies`:
  {label: [`Scalar`]})."""
  import matplotlib  # Only the plot needs it.
  matplotlib.use('Agg')
  from matplotlib import pyplot
  figure, (returns_axes, entropy_axes) = pyplot.subplots(
      2, 1, figsize=(8, 7), sharex=True, height_ratios=(2, 1))
  for label, run_curve in curves.items():
    (line,) = returns_axes.plot(run_curve.frames / 1e6,
                                run_curve.running_mean, label=label)
    tested = (tests or {}).get(label)
    if tested:
      returns_axes.errorbar(
          [point.frames / 1e6 for point in tested],
          [point.mean_return for point in tested],
          yerr=[point.std_return for point in tested], fmt='o',
          color=line.get_color(), capsize=3, label=f'{label}: test mode')
    points = entropies.get(label) or [Scalar(0, np.nan, 0.0)]
    entropy_axes.plot([point.step / 1e6 for point in points],
                      [point.value for point in points], label=label)
  returns_axes.set_ylabel(f'mean return, last {WINDOW_GAMES} games')
  returns_axes.set_title(level)
  returns_axes.legend(fontsize='small')
  entropy_axes.set_ylabel('policy entropy')
  entropy_axes.set_xlabel(f'{frames_label} (millions)')
  for axes in (returns_axes, entropy_axes):
    axes.grid(alpha=0.3)
  return figure_png(figure)


def figure_png(figure):
  """A matplotlib figure's PNG bytes; the figure is closed."""
  from matplotlib import pyplot
  buffer = io.BytesIO()
  figure.savefig(buffer, format='png', dpi=100, bbox_inches='tight')
  pyplot.close(figure)
  return buffer.getvalue()


def curve_from_csv(path, run):
  """(the run's name, its `Curve`) from a CSV `to_csv` wrote; `run` may be
  empty when the file holds one run."""
  with open(path, newline='') as f:
    rows = list(csv.reader(f))[1:]
  names = list(dict.fromkeys(row[0] for row in rows))
  if not run and len(names) == 1:
    run = names[0]
  if run not in names:
    raise InputError(f'{path} holds the runs {names}; name one as '
                     f'{path}#RUN')
  frames, means = zip(*[(int(row[1]), float(row[2])) for row in rows
                        if row[0] == run])
  return run, Curve(np.array(frames, np.int64), np.array(means),
                    np.array(means), np.full(len(means), np.nan))


def num_levels(logdir):
  """How many levels the run in `logdir` played: its status file's levels,
  else its flags.json's comma-separated names (runs from before the status
  held them); 1 without either (a peer's run)."""
  status = run_status.read(logdir)
  if status and 'levels' in status:
    return len(status['levels'])
  path = os.path.join(logdir, 'flags.json')
  if not os.path.exists(path):
    return 1
  with open(path) as f:
    return len(json.load(f)['level_name'].split(','))


def test_points(logdir, level):
  """[`TestPoint`] of `level`, by frames: the run's periodic tests
  (`periodic_tests/ckpt-N.json`) and its test mode (`test_results.json`),
  under `level`'s name or the one it was tested on (DMLab's language levels
  train on `..._train` and test on `..._test`)."""
  paths = glob.glob(os.path.join(logdir, 'periodic_tests', 'ckpt-*.json'))
  paths.append(os.path.join(logdir, 'test_results.json'))
  points = []
  for path in filter(os.path.isfile, paths):
    try:
      results = test_results.read(path)
    except test_results.FormatError as error:
      raise InputError(str(error)) from None
    result = test_results.of_level(results, level)
    if result:
      points.append(TestPoint(results['environment_frames'], result['mean'],
                              result['std'], result['episodes']))
  return sorted(points)


def _per_level(run_curve, points, tests, levels):
  """The curve, entropy and test points with frames divided by `levels`."""
  return (run_curve._replace(frames=run_curve.frames // levels),
          [point._replace(step=point.step // levels) for point in points],
          [test._replace(frames=test.frames // levels) for test in tests])


def split_label(argument):
  """(label, path) of a command line's LABEL=PATH, label '' without one.
  The last '=' splits: a label may hold '=', a path may not."""
  label, _, path = argument.rpartition('=')
  return label, path


def run_name(label, logdir):
  """A run's name: its label, or unlabelled the name of its folder."""
  return label or os.path.basename(os.path.normpath(logdir))


def load_runs(logdirs, level, frames_per_level=False):
  """({run label: Curve of `level`'s games}, {run label: [`Scalar`] of the
  policy's entropy}, {run label: [`TestPoint`]}) for each log directory (or
  LABEL=directory, or a CSV this tool wrote)."""
  curves, entropies, tests = {}, {}, {}
  for argument in logdirs:
    # A CSV run's name may hold '=' or '#': it is all that follows '.csv#'.
    head, csv_mark, run = argument.partition('.csv#')
    head += '.csv' if csv_mark else ''
    label, logdir = split_label(head)
    if logdir.endswith('.csv'):
      if not os.path.isfile(logdir):
        raise InputError(f'{logdir} is not a file')
      run, curves[label or run] = curve_from_csv(logdir, run)
      entropies[label or run], tests[label or run] = [], []
      continue
    label = run_name(label, logdir)
    if not os.path.isdir(logdir):
      raise InputError(f'{logdir} is not a directory')
    curves[label], entropies[label] = _load_run(logdir, level)
    tests[label] = test_points(logdir, level)
    if frames_per_level:
      curves[label], entropies[label], tests[label] = _per_level(
          curves[label], entropies[label], tests[label], num_levels(logdir))
  return curves, entropies, tests


def _load_run(logdir, level):
  """(Curve of `level`'s games, entropy `Scalar`s) of one log directory."""
  events = load_events(logdir)
  games = scalars(events, f'{level}/episode_return')
  if games:
    return (curve(games, activity=wall_times(events)),
            scalars(events, 'learner/entropy'))
  means = scalars(events, SAMPLE_FACTORY_RETURN)
  if not means:
    raise InputError(f'{logdir} has no {level}/episode_return summaries '
                     f'(nor Sample Factory\'s {SAMPLE_FACTORY_RETURN})')
  return (curve_of_running_means(means, wall_times(events)),
          scalars(events, SAMPLE_FACTORY_ENTROPY))


FLAGS = flags.FLAGS


def _define_flags():
  """The command line's flags; only when run as one, so that programs
  importing this module keep their own (e.g. experiment.py's --overwrite)."""
  flags.DEFINE_string('level', 'atari/pong', 'The level whose games to plot.')
  flags.DEFINE_string('output', None, 'Path without extension: .csv and '
                      '.png are written there (and _test_mode.csv when a '
                      'run has test-mode results).')
  flags.DEFINE_boolean('overwrite', False, 'Replace existing output files.')
  flags.DEFINE_float('target', None, 'Also print the frames and wall-clock '
                     'at which each run\'s running mean first reached this.')
  flags.DEFINE_boolean('frames_per_level', False, 'Draw a run on G levels '
                       'against its frames / G.')


def main(argv):
  if len(argv) < 2 or not FLAGS.output:
    sys.exit('curves: error: give one or more log directories and --output')
  try:
    curves, entropies, tests = load_runs(argv[1:], FLAGS.level,
                                         FLAGS.frames_per_level)
    outputs = {'.csv': to_csv(curves)}
    if any(tests.values()):
      outputs[TEST_MODE_CSV] = tests_to_csv(tests)
    for ending in list(outputs) + ['.png']:
      output_files.check_overwrite(FLAGS.output + ending, FLAGS.overwrite)
  except (InputError, FileExistsError) as error:
    sys.exit(f'curves: error: {error}')
  for ending, text in outputs.items():
    output_files.write_atomically(FLAGS.output + ending, text)
  stale = FLAGS.output + TEST_MODE_CSV
  if TEST_MODE_CSV not in outputs and os.path.exists(stale):
    os.remove(stale)  # Another drawing's.
  frames_label = ('environment frames of the level (a run on G levels: '
                  'its frames / G)' if FLAGS.frames_per_level else
                  'environment frames')
  output_files.write_atomically(
      f'{FLAGS.output}.png',
      to_png(curves, entropies, FLAGS.level, frames_label, tests))
  for label, run_curve in curves.items():
    best = float(np.max(run_curve.running_mean))
    points = ('CSV rows' if np.isnan(run_curve.seconds).all() else 'games')
    print(f'{label}: {len(run_curve.returns)} {points} to '
          f'{int(run_curve.frames[-1]):,} frames; final running mean '
          f'{run_curve.running_mean[-1]:.2f}, best {best:.2f}')
    if FLAGS.target is not None:
      print(f'  {_reached(run_curve, FLAGS.target)}')
    if tests[label]:
      print('  test mode: ' + ', '.join(
          f'{point.mean_return:.1f} ± {point.std_return:.1f} at '
          f'{point.frames:,}' for point in tests[label]))


def _reached(run_curve, target):
  reached = frames_to_reach(run_curve, target)
  if reached is None:
    return (f'{target:g} not reached in {int(run_curve.frames[-1]):,} frames'
            + ('' if np.isnan(run_curve.seconds[-1]) else
               f' and {run_curve.seconds[-1] / 60:.1f} minutes'))
  frames, seconds = reached
  if np.isnan(seconds):  # A curve from a CSV has no clock.
    return f'{target:g} first at {frames:,} frames'
  return f'{target:g} first at {frames:,} frames, {seconds / 60:.1f} minutes'


if __name__ == '__main__':
  _define_flags()
  app.run(main)
