"""The one interface between actors and the learner.

Actors call `policy_version` before each unroll, to bring their weights up
to date and learn which learner update they come from, and `send` with each
unroll; the learner calls `receive`. Here both sides live in one process: a
bounded queue, and weights that actors read straight from the learner's
variables (as the paper's single-machine setup). `rpc_transport` puts
TensorFlow's RPC behind the same methods.
"""

import queue
import threading

from impala_tf import trajectory as trajectory_lib


class Closed(Exception):
  """The transport was closed: the run is stopping."""


class LocalTransport:
  """A bounded trajectory queue between threads of one process."""

  POLL_SECONDS = 0.1  # How often blocked calls look for `close`.

  def __init__(self, capacity, policy_version):
    """Args: capacity: trajectories held at most; policy_version: a
    callable returning the learner's update count."""
    self._queue = queue.Queue(maxsize=capacity)
    self._policy_version = policy_version
    self._closed = threading.Event()

  def send(self, unroll):
    """Actor side: queues the N trajectories of an unroll `[T + 1, N]`,
    blocking while the queue is full."""
    for trajectory in trajectory_lib.split(unroll):
      while True:
        if self._closed.is_set():
          raise Closed()
        try:
          self._queue.put(trajectory, timeout=self.POLL_SECONDS)
          break
        except queue.Full:
          pass

  def policy_version(self):
    """Actor side: the learner update the acting weights come from (here
    the learner's own variables: always the newest)."""
    return int(self._policy_version())

  def receive(self, count):
    """Learner side: `count` trajectories, blocking until they came."""
    trajectories = []
    while len(trajectories) < count:
      if self._closed.is_set():
        raise Closed()
      try:
        trajectories.append(self._queue.get(timeout=self.POLL_SECONDS))
      except queue.Empty:
        pass
    return trajectories

  def fill(self):
    """The fraction of the queue in use, for summaries."""
    return self._queue.qsize() / self._queue.maxsize

  def close(self):
    """Wakes every blocked caller with `Closed`."""
    self._closed.set()

  @property
  def closed(self):
    return self._closed.is_set()
