"""Every benchmark configuration still runs (benchmarks are not tests, but
they must not rot): each script, for a moment and at a small size, prints a
JSON line per configuration with a positive speed and no error."""

import json
import os
import subprocess
import sys

import tensorflow as tf

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(REPO_ROOT, 'benchmarks')


def _run(script, *args):
  """The JSON lines `benchmarks/script` printed, run as `make benchmark`
  runs it."""
  result = subprocess.run(
      [sys.executable, os.path.join(BENCHMARKS, script), *args],
      capture_output=True, text=True, timeout=900, check=False,
      env=dict(os.environ, PYTHONPATH=REPO_ROOT))
  lines = [json.loads(line) for line in result.stdout.splitlines()
           if line.startswith('{')]
  return result, lines


class BenchmarksTest(tf.test.TestCase):

  def _check(self, lines, names, speed_key):
    self.assertEqual(sorted(names), sorted(line.get('name') or
                                           line.get('configuration')
                                           for line in lines))
    for line in lines:
      self.assertNotIn('error', line)
      self.assertGreater(line[speed_key], 0, line)

  def test_throughput(self):
    sys.path.insert(0, BENCHMARKS)
    import throughput  # pylint: disable=g-import-not-at-top
    result, lines = _run('throughput.py', '--num_environments=8',
                         '--seconds=4', '--warmup_seconds=4')
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    self._check(lines, throughput.CONFIGURATIONS, 'frames_per_second')

  def test_distributed(self):
    result, lines = _run('distributed.py', '--num_actors=4',
                         '--seconds=3', '--warmup_seconds=4')
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    self._check(lines, ['local', 'distributed_1_learner',
                        'distributed_2_learners'], 'frames_per_second')

  def test_learner_step(self):
    result, lines = _run('learner_step.py', '--seconds=0.05',
                         '--unroll_lengths=3', '--batch_size=2')
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    benchmarks = [line for line in lines if 'benchmark' in line]
    # 2 torsos x (1 unroll length x XLA off/on + 3 inference batch sizes).
    self.assertLen(benchmarks, 2 * (2 + 3))
    for line in benchmarks:
      self.assertGreater(line['steps_per_second'], 0, line)


if __name__ == '__main__':
  tf.test.main()
