"""Experience replay as in the paper's Sec. 5.2.2: part of each learner
batch is drawn uniformly from the last `capacity` trajectories.

`ReplayTransport` wraps the learner side of a transport
(`transport.LearnerSide`), so that the staging area and the training loop
work unchanged with or without replay, in local and distributed runs.
Replayed trajectories keep their behaviour logits and policy versions: the
off-policy correction sees (and the policy lag counts) how old they are.
They are marked `replayed`, so that the learner counts their frames once
and logs their age apart.
"""

import numpy as np
import tensorflow as tf

from impala_tf import transport as transport_lib


def num_replayed(batch_size, proportion):
  """Trajectories of a batch of `batch_size` that come from replay; at
  least one of the batch is always new."""
  return min(int(round(batch_size * proportion)), batch_size - 1)


def trajectory_bytes(spec):
  """Bytes one trajectory takes, from the `Trajectory` of `tf.TensorSpec`s
  of an unroll of N environments (`trajectory.unroll_spec`), N = 1.
  Level names count as 64 bytes."""
  total = 0
  for leaf in tf.nest.flatten(spec):
    size = 64 if leaf.dtype == tf.string else leaf.dtype.size
    total += size * int(np.prod(
        [1 if d is None else d for d in leaf.shape.as_list()]))
  return total


def available_memory_bytes():
  """MemAvailable of /proc/meminfo, or None where there is none."""
  try:
    with open('/proc/meminfo') as meminfo:
      for line in meminfo:
        if line.startswith('MemAvailable:'):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  return None


def check_capacity(capacity, bytes_per_trajectory):
  """The replay buffer's size in MiB; ValueError (one line) when it would
  not fit in the memory available now."""
  mib = capacity * bytes_per_trajectory / 2**20
  available = available_memory_bytes()
  if available is not None and capacity * bytes_per_trajectory > available:
    raise ValueError(
        f'--replay_capacity={capacity} needs {mib:,.0f} MiB '
        f'({bytes_per_trajectory / 2**20:.2f} MiB per trajectory) but only '
        f'{available / 2**20:,.0f} MiB of memory is available')
  return mib


class ReplayTransport(transport_lib.LearnerSide):
  """`transport`, a `transport.LearnerSide`, with `proportion` of every
  batch replayed from a first-in-first-out buffer of `capacity` trajectories."""

  def __init__(self, transport, proportion, capacity, seed):
    self._transport = transport
    self._proportion = proportion
    self._capacity = capacity
    # A ring: random access in O(1), and no copy of the buffer per batch.
    self._buffer = []
    self._oldest = 0  # Where the next trajectory goes once it is full.
    self._rng = np.random.default_rng(seed)

  def receive(self, count):
    """`count - num_replayed(count)` new trajectories from the transport
    (stored for replay), then the replayed ones, marked `replayed`, drawn
    uniformly with replacement from the buffer before the new ones joined it
    (from the new ones while it is still empty)."""
    new = self._transport.receive(
        count - num_replayed(count, self._proportion))
    pool = self._buffer or new
    picks = self._rng.integers(0, len(pool), size=count - len(new))
    replayed = [pool[index]._replace(replayed=True) for index in picks]
    for trajectory in new:
      self._store(trajectory)
    return new + replayed

  def _store(self, trajectory):
    """First in, first out."""
    if len(self._buffer) < self._capacity:
      self._buffer.append(trajectory)
    else:
      self._buffer[self._oldest] = trajectory
      self._oldest = (self._oldest + 1) % self._capacity

  def fill(self):
    return self._transport.fill()

  def finish(self):
    self._transport.finish()

  def close(self):
    self._transport.close()

  @property
  def closed(self):
    return self._transport.closed
