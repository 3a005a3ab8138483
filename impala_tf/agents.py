"""The paper's agents (Figure 3): shallow or deep torso, optional instruction
encoder, LSTM or feed-forward core, policy and baseline heads.

Plain `tf.Module`s and `tf.Variable`s (no Keras; see docs/design.md,
"Design choices"). Shapes: T unroll length, B batch, N any number of
frames, (H, W, C) frame, L instruction words, A actions.

Initialisation follows the official code's libraries: linear and conv
weights are truncated normals with stddev 1/sqrt(fan_in) (Sonnet's default),
biases zeros, embeddings truncated normals with stddev 1 (Sonnet's `Embed`),
LSTMs as `lstm.LSTM` says.
"""

import collections

import tensorflow as tf

from impala_tf import frame_normalizer
from impala_tf import lstm
# The agent's input is what environments output.
from impala_tf.environments import EnvOutput
from impala_tf.environments import INSTRUCTION_HASH_BUCKETS

AgentOutput = collections.namedtuple(
    'AgentOutput',
    [
        'action',  # int32 [...]: sampled from policy_logits.
        'policy_logits',  # float32 [..., A].
        'baseline',  # float32 [...]: the value estimate.
    ])

Unrolled = collections.namedtuple(
    'Unrolled',
    [
        'agent_outputs',  # AgentOutput with fields [T, B, ...].
        'core_state',  # the core state after the last step.
        'torso',  # float32 [T, B, 256]: the torso's output (its health).
    ])

TORSOS = ('shallow', 'deep')
CORES = ('lstm', 'feedforward')

# Which agent a run trains: the torso (one of TORSOS), the core (one of
# CORES) and whether its frames are normalised per pixel
# (`frame_normalizer`; else frames / 255, as the paper).
AgentSpec = collections.namedtuple('AgentSpec',
                                   ['torso', 'core', 'normalize_frames'])
CORE_SIZE = 256


def _truncated_normal(shape, stddev, seed):
  return stddev * tf.random.stateless_truncated_normal(shape, [seed, 0])


class Linear(tf.Module):
  """y = x @ w + b."""

  def __init__(self, input_size, output_size, seed, name=None):
    super().__init__(name=name)
    with self.name_scope:
      self.w = tf.Variable(
          _truncated_normal([input_size, output_size], input_size**-0.5,
                            seed), name='w')
      self.b = tf.Variable(tf.zeros([output_size]), name='b')

  def __call__(self, x):
    """float32 `[N, input_size]` -> `[N, output_size]`."""
    return tf.matmul(x, self.w) + self.b


class Conv2D(tf.Module):
  """A 2-D convolution with bias, square kernel and stride."""

  def __init__(self, in_channels, out_channels, kernel_size, stride, padding,
               seed, name=None):
    super().__init__(name=name)
    self.kernel_size = kernel_size
    self.stride = stride
    self.padding = padding
    fan_in = kernel_size * kernel_size * in_channels
    with self.name_scope:
      self.w = tf.Variable(
          _truncated_normal(
              [kernel_size, kernel_size, in_channels, out_channels],
              fan_in**-0.5, seed), name='w')
      self.b = tf.Variable(tf.zeros([out_channels]), name='b')

  def __call__(self, x):
    """float32 `[N, H, W, in_channels]` -> `[N, H', W', out_channels]`."""
    return tf.nn.conv2d(x, self.w, self.stride, self.padding) + self.b

  def valid_output_size(self, height, width):
    """(H', W') for an (H, W) input with VALID padding."""
    return ((height - self.kernel_size) // self.stride + 1,
            (width - self.kernel_size) // self.stride + 1)


class Embedding(tf.Module):
  """A lookup table of `num_ids` rows of `size` floats."""

  def __init__(self, num_ids, size, seed, name=None):
    super().__init__(name=name)
    with self.name_scope:
      self.table = tf.Variable(
          _truncated_normal([num_ids, size], 1.0, seed), name='table')

  def __call__(self, ids):
    """int32 `[...]` -> float32 `[..., size]`."""
    return tf.gather(self.table, ids)


def _scaled(frames):
  """uint8 frames -> float32 in [0, 1]."""
  return tf.cast(frames, tf.float32) / 255.0


def _flatten(x):
  """`[N, ...]` -> `[N, prod(...)]`."""
  return tf.reshape(x, [tf.shape(x)[0], -1])


class ShallowTorso(tf.Module):
  """Figure 3, left: conv 8x8/4 (16), conv 4x4/2 (32), FC 256, all ReLU."""

  def __init__(self, observation_shape, seed, name=None):
    super().__init__(name=name)
    height, width, channels = observation_shape
    with self.name_scope:
      self.conv1 = Conv2D(channels, 16, 8, 4, 'VALID', seed)
      height, width = self.conv1.valid_output_size(height, width)
      self.conv2 = Conv2D(16, 32, 4, 2, 'VALID', seed + 1)
      height, width = self.conv2.valid_output_size(height, width)
      self.fc = Linear(height * width * 32, CORE_SIZE, seed + 2)

  def __call__(self, frames):
    """float32 `[N, H, W, C]` -> `[N, 256]`."""
    x = tf.nn.relu(self.conv1(frames))
    x = tf.nn.relu(self.conv2(x))
    return tf.nn.relu(self.fc(_flatten(x)))


class ResidualBlock(tf.Module):
  """x + conv(relu(conv(relu(x)))), both convs 3x3/1 SAME."""

  def __init__(self, channels, seed, name=None):
    super().__init__(name=name)
    with self.name_scope:
      self.conv1 = Conv2D(channels, channels, 3, 1, 'SAME', seed)
      self.conv2 = Conv2D(channels, channels, 3, 1, 'SAME', seed + 1)

  def __call__(self, x):
    """float32 `[N, H, W, channels]` -> the same shape."""
    return x + self.conv2(tf.nn.relu(self.conv1(tf.nn.relu(x))))


class DeepTorso(tf.Module):
  """Figure 3, right: 3 stacks (16, 32, 32 channels) of conv 3x3/1, max-pool
  3x3/2 and 2 residual blocks; then ReLU, FC 256, ReLU (15 conv layers)."""

  STACK_CHANNELS = (16, 32, 32)
  BLOCKS_PER_STACK = 2

  def __init__(self, observation_shape, seed, name=None):
    super().__init__(name=name)
    height, width, channels = observation_shape
    self.convs = []
    self.blocks = []
    with self.name_scope:
      for stack, out_channels in enumerate(self.STACK_CHANNELS):
        stack_seed = seed + 10 * stack
        self.convs.append(
            Conv2D(channels, out_channels, 3, 1, 'SAME', stack_seed))
        self.blocks.append([
            ResidualBlock(out_channels, stack_seed + 1 + 2 * block)
            for block in range(self.BLOCKS_PER_STACK)
        ])
        channels = out_channels
        height, width = -(-height // 2), -(-width // 2)  # The SAME max-pool.
      self.fc = Linear(height * width * channels, CORE_SIZE, seed + 100)

  def __call__(self, frames):
    """float32 `[N, H, W, C]` -> `[N, 256]`."""
    x = frames
    for conv, blocks in zip(self.convs, self.blocks):
      x = tf.nn.max_pool2d(conv(x), 3, 2, 'SAME')
      for block in blocks:
        x = block(x)
    return tf.nn.relu(self.fc(_flatten(tf.nn.relu(x))))


class InstructionEncoder(tf.Module):
  """Embedding 20, LSTM 64 over the words, the output at the last word."""

  EMBEDDING_SIZE = 20
  HIDDEN_SIZE = 64

  def __init__(self, seed, name=None):
    super().__init__(name=name)
    with self.name_scope:
      # Row 0 (padding) only feeds steps after the last word, whose outputs
      # are dropped, so it never affects the encoding.
      self.embedding = Embedding(INSTRUCTION_HASH_BUCKETS + 1,
                                 self.EMBEDDING_SIZE, seed)
      self.lstm = lstm.LSTM(self.EMBEDDING_SIZE, self.HIDDEN_SIZE, seed + 1)

  def __call__(self, instruction, use_cudnn=None):
    """Encodes word ids.

    Args:
      instruction: int32 `[N, L]`, word ids with trailing 0s as padding.
      use_cudnn: see `lstm.LSTM.unroll_fused`.

    Returns:
      float32 `[N, 64]`; zeros where the instruction is empty.
    """
    # One more padding word, so that there is a step to run when L = 0.
    ids = tf.pad(instruction, [[0, 0], [0, 1]])
    batch_size, num_slots = tf.unstack(tf.shape(ids))
    num_words = tf.reduce_max(
        tf.where(ids > 0, tf.range(1, num_slots + 1), 0), axis=1)  # [N]
    # Trailing padding cannot change earlier outputs, so the unroll needs
    # no masking and can take the fused path.
    outputs, _ = self.lstm.unroll_fused(
        self.embedding(tf.transpose(ids)),  # [L + 1, N, 20].
        self.lstm.initial_state(batch_size),
        use_cudnn)
    last_word_outputs = tf.gather_nd(
        outputs,
        tf.stack([tf.maximum(num_words - 1, 0), tf.range(batch_size)], 1))
    return last_word_outputs * tf.cast(num_words > 0, tf.float32)[:, None]


class Agent(tf.Module):
  """An IMPALA agent: `step` acts for a batch, `unroll` evaluates
  trajectories for the learner."""

  def __init__(self,
               num_actions,
               observation_shape,
               torso='shallow',
               core='lstm',
               use_instruction=False,
               normalize_frames=False,
               seed=0,
               name=None):
    """Builds every variable.

    Args:
      num_actions: A.
      observation_shape: (H, W, C) of the uint8 frames.
      torso: 'shallow' or 'deep'.
      core: 'lstm' (LSTM 256, the paper's DMLab agents) or 'feedforward'
        (the paper's Atari agents; the core state is then `()`).
      use_instruction: encode `EnvOutput.instruction` (DMLab language
        levels) and feed it to the core.
      normalize_frames: normalise frames / 255 by their running per-pixel
        statistics (`frame_normalizer`) before the torso.
      seed: initialisation seed.
      name: module name.
    """
    super().__init__(name=name)
    if torso not in TORSOS:
      raise ValueError(f'torso must be one of {TORSOS}, got {torso!r}')
    if core not in CORES:
      raise ValueError(f'core must be one of {CORES}, got {core!r}')
    self.num_actions = num_actions
    self.observation_shape = tuple(observation_shape)
    torso_class = ShallowTorso if torso == 'shallow' else DeepTorso
    with self.name_scope:
      self.frame_normalizer = (
          frame_normalizer.FrameNormalizer(observation_shape)
          if normalize_frames else None)
      self.torso = torso_class(observation_shape, seed)
      core_input_size = CORE_SIZE + 1 + num_actions  # Torso, reward, action.
      self.instruction_encoder = None
      if use_instruction:
        self.instruction_encoder = InstructionEncoder(seed + 200)
        core_input_size += InstructionEncoder.HIDDEN_SIZE
      self.core = None
      if core == 'lstm':
        self.core = lstm.LSTM(core_input_size, CORE_SIZE, seed + 300)
      head_size = CORE_SIZE if self.core else core_input_size
      self.policy = Linear(head_size, num_actions, seed + 400, name='policy')
      self.baseline = Linear(head_size, 1, seed + 401, name='baseline')

  def num_parameters(self):
    """The number of trainable weights."""
    return sum(v.shape.num_elements() for v in self.trainable_variables)

  @property
  def acting_variables(self):
    """What actors need from the learner: the weights, and the frame
    statistics when frames are normalised."""
    statistics = (self.frame_normalizer.variables
                  if self.frame_normalizer else ())
    return tuple(self.trainable_variables) + tuple(statistics)

  def initial_state(self, batch_size):
    """The core state before an episode: `LSTMState` of `[B, 256]`, or ()."""
    return self.core.initial_state(batch_size) if self.core else ()

  def core_inputs(self, last_actions, env_outputs, use_cudnn):
    """Per-frame core inputs: the torso's output (the first 256 columns),
    the clipped reward, the last action one-hot (and the instruction).

    Args:
      last_actions: int32 `[N]`.
      env_outputs: `EnvOutput` with fields `[N, ...]`.
      use_cudnn: for the instruction encoder; see `lstm.LSTM.unroll`.

    Returns:
      float32 `[N, 256 + 1 + A (+ 64 with instructions)]`.
    """
    if self.frame_normalizer:
      frames = self.frame_normalizer(env_outputs.frame)
    else:
      frames = _scaled(env_outputs.frame)
    inputs = [
        self.torso(frames),
        tf.clip_by_value(env_outputs.reward, -1.0, 1.0)[:, None],
        tf.one_hot(last_actions, self.num_actions),
    ]
    if self.instruction_encoder:
      inputs.append(
          self.instruction_encoder(env_outputs.instruction, use_cudnn))
    return tf.concat(inputs, axis=1)

  def _heads(self, core_outputs):
    """float32 `[N, F]` -> `AgentOutput` with fields `[N, ...]`."""
    logits = self.policy(core_outputs)
    baseline = tf.squeeze(self.baseline(core_outputs), axis=-1)
    action = tf.random.categorical(logits, 1, dtype=tf.int32)[:, 0]
    return AgentOutput(action=action, policy_logits=logits, baseline=baseline)

  def step(self, last_action, env_output, core_state, use_cudnn=None):
    """Acts for one batched time step.

    Args:
      last_action: int32 `[B]`, the action that led to `env_output`.
      env_output: `EnvOutput` with fields `[B, ...]`.
      core_state: the state after the previous step (or `initial_state`);
        reset here where `env_output.done`.
      use_cudnn: for the instruction encoder; see `lstm.LSTM.unroll`.

    Returns:
      (`AgentOutput`: action `[B]` sampled from the logits, policy_logits
      `[B, A]`, baseline `[B]`; the new core state).
    """
    core_inputs = self.core_inputs(last_action, env_output, use_cudnn)
    if not self.core:
      return self._heads(core_inputs), core_state
    core_state = lstm.reset_where_done(core_state, env_output.done)
    core_outputs, core_state = self.core.step(core_inputs, core_state)
    return self._heads(core_outputs), core_state

  def unroll(self, last_actions, env_outputs, core_state, use_cudnn=None):
    """The same as `step` T times, computed in bulk.

    The torso sees all T * B frames as one batch; the LSTM unrolls with
    resets where done (fused when none falls after t = 0 and cuDNN is used).

    Args:
      last_actions: int32 `[T, B]`, the actions that led to `env_outputs`.
      env_outputs: `EnvOutput` with fields `[T, B, ...]`.
      core_state: the core state before `env_outputs[0]`.
      use_cudnn: None to decide by `lstm.cudnn_usable`; True or False to
        force (see `lstm.LSTM.unroll`).

    Returns:
      `Unrolled`. The actions are sampled as in `step`; the learner uses
      only the logits and baselines.
    """
    num_steps, batch_size = tf.unstack(tf.shape(last_actions))

    def merge_time_and_batch(x):
      return tf.reshape(x, tf.concat([[num_steps * batch_size],
                                      tf.shape(x)[2:]], 0))

    def split_time_and_batch(x):
      return tf.reshape(x, tf.concat([[num_steps, batch_size],
                                      tf.shape(x)[1:]], 0))

    core_inputs = self.core_inputs(
        merge_time_and_batch(last_actions),
        tf.nest.map_structure(merge_time_and_batch, env_outputs), use_cudnn)
    core_outputs = core_inputs
    if self.core:
      core_outputs, core_state = self.core.unroll(
          split_time_and_batch(core_outputs), env_outputs.done, core_state,
          use_cudnn)
      core_outputs = merge_time_and_batch(core_outputs)
    outputs = tf.nest.map_structure(split_time_and_batch,
                                    self._heads(core_outputs))
    return Unrolled(outputs, core_state,
                    split_time_and_batch(core_inputs[:, :CORE_SIZE]))
