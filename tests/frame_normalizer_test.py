"""Per-pixel frame normalisation against numpy's moments of the same frames."""

import numpy as np
import tensorflow as tf

from impala_tf import frame_normalizer

FRAME_SHAPE = (6, 5, 2)


def random_frames(rng, num_steps, batch_size):
  """float32 `[T, B, 6, 5, 2]` in [0, 1], each pixel with its own offset."""
  offsets = rng.random(FRAME_SHAPE)
  return (offsets * rng.random((num_steps, batch_size) + FRAME_SHAPE) +
          offsets).astype(np.float32) / 2


class FrameNormalizerTest(tf.test.TestCase):

  def test_running_statistics_are_those_of_all_counted_frames(self):
    rng = np.random.default_rng(0)
    normalizer = frame_normalizer.FrameNormalizer(FRAME_SHAPE)
    counted = []
    for num_steps, weights in ((4, [1, 0, 1]), (3, [0, 1, 1]), (5, [1, 1, 1]),
                               (2, [0, 0, 0])):
      frames = random_frames(rng, num_steps, 3)
      normalizer.update(*frame_normalizer.batch_moments(
          tf.constant(frames), tf.constant(weights, tf.float32)))
      counted.append(frames[:, np.array(weights, bool)].reshape(
          (-1,) + FRAME_SHAPE))
    counted = np.concatenate(counted)
    self.assertEqual(len(counted), float(normalizer.count))
    self.assertAllClose(counted.mean(0), normalizer.mean, atol=1e-6)
    self.assertAllClose(counted.var(0), normalizer.variance, atol=1e-6)

  def test_normalises_and_clips_each_pixel(self):
    rng = np.random.default_rng(1)
    normalizer = frame_normalizer.FrameNormalizer(FRAME_SHAPE)
    frames = rng.random((7,) + FRAME_SHAPE).astype(np.float32)
    # Before any update: the identity.
    self.assertAllClose(frames, normalizer(frames), atol=1e-4)
    mean = rng.random(FRAME_SHAPE).astype(np.float32)
    variance = rng.random(FRAME_SHAPE).astype(np.float32) / 100
    normalizer.mean.assign(mean)
    normalizer.variance.assign(variance)
    expected = np.clip((frames - mean) / np.sqrt(variance + 1e-5), -5, 5)
    self.assertAllClose(expected, normalizer(frames), atol=1e-5)
    self.assertTrue(np.any(np.abs(expected) == 5))  # The clip was needed.

  def test_a_constant_pixel_maps_to_zero(self):
    normalizer = frame_normalizer.FrameNormalizer(FRAME_SHAPE)
    frames = np.full((4, 2) + FRAME_SHAPE, 0.3, np.float32)
    normalizer.update(*frame_normalizer.batch_moments(
        frames, tf.ones([2])))
    self.assertAllClose(np.zeros((3,) + FRAME_SHAPE),
                        normalizer(frames[:3, 0]), atol=1e-3)


if __name__ == '__main__':
  tf.test.main()
