"""experiments/vtrace_analysis.py end to end on a tiny Catch grid: every
run trains, the outputs are written, a second call trains nothing again,
and a call with one more seed trains only that seed's runs."""

import os

from absl import flags
from absl.testing import flagsaver
import tensorflow as tf

from experiments import vtrace_analysis
from tests import pipeline_util  # pylint: disable=unused-import

FLAGS = flags.FLAGS


class VTraceAnalysisTest(tf.test.TestCase):

  def test_a_small_grid_writes_its_table_csv_and_plot(self):
    runs_dir = self.create_tempdir().full_path
    output = os.path.join(self.create_tempdir().full_path, 'catch')
    settings = dict(
        level_name='catch/plain', corrections=['vtrace', 'none'],
        replay_proportions=['0', '0.5'], actor_weights_delays=['2'],
        seeds=['1'], total_environment_frames=1500, num_actors=8,
        batch_size=4, num_action_repeats=1, runs_dir=runs_dir, output=output)
    with flagsaver.flagsaver(**settings):
      vtrace_analysis.main([])
    with open(f'{output}.md') as table:
      lines = table.read().splitlines()
    self.assertIn('over seeds 1.', lines[0])
    # The command to rerun it, whatever path the module ran from.
    self.assertTrue(lines[2].startswith(
        '    python -m experiments.vtrace_analysis'), lines[2])
    self.assertIn('| | delay 2 |', lines)
    self.assertIn('| *With replay (50% of each batch)* | |', lines)
    rows = [line for line in lines if line.startswith(('| V-trace',
                                                        '| No-correction'))]
    self.assertLen(rows, 4)
    self.assertTrue(all(row.count('±') == 1 for row in rows), rows)
    with open(f'{output}.csv') as csv:
      self.assertLen(csv.read().splitlines(), 1 + 2 * 2)
    with open(f'{output}.png', 'rb') as png:
      self.assertEqual(b'\x89PNG', png.read(4))
    # Finished runs are read back, not trained again: no new event files.
    events_before = sorted(os.walk(runs_dir))
    with flagsaver.flagsaver(**settings):
      vtrace_analysis.main([])
    self.assertEqual(events_before, sorted(os.walk(runs_dir)))
    # A second seed reuses the first's runs, untouched, and joins the table.
    settings.update(replay_proportions=['0'], seeds=['1', '2'])
    with flagsaver.flagsaver(**settings):
      vtrace_analysis.main([])
    events_after = sorted(os.walk(runs_dir))
    seed_1 = [walked for walked in events_before if 'seed1' in walked[0]]
    self.assertNotEmpty(seed_1)
    for walked in seed_1:
      self.assertIn(walked, events_after)
    self.assertTrue(any('seed2' in walked[0] for walked in events_after))
    with open(f'{output}.md') as table:
      self.assertIn('over seeds 1, 2.', table.readline())
    with open(f'{output}.csv') as csv:
      self.assertLen(csv.read().splitlines(), 1 + 2 * 2)

  def test_bad_grid_value_is_one_line(self):
    with flagsaver.flagsaver(level_name='catch/plain',
                             actor_weights_delays=['x'],
                             runs_dir=self.create_tempdir().full_path,
                             output='/tmp/unused'):
      with self.assertRaisesRegex(SystemExit, 'not a number'):
        vtrace_analysis.main([])


if __name__ == '__main__':
  tf.test.main()
