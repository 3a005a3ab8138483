"""Dynamic batching: concurrent calls to a function are merged into one call.

Actors each ask for inference on their own few environments; merging those
requests into one batched forward pass is what keeps inference cheap (the
paper's `dynamic_batching.batch_fn`). Each argument of a call is a nest of
arrays whose leading dimension is that caller's batch `[b, ...]`; the
function sees the concatenation `[sum b, ...]` and must return a nest of
arrays with the same leading dimension, which is split back to the callers.
"""

import queue
import threading
import time

import numpy as np
import tree

from impala_tf import os_threads


class _Request:

  def __init__(self, args):
    self.args = args
    self.size = len(tree.flatten(args)[0])
    self.done = threading.Event()
    self.result = None
    self.error = None


class DynamicBatcher:
  """Calls `fn` on merged batches from a background thread.

  A batch is run as soon as it reaches `maximum_batch_size`, or when it has
  at least `minimum_batch_size` rows and no further request is waiting, or
  `timeout_ms` after its first request arrived, whichever comes first.
  """

  def __init__(self, fn, minimum_batch_size=1, maximum_batch_size=1024,
               timeout_ms=100):
    if not 1 <= minimum_batch_size <= maximum_batch_size:
      raise ValueError('need 1 <= minimum_batch_size <= maximum_batch_size, '
                       f'got {minimum_batch_size} and {maximum_batch_size}')
    self._fn = fn
    self._minimum = minimum_batch_size
    self._maximum = maximum_batch_size
    self._timeout = timeout_ms / 1000.0
    self._requests = queue.Queue()
    self._held_over = None  # A request too big for the last batch.
    self._closed = False
    self._thread = threading.Thread(target=self._serve, daemon=True,
                                    name='dynamic_batching')
    self._thread.start()

  def __call__(self, *args):
    """Blocks until the merged call ran; returns this caller's rows."""
    if self._closed:
      raise RuntimeError('the dynamic batcher is closed')
    request = _Request(args)
    self._requests.put(request)
    request.done.wait()
    if request.error is not None:
      raise request.error
    return request.result

  def close(self):
    self._closed = True
    self._requests.put(None)
    self._thread.join()

  def _next_batch(self):
    """Blocks for the first request, then gathers per the class docstring."""
    first, self._held_over = self._held_over, None
    if first is None:
      first = self._requests.get()
    if first is None:
      return None
    batch, size = [first], first.size
    deadline = time.monotonic() + self._timeout
    while size < self._maximum:
      try:
        if size >= self._minimum:
          request = self._requests.get_nowait()
        else:
          request = self._requests.get(
              timeout=max(0.0, deadline - time.monotonic()))
      except queue.Empty:
        break
      if request is None:  # Closing: serve what was gathered, then stop.
        self._requests.put(None)
        break
      if size + request.size > self._maximum:
        self._held_over = request
        break
      batch.append(request)
      size += request.size
    return batch

  def _serve(self):
    os_threads.name_current_thread()
    while True:
      batch = self._next_batch()
      if batch is None:
        return
      try:
        merged = tree.map_structure(lambda *xs: np.concatenate(xs),
                                    *[r.args for r in batch])
        outputs = self._fn(*merged)
        offsets = np.cumsum([0] + [r.size for r in batch])
        for index, request in enumerate(batch):
          request.result = tree.map_structure(
              lambda x, i=index: np.asarray(x)[offsets[i]:offsets[i + 1]],
              outputs)
      except Exception as error:  # pylint: disable=broad-except
        for request in batch:
          request.error = error
      for request in batch:
        request.done.set()
