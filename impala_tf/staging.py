"""Staging: batch k + 1 is prepared while batch k trains.

As the paper's `StagingArea`: a background thread takes `batch_size`
trajectories from the transport, stacks them time-major and copies them to
the learner's device, holding one prepared batch ahead of the learner.
"""

import queue
import threading

import tensorflow as tf

from impala_tf import os_threads
from impala_tf import trajectory as trajectory_lib
from impala_tf import transport as transport_lib

POLL_SECONDS = 0.1  # How often blocked calls look for a stop.


class StagingArea:
  """Prefetches learner batches from `transport.receive`."""

  def __init__(self, transport, batch_size, device=None, capacity=1):
    """Args:
      transport: a `transport.LearnerSide`.
      batch_size: B, trajectories per batch.
      device: where the batch's tensors go (e.g. '/GPU:0'); None: default.
      capacity: prepared batches held ahead of the learner.
    """
    self._transport = transport
    self._batch_size = batch_size
    self._device = device
    self._batches = queue.Queue(maxsize=capacity)
    self._error = None
    self._thread = threading.Thread(target=self._fill, daemon=True,
                                    name='staging')
    self._thread.start()

  def _prepare(self, trajectories):
    batch = trajectory_lib.batch(trajectories)
    with tf.device(self._device):
      # tf.identity places the copy on the device; the numpy arrays stay
      # host-side for the strings and versions.
      tensors = {
          field: tf.nest.map_structure(
              lambda x: tf.identity(tf.convert_to_tensor(x)),
              getattr(batch, field))
          for field in trajectory_lib.LEARNER_FIELDS
      }
    return batch._replace(**tensors)

  def _fill(self):
    os_threads.name_current_thread()
    try:
      while True:
        batch = self._prepare(self._transport.receive(self._batch_size))
        while True:
          try:
            self._batches.put(batch, timeout=POLL_SECONDS)
            break
          except queue.Full:
            if self._transport.closed:
              return
    except transport_lib.Closed:
      return
    except Exception as error:  # pylint: disable=broad-except
      self._error = error
      self._transport.close()

  def get(self, stop=None):
    """The next batch `Trajectory` `[T + 1, B]`: its
    `trajectory.LEARNER_FIELDS` as tensors on the device, level names and
    policy versions as numpy.

    Raises `transport.Closed` when the transport closed, or when `stop` (a
    `threading.Event`) is set while no batch is ready: a learner whose
    actors stopped first must still stop.
    """
    while True:
      if self._error is not None:
        raise self._error
      try:
        return self._batches.get(timeout=POLL_SECONDS)
      except queue.Empty:
        if stop is not None and stop.is_set():
          raise transport_lib.Closed() from None
        if self._transport.closed and self._batches.empty():
          if self._error is not None:
            raise self._error
          raise transport_lib.Closed()
