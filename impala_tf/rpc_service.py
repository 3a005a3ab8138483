"""The learner's side of the transport over TensorFlow's RPC, for actors on
other processes or machines (`experiment.py --job_name=learner`).

`LearnerService` serves `rpc_protocol`'s methods to the actors and splits
each unroll they send into trajectories in a `FIFOQueue`, as the paper's
learner queue, which blocks senders while it is full. It notes actors that
fall silent and come back.
"""

import threading
import time

import numpy as np
import tensorflow as tf
import tree

from impala_tf import environments
from impala_tf import rpc_protocol
from impala_tf import trajectory as trajectory_lib
from impala_tf import transport as transport_lib

GAMES_CAPACITY = 100_000  # Finished games waiting for the learner.
FINISH_GRACE_SECS = 3  # A finished learner still answers actors this long.


def _batch_major(unroll):
  """[T + 1, N, ...] fields -> [N, T + 1, ...], to enqueue N trajectories."""
  return trajectory_lib.map_unroll(
      unroll, lambda x: x,
      lambda x: tf.transpose(x, [1, 0] + list(range(2, x.shape.rank))))


def _batch_major_spec(spec):
  """`_batch_major` of an unroll's specs."""
  return trajectory_lib.map_unroll(
      spec, lambda s: s,
      lambda s: tf.TensorSpec((s.shape[1], s.shape[0]) + tuple(s.shape[2:]),
                              s.dtype))


class LearnerService(transport_lib.LearnerSide):
  """Serves actors over RPC and queues their trajectories."""

  def __init__(self, address, spec, capacity, variables, num_updates,
               actor_names, on_finished_game, print_fn=print,
               silence_secs=30.0):
    """
    Args:
      address: 'host:port' to serve on.
      spec: `trajectory.unroll_spec` of the actors' unrolls.
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
    self._on_finished_game = on_finished_game
    self._closed = threading.Event()
    self._num_updates = num_updates
    self._variables = list(variables)
    self._finished = tf.Variable(False)
    self._make_queues(spec, capacity)
    self._actors = _ActorWatch(actor_names, print_fn, silence_secs,
                               self._closed)
    self._server = self._serve(address, spec)
    self._actors.start()

  def _make_queues(self, spec, capacity):
    """The trajectory queue and the finished games' queue."""
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
        GAMES_CAPACITY, [s.dtype for s in rpc_protocol.GAME_SPECS],
        shapes=[[], [], []])

  def _serve(self, address, spec):
    """Starts the RPC server with the actors' functions: `send`,
    `policy_version` and one `weights_<k>` per weight group."""
    flat_spec = tf.nest.flatten(spec)

    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)] + flat_spec +
                 rpc_protocol.GAME_SPECS)
    def send(actor_index, *flat):
      unroll = tf.nest.pack_sequence_as(spec, flat[:len(flat_spec)])
      elements = tf.nest.flatten(_batch_major(unroll))
      self._queue.enqueue_many([elements[i] for i in self._queued])
      self._games.enqueue_many(list(flat[len(flat_spec):]))
      self._actors.last_seen.scatter_nd_update([[actor_index]],
                                               [tf.timestamp()])
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
                       f'{rpc_protocol.first_line(error)}') from None
    server.register('send', send)
    server.register('policy_version', policy_version)
    for number, group in enumerate(
        rpc_protocol.weight_groups(self._variables)):
      server.register(f'weights_{number}', weights(group))
    server.start()
    return server

  def receive(self, count):
    """Also hands the games the actors reported to `on_finished_game`."""
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

  def fill(self):
    return int(self._queue.size()) / self._capacity

  def finish(self):
    """Actors hear it at their next `policy_version` call, which this
    service answers `FINISH_GRACE_SECS` longer."""
    self._finished.assign(True)
    time.sleep(FINISH_GRACE_SECS)

  def close(self):
    """Wakes a blocked `receive` with `Closed`; actors' sends fail."""
    if not self._closed.is_set():
      self._closed.set()
      self._queue.close(cancel_pending_enqueues=True)

  @property
  def closed(self):
    return self._closed.is_set()


class _ActorWatch:
  """Logs the actors that fell silent and those that came back, from
  `start` until `closed` (a `threading.Event`) is set."""

  def __init__(self, actor_names, print_fn, silence_secs, closed):
    self._actor_names = dict(actor_names)
    self._print = print_fn
    self._silence_secs = silence_secs
    self._closed = closed
    # Each actor's last send (seconds since the epoch; 0: none yet), which
    # the service's `send` writes.
    self.last_seen = tf.Variable(
        tf.zeros([max(self._actor_names, default=0) + 1], tf.float64))

  def start(self):
    threading.Thread(target=self._watch, daemon=True,
                     name='actor_monitor').start()

  def _watch(self):
    lost = set()
    started = time.time()
    while not self._closed.wait(1.0):
      now = time.time()
      last_seen = self.last_seen.numpy()
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
