"""The LSTM against a numpy LSTM, and its unroll paths against each other."""

import numpy as np
import tensorflow as tf

from impala_tf import lstm

INPUT_SIZE, HIDDEN_SIZE = 5, 7


def numpy_lstm_step(core, inputs, c, h):
  """An independent LSTM step, gates in the order i, f, g, o."""

  def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))

  gates = inputs @ core.kernel.numpy() + h @ core.recurrent_kernel.numpy(
  ) + core.bias.numpy()
  i, f, g, o = np.split(gates, 4, axis=-1)
  c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
  return sigmoid(o) * np.tanh(c), c


def random_unroll_inputs(num_steps=6, batch_size=3, seed=0):
  rng = np.random.default_rng(seed)
  inputs = rng.normal(size=(num_steps, batch_size, INPUT_SIZE)).astype(
      np.float32)
  state = lstm.LSTMState(
      c=rng.normal(size=(batch_size, HIDDEN_SIZE)).astype(np.float32),
      h=rng.normal(size=(batch_size, HIDDEN_SIZE)).astype(np.float32))
  return inputs, state


class LSTMTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.core = lstm.LSTM(INPUT_SIZE, HIDDEN_SIZE, seed=3)

  def test_step_matches_numpy(self):
    inputs, state = random_unroll_inputs()
    output, new_state = self.core.step(inputs[0], state)
    expected_h, expected_c = numpy_lstm_step(self.core, inputs[0], state.c,
                                             state.h)
    self.assertAllClose(expected_h, output, atol=1e-5)
    self.assertAllClose(expected_h, new_state.h, atol=1e-5)
    self.assertAllClose(expected_c, new_state.c, atol=1e-5)

  def _numpy_unroll(self, inputs, done, state):
    c, h = state.c.copy(), state.h.copy()
    outputs = []
    for t in range(inputs.shape[0]):
      keep = ~done[t][:, None]
      c, h = c * keep, h * keep
      h, c = numpy_lstm_step(self.core, inputs[t], c, h)
      outputs.append(h)
    return np.stack(outputs), c, h

  def _check_unroll(self, unroll_fn, done):
    inputs, state = random_unroll_inputs()
    outputs, final_state = unroll_fn(inputs, done, state)
    expected, expected_c, expected_h = self._numpy_unroll(inputs, done, state)
    self.assertAllClose(expected, outputs, atol=1e-5)
    self.assertAllClose(expected_c, final_state.c, atol=1e-5)
    self.assertAllClose(expected_h, final_state.h, atol=1e-5)

  def _done_patterns(self):
    no_resets = np.zeros((6, 3), bool)
    first_step_reset = no_resets.copy()
    first_step_reset[0, 1] = True
    inner_resets = no_resets.copy()
    inner_resets[2, 0] = inner_resets[4, 0] = inner_resets[3, 2] = True
    return no_resets, first_step_reset, inner_resets

  def test_stepwise_unroll_resets_where_done(self):
    for done in self._done_patterns():
      self._check_unroll(self.core.unroll_stepwise, done)

  def test_fused_unroll_equals_stepwise(self):
    for done in self._done_patterns():
      self._check_unroll(self.core.unroll, done)

  def test_fused_unroll_under_xla(self):
    unroll = tf.function(self.core.unroll, jit_compile=True)
    for done in self._done_patterns():
      self._check_unroll(unroll, done)

  def test_gradients_of_paths_agree(self):
    inputs, state = random_unroll_inputs()
    done = self._done_patterns()[2]
    gradients = []
    for unroll_fn in (self.core.unroll, self.core.unroll_stepwise):
      with tf.GradientTape() as tape:
        outputs, _ = unroll_fn(inputs, done, state)
        loss = tf.reduce_sum(tf.square(outputs))
      gradients.append(tape.gradient(loss, self.core.trainable_variables))
    for fused, stepwise in zip(*gradients):
      self.assertAllClose(stepwise, fused, atol=1e-5)

  def test_cudnn_unroll_equals_stepwise(self):
    if not tf.config.list_logical_devices('GPU'):
      self.skipTest('the cuDNN kernel needs a GPU')
    for done in self._done_patterns():
      self._check_unroll(
          lambda i, d, s: self.core.unroll(i, d, s, use_cudnn=True), done)


if __name__ == '__main__':
  tf.test.main()
