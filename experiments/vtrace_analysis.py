"""The paper's V-trace analysis (Sec. 5.2, Table 2) as one command.

Trains every cell of the grid off-policy correction x replay proportion x
actor weight delay, seed after seed, one run after another, and after each
seed writes the final returns so far in Table 2's layout (markdown), one
CSV row per run and a PNG of the curves (mean over seeds):

  python -m experiments.vtrace_analysis --level_name=catch/plain \
      --total_environment_frames=120000 --actor_weights_delays=0,50 \
      --runs_dir=/tmp/vtrace_catch --output=docs/vtrace_analysis/catch

Any experiment.py flag sets the runs' common settings (e.g.
`--flagfile=atari57/atari_10m.flags`). `catch/*` levels are the small
`catch` suite. Each run has its own log directory under
`--runs_dir`; a stopped analysis (Ctrl-C) checkpoints the run in progress,
and the same command resumes it and skips the runs already finished.
"""

import itertools
import json
import os
import signal
import sys
import threading

from absl import app
from absl import flags
from absl.testing import flagsaver
import numpy as np

import experiment
from impala_tf import curves as curves_lib
from impala_tf import markdown_table
from impala_tf import output_files
from impala_tf.domain import UsageError

FLAGS = flags.FLAGS
flags.DEFINE_list('corrections', ['vtrace', 'one_step', 'epsilon', 'none'],
                  'The off-policy corrections to compare (rows).')
flags.DEFINE_list('replay_proportions', ['0', '0.5'], 'Replay proportions '
                  '(the paper: without replay and 0.5).')
flags.DEFINE_list('actor_weights_delays', ['0'], 'Actor weight delays in '
                  'learner updates (columns: the policy lag).')
flags.DEFINE_list('seeds', ['1', '2', '3'], 'Seeds of each cell.')
flags.DEFINE_string('runs_dir', None, 'Where the runs\' log directories go.')
flags.DEFINE_string('output', None, 'Path without extension: .md, .csv '
                    'and .png are written there.')

NAMES = {'vtrace': 'V-trace', 'one_step': '1-Step',
         'epsilon': 'ε-correction', 'none': 'No-correction'}
RESULT_FILE = 'analysis_result.json'
CURVE_POINTS = 100


def _grid():
  """{seed: [(correction, replay proportion, delay, seed)]}, seeds in the
  order run: seed by seed, so that a stopped analysis has whole tables for
  the seeds done."""
  try:
    seeds = [int(s) for s in FLAGS.seeds]
    settings = list(itertools.product(
        [int(d) for d in FLAGS.actor_weights_delays],
        [float(p) for p in FLAGS.replay_proportions], FLAGS.corrections))
  except ValueError as error:
    raise UsageError(f'a grid value is not a number: {error}') from None
  return {seed: [(correction, proportion, delay, seed)
                 for delay, proportion, correction in settings]
          for seed in seeds}


def _logdir(cell):
  correction, proportion, delay, seed = cell
  return os.path.join(FLAGS.runs_dir, f'{correction}_replay{proportion:g}_'
                      f'delay{delay}', f'seed{seed}')


def _run(cell, stop):
  """The cell's result {final_return, games, frames}: read back when the run
  finished before, else trained (or resumed); None if stopped."""
  path = os.path.join(_logdir(cell), RESULT_FILE)
  if os.path.exists(path):
    with open(path) as result_file:
      return json.load(result_file)
  correction, proportion, delay, seed = cell
  with flagsaver.flagsaver(off_policy_correction=correction,
                           replay_proportion=proportion,
                           actor_weights_delay=delay, seed=seed,
                           logdir=_logdir(cell)):
    config = experiment.make_config(FLAGS)
  label = f'[{correction}, replay {proportion:g}, delay {delay}, seed {seed}]'
  result = experiment.train(config, stop=stop,
                            print_fn=lambda line: print(label, line))
  if result['frames'] < config.total_environment_frames:
    return None
  games, final_return = result['recent_returns'][config.levels[0]]
  outcome = {'final_return': final_return, 'games': games,
             'frames': result['frames']}
  output_files.write_atomically(path, json.dumps(outcome) + '\n')
  return outcome


def _table(results):
  """Markdown in Table 2's layout: a row per correction, in one section
  per replay proportion; a column per delay; mean ± std over seeds."""
  delays = [int(d) for d in FLAGS.actor_weights_delays]
  rows = []
  for proportion in [float(p) for p in FLAGS.replay_proportions]:
    section = ('Without replay' if proportion == 0 else
               f'With replay ({proportion:.0%} of each batch)')
    rows.append([f'*{section}*'] + [''] * len(delays))
    for correction in FLAGS.corrections:
      cells = []
      for delay in delays:
        returns = [r['final_return'] for (c, p, d, _), r in results.items()
                   if (c, p, d) == (correction, proportion, delay)]
        cells.append(f'{np.mean(returns):.2f} ± {np.std(returns):.2f}')
      rows.append([NAMES.get(correction, correction)] + cells)
  return '\n'.join(markdown_table.table(
      [''] + [f'delay {d}' for d in delays], rows)) + '\n'


def _mean_curves(cells, level):
  """{(correction, proportion, delay): (frames, mean over seeds of the
  running mean return)} on a common grid of frames."""
  total = FLAGS.total_environment_frames or max(
      curves_lib.curve(curves_lib.read_scalars(
          _logdir(cell), f'{level}/episode_return')).frames[-1]
      for cell in cells)
  grid = np.linspace(0, total, CURVE_POINTS)
  by_setting = {}
  for cell in cells:
    run_curve = curves_lib.curve(curves_lib.read_scalars(
        _logdir(cell), f'{level}/episode_return'))
    by_setting.setdefault(cell[:3], []).append(np.interp(
        grid, run_curve.frames, run_curve.running_mean, left=np.nan))
  # Points before every seed's first game stay NaN (without nanmean's
  # warning about them).
  return {setting: (grid, np.ma.masked_invalid(runs).mean(axis=0).filled(
      np.nan)) for setting, runs in by_setting.items()}


def _png(cells, level):
  """PNG bytes: a panel per delay; a colour per correction, dashed with
  replay."""
  import matplotlib  # Only the plot needs it.
  matplotlib.use('Agg')
  from matplotlib import pyplot
  delays = [int(d) for d in FLAGS.actor_weights_delays]
  figure, axes = pyplot.subplots(1, len(delays), figsize=(5 * len(delays), 4),
                                 sharey=True, squeeze=False)
  colours = dict(zip(FLAGS.corrections, pyplot.cm.tab10.colors))
  for (correction, proportion, delay), (grid, mean) in sorted(
      _mean_curves(cells, level).items()):
    panel = axes[0][delays.index(delay)]
    panel.plot(grid / 1e6, mean, color=colours[correction],
               linestyle='--' if proportion else '-',
               label=NAMES.get(correction, correction) +
               (f', replay {proportion:g}' if proportion else ''))
  for delay, panel in zip(delays, axes[0]):
    panel.set_title(f'{level}, actors {delay} updates behind')
    panel.set_xlabel('environment frames (millions)')
    panel.grid(alpha=0.3)
  axes[0][0].set_ylabel('mean return, last 100 games (mean over seeds)')
  axes[0][0].legend(fontsize='small')
  return curves_lib.figure_png(figure)


def _write_outputs(results, level):
  # argv[0] is the script's path under `python -m`; the module reruns it.
  command = ' '.join(
      ['python -m experiments.vtrace_analysis'] + sys.argv[1:])
  seeds = sorted({seed for _, _, _, seed in results})
  output_files.write_atomically(
      f'{FLAGS.output}.md', f'{level}: final mean return of the last 100 '
      f'games, mean ± std over seeds {", ".join(map(str, seeds))}.\n\n'
      f'    {command}\n\n' + _table(results))
  rows = ['correction,replay_proportion,actor_weights_delay,seed,frames,'
          'final_return'] + [
              f'{c},{p:g},{d},{s},{r["frames"]},{r["final_return"]:.3f}'
              for (c, p, d, s), r in results.items()]
  output_files.write_atomically(f'{FLAGS.output}.csv', '\n'.join(rows) + '\n')
  output_files.write_atomically(f'{FLAGS.output}.png',
                                _png(list(results), level))


def main(argv):
  del argv
  if not FLAGS.runs_dir or not FLAGS.output:
    sys.exit('vtrace_analysis: error: give --runs_dir and --output')
  stop = threading.Event()
  signal.signal(signal.SIGINT, lambda *_: stop.set())
  signal.signal(signal.SIGTERM, lambda *_: stop.set())
  results = {}
  try:
    level = experiment.make_config(FLAGS).levels[0]
    for cells in _grid().values():
      for cell in cells:
        result = _run(cell, stop)
        if result is None:
          sys.exit('vtrace_analysis: stopped; the same command resumes')
        results[cell] = result
      _write_outputs(results, level)  # Every seed done so far.
  except UsageError as error:
    sys.exit(f'vtrace_analysis: error: {error}')
  print(_table(results))


if __name__ == '__main__':
  app.run(main)
