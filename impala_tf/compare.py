"""Test results beside a paper's published per-level scores: a markdown
table on stdout and a PNG plot. Each suite's `compare` module runs it:

  python -m atari57.compare logs/run/test_results.json --against=NAME
"""

import collections
import functools
import io
import os
import sys

from absl import app
from absl import flags

from impala_tf import markdown_table
from impala_tf import output_files
from impala_tf import test_results

Comparison = collections.namedtuple(
    'Comparison',
    [
        # [(level, ours, paper, ours %, paper %)] for the levels in the
        # results, in the suite's order; paper values None where not reported.
        'rows',
        'missing',  # Suite levels absent from the results.
        'summary',  # {statistic: (ours %, paper %)} over levels both have.
        'num_compared',  # How many levels the summary covers.
    ])


class InputError(Exception):
  """A results file or flag the tool cannot use: one line for the user."""


def load_results(path, benchmark):
  """{level: mean score} from `experiment.py --mode=test`'s results JSON.

  Raises:
    InputError: the file is not test mode's results (`test_results.read`)
      or names a level outside the suite.
  """
  try:
    levels = test_results.read(path)['levels']
  except test_results.FormatError as error:
    raise InputError(str(error)) from None
  for level in levels:
    if not benchmark.knows(level):
      raise InputError(f'{path}: {level!r} is not a {benchmark.name} level')
  return {level: float(result['mean']) for level, result in levels.items()}


def compare(benchmark, ours, paper_run):
  """Our scores {level: score} against a `scoring.PaperRun`."""
  ours_normalized = benchmark.normalized(ours)
  reported = {level: score for level, score in paper_run.scores.items()
              if score is not None}
  paper_normalized = benchmark.normalized(reported)
  # The suite's order; levels scored under another's name (DMLab's train
  # levels) come after.
  levels = ([level for level in benchmark.levels if level in ours] +
            [level for level in ours if level not in benchmark.baselines])
  rows = [(level, ours[level], reported.get(level), ours_normalized[level],
           paper_normalized.get(level)) for level in levels]
  both = [row for row in rows if row[2] is not None]
  summary = {}
  if both:
    ours_summary = benchmark.summary({row[0]: row[3] for row in both})
    paper_summary = benchmark.summary({row[0]: row[4] for row in both})
    summary = {name: (ours_summary[name], paper_summary[name])
               for name in benchmark.statistics}
  missing = [level for level in benchmark.levels
             if level not in ours and
             not any(benchmark.scored_as.get(mine) == level for mine in ours)]
  return Comparison(rows, missing, summary, len(both))


def _number(value, digits=2):
  return 'n/a' if value is None else f'{value:,.{digits}f}'


def markdown(comparison, benchmark, paper_run, ours_title, level_title):
  """The comparison as a markdown table with summary lines."""
  header = [level_title, ours_title, paper_run.title,
            f'{ours_title}, human-normalised',
            f'{paper_run.title}, human-normalised', 'difference']
  rows = []
  for level, ours, paper, ours_normalized, paper_normalized in (
      comparison.rows):
    difference = (None if paper_normalized is None else
                  ours_normalized - paper_normalized)
    rows.append([level, _number(ours), _number(paper),
                 f'{_number(ours_normalized, 1)}%',
                 f'{_number(paper_normalized, 1)}%',
                 'n/a' if difference is None else f'{difference:+,.1f} pp'])
  for name, (ours, paper) in comparison.summary.items():
    rows.append([f'**{name}** ({comparison.num_compared} {level_title}s)',
                 '', '', f'**{ours:,.1f}%**', f'**{paper:,.1f}%**',
                 f'{ours - paper:+,.1f} pp'])
  lines = markdown_table.table(header, rows)
  lines.append('')
  unreported = [row[0] for row in comparison.rows if row[2] is None]
  if unreported:
    lines.append(f'Not reported by {paper_run.title} (left out of the '
                 f'summary): {", ".join(unreported)}.')
  if comparison.missing:
    lines.append(f'Missing from the results ({len(comparison.missing)} of '
                 f'{len(benchmark.levels)} {level_title}s): '
                 f'{", ".join(comparison.missing)}.')
  published = {name: value for name, value in paper_run.published.items()
               if value is not None}
  if published:
    lines.append(
        f'{paper_run.title} as published over all {len(benchmark.levels)} '
        f'{level_title}s ({paper_run.source}): ' + ', '.join(
            f'{name} {value:,.1f}%' for name, value in published.items()) +
        '.')
  return '\n'.join(lines)


def plot(comparison, paper_run, ours_title, path):
  """Writes a PNG of each level's human-normalised score, ours beside the
  paper's, on a symmetric log axis (Atari scores span 5 decades)."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')  # Files only, no display.
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top

  levels = [row[0] for row in comparison.rows]
  positions = np.arange(len(levels))
  figure, axes = pyplot.subplots(figsize=(9, 1.8 + 0.32 * len(levels)),
                                 layout='constrained')
  axes.barh(positions - 0.2, [row[3] for row in comparison.rows], 0.4,
            label=ours_title, color='tab:blue')
  axes.barh(positions + 0.2,
            [np.nan if row[4] is None else row[4] for row in comparison.rows],
            0.4, label=paper_run.title, color='tab:orange')
  axes.axvline(100, color='grey', linestyle='--', linewidth=1)
  axes.axvline(0, color='black', linewidth=0.8)
  axes.set_xscale('symlog', linthresh=100)
  axes.set_yticks(positions, [level.split('/', 1)[-1] for level in levels])
  axes.invert_yaxis()  # The suite's order, top to bottom.
  axes.set_xlabel('human-normalised score, % (dashed: human)')
  figure.legend(loc='outside lower center', ncols=2, frameon=False)
  axes.set_title(f'{ours_title} vs {paper_run.title}')
  png = io.BytesIO()
  figure.savefig(png, format='png', dpi=100)
  pyplot.close(figure)
  output_files.write_atomically(path, png.getvalue())


def _main(benchmark, paper_runs, level_title, argv):
  flag_values = flags.FLAGS
  if len(argv) != 2:
    raise app.UsageError('give one results file: python -m <suite>.compare '
                         '<logdir>/test_results.json --against=NAME')
  results_path = argv[1]
  paper_run = paper_runs[flag_values.against]
  plot_path = flag_values.plot or (
      f'{os.path.splitext(results_path)[0]}_vs_{flag_values.against}.png')
  try:
    ours = load_results(results_path, benchmark)
    output_files.check_overwrite(plot_path, flag_values.overwrite)
  except (InputError, FileExistsError) as error:
    sys.exit(f'compare: error: {error}')
  comparison = compare(benchmark, ours, paper_run)
  print(markdown(comparison, benchmark, paper_run, 'ours', level_title))
  plot(comparison, paper_run, 'ours', plot_path)
  print(f'\nPlot: {plot_path}')


def run(benchmark, paper_runs, default_against, level_title):
  """The command line of a suite's compare module; `level_title` names a
  level in the table ('game' for Atari)."""
  flags.DEFINE_enum('against', default_against, list(paper_runs),
                    'The published results to compare with.')
  flags.DEFINE_string('plot', None, 'Where to write the PNG plot; default: '
                      'beside the results, <results>_vs_<against>.png.')
  flags.DEFINE_boolean('overwrite', False, 'Replace an existing plot '
                       'without asking.')
  app.run(functools.partial(_main, benchmark, paper_runs, level_title))
