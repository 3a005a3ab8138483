"""Test mode's results file: what `build` makes, `read` gives back; a file
that is not one is refused in one line naming what is wrong."""

import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from atari57 import scores
from impala_tf import test_results


class TestResultsTest(tf.test.TestCase):

  def _write(self, content):
    path = os.path.join(tempfile.mkdtemp(), 'test_results.json')
    with open(path, 'w') as f:
      f.write(content if isinstance(content, str) else json.dumps(content))
    return path

  def test_what_is_built_reads_back(self):
    returns = {'atari/pong': [21.0, 19.0, 14.0], 'atari/boxing': [90.0]}
    built = test_results.build('ckpt-7', 5_000_000, 3, returns,
                               scores.BENCHMARK)
    read = test_results.read(self._write(built))
    self.assertEqual(built, read)
    pong = read['levels']['atari/pong']
    self.assertAllClose([18.0, np.std([21.0, 19.0, 14.0]), 3],
                        [pong['mean'], pong['std'], pong['episodes']])
    # Human-normalised against Atari-57's random and human scores (Pong:
    # -20.7 and 14.6).
    self.assertAllClose(100 * (18.0 + 20.7) / (14.6 + 20.7),
                        pong['human_normalized'])
    self.assertEqual(5_000_000, read['environment_frames'])

  def test_without_a_benchmark_there_is_no_normalised_score(self):
    built = test_results.build('ckpt', 10, 1, {'catch/plain': [1.0]}, None)
    self.assertNotIn('human_normalized', built)
    self.assertNotIn('human_normalized', built['levels']['catch/plain'])

  def test_a_level_tested_under_another_name_is_found_by_its_trained_one(
      self):
    train = 'dmlab/language_select_located_object_train'
    test = 'dmlab/language_select_located_object_test'
    built = test_results.build('ckpt', 10, 2, {test: [2.0, 4.0]}, None,
                               trained_on={test: train})
    read = test_results.read(self._write(built))
    self.assertEqual(train, read['levels'][test]['trained_on'])
    self.assertEqual(3.0, test_results.of_level(read, train)['mean'])
    self.assertEqual(3.0, test_results.of_level(read, test)['mean'])
    self.assertIsNone(test_results.of_level(read, 'dmlab/rooms_watermaze'))
    same = test_results.build('ckpt', 10, 1, {'atari/pong': [1.0]}, None,
                              trained_on={'atari/pong': 'atari/pong'})
    self.assertNotIn('trained_on', same['levels']['atari/pong'])

  def test_a_file_that_is_not_results_is_one_line(self):
    good = test_results.build('ckpt', 1000, 2, {'atari/pong': [1.0, 3.0]},
                              None)
    def without(key):
      level = dict(good['levels']['atari/pong'])
      del level[key]
      return dict(good, levels={'atari/pong': level})
    for content, message in [
        ('{"levels": ', 'is not JSON'),
        ('[1]', 'has no "levels" object'),
        (dict(good, levels={}), 'has no "levels" object'),
        (without('mean'), '\'atari/pong\' lacks a numeric "mean"'),
        (without('std'), '\'atari/pong\' lacks a numeric "std"'),
        (without('episodes'), 'lacks a count of "episodes"'),
        (dict(good, levels={'atari/pong': 3}), 'lacks a numeric "mean"'),
        ({k: v for k, v in good.items() if k != 'environment_frames'},
         'lacks the checkpoint\'s "environment_frames"'),
    ]:
      path = self._write(content)
      with self.assertRaises(test_results.FormatError) as raised:
        test_results.read(path)
      self.assertIn(message, str(raised.exception), content)
      self.assertTrue(str(raised.exception).startswith(
          ('cannot read', path)), str(raised.exception))
      self.assertNotIn('\n', str(raised.exception))
    with self.assertRaisesRegex(test_results.FormatError, 'cannot read'):
      test_results.read(os.path.join(tempfile.mkdtemp(), 'absent.json'))


if __name__ == '__main__':
  tf.test.main()
