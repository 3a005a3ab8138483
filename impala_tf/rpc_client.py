"""The actors' side of the transport over TensorFlow's RPC
(`experiment.py --job_name=actor`): calls `rpc_protocol`'s methods on a
learner's `rpc_service`.

An unreachable learner is retried with exponential backoff for a bounded
time, so that actors outlive a learner restart.
"""

import threading
import time

import numpy as np
import tensorflow as tf

from impala_tf import rpc_protocol
from impala_tf import trajectory as trajectory_lib
from impala_tf import transport as transport_lib

SEND_TIMEOUT_SECS = 20  # A full queue may hold a send this long.
CALL_TIMEOUT_SECS = 10  # Any other call.
MAX_BACKOFF_SECS = 8.0


class Unreachable(Exception):
  """The learner did not answer within the retry budget."""


class RemoteTransport(transport_lib.ActorSide):
  """Sends unrolls to a learner, keeps `variables` (the actor's copy of
  the agent) at the learner's newest weights. Thread-safe."""

  def __init__(self, address, actor_index, variables, connect_timeout_secs,
               print_fn=print):
    """
    Args:
      address: the learner's 'host:port'.
      actor_index: this actor task's index in the cluster.
      variables: the actor's agent's trainable variables.
      connect_timeout_secs: how long an unreachable learner is retried
        before `Unreachable` is raised.
      print_fn: where retries and reconnections are logged.
    """
    self._actor_index = actor_index
    self._variables = list(variables)
    self._connection = _Connection(address, actor_index, connect_timeout_secs,
                                   print_fn)
    self._lock = threading.Lock()
    self._version = -1
    self._games = []
    self.steps_sent = 0  # Agent steps of every environment sent so far.

  def add_game(self, game):
    """Queues an `environments.FinishedGame` for the next `send`."""
    with self._lock:
      self._games.append(game)

  def policy_version(self):
    """Fetches the learner's weights when they changed."""
    version, finished = self._connection.call(
        'policy_version',
        [], [tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.bool)],
        CALL_TIMEOUT_SECS)
    if bool(finished):
      self.close()
      raise transport_lib.Closed()
    version = int(version)
    with self._lock:
      if version != self._version:
        self._fetch_weights()
        self._version = version
    return version

  def _fetch_weights(self):
    for number, group in enumerate(
        rpc_protocol.weight_groups(self._variables)):
      values = self._connection.call(
          f'weights_{number}', [],
          [tf.TensorSpec(self._variables[i].shape, self._variables[i].dtype)
           for i in group],
          CALL_TIMEOUT_SECS)
      for index, value in zip(group, values):
        self._variables[index].assign(value)

  def send(self, unroll):
    """Sends the unroll with the finished games, in chunks of environments.

    A send that times out (learner gone or its queue full for
    `SEND_TIMEOUT_SECS`) is dropped, not repeated: the learner may already
    hold it. The next `policy_version` call finds out which.
    """
    with self._lock:
      games, self._games = self._games, []
    num_envs = len(unroll.level_name)
    env_bytes = sum(np.asarray(x).nbytes
                    for x in tf.nest.flatten(unroll)) // num_envs
    chunk = max(1, rpc_protocol.MESSAGE_BYTES // max(env_bytes, 1))
    for start in range(0, num_envs, chunk):
      part = trajectory_lib.map_unroll(
          unroll, lambda x, s=start: x[s:s + chunk],
          lambda x, s=start: x[:, s:s + chunk])
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
    if self._connection.call('send', args, tf.TensorSpec([], tf.int64),
                             SEND_TIMEOUT_SECS, retry=False) is not None:
      with self._lock:
        self.steps_sent += int(unroll.env_outputs.reward.size) - len(
            unroll.level_name)  # T steps per environment.

  @property
  def version(self):
    """The learner update of the acting weights; -1 before the first."""
    return self._version

  def close(self):
    self._connection.closed.set()

  @property
  def closed(self):
    return self._connection.closed.is_set()


class _Connection:
  """Calls to a learner, retried with backoff; `closed` (a
  `threading.Event`) ends them with `transport.Closed`."""

  def __init__(self, address, actor_index, connect_timeout_secs, print_fn):
    self._address = address
    self._actor_index = actor_index
    self._connect_timeout = connect_timeout_secs
    self._print = print_fn
    self.closed = threading.Event()
    self._lock = threading.Lock()
    self._client = None

  def call(self, method, args, output_specs, timeout_secs, retry=True):
    """`method`'s value, retried until the budget is spent (then
    `Unreachable`); without `retry`, None when the one try failed."""
    started = time.monotonic()
    delay = 0.5
    failures = 0
    # Several tries fit in any budget.
    timeout_ms = int(1000 * min(timeout_secs,
                                max(1.0, self._connect_timeout / 4)))
    while True:
      if self.closed.is_set():
        raise transport_lib.Closed()
      answered, value = self._try(method, args, output_specs, timeout_ms)
      if answered:
        if failures:
          self._print(f'actor {self._actor_index}: learner '
                      f'{self._address} answers again.')
        return value
      if not retry:
        self._print(f'actor {self._actor_index}: an unroll was dropped: '
                    f'{method} to {self._address} failed ({value}).')
        return None
      failures += 1
      spent = time.monotonic() - started
      if spent + delay > self._connect_timeout:
        raise Unreachable(
            f'learner {self._address} unreachable for {spent:.0f} s '
            f'({failures} tr{"ies" if failures > 1 else "y"}; last: '
            f'{value}); is it running?')
      self._print(f'actor {self._actor_index}: learner {self._address} '
                  f'unreachable ({value}); retry {failures} in {delay:.1f} s.')
      if self.closed.wait(delay):
        raise transport_lib.Closed()
      delay = min(2 * delay, MAX_BACKOFF_SECS)

  def _try(self, method, args, output_specs, timeout_ms):
    """(True, the value), or (False, the error's first line)."""
    try:
      with self._lock:  # Concurrent creation crashes TF.
        if self._client is None:
          self._client = tf.distribute.experimental.rpc.Client.create(
              'grpc', self._address, timeout_in_ms=timeout_ms)
      result = self._client.call(method, args, output_specs,
                                 timeout_in_ms=timeout_ms)
      if result.is_ok():
        return True, result.get_value()
      return False, rpc_protocol.first_line(
          result.get_error()[1].numpy().decode())
    except tf.errors.OpError as error:
      return False, rpc_protocol.first_line(error)
