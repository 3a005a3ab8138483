"""The comparison tool (python -m atari57.compare) on results files."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf

from atari57 import paper_results
from atari57 import scores
from impala_tf import compare
from impala_tf import test_results

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (level, our mean score, random, human, IMPALA deep experts' score).
GAMES = [('atari/breakout', 10.0, 1.7, 30.5, 787.34),
         ('atari/pong', -20.0, -20.7, 14.6, 20.98),
         ('atari/qbert', 500.0, 163.9, 13455.0, 351200.12)]


def normalized(score, random, human):
  return 100 * (score - random) / (human - random)


class CompareTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.directory = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.directory)
    self.results = os.path.join(self.directory, 'test_results.json')
    self.write(test_results.build(
        'ckpt', 10_000_000, 2,
        {level: [mean - 1, mean + 1] for level, mean, _, _, _ in GAMES},
        scores.BENCHMARK))

  def write(self, content):
    with open(self.results, 'w') as f:
      f.write(content if isinstance(content, str) else json.dumps(content))

  def run_tool(self, *flags):
    return subprocess.run(
        [sys.executable, '-m', 'atari57.compare', self.results, *flags],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)

  def test_table_and_plot_of_a_subset_of_games(self):
    result = self.run_tool('--against=impala_deep_experts')
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    lines = result.stdout.splitlines()
    ours_values, paper_values = [], []
    for level, mean, random, human, paper in GAMES:
      (row,) = [line for line in lines if line.startswith(f'| {level} |')]
      cells = [cell.strip() for cell in row.strip('|').split('|')]
      ours_values.append(normalized(mean, random, human))
      paper_values.append(normalized(paper, random, human))
      self.assertEqual(f'{mean:,.2f}', cells[1])
      self.assertEqual(f'{paper:,.2f}', cells[2])
      self.assertEqual(f'{ours_values[-1]:,.1f}%', cells[3])
      self.assertEqual(f'{paper_values[-1]:,.1f}%', cells[4])
      self.assertEqual(f'{ours_values[-1] - paper_values[-1]:+,.1f} pp',
                       cells[5])
    (median,) = [line for line in lines if line.startswith('| **median**')]
    self.assertIn(f'**{np.median(ours_values):,.1f}%**', median)
    self.assertIn(f'**{np.median(paper_values):,.1f}%**', median)
    (mean,) = [line for line in lines if line.startswith('| **mean**')]
    self.assertIn(f'**{np.mean(paper_values):,.1f}%**', mean)
    self.assertIn('Missing from the results (54 of 57 games)', result.stdout)
    self.assertIn('atari/alien', result.stdout)
    self.assertIn('median 191.8%, mean 957.6%', result.stdout)
    plot = os.path.join(self.directory,
                        'test_results_vs_impala_deep_experts.png')
    with open(plot, 'rb') as f:
      self.assertEqual(b'\x89PNG\r\n\x1a\n', f.read(8))

  def test_an_existing_plot_is_not_overwritten_without_asking(self):
    plot = os.path.join(self.directory, 'plot.png')
    with open(plot, 'wb') as f:
      f.write(b'mine')
    result = self.run_tool(f'--plot={plot}')
    self.assertNotEqual(0, result.returncode)
    self.assertEqual('compare: error: ' + plot +
                     ' exists; pass --overwrite to replace it',
                     result.stderr.strip().splitlines()[-1])
    with open(plot, 'rb') as f:
      self.assertEqual(b'mine', f.read())
    self.assertEqual(0, self.run_tool(f'--plot={plot}',
                                      '--overwrite').returncode)

  def test_bad_results_files_get_one_line_errors(self):
    for content, message in [
        ('{"levels": {"atari/pong": {"mean": 1.0}', 'is not JSON'),
        ('[1, 2]', 'no "levels" object'),
        ({'levels': {}}, 'no "levels" object'),
        ({'levels': {'atari/pong': {'std': 1.0}}},
         "'atari/pong' lacks a numeric \"mean\""),
        ({'levels': {'atari/pong': {'mean': 'high'}}}, 'lacks a numeric'),
        (test_results.build('ckpt', 1000, 1, {'atari/pongg': [1.0]}, None),
         "'atari/pongg' is not a Atari-57 level"),
    ]:
      self.write(content)
      result = self.run_tool()
      self.assertNotEqual(0, result.returncode, content)
      self.assertNotIn('Traceback', result.stderr, content)
      self.assertIn(message, result.stderr.strip().splitlines()[-1], content)
    self.results = os.path.join(self.directory, 'absent.json')
    result = self.run_tool()
    self.assertIn('cannot read', result.stderr.strip().splitlines()[-1])

  def test_unreported_paper_scores_are_left_out_of_the_summary(self):
    ours = {'atari/chopper_command': 1000.0, 'atari/pong': 0.0}
    comparison = compare.compare(scores.BENCHMARK, ours,
                                 paper_results.PAPER_RUNS['acktr'])
    self.assertEqual(1, comparison.num_compared)
    pong = normalized(0.0, -20.7, 14.6)
    self.assertAllClose((pong, normalized(20.9, -20.7, 14.6)),
                        comparison.summary['median'])
    self.assertIsNone(comparison.rows[0][2])  # chopper_command, n/a.


if __name__ == '__main__':
  tf.test.main()
