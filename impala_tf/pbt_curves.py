r"""A population's history as CSV and PNG: each member's fitness and
hyperparameters against its frames, from the events its members logged
(impala_tf/pbt.py), with every copy marked.

  .venv/bin/python -m impala_tf.pbt_curves --pbt_dir=logs/pbt_catch \
      --output=docs/pbt/catch    # writes docs/pbt/catch.csv and .png
"""

import csv
import io
import sys

from absl import app
from absl import flags
import tensorflow as tf

from impala_tf import curves
from impala_tf import output_files
from impala_tf import pbt


def population_events(pbt_dir):
  """{member: [event]} of every member with events in `pbt_dir`."""
  events = {}
  for path in tf.io.gfile.glob(f'{pbt_dir}/member_*/pbt/events.jsonl'):
    member = int(path.split('member_')[-1].split('/')[0])
    events[member] = pbt.read_events(pbt_dir, member)
  return dict(sorted(events.items()))


def _hparam_names(events):
  """The hyperparameters any member's events hold, sorted."""
  return sorted({name for member_events in events.values()
                 for event in member_events for name in event['hparams']})


def to_csv(events):
  """One row per event: member, frames, event, fitness, the member copied
  (or empty) and each hyperparameter after the event."""
  names = _hparam_names(events)
  text = io.StringIO()
  writer = csv.writer(text, lineterminator='\n')
  writer.writerow(['member', 'frames', 'event', 'fitness', 'copied'] + names)
  for member, member_events in events.items():
    for event in member_events:
      fitness = event.get('fitness')
      writer.writerow(
          [member, event['frames'], event['event'],
           '' if fitness is None else f'{fitness:.4g}',
           event.get('copied', '')] +
          [f'{event["hparams"][name]:.4g}' if name in event['hparams']
           else '' for name in names])
  return text.getvalue()


def to_png(events, title):
  """PNG bytes: fitness, then each hyperparameter (log scale), against
  frames, a line per member; a copy is a dot where it happened."""
  import matplotlib  # Only the plot needs it.
  matplotlib.use('Agg')
  from matplotlib import pyplot
  names = _hparam_names(events)
  figure, axes = pyplot.subplots(1 + len(names), 1, sharex=True,
                                 figsize=(8, 2.2 * (1 + len(names))))
  for member, member_events in events.items():
    scored = [event for event in member_events if 'fitness' in event]
    line, = axes[0].plot([event['frames'] / 1e6 for event in scored],
                         [event['fitness'] for event in scored],
                         label=f'member {member}')
    copies = [event for event in scored if event['event'] == 'exploit']
    axes[0].plot([event['frames'] / 1e6 for event in copies],
                 [event['copied_fitness'] for event in copies], 'o',
                 color=line.get_color())
    for row, name in enumerate(names, start=1):
      axes[row].step([event['frames'] / 1e6 for event in member_events],
                     [event['hparams'][name] for event in member_events],
                     where='post', color=line.get_color())
  axes[0].set_title(title)
  axes[0].set_ylabel('fitness')
  axes[0].legend(fontsize='small')
  for row, name in enumerate(names, start=1):
    axes[row].set_ylabel(name.replace('_', ' '))
    axes[row].set_yscale('log')
  axes[-1].set_xlabel('environment frames of the member (millions); '
                      'dots: copies, at the fitness copied')
  for axis in axes:
    axis.grid(alpha=0.3)
  return curves.figure_png(figure)


FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string('pbt_dir', None, 'The population\'s directory.')
  flags.DEFINE_string('output', None, 'Path without extension: .csv and '
                      '.png are written there.')
  flags.DEFINE_boolean('overwrite', False, 'Replace existing output files.')


def main(argv):
  if len(argv) > 1 or not FLAGS.pbt_dir or not FLAGS.output:
    sys.exit('pbt_curves: error: give --pbt_dir and --output')
  events = population_events(FLAGS.pbt_dir)
  if not events:
    sys.exit(f'pbt_curves: error: no member events in {FLAGS.pbt_dir}')
  try:
    for extension in ('csv', 'png'):
      output_files.check_overwrite(f'{FLAGS.output}.{extension}',
                                   FLAGS.overwrite)
  except FileExistsError as error:
    sys.exit(f'pbt_curves: error: {error}')
  output_files.write_atomically(f'{FLAGS.output}.csv', to_csv(events))
  output_files.write_atomically(f'{FLAGS.output}.png',
                                to_png(events, FLAGS.pbt_dir))
  for member, member_events in events.items():
    copies = sum(event['event'] == 'exploit' for event in member_events)
    print(f'member {member}: {len(member_events)} events, {copies} copies, '
          f'last fitness {member_events[-1].get("fitness", float("nan")):.2f}')


if __name__ == '__main__':
  _define_flags()
  app.run(main)
