"""An LSTM whose state is reset where episodes start, with a fused unroll.

Shapes: T unroll length, B batch, D input size, H hidden size.

Gates are laid out along the last axis of the kernels and the bias in the
order input i, forget f, cell g, output o (cuDNN's order, so the weights pack
into its kernel without reordering):

  i, f, g, o = split(x @ kernel + h @ recurrent_kernel + bias)
  c' = sigmoid(f) * c + sigmoid(i) * tanh(g)
  h' = sigmoid(o) * tanh(c')

The forget-gate bias starts at 1 and the other biases at 0: the official code's
`LSTMBlockCell` adds a constant forget bias of 1 to zero-initialised biases,
which is the same function at initialisation.

`LSTM.unroll` resets the state to zeros before step t wherever done[t]. Both
of its paths compute the input projection of all T steps as one matmul before
the time loop, leaving only the recurrent matmul inside:
- step-wise: a loop that zeroes the state rows where done[t] at every step;
- fused: no resets inside; cuDNN's LSTM kernel where it is used (see
  `cudnn_usable`; XLA cannot compile it), else the same loop without masking.
With cuDNN, `unroll` takes the fused path when no reset falls inside the
unroll (done[1:] all False; a reset at t = 0 only changes the initial state)
and the step-wise path otherwise, chosen per call by a `tf.cond`. Without
cuDNN it always takes the step-wise path: the two loops differ only by a
multiply per step, and XLA cannot differentiate a `tf.cond` whose branches
hold loops (their gradient accumulators are variants, which XLA's `FakeParam`
does not support).
"""

import collections

import tensorflow as tf
# The public API cannot tell whether code is being traced for XLA.
from tensorflow.python.ops import control_flow_util

LSTMState = collections.namedtuple(
    'LSTMState',
    [
        'c',  # float32 [B, H]: the cell.
        'h',  # float32 [B, H]: the output.
    ])


def reset_where_done(state, done):
  """Zeroes the rows of a state where an episode starts.

  Args:
    state: `LSTMState` of `[B, H]`.
    done: bool `[B]`.

  Returns:
    `LSTMState` of `[B, H]`.
  """
  keep = tf.cast(~done, tf.float32)[:, None]
  return LSTMState(c=state.c * keep, h=state.h * keep)


def cudnn_usable(inputs):
  """Whether the fused path runs on cuDNN by default; decided while tracing.

  Needs a CUDA build (ROCm orders the gates differently) with a visible GPU,
  no XLA, and `inputs` not placed on the CPU (cuDNN's op has no CPU kernel).

  Args:
    inputs: the tensor to unroll over, for its device.

  Returns:
    Python bool.
  """
  in_xla = control_flow_util.GraphOrParentsInXlaContext(
      tf.compat.v1.get_default_graph())
  return (tf.test.is_built_with_cuda() and
          bool(tf.config.list_logical_devices('GPU')) and not in_xla and
          tf.DeviceSpec.from_string(inputs.device).device_type != 'CPU')


def _glorot_uniform(shape, seed):
  limit = (6.0 / (shape[0] + shape[1]))**0.5
  return tf.random.stateless_uniform(shape, [seed, 0], -limit, limit)


def _apply_gates(gates, state):
  """The LSTM cell update.

  Args:
    gates: float32 `[B, 4H]`, pre-activations in the order i, f, g, o.
    state: `LSTMState` of `[B, H]`, the previous state.

  Returns:
    (output `[B, H]`, new `LSTMState` of `[B, H]`).
  """
  i, f, g, o = tf.split(gates, 4, axis=-1)
  c = tf.sigmoid(f) * state.c + tf.sigmoid(i) * tf.tanh(g)
  h = tf.sigmoid(o) * tf.tanh(c)
  return h, LSTMState(c=c, h=h)


def _recurrence(input_gates, recurrent_kernel, state, done=None):
  """Runs the recurrent half of an LSTM over pre-projected inputs.

  Args:
    input_gates: float32 `[T, B, 4H]`, x_t @ kernel + bias for every t.
    recurrent_kernel: float32 `[H, 4H]`.
    state: `LSTMState` of `[B, H]` before step 0.
    done: bool `[T, B]` to reset the state before step t where True, or
      None for no resets.

  Returns:
    (outputs `[T, B, H]`, final `LSTMState` of `[B, H]`).
  """

  def body(carry, step_inputs):
    _, state = carry
    if done is None:
      input_gates_t = step_inputs
    else:
      input_gates_t, done_t = step_inputs
      state = reset_where_done(state, done_t)
    return _apply_gates(input_gates_t + tf.matmul(state.h, recurrent_kernel),
                        state)

  elements = input_gates if done is None else (input_gates, done)
  outputs, states = tf.scan(
      body, elements, initializer=(tf.zeros_like(state.h), state))
  return outputs, tf.nest.map_structure(lambda x: x[-1], states)


class LSTM(tf.Module):
  """A single-layer LSTM (see the module docstring for the equations)."""

  def __init__(self, input_size, hidden_size, seed=0, name=None):
    """Creates the weights.

    Args:
      input_size: D.
      hidden_size: H.
      seed: initialisation seed. The kernels are one Glorot-uniform matrix
        `[D + H, 4H]` split in two, as the official code's `LSTMBlockCell`
        initialises its single kernel.
      name: module name.
    """
    super().__init__(name=name)
    self.input_size = input_size
    self.hidden_size = hidden_size
    with self.name_scope:
      kernels = _glorot_uniform([input_size + hidden_size, 4 * hidden_size],
                                seed)
      self.kernel = tf.Variable(kernels[:input_size], name='kernel')
      self.recurrent_kernel = tf.Variable(
          kernels[input_size:], name='recurrent_kernel')
      self.bias = tf.Variable(
          tf.concat([
              tf.zeros([hidden_size]),
              tf.ones([hidden_size]),
              tf.zeros([2 * hidden_size])
          ], 0),
          name='bias')

  def initial_state(self, batch_size):
    """The zero state: `LSTMState` of `[batch_size, H]`."""
    zeros = tf.zeros([batch_size, self.hidden_size])
    return LSTMState(c=zeros, h=zeros)

  def gate_preactivations(self, inputs, state):
    """The gates before their sigmoid or tanh, for one step.

    Args:
      inputs: float32 `[B, D]`.
      state: `LSTMState` of `[B, H]`.

    Returns:
      float32 `[B, 4H]`, in the order i, f, g, o.
    """
    return (tf.matmul(inputs, self.kernel) +
            tf.matmul(state.h, self.recurrent_kernel) + self.bias)

  def step(self, inputs, state):
    """One step (no reset; see `reset_where_done`).

    Args:
      inputs: float32 `[B, D]`.
      state: `LSTMState` of `[B, H]`.

    Returns:
      (output `[B, H]`, new `LSTMState` of `[B, H]`).
    """
    return _apply_gates(self.gate_preactivations(inputs, state), state)

  def unroll(self, inputs, done, state, use_cudnn=None):
    """Unrolls over time, resetting the state before step t where done[t].

    With cuDNN, a `tf.cond` takes cuDNN's fused kernel when done[1:] is all
    False and the step-wise path otherwise; without, the step-wise path (see
    the module docstring).

    Args:
      inputs: float32 `[T, B, D]`.
      done: bool `[T, B]`, True where inputs[t] starts a new episode.
      state: `LSTMState` of `[B, H]` before inputs[0].
      use_cudnn: None to decide by `cudnn_usable`; True or False to force.

    Returns:
      (outputs `[T, B, H]`, final `LSTMState` of `[B, H]`).
    """
    inputs = tf.convert_to_tensor(inputs, tf.float32)
    done = tf.convert_to_tensor(done, tf.bool)
    weights = self._read_weights()
    if use_cudnn is None:
      use_cudnn = cudnn_usable(inputs)
    if not use_cudnn:
      return self._unroll_loop(weights, inputs, state, done)
    return tf.cond(
        tf.reduce_any(done[1:]),
        lambda: self._unroll_loop(weights, inputs, state, done),
        lambda: self._unroll_cudnn(weights, inputs,
                                   reset_where_done(state, done[0])))

  def unroll_stepwise(self, inputs, done, state):
    """`unroll` forced onto the step-wise path (same arguments and results)."""
    return self._unroll_loop(self._read_weights(),
                             tf.convert_to_tensor(inputs, tf.float32), state,
                             tf.convert_to_tensor(done, tf.bool))

  def unroll_fused(self, inputs, state, use_cudnn=None):
    """`unroll` without resets, on the fused path.

    Args:
      inputs: float32 `[T, B, D]`.
      state: `LSTMState` of `[B, H]` before inputs[0].
      use_cudnn: None to decide by `cudnn_usable`; True or False to force.

    Returns:
      (outputs `[T, B, H]`, final `LSTMState` of `[B, H]`).
    """
    inputs = tf.convert_to_tensor(inputs, tf.float32)
    weights = self._read_weights()
    if use_cudnn is None:
      use_cudnn = cudnn_usable(inputs)
    if use_cudnn:
      return self._unroll_cudnn(weights, inputs, state)
    return self._unroll_loop(weights, inputs, state)

  def _read_weights(self):
    # Read once, before the time loop.
    return (tf.convert_to_tensor(self.kernel),
            tf.convert_to_tensor(self.recurrent_kernel),
            tf.convert_to_tensor(self.bias))

  def _unroll_loop(self, weights, inputs, state, done=None):
    """The projected loop; see `_recurrence` for `done`."""
    kernel, recurrent_kernel, bias = weights
    input_gates = tf.einsum('tbd,dg->tbg', inputs, kernel) + bias
    return _recurrence(input_gates, recurrent_kernel, state, done)

  def _unroll_cudnn(self, weights, inputs, state):
    kernel, recurrent_kernel, bias = weights
    # cuDNN's canonical parameter buffer: each gate's input matrix (i, f, g,
    # o), then each gate's recurrent matrix, each stored [H, D] (or [H, H])
    # row-major, i.e. ours transposed; then 4 input-side and 4 recurrent-side
    # bias vectors, which cuDNN adds together: ours, then zeros. Packed by
    # hand because `CudnnRNNCanonicalToParams` has no gradient.
    matrices = (
        tf.split(kernel, 4, axis=1) + tf.split(recurrent_kernel, 4, axis=1))
    biases = tf.split(tf.concat([bias, tf.zeros_like(bias)], 0), 8)
    params = tf.concat(
        [tf.reshape(tf.transpose(m), [-1]) for m in matrices] + biases, 0)
    outputs, h, c, _ = tf.raw_ops.CudnnRNN(
        input=inputs,
        input_h=state.h[None],  # [num_layers = 1, B, H].
        input_c=state.c[None],
        params=params,
        rnn_mode='lstm',
        input_mode='linear_input',
        direction='unidirectional',
        is_training=True)  # Keeps what the gradient needs.
    return outputs, LSTMState(c=c[0], h=h[0])
