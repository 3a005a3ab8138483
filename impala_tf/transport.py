"""The one interface between actors and the learner.

`ActorSide` is what actors call: `policy_version` before each unroll, to
bring their weights up to date and learn which learner update they come
from, and `send` with the unroll. `LearnerSide` is what the learner calls:
`receive` for each batch (its staging area), `fill` for its summaries, and
`finish` and `close` when it stops. Either side's `close` wakes its blocked
calls with `Closed`.

The implementations: `LocalTransport` here, both sides in one process (a
bounded queue, and weights that actors read straight from the learner's
variables, as the paper's single-machine setup); `rpc_service.LearnerService`
and `rpc_client.RemoteTransport`, the two sides over TensorFlow's RPC;
`replay.ReplayTransport`, a learner side that replays part of each batch.
"""

import abc
import queue
import threading

from impala_tf import trajectory as trajectory_lib


class Closed(Exception):
  """The transport was closed: the run is stopping."""


class Endpoint(abc.ABC):
  """What both sides have."""

  @abc.abstractmethod
  def close(self):
    """Ends this side: blocked and later calls raise `Closed`."""

  @property
  @abc.abstractmethod
  def closed(self):
    """Whether this side was closed (bool)."""


class ActorSide(Endpoint):
  """The actors' side of a transport."""

  @abc.abstractmethod
  def policy_version(self):
    """Brings the acting weights up to date where they are a copy; returns
    the learner update they come from (int). Raises `Closed` once training
    ended."""

  @abc.abstractmethod
  def send(self, unroll):
    """Hands an unroll to the learner: a `trajectory.Trajectory` of N
    environments (numpy), level_name, policy_version and replayed (False)
    `[N]`, agent_state `[N, ...]`, env_outputs and agent_outputs
    `[T + 1, N, ...]`. May block while the learner's queue is full; raises
    `Closed`."""


class LearnerSide(Endpoint):
  """The learner's side of a transport."""

  @abc.abstractmethod
  def receive(self, count):
    """`count` trajectories, blocking until they came: a list of
    `trajectory.Trajectory` without the batch dimension (numpy), as
    `trajectory.split` gives: level_name str, policy_version int64,
    replayed bool, agent_state `[...]`, env_outputs and agent_outputs
    `[T + 1, ...]`. Raises `Closed`."""

  @abc.abstractmethod
  def fill(self):
    """The fraction of the trajectory queue in use, in [0, 1]."""

  @abc.abstractmethod
  def finish(self):
    """Tells the actors that training ended (not merely stopped, to be
    resumed), so that they stop; returns once they could hear it."""


class LocalTransport(ActorSide, LearnerSide):
  """Both sides in one process: a bounded trajectory queue between
  threads."""

  POLL_SECONDS = 0.1  # How often blocked calls look for `close`.

  def __init__(self, capacity, policy_version):
    """Args: capacity: trajectories held at most; policy_version: a
    callable returning the learner's update count."""
    self._queue = queue.Queue(maxsize=capacity)
    self._policy_version = policy_version
    self._closed = threading.Event()

  def send(self, unroll):
    """Queues the unroll's N trajectories, blocking while the queue is
    full."""
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
    """The acting weights are the learner's variables, or a delayed copy
    that the learner keeps up to date (`weight_delay`)."""
    return int(self._policy_version())

  def receive(self, count):
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
    return self._queue.qsize() / self._queue.maxsize

  def finish(self):
    """Local actors hear it at once: as `close`."""
    self.close()

  def close(self):
    """Wakes every blocked caller, actor or learner, with `Closed`."""
    self._closed.set()

  @property
  def closed(self):
    return self._closed.is_set()
