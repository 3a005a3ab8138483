"""The actor/learner interface over TensorFlow's RPC, for actors on other
processes or machines (`experiment.py --job_name=learner|actor`).

The learner serves three methods with `tf.distribute.experimental.rpc`:
- `send`: an actor's unroll (a `Trajectory` of N environments) and the games
  it finished; the unroll is split into N trajectories in a `FIFOQueue`, as
  the paper's learner queue, which blocks senders while it is full;
- `policy_version`: the learner's update count, and whether training ended;
- `weights_<k>`: the agent's trainable variables, in groups.

gRPC carries messages of at most 4 MiB, so unrolls travel in chunks of
environments and weights in groups of variables, each under
`MESSAGE_BYTES`.

`LearnerService` is the learner side (`receive`, `fill`, `close`), with the
local transport's methods; `RemoteTransport` the actor side (`send`,
`policy_version`), which also brings the actor's copy of the agent up to
date. An unreachable learner is retried with exponential backoff for a
bounded time, so actors outlive a learner restart; a learner notes actors
that fall silent and come back.
"""

import re
import threading
import time

import numpy as np
import tensorflow as tf
import tree

from impala_tf import agents
from impala_tf import environments
from impala_tf import trajectory as trajectory_lib
from impala_tf import transport as transport_lib

SEND_TIMEOUT_SECS = 20  # A full queue may hold a send this long.
CALL_TIMEOUT_SECS = 10  # Any other call.
MAX_BACKOFF_SECS = 8.0
GAMES_CAPACITY = 100_000  # Finished games waiting for the learner.
MESSAGE_BYTES = 3 * 2**20  # gRPC's limit is 4 MiB.


def weight_groups(variables):
  """Indices of `variables` in consecutive groups of at most
  `MESSAGE_BYTES` (a larger variable alone)."""
  groups, size = [[]], 0
  for index, variable in enumerate(variables):
    nbytes = variable.shape.num_elements() * variable.dtype.size
    if groups[-1] and size + nbytes > MESSAGE_BYTES:
      groups.append([])
      size = 0
    groups[-1].append(index)
    size += nbytes
  return groups


class Unreachable(Exception):
  """The learner did not answer within the retry budget."""


def unroll_spec(agent, unroll_length, frame_shape, instruction_length):
  """`tf.TensorSpec`s of an actor's unroll of any number N of environments.

  Args:
    agent: the `agents.Agent` acting (for its actions and core state).
    unroll_length: T.
    frame_shape: (H, W, C) of the uint8 frames.
    instruction_length: L of the instructions' word ids (0: none).

  Returns:
    A `Trajectory` of specs: level_name and policy_version `[N]`,
    agent_state `[N, ...]`, env_outputs and agent_outputs `[T + 1, N, ...]`.
  """
  steps = (unroll_length + 1, None)
  return trajectory_lib.Trajectory(
      level_name=tf.TensorSpec([None], tf.string),
      policy_version=tf.TensorSpec([None], tf.int64),
      agent_state=tf.nest.map_structure(
          lambda x: tf.TensorSpec((None,) + tuple(x.shape[1:]), x.dtype),
          agent.initial_state(1)),
      env_outputs=environments.EnvOutput(
          reward=tf.TensorSpec(steps, tf.float32),
          done=tf.TensorSpec(steps, tf.bool),
          frame=tf.TensorSpec(steps + tuple(frame_shape), tf.uint8),
          instruction=tf.TensorSpec(steps + (instruction_length,),
                                    tf.int32)),
      agent_outputs=agents.AgentOutput(
          action=tf.TensorSpec(steps, tf.int32),
          policy_logits=tf.TensorSpec(steps + (agent.num_actions,),
                                      tf.float32),
          baseline=tf.TensorSpec(steps, tf.float32)))


_GAME_SPECS = [tf.TensorSpec([None], tf.string),  # level_name
               tf.TensorSpec([None], tf.float32),  # episode_return
               tf.TensorSpec([None], tf.int64)]  # episode_frames


def _map_unroll(unroll, per_environment, per_step):
  """`per_environment` applied to an unroll's `[N, ...]` fields (level
  name, policy version, core state), `per_step` to its `[T + 1, N, ...]`
  ones (env and agent outputs); arrays, tensors or specs alike."""
  return trajectory_lib.Trajectory(
      level_name=per_environment(unroll.level_name),
      policy_version=per_environment(unroll.policy_version),
      agent_state=tree.map_structure(per_environment, unroll.agent_state),
      env_outputs=tree.map_structure(per_step, unroll.env_outputs),
      agent_outputs=tree.map_structure(per_step, unroll.agent_outputs))


def _batch_major(unroll):
  """[T + 1, N, ...] fields -> [N, T + 1, ...], to enqueue N trajectories."""
  return _map_unroll(
      unroll, lambda x: x,
      lambda x: tf.transpose(x, [1, 0] + list(range(2, x.shape.rank))))


class LearnerService:
  """The learner's side: serves actors over RPC, queues their trajectories.

  Methods as `transport.LocalTransport`'s learner side: `receive`, `fill`,
  `close`, `closed`.
  """

  def __init__(self, address, spec, capacity, variables, num_updates,
               actor_names, on_finished_game, print_fn=print,
               silence_secs=30.0):
    """
    Args:
      address: 'host:port' to serve on.
      spec: `unroll_spec` of the actors' unrolls.
      capacity: trajectories the queue holds.
      variables: the agent's trainable variables, in the actors' order.
      num_updates: int64 `tf.Variable`, the policy version.
      actor_names: {actor task index: name (its address)} of the actors
        this learner serves; an unroll names its sender by index.
      on_finished_game: called with each `environments.FinishedGame` the
        actors report (from the thread calling `receive`).
      print_fn: where actors falling silent or coming back are logged.
      silence_secs: an actor silent this long is logged as lost.

    Raises:
      ValueError: nothing can serve on `address`.
    """
    self._spec = spec
    self._capacity = capacity
    self._actor_names = dict(actor_names)
    self._on_finished_game = on_finished_game
    self._print = print_fn
    self._silence_secs = silence_secs
    self._closed = threading.Event()
    self._num_updates = num_updates
    self._variables = list(variables)
    self._make_queues(spec, capacity)
    self._server = self._serve(address, spec)
    self._monitor = threading.Thread(target=self._watch_actors, daemon=True,
                                     name='actor_monitor')
    self._monitor.start()

  def _make_queues(self, spec, capacity):
    """The trajectory queue, the finished games' queue, the actors' last
    contact times and the finished flag."""
    # Queue elements: one trajectory, the unroll's spec without N. Fields of
    # no elements (instructions of L = 0) stay out: TensorFlow's queues
    # crash on them.
    self._element_specs = [
        tf.TensorSpec(s.shape[1:], s.dtype)
        for s in tf.nest.flatten(_batch_major_spec(spec))]
    self._queued = [index for index, s in enumerate(self._element_specs)
                    if s.shape.num_elements() != 0]
    self._queue = tf.queue.FIFOQueue(
        capacity, [self._element_specs[i].dtype for i in self._queued],
        shapes=[self._element_specs[i].shape for i in self._queued])
    self._games = tf.queue.FIFOQueue(
        GAMES_CAPACITY, [s.dtype for s in _GAME_SPECS],
        shapes=[[], [], []])
    self._last_seen = tf.Variable(
        tf.zeros([max(self._actor_names, default=0) + 1], tf.float64))
    self._finished = tf.Variable(False)

  def _serve(self, address, spec):
    """Starts the RPC server with the actors' functions: `send`,
    `policy_version` and one `weights_<k>` per weight group."""
    flat_spec = tf.nest.flatten(spec)

    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)] + flat_spec +
                 _GAME_SPECS)
    def send(actor_index, *flat):
      unroll = tf.nest.pack_sequence_as(spec, flat[:len(flat_spec)])
      elements = tf.nest.flatten(_batch_major(unroll))
      self._queue.enqueue_many([elements[i] for i in self._queued])
      self._games.enqueue_many(list(flat[len(flat_spec):]))
      self._last_seen.scatter_nd_update([[actor_index]], [tf.timestamp()])
      return self._num_updates.read_value()

    @tf.function(input_signature=[])
    def policy_version():
      return self._num_updates.read_value(), self._finished.read_value()

    def weights(group):
      return tf.function(
          lambda: [self._variables[i].read_value() for i in group],
          input_signature=[])

    try:
      server = tf.distribute.experimental.rpc.Server.create('grpc', address)
    except (tf.errors.OpError, RuntimeError) as error:
      raise ValueError(f'cannot serve actors on {address}: '
                       f'{_first_line(error)}') from None
    server.register('send', send)
    server.register('policy_version', policy_version)
    for number, group in enumerate(weight_groups(self._variables)):
      server.register(f'weights_{number}', weights(group))
    server.start()
    return server

  def receive(self, count):
    """`count` trajectories (numpy, as `trajectory.split` gives), blocking
    until they came; also hands the reported games to `on_finished_game`."""
    try:
      queued = self._queue.dequeue_many(count)
    except (tf.errors.OutOfRangeError, tf.errors.CancelledError):
      raise transport_lib.Closed() from None
    flat = [np.zeros((count,) + tuple(s.shape), s.dtype.as_numpy_dtype)
            for s in self._element_specs]
    for index, value in zip(self._queued, queued):
      flat[index] = value.numpy()
    batch = tf.nest.pack_sequence_as(_batch_major_spec(self._spec), flat)
    self._report_games()
    return [
        tree.map_structure(lambda x, i=index: x[i], batch)._replace(
            level_name=batch.level_name[index].decode())
        for index in range(count)
    ]

  def _report_games(self):
    size = int(self._games.size())
    if not size:
      return
    levels, returns, frames = self._games.dequeue_many(size)
    for level, episode_return, episode_frames in zip(
        levels.numpy(), returns.numpy(), frames.numpy()):
      self._on_finished_game(environments.FinishedGame(
          level.decode(), float(episode_return), int(episode_frames), -1))

  def _watch_actors(self):
    """Logs actors that fell silent and those that came back."""
    lost = set()
    started = time.time()
    while not self._closed.wait(1.0):
      now = time.time()
      last_seen = self._last_seen.numpy()
      for index, address in self._actor_names.items():
        silent = now - (last_seen[index] or started)
        name = f'actor {index} ({address})'
        if silent > self._silence_secs and index not in lost:
          lost.add(index)
          self._print(f'{name}: nothing received for {silent:.0f} s; '
                      'training goes on with the others.')
        elif silent <= self._silence_secs and index in lost:
          lost.discard(index)
          self._print(f'{name}: sending again.')

  def fill(self):
    return int(self._queue.size()) / self._capacity

  def finish(self):
    """Tells actors that training ended (they stop at their next poll)."""
    self._finished.assign(True)

  def close(self):
    """Wakes a blocked `receive` with `Closed`; actors' sends fail."""
    if not self._closed.is_set():
      self._closed.set()
      self._queue.close(cancel_pending_enqueues=True)

  @property
  def closed(self):
    return self._closed.is_set()


def _batch_major_spec(spec):
  """`_batch_major` of an unroll's specs."""
  return _map_unroll(
      spec, lambda s: s,
      lambda s: tf.TensorSpec((s.shape[1], s.shape[0]) + tuple(s.shape[2:]),
                              s.dtype))


def _environments(unroll, start, stop):
  """Environments [start, stop) of an unroll `Trajectory`."""
  return _map_unroll(unroll, lambda x: x[start:stop],
                     lambda x: x[:, start:stop])


def _first_line(error):
  """An error's first line, without TensorFlow's {{function_node ...}}."""
  message = re.sub(r'\{\{[^}]*\}\}\s*', '',
                   getattr(error, 'message', None) or str(error)).strip()
  return message.splitlines()[0] if message else repr(error)


class RemoteTransport:
  """The actor's side: sends unrolls to a learner, keeps `variables` (the
  actor's copy of the agent) at the learner's newest weights.

  Methods as `transport.LocalTransport`'s actor side: `send`,
  `policy_version`, `close`, `closed`. Thread-safe.
  """

  def __init__(self, address, actor_index, spec, variables,
               connect_timeout_secs, print_fn=print):
    """
    Args:
      address: the learner's 'host:port'.
      actor_index: this actor task's index in the cluster.
      spec: `unroll_spec` of this actor's unrolls.
      variables: the actor's agent's trainable variables.
      connect_timeout_secs: how long an unreachable learner is retried
        before `Unreachable` is raised.
      print_fn: where retries and reconnections are logged.
    """
    self._address = address
    self._actor_index = actor_index
    self._spec = spec
    self._variables = list(variables)
    self._connect_timeout = connect_timeout_secs
    self._print = print_fn
    self._closed = threading.Event()
    self._lock = threading.Lock()
    self._client_lock = threading.Lock()
    self._client = None
    self._version = -1
    self._games = []
    self.steps_sent = 0  # Agent steps of every environment sent so far.

  def add_game(self, game):
    """Queues an `environments.FinishedGame` for the next `send`."""
    with self._lock:
      self._games.append(game)

  def policy_version(self):
    """Fetches the learner's weights when they changed; returns their
    update count. Raises `Closed` once the learner finished training."""
    version, finished = self._call(
        'policy_version',
        [], [tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.bool)],
        CALL_TIMEOUT_SECS)
    if bool(finished):
      self.close()
      raise transport_lib.Closed()
    version = int(version)
    with self._lock:
      if version != self._version:
        for number, group in enumerate(weight_groups(self._variables)):
          values = self._call(
              f'weights_{number}', [],
              [tf.TensorSpec(self._variables[i].shape,
                             self._variables[i].dtype) for i in group],
              CALL_TIMEOUT_SECS)
          for index, value in zip(group, values):
            self._variables[index].assign(value)
        self._version = version
    return version

  def send(self, unroll):
    """Sends an unroll `Trajectory` `[T + 1, N]` and the finished games.

    A send that times out (learner gone or its queue full for
    `SEND_TIMEOUT_SECS`) is dropped, not repeated: the learner may already
    hold it. The next `policy_version` call finds out which.
    """
    with self._lock:
      games, self._games = self._games, []
    num_envs = len(unroll.level_name)
    env_bytes = sum(np.asarray(x).nbytes
                    for x in tf.nest.flatten(unroll)) // num_envs
    chunk = max(1, MESSAGE_BYTES // max(env_bytes, 1))
    for start in range(0, num_envs, chunk):
      part = _environments(unroll, start, start + chunk)
      self._send_part(part, games if start == 0 else [])

  def _send_part(self, unroll, games):
    game_tensors = [
        tf.constant([g.level_name for g in games], tf.string),
        tf.constant([g.episode_return for g in games], tf.float32),
        tf.constant([g.episode_frames for g in games], tf.int64),
    ]
    args = ([tf.constant(self._actor_index, tf.int32)] +
            [tf.convert_to_tensor(x) for x in tf.nest.flatten(unroll)] +
            game_tensors)
    if self._call('send', args, tf.TensorSpec([], tf.int64),
                  SEND_TIMEOUT_SECS, retry=False) is not None:
      with self._lock:
        self.steps_sent += int(unroll.env_outputs.reward.size) - len(
            unroll.level_name)  # T steps per environment.

  def _call(self, method, args, output_specs, timeout_secs, retry=True):
    """Calls `method`, retrying with backoff until the budget is spent."""
    started = time.monotonic()
    delay = 0.5
    failures = 0
    # Several tries fit in any budget.
    timeout_ms = int(1000 * min(timeout_secs,
                                max(1.0, self._connect_timeout / 4)))
    while True:
      if self._closed.is_set():
        raise transport_lib.Closed()
      error = None
      try:
        with self._client_lock:  # Concurrent creation crashes TF.
          if self._client is None:
            self._client = tf.distribute.experimental.rpc.Client.create(
                'grpc', self._address, timeout_in_ms=timeout_ms)
        result = self._client.call(method, args, output_specs,
                                   timeout_in_ms=timeout_ms)
        if result.is_ok():
          if failures:
            self._print(f'actor {self._actor_index}: learner '
                        f'{self._address} answers again.')
          return result.get_value()
        error = _first_line(result.get_error()[1].numpy().decode())
      except tf.errors.OpError as op_error:
        error = _first_line(op_error)
      if not retry:
        self._print(f'actor {self._actor_index}: an unroll was dropped: '
                    f'{method} to {self._address} failed ({error}).')
        return None
      failures += 1
      spent = time.monotonic() - started
      if spent + delay > self._connect_timeout:
        raise Unreachable(
            f'learner {self._address} unreachable for {spent:.0f} s '
            f'({failures} tr{"ies" if failures > 1 else "y"}; last: '
            f'{error}); is it running?')
      self._print(f'actor {self._actor_index}: learner {self._address} '
                  f'unreachable ({error}); retry {failures} in {delay:.1f} s.')
      if self._closed.wait(delay):
        raise transport_lib.Closed()
      delay = min(2 * delay, MAX_BACKOFF_SECS)

  @property
  def version(self):
    """The learner update of the acting weights; -1 before the first."""
    return self._version

  def close(self):
    self._closed.set()

  @property
  def closed(self):
    return self._closed.is_set()
