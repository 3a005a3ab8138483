"""An LSTM whose state is reset where episodes end, with fused unroll paths.

Gate layout along the last axis of the kernels: input i, forget f, cell g,
output o (cuDNN's order, so the weights pack into its kernel directly).
Shapes: T unroll length, B batch, D input size, H hidden size.
"""

import collections

import tensorflow as tf

LSTMState = collections.namedtuple('LSTMState', 'c h')


def _glorot_uniform(shape, seed):
  limit = (6.0 / (shape[0] + shape[1]))**0.5
  return tf.random.stateless_uniform(shape, [seed, 0], -limit, limit)


def reset_where_done(state, done):
  """Zeroes the rows of an `LSTMState` (`[B, H]`) where `done` `[B]` is True."""
  keep = tf.cast(~done, tf.float32)[:, None]
  return LSTMState(c=state.c * keep, h=state.h * keep)


class LSTM(tf.Module):
  """A single-layer LSTM; the forget-gate bias starts at 1 to keep memory."""

  def __init__(self, input_size, hidden_size, seed=0, name='lstm'):
    super().__init__(name=name)
    self.hidden_size = hidden_size
    with self.name_scope:
      self.kernel = tf.Variable(
          _glorot_uniform([input_size, 4 * hidden_size], seed), name='kernel')
      self.recurrent_kernel = tf.Variable(
          _glorot_uniform([hidden_size, 4 * hidden_size], seed + 1),
          name='recurrent_kernel')
      self.bias = tf.Variable(
          tf.concat([
              tf.zeros([hidden_size]),
              tf.ones([hidden_size]),
              tf.zeros([2 * hidden_size])
          ], 0),
          name='bias')

  def initial_state(self, batch_size):
    zeros = tf.zeros([batch_size, self.hidden_size])
    return LSTMState(c=zeros, h=zeros)

  def _apply_gates(self, gates, state):
    i, f, g, o = tf.split(gates, 4, axis=-1)
    c = tf.sigmoid(f) * state.c + tf.sigmoid(i) * tf.tanh(g)
    h = tf.sigmoid(o) * tf.tanh(c)
    return h, LSTMState(c=c, h=h)

  def step(self, inputs, state):
    """One step: inputs `[B, D]`, state `[B, H]` -> (output `[B, H]`, state)."""
    gates = (
        tf.matmul(inputs, self.kernel) +
        tf.matmul(state.h, self.recurrent_kernel) + self.bias)
    return self._apply_gates(gates, state)

  def _read_weights(self):
    # Loops and conds get weight values, not resource handles, which XLA
    # cannot thread through a cond's outputs.
    return (tf.convert_to_tensor(self.kernel),
            tf.convert_to_tensor(self.recurrent_kernel),
            tf.convert_to_tensor(self.bias))

  def unroll(self, inputs, done, state, use_cudnn=False):
    """Unrolls over time, resetting the state before step t where done[t].

    The input projection of all T steps is one matmul, leaving only the
    recurrent matmul inside the loop. With `use_cudnn` (GPU only, and not
    under XLA, which cannot compile it), unrolls without a reset inside run
    as one cuDNN kernel instead.

    Args:
      inputs: float32 `[T, B, D]`.
      done: bool `[T, B]`, True where inputs[t] starts a new episode.
      state: `LSTMState` of `[B, H]` before inputs[0].
      use_cudnn: see above.

    Returns:
      (outputs `[T, B, H]`, final `LSTMState`).
    """
    weights = self._read_weights()
    if not use_cudnn:
      return self._unroll_projected(weights, inputs, done, state)
    # A reset at t = 0 only changes the initial state, so cuDNN still
    # applies; only resets inside the unroll need the loop.
    return tf.cond(
        tf.reduce_any(done[1:]),
        lambda: self._unroll_projected(weights, inputs, done, state),
        lambda: self._unroll_cudnn(weights, inputs,
                                   reset_where_done(state, done[0])))

  def unroll_stepwise(self, inputs, done, state):
    """The reference unroll: `step` T times, resetting where done."""

    def body(carry, step_inputs):
      _, state = carry
      inputs_t, done_t = step_inputs
      return self.step(inputs_t, reset_where_done(state, done_t))

    outputs, states = tf.scan(
        body, (inputs, done), initializer=(tf.zeros_like(state.h), state))
    return outputs, tf.nest.map_structure(lambda x: x[-1], states)

  def _unroll_projected(self, weights, inputs, done, state):
    kernel, recurrent_kernel, bias = weights
    input_gates = tf.einsum('tbd,dg->tbg', inputs, kernel) + bias

    def body(carry, step_inputs):
      _, state = carry
      input_gates_t, done_t = step_inputs
      state = reset_where_done(state, done_t)
      gates = input_gates_t + tf.matmul(state.h, recurrent_kernel)
      return self._apply_gates(gates, state)

    outputs, states = tf.scan(
        body, (input_gates, done), initializer=(tf.zeros_like(state.h), state))
    return outputs, tf.nest.map_structure(lambda x: x[-1], states)

  def _unroll_cudnn(self, weights, inputs, state):
    kernel, recurrent_kernel, bias = weights
    # cuDNN takes each gate's matrix transposed and flattened, the 4 input
    # matrices then the 4 recurrent ones, then 8 biases (input, recurrent).
    matrices = (
        tf.split(kernel, 4, axis=1) + tf.split(recurrent_kernel, 4, axis=1))
    biases = tf.split(tf.concat([bias, tf.zeros_like(bias)], 0), 8)
    params = tf.concat(
        [tf.reshape(tf.transpose(m), [-1]) for m in matrices] + biases, 0)
    outputs, h, c, _ = tf.raw_ops.CudnnRNN(
        input=inputs,
        input_h=state.h[None],
        input_c=state.c[None],
        params=params,
        rnn_mode='lstm',
        is_training=True)
    return outputs, LSTMState(c=c[0], h=h[0])
