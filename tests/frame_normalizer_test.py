"""Per-pixel frame normalisation against numpy's moments of the same frames."""

import numpy as np
import tensorflow as tf

from impala_tf import frame_normalizer

FRAME_SHAPE = (6, 5, 2)


def random_frames(rng, leading_shape):
  """uint8 `leading_shape + [6, 5, 2]`, each pixel with its own range."""
  low = rng.integers(0, 128, FRAME_SHAPE)
  width = rng.integers(1, 128, FRAME_SHAPE)
  return (low + rng.integers(0, width, leading_shape + FRAME_SHAPE)).astype(
      np.uint8)


class FrameNormalizerTest(tf.test.TestCase):

  def test_running_statistics_are_those_of_all_counted_frames(self):
    rng = np.random.default_rng(0)
    normalizer = frame_normalizer.FrameNormalizer(FRAME_SHAPE)
    counted = []
    for leading_shape in ((4, 2), (3, 1), (5, 3), (2, 0), (7,)):
      frames = random_frames(rng, leading_shape)
      normalizer.update(*frame_normalizer.batch_moments(tf.constant(frames)))
      counted.append(frames.reshape((-1,) + FRAME_SHAPE) / 255)
    counted = np.concatenate(counted)
    self.assertEqual(len(counted), float(normalizer.count))
    self.assertAllClose(counted.mean(0), normalizer.mean, atol=1e-6)
    self.assertAllClose(counted.var(0), normalizer.variance, atol=1e-6)

  def test_normalises_and_clips_each_pixel(self):
    rng = np.random.default_rng(1)
    normalizer = frame_normalizer.FrameNormalizer(FRAME_SHAPE)
    frames = random_frames(rng, (7,))
    scaled = frames.astype(np.float32) / 255
    # Before any update: frames / 255.
    self.assertAllClose(scaled, normalizer(frames), atol=1e-4)
    mean = rng.random(FRAME_SHAPE).astype(np.float32)
    variance = rng.random(FRAME_SHAPE).astype(np.float32) / 100
    normalizer.mean.assign(mean)
    normalizer.variance.assign(variance)
    expected = np.clip((scaled - mean) / np.sqrt(variance + 1e-5), -5, 5)
    self.assertAllClose(expected, normalizer(frames), atol=1e-4)
    self.assertTrue(np.any(np.abs(expected) == 5))  # The clip was needed.

  def test_a_constant_pixel_maps_to_zero(self):
    normalizer = frame_normalizer.FrameNormalizer(FRAME_SHAPE)
    frames = np.full((4, 2) + FRAME_SHAPE, 77, np.uint8)
    normalizer.update(*frame_normalizer.batch_moments(frames))
    self.assertAllClose(np.zeros((3,) + FRAME_SHAPE),
                        normalizer(frames[:3, 0]), atol=1e-3)


if __name__ == '__main__':
  tf.test.main()
