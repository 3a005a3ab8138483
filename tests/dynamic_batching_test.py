"""Dynamic batching merges concurrent calls and returns each caller's rows."""

import threading
import time

import numpy as np
import tensorflow as tf

from impala_tf import dynamic_batching


def call_concurrently(batcher, inputs):
  """Calls `batcher` from one thread per input; returns results in order."""
  results = [None] * len(inputs)

  def run(index):
    results[index] = batcher(*inputs[index])

  threads = [threading.Thread(target=run, args=(i,)) for i in range(len(inputs))]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join(timeout=10)
  return results


class DynamicBatchingTest(tf.test.TestCase):

  def test_concurrent_calls_are_merged_and_split_back(self):
    batch_sizes = []

    def double(x, extra):
      batch_sizes.append(len(x))
      return {'double': 2 * x, 'sum': x + extra['offset'][:, None]}

    batcher = dynamic_batching.DynamicBatcher(
        double, minimum_batch_size=8, maximum_batch_size=8, timeout_ms=5000)
    inputs = [(np.full([1, 3], i, np.float32), {'offset': np.ones([1])})
              for i in range(8)]
    results = call_concurrently(batcher, inputs)
    batcher.close()
    self.assertEqual([8], batch_sizes)
    for i, result in enumerate(results):
      self.assertAllEqual(np.full([1, 3], 2 * i), result['double'])
      self.assertAllEqual(np.full([1, 3], i + 1), result['sum'])

  def test_maximum_batch_size_is_respected(self):
    batch_sizes = []

    def identity(x):
      batch_sizes.append(len(x))
      time.sleep(0.01)
      return x

    batcher = dynamic_batching.DynamicBatcher(
        identity, minimum_batch_size=1, maximum_batch_size=4, timeout_ms=50)
    inputs = [(np.full([2], i),) for i in range(10)]
    results = call_concurrently(batcher, inputs)
    batcher.close()
    self.assertEqual(20, sum(batch_sizes))
    self.assertLessEqual(max(batch_sizes), 4)
    for i, result in enumerate(results):
      self.assertAllEqual(np.full([2], i), result)

  def test_timeout_runs_a_batch_below_the_minimum(self):
    batcher = dynamic_batching.DynamicBatcher(
        lambda x: x + 1, minimum_batch_size=100, timeout_ms=50)
    start = time.monotonic()
    self.assertAllEqual([1, 2], batcher(np.array([0, 1])))
    self.assertBetween(time.monotonic() - start, 0.04, 2.0)
    batcher.close()

  def test_errors_reach_every_caller(self):

    def fail(x):
      raise ValueError('bad batch')

    batcher = dynamic_batching.DynamicBatcher(fail, timeout_ms=10)
    with self.assertRaisesRegex(ValueError, 'bad batch'):
      batcher(np.zeros([1]))
    batcher.close()
    with self.assertRaisesRegex(RuntimeError, 'closed'):
      batcher(np.zeros([1]))

  def test_bad_sizes_are_rejected(self):
    with self.assertRaisesRegex(ValueError, 'minimum_batch_size'):
      dynamic_batching.DynamicBatcher(lambda x: x, minimum_batch_size=5,
                                      maximum_batch_size=2)


if __name__ == '__main__':
  tf.test.main()
