"""The LSTM against numpy, and its unroll paths against each other."""

import numpy as np
import tensorflow as tf

from impala_tf import lstm

INPUT_SIZE, HIDDEN_SIZE = 5, 7
NUM_STEPS, BATCH_SIZE = 8, 3


def numpy_lstm_step(weights, inputs, c, h):
  """An independent float64 LSTM step, gates in the order i, f, g, o.

  Args:
    weights: (kernel `[D, 4H]`, recurrent_kernel `[H, 4H]`, bias `[4H]`).
    inputs: `[B, D]`.
    c: `[B, H]`.
    h: `[B, H]`.

  Returns:
    (new h `[B, H]`, new c `[B, H]`).
  """
  kernel, recurrent_kernel, bias = weights
  gates = inputs @ kernel + h @ recurrent_kernel + bias
  size = h.shape[-1]
  i, f, g, o = (gates[:, k * size:(k + 1) * size] for k in range(4))
  sigmoid = lambda x: 1.0 / (1.0 + np.exp(-x))
  c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
  return sigmoid(o) * np.tanh(c), c


def random_inputs(seed=0):
  """Inputs `[T, B, D]` and a nonzero state `[B, H]`."""
  rng = np.random.default_rng(seed)
  inputs = rng.normal(size=(NUM_STEPS, BATCH_SIZE, INPUT_SIZE))
  c, h = rng.normal(size=(2, BATCH_SIZE, HIDDEN_SIZE))
  return (inputs.astype(np.float32),
          lstm.LSTMState(c=c.astype(np.float32), h=h.astype(np.float32)))


def no_resets():
  return np.zeros((NUM_STEPS, BATCH_SIZE), bool)


def first_step_reset():
  """done `[T, B]` with an episode start only at t = 0."""
  done = no_resets()
  done[0, 1] = True
  return done


def inner_resets():
  """done `[T, B]` with episode starts inside the unroll (and one at t=0)."""
  done = no_resets()
  done[0, 2] = done[3, 0] = done[5, 0] = done[6, 1] = True
  return done


def op_types(concrete_function):
  return [op.type for op in concrete_function.graph.get_operations()]


class LSTMTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.core = lstm.LSTM(INPUT_SIZE, HIDDEN_SIZE, seed=3)

  def _numpy_weights(self):
    return tuple(
        v.numpy().astype(np.float64)
        for v in (self.core.kernel, self.core.recurrent_kernel,
                  self.core.bias))

  def _manual_steps(self, inputs, done, state):
    """`step` T times, zeroing the state by hand where done."""
    outputs = []
    for t in range(inputs.shape[0]):
      keep = (~done[t])[:, None].astype(np.float32)
      state = lstm.LSTMState(c=state.c * keep, h=state.h * keep)
      output, state = self.core.step(inputs[t], state)
      outputs.append(output)
    return tf.stack(outputs), state

  def _gradients(self, unroll):
    """(unroll's results, gradients of a loss of them w.r.t. the weights)."""
    with tf.GradientTape() as tape:
      outputs, final_state = unroll()
      loss = tf.reduce_sum(tf.square(outputs)) + tf.reduce_sum(final_state.c)
    return (outputs, final_state), tape.gradient(
        loss, self.core.trainable_variables)

  def _assert_unrolls_close(self, expected, actual, atol=1e-5):
    self.assertAllClose(expected[0], actual[0], atol=atol)
    self.assertAllClose(expected[1].c, actual[1].c, atol=atol)
    self.assertAllClose(expected[1].h, actual[1].h, atol=atol)

  def test_initial_state_is_zeros(self):
    state = self.core.initial_state(4)
    self.assertAllEqual(np.zeros((4, HIDDEN_SIZE)), state.c)
    self.assertAllEqual(np.zeros((4, HIDDEN_SIZE)), state.h)

  def test_forget_bias_starts_at_one(self):
    self.assertAllEqual(
        np.repeat([0.0, 1.0, 0.0, 0.0], HIDDEN_SIZE), self.core.bias)

  def test_step_matches_numpy(self):
    inputs, state = random_inputs()
    output, new_state = self.core.step(inputs[0], state)
    expected_h, expected_c = numpy_lstm_step(self._numpy_weights(), inputs[0],
                                             state.c, state.h)
    self.assertAllClose(expected_h, output, atol=1e-5)
    self.assertAllClose(expected_h, new_state.h, atol=1e-5)
    self.assertAllClose(expected_c, new_state.c, atol=1e-5)

  def test_fused_equals_stepwise_without_resets(self):
    inputs, state = random_inputs()
    (stepwise, stepwise_gradients) = self._gradients(
        lambda: self.core.unroll_stepwise(inputs, no_resets(), state))
    (fused, fused_gradients) = self._gradients(
        lambda: self.core.unroll_fused(inputs, state))
    self._assert_unrolls_close(stepwise, fused)
    for expected, actual in zip(stepwise_gradients, fused_gradients):
      self.assertAllClose(expected, actual, atol=1e-5)

  def test_stepwise_resets_equal_manual_steps(self):
    inputs, state = random_inputs()
    done = inner_resets()
    self._assert_unrolls_close(
        self._manual_steps(inputs, done, state),
        self.core.unroll_stepwise(inputs, done, state))

  def test_stepwise_resets_equal_fused_episode_segments(self):
    inputs, state = random_inputs()
    done = inner_resets()
    outputs, final_state = self.core.unroll_stepwise(inputs, done, state)
    for b in range(BATCH_SIZE):
      starts = [0] + [t for t in range(1, NUM_STEPS) if done[t, b]]
      for start, end in zip(starts, starts[1:] + [NUM_STEPS]):
        segment_state = self.core.initial_state(1)
        if start == 0 and not done[0, b]:
          segment_state = lstm.LSTMState(
              c=state.c[b:b + 1], h=state.h[b:b + 1])
        segment_outputs, segment_final = self.core.unroll_fused(
            inputs[start:end, b:b + 1], segment_state)
        self.assertAllClose(segment_outputs, outputs[start:end, b:b + 1],
                            atol=1e-5)
      self.assertAllClose(segment_final.c[0], final_state.c[b], atol=1e-5)
      self.assertAllClose(segment_final.h[0], final_state.h[b], atol=1e-5)

  def test_unroll_eager_graph_and_xla(self):
    inputs, state = random_inputs()
    graph_unroll = tf.function(self.core.unroll)
    xla_unroll = tf.function(self.core.unroll, jit_compile=True)
    for done in (no_resets(), first_step_reset(), inner_resets()):
      expected = self._manual_steps(inputs, done, state)
      for unroll in (self.core.unroll, graph_unroll, xla_unroll):
        self._assert_unrolls_close(expected, unroll(inputs, done, state))

  def test_xla_gradients_match_eager(self):
    inputs, state = random_inputs()
    for done in (first_step_reset(), inner_resets()):
      unroll = lambda: self.core.unroll(inputs, done, state)  # pylint: disable=cell-var-from-loop
      eager, eager_gradients = self._gradients(unroll)
      compiled, compiled_gradients = tf.function(
          lambda: self._gradients(unroll), jit_compile=True)()  # pylint: disable=cell-var-from-loop
      self._assert_unrolls_close(eager, compiled)
      for expected, actual in zip(eager_gradients, compiled_gradients):
        self.assertAllClose(expected, actual, atol=1e-5)

  def test_no_cudnn_under_xla_or_when_declined(self):
    inputs, state = random_inputs()
    done = inner_resets()
    self.assertNotIn(
        'CudnnRNN',
        op_types(
            tf.function(self.core.unroll_fused,
                        jit_compile=True).get_concrete_function(inputs,
                                                                state)))
    self.assertNotIn(
        'If',
        op_types(
            tf.function(lambda: self.core.unroll(inputs, done, state,
                                                 use_cudnn=False))
            .get_concrete_function()))

  def test_cudnn_fused_equals_stepwise(self):
    if not tf.config.list_logical_devices('GPU'):
      self.skipTest('cuDNN needs a GPU')
    inputs, state = random_inputs()
    # A graph (not XLA) on the GPU takes the cuDNN path.
    fused = tf.function(self.core.unroll_fused)
    self.assertIn('CudnnRNN', op_types(fused.get_concrete_function(
        inputs, state)))
    cudnn, cudnn_gradients = tf.function(
        lambda: self._gradients(lambda: fused(inputs, state)))()
    stepwise, stepwise_gradients = self._gradients(
        lambda: self.core.unroll_stepwise(inputs, no_resets(), state))
    self._assert_unrolls_close(stepwise, cudnn, atol=1e-4)
    for expected, actual in zip(stepwise_gradients, cudnn_gradients):
      self.assertAllClose(expected, actual, atol=1e-4)

  def test_cudnn_dispatch_equals_stepwise(self):
    if not tf.config.list_logical_devices('GPU'):
      self.skipTest('cuDNN needs a GPU')
    inputs, state = random_inputs()
    for done in (no_resets(), first_step_reset(), inner_resets()):
      unroll = tf.function(lambda: self.core.unroll(inputs, done, state))  # pylint: disable=cell-var-from-loop
      self.assertIn('If', op_types(unroll.get_concrete_function()))
      dispatched, dispatched_gradients = tf.function(
          lambda: self._gradients(unroll))()  # pylint: disable=cell-var-from-loop
      stepwise, stepwise_gradients = self._gradients(
          lambda: self.core.unroll_stepwise(inputs, done, state))  # pylint: disable=cell-var-from-loop
      self._assert_unrolls_close(stepwise, dispatched, atol=1e-4)
      for expected, actual in zip(stepwise_gradients, dispatched_gradients):
        self.assertAllClose(expected, actual, atol=1e-4)


if __name__ == '__main__':
  tf.test.main()
