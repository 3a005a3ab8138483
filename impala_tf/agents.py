"""The paper's agents (Figure 3): shallow or deep torso, optional instruction
encoder, LSTM or feed-forward core, policy and baseline heads.

Plain `tf.Module`s and `tf.Variable`s (no Keras; see the README). Shapes: T
unroll length, B batch, (H, W, C) frame, L instruction words, A actions.
"""

import collections

import tensorflow as tf

from impala_tf import lstm

EnvOutput = collections.namedtuple(
    'EnvOutput',
    [
        'reward',  # float32 [...]: reward of the step that led here.
        'done',  # bool [...]: True on the first observation of an episode.
        'frame',  # uint8 [..., H, W, C].
        'instruction',  # int32 [..., L]: word ids, 0 is padding (L may be 0).
    ])

AgentOutput = collections.namedtuple('AgentOutput',
                                     'action policy_logits baseline')

TORSOS = ('shallow', 'deep')
CORES = ('lstm', 'feedforward')
INSTRUCTION_HASH_BUCKETS = 1000  # As the official code.
CORE_SIZE = 256


def encode_instruction(instructions, max_words):
  """Hashes instruction strings into padded word ids.

  Args:
    instructions: string `[B]`; words separated by spaces, '' for none.
    max_words: L; longer instructions are truncated.

  Returns:
    int32 `[B, L]`: ids in [1, 1000], 0 for padding.
  """
  words = tf.strings.split(instructions)
  ids = tf.strings.to_hash_bucket_fast(words, INSTRUCTION_HASH_BUCKETS) + 1
  ids = ids.to_tensor(default_value=0, shape=[None, max_words])
  return tf.cast(ids, tf.int32)


class Linear(tf.Module):

  def __init__(self, input_size, output_size, seed, name='linear'):
    super().__init__(name=name)
    limit = (6.0 / (input_size + output_size))**0.5
    with self.name_scope:
      self.w = tf.Variable(
          tf.random.stateless_uniform([input_size, output_size], [seed, 0],
                                      -limit, limit), name='w')
      self.b = tf.Variable(tf.zeros([output_size]), name='b')

  def __call__(self, x):
    return tf.matmul(x, self.w) + self.b


class Conv2D(tf.Module):

  def __init__(self, in_channels, out_channels, kernel_size, stride, padding,
               seed, name='conv'):
    super().__init__(name=name)
    self._stride = stride
    self._padding = padding
    fan_in = kernel_size * kernel_size * in_channels
    fan_out = kernel_size * kernel_size * out_channels
    limit = (6.0 / (fan_in + fan_out))**0.5
    with self.name_scope:
      self.w = tf.Variable(
          tf.random.stateless_uniform(
              [kernel_size, kernel_size, in_channels, out_channels],
              [seed, 0], -limit, limit), name='w')
      self.b = tf.Variable(tf.zeros([out_channels]), name='b')

  def __call__(self, x):
    return tf.nn.conv2d(x, self.w, self._stride, self._padding) + self.b

  def output_size(self, height, width):
    """The spatial size of the output for VALID padding."""
    kernel_size = self.w.shape[0]
    return ((height - kernel_size) // self._stride + 1,
            (width - kernel_size) // self._stride + 1)


class ShallowTorso(tf.Module):
  """Figure 3, left: conv 8x8/4 (16), conv 4x4/2 (32), FC 256, all ReLU."""

  def __init__(self, observation_shape, seed, name='shallow_torso'):
    super().__init__(name=name)
    height, width, channels = observation_shape
    with self.name_scope:
      self.conv1 = Conv2D(channels, 16, 8, 4, 'VALID', seed)
      height, width = self.conv1.output_size(height, width)
      self.conv2 = Conv2D(16, 32, 4, 2, 'VALID', seed + 1)
      height, width = self.conv2.output_size(height, width)
      self.fc = Linear(height * width * 32, CORE_SIZE, seed + 2)

  def __call__(self, frames):
    """float32 `[N, H, W, C]` -> `[N, 256]`."""
    x = tf.nn.relu(self.conv1(frames))
    x = tf.nn.relu(self.conv2(x))
    return tf.nn.relu(self.fc(tf.reshape(x, [tf.shape(x)[0], -1])))


class DeepTorso(tf.Module):
  """Figure 3, right: 3 stacks (16, 32, 32 channels) of conv 3x3, max-pool
  3x3/2 and 2 residual blocks; then ReLU and FC 256, ReLU (15 conv layers)."""

  def __init__(self, observation_shape, seed, name='deep_torso'):
    super().__init__(name=name)
    height, width, channels = observation_shape
    self.stacks = []
    with self.name_scope:
      for stack_index, out_channels in enumerate((16, 32, 32)):
        stack_seed = seed + 10 * stack_index
        self.stacks.append({
            'conv': Conv2D(channels, out_channels, 3, 1, 'SAME', stack_seed),
            'residual': [
                (Conv2D(out_channels, out_channels, 3, 1, 'SAME',
                        stack_seed + 1 + 2 * block),
                 Conv2D(out_channels, out_channels, 3, 1, 'SAME',
                        stack_seed + 2 + 2 * block)) for block in range(2)
            ],
        })
        channels = out_channels
        height, width = -(-height // 2), -(-width // 2)  # The SAME max-pool.
      self.fc = Linear(height * width * channels, CORE_SIZE, seed + 100)

  def __call__(self, frames):
    """float32 `[N, H, W, C]` -> `[N, 256]`."""
    x = frames
    for stack in self.stacks:
      x = stack['conv'](x)
      x = tf.nn.max_pool2d(x, 3, 2, 'SAME')
      for first, second in stack['residual']:
        x += second(tf.nn.relu(first(tf.nn.relu(x))))
    x = tf.nn.relu(x)
    return tf.nn.relu(self.fc(tf.reshape(x, [tf.shape(x)[0], -1])))


class InstructionEncoder(tf.Module):
  """Embedding 20 and LSTM 64 over the words; the output at the last word."""

  EMBEDDING_SIZE = 20
  HIDDEN_SIZE = 64

  def __init__(self, seed, name='instruction_encoder'):
    super().__init__(name=name)
    with self.name_scope:
      # Row 0 is padding and never read: padded steps are masked below.
      self.embedding = tf.Variable(
          tf.random.stateless_normal(
              [INSTRUCTION_HASH_BUCKETS + 1, self.EMBEDDING_SIZE], [seed, 0]),
          name='embedding')
      self.lstm = lstm.LSTM(self.EMBEDDING_SIZE, self.HIDDEN_SIZE, seed + 1)

  def __call__(self, instruction):
    """int32 `[N, L]` word ids -> float32 `[N, 64]` (zeros when empty)."""
    batch_size = tf.shape(instruction)[0]
    if instruction.shape[1] == 0:
      return tf.zeros([batch_size, self.HIDDEN_SIZE])
    words = tf.nn.embedding_lookup(self.embedding,
                                   tf.transpose(instruction))  # [L, N, 20]
    is_word = tf.transpose(instruction) > 0

    def body(state, step_inputs):
      words_t, is_word_t = step_inputs
      _, new_state = self.lstm.step(words_t, state)
      # Padding leaves the state as it was, so the final state belongs to
      # the last word, and stays zero for an empty instruction.
      return tf.nest.map_structure(
          lambda new, old: tf.where(is_word_t[:, None], new, old), new_state,
          state)

    final_state = tf.foldl(body, (words, is_word),
                           initializer=self.lstm.initial_state(batch_size))
    return final_state.h


class Agent(tf.Module):
  """An IMPALA agent; `step` acts for a batch, `unroll` evaluates trajectories.
  """

  def __init__(self,
               num_actions,
               observation_shape,
               torso='shallow',
               core='lstm',
               use_instruction=False,
               seed=0,
               name='agent'):
    """Builds every variable.

    Args:
      num_actions: A.
      observation_shape: (H, W, C) of the uint8 frames.
      torso: 'shallow' or 'deep'.
      core: 'lstm' (LSTM 256, the paper's DMLab agents) or 'feedforward'
        (the paper's Atari agents).
      use_instruction: encode `EnvOutput.instruction` (DMLab language levels).
      seed: initialisation seed.
      name: module name.
    """
    super().__init__(name=name)
    if torso not in TORSOS:
      raise ValueError(f'torso must be one of {TORSOS}, got {torso!r}')
    if core not in CORES:
      raise ValueError(f'core must be one of {CORES}, got {core!r}')
    self.num_actions = num_actions
    self._use_instruction = use_instruction
    torso_class = ShallowTorso if torso == 'shallow' else DeepTorso
    with self.name_scope:
      self.torso = torso_class(observation_shape, seed)
      features = CORE_SIZE + 1 + num_actions  # Torso, reward, last action.
      if use_instruction:
        self.instruction_encoder = InstructionEncoder(seed + 200)
        features += InstructionEncoder.HIDDEN_SIZE
      self.core = (
          lstm.LSTM(features, CORE_SIZE, seed + 300) if core == 'lstm' else
          None)
      head_size = CORE_SIZE if self.core else features
      self.policy = Linear(head_size, num_actions, seed + 400, name='policy')
      self.baseline = Linear(head_size, 1, seed + 401, name='baseline')

  def num_parameters(self):
    return sum(v.shape.num_elements() for v in self.trainable_variables)

  def initial_state(self, batch_size):
    """The core state before an episode: `LSTMState` `[B, 256]` or ()."""
    return self.core.initial_state(batch_size) if self.core else ()

  def _features(self, last_actions, env_outputs):
    """Core inputs for N = any number of steps: `[N, ...]` -> `[N, F]`."""
    frames = tf.cast(env_outputs.frame, tf.float32) / 255.0
    features = [
        self.torso(frames),
        tf.clip_by_value(env_outputs.reward, -1.0, 1.0)[:, None],
        tf.one_hot(last_actions, self.num_actions),
    ]
    if self._use_instruction:
      features.append(self.instruction_encoder(env_outputs.instruction))
    return tf.concat(features, axis=1)

  def _heads(self, core_outputs):
    logits = self.policy(core_outputs)
    baseline = tf.squeeze(self.baseline(core_outputs), axis=-1)
    action = tf.random.categorical(logits, 1, dtype=tf.int32)[:, 0]
    return AgentOutput(action=action, policy_logits=logits, baseline=baseline)

  def step(self, last_action, env_output, core_state):
    """Acts for one batched time step.

    Args:
      last_action: int32 `[B]`, the action that led to `env_output`.
      env_output: `EnvOutput` with fields `[B, ...]`.
      core_state: the state from the previous step (or `initial_state`).

    Returns:
      (`AgentOutput` with a sampled action `[B]`, logits `[B, A]`, baseline
      `[B]`; the new core state). The state is reset where `done`.
    """
    features = self._features(last_action, env_output)
    if self.core:
      core_state = lstm.reset_where_done(core_state, env_output.done)
      features, core_state = self.core.step(features, core_state)
    return self._heads(features), core_state

  def unroll(self, last_actions, env_outputs, core_state, use_cudnn=False):
    """Evaluates a trajectory; the same as `step` T times, done in bulk.

    Args:
      last_actions: int32 `[T, B]`, the actions that led to `env_outputs`.
      env_outputs: `EnvOutput` with fields `[T, B, ...]`.
      core_state: the core state before `env_outputs[0]`.
      use_cudnn: see `lstm.LSTM.unroll`.

    Returns:
      (`AgentOutput` with fields `[T, B, ...]` (actions sampled), final core
      state).
    """
    num_steps, batch_size = tf.unstack(tf.shape(last_actions))

    def merge_time_and_batch(x):
      return tf.reshape(x, tf.concat([[num_steps * batch_size],
                                      tf.shape(x)[2:]], 0))

    # The torso sees all T * B frames as one batch.
    features = self._features(
        merge_time_and_batch(last_actions),
        tf.nest.map_structure(merge_time_and_batch, env_outputs))
    features = tf.reshape(features, [num_steps, batch_size, -1])
    if self.core:
      features, core_state = self.core.unroll(features, env_outputs.done,
                                              core_state, use_cudnn)
    outputs = self._heads(tf.reshape(features, [num_steps * batch_size, -1]))
    outputs = tf.nest.map_structure(
        lambda x: tf.reshape(
            x, tf.concat([[num_steps, batch_size], tf.shape(x)[1:]], 0)),
        outputs)
    return outputs, core_state
