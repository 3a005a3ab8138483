"""Per-pixel running normalisation of the agent's frames (`--normalize_frames`;
off by default, where the agent sees frames / 255 as in the paper).

Why: an Atari frame is mostly background that never changes, so at
initialisation the torso's units add up nearly the same value for every
frame and RMSProp's normalised steps, summed over thousands of such inputs,
switch most of them off for good within a few hundred updates
(docs/learning.md, "Every run's torso dies"). Subtracting each pixel's
running mean and dividing by its running standard deviation (clipped to
±5) leaves what changes between frames.

The statistics are variables of the agent: actors get them with its
weights, checkpoints keep them, and only the learner changes them, from the
frames of each batch's new (not replayed) trajectories.
"""

import tensorflow as tf

CLIP = 5.0
# Added to the variance: pixels that never change map to 0, not to NaN.
EPSILON = 1e-5


def batch_moments(frames):
  """Count, sum and sum of squares of frames / 255, per pixel.

  Args:
    frames: uint8 `[..., H, W, C]`, frames as the environment gives them.

  Returns:
    (count: float32 scalar, the number of frames; sum and sum of squares of
    frames / 255: float32 `[H, W, C]`).
  """
  pixels = tf.cast(frames, tf.float32)
  leading_axes = tf.range(tf.rank(frames) - 3)
  count = tf.cast(tf.reduce_prod(tf.shape(frames)[:-3]), tf.float32)
  # Scaled after the sums, on [H, W, C] rather than on every frame.
  return (count, tf.reduce_sum(pixels, leading_axes) / 255.0,
          tf.reduce_sum(tf.square(pixels), leading_axes) / 255.0**2)


def merge_moments(count, mean, variance, batch_count, batch_sum,
                  batch_sum_of_squares):
  """The mean and variance of all frames seen, from those of the frames
  before and a batch's moments (Chan, Golub and LeVeque's parallel update).

  Args:
    count: float32 scalar, frames seen before.
    mean, variance: float32 `[H, W, C]`, their mean and population variance.
    batch_count, batch_sum, batch_sum_of_squares: `batch_moments` of a batch.

  Returns:
    (count, mean, variance) of both together; unchanged for an empty batch.
  """
  total = count + batch_count
  safe_batch_count = tf.maximum(batch_count, 1.0)
  batch_mean = batch_sum / safe_batch_count
  batch_variance = tf.maximum(
      batch_sum_of_squares / safe_batch_count - tf.square(batch_mean), 0.0)
  safe_total = tf.maximum(total, 1.0)
  delta = batch_mean - mean
  new_mean = mean + delta * batch_count / safe_total
  sum_of_squared_deviations = (
      variance * count + batch_variance * batch_count +
      tf.square(delta) * count * batch_count / safe_total)
  new_variance = tf.where(total > 0, sum_of_squared_deviations / safe_total,
                          variance)
  return total, new_mean, new_variance


class FrameNormalizer(tf.Module):
  """Running per-pixel mean and variance of frames / 255 `[..., H, W, C]`.

  Before its first update (mean 0, variance 1) it gives frames / 255.
  """

  def __init__(self, frame_shape, name=None):
    super().__init__(name=name)
    with self.name_scope:
      self.count = tf.Variable(0.0, trainable=False, name='count')
      self.mean = tf.Variable(tf.zeros(frame_shape), trainable=False,
                              name='mean')
      self.variance = tf.Variable(tf.ones(frame_shape), trainable=False,
                                  name='variance')

  def __call__(self, frames):
    """uint8 `[N, H, W, C]` -> float32, frames / 255 normalised and clipped
    to ±5."""
    inverse_deviation = tf.math.rsqrt(self.variance + EPSILON)
    # (frames / 255 - mean) / deviation in one multiply-add per pixel.
    normalized = (tf.cast(frames, tf.float32) * (inverse_deviation / 255.0) -
                  self.mean * inverse_deviation)
    return tf.clip_by_value(normalized, -CLIP, CLIP)

  def update(self, batch_count, batch_sum, batch_sum_of_squares):
    """Adds a batch's `batch_moments` to the statistics."""
    count, mean, variance = merge_moments(
        self.count, self.mean, self.variance, batch_count, batch_sum,
        batch_sum_of_squares)
    self.count.assign(count)
    self.mean.assign(mean)
    self.variance.assign(variance)
