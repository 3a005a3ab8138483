"""A directory of compiled DeepMind Lab maps, shared by every environment
process (and every run) on a machine, as scalable_agent's `LocalLevelCache`.

Procedural levels compile a map (q3map2, seconds of CPU) when an episode
starts; DeepMind Lab asks the cache first by a key naming the map and the
MD5 of its source, so a map compiled once is copied afterwards. Writes go
to a temporary file renamed into place: a process never reads a half-written
map.
"""

import os
import shutil
import tempfile


class LevelCache:
  """DeepMind Lab's `level_cache` protocol over one directory."""

  def __init__(self, directory):
    self._directory = directory
    os.makedirs(directory, exist_ok=True)

  def fetch(self, key, pk3_path):
    """Copies the map `key` to `pk3_path`; False if it is not cached."""
    try:
      shutil.copyfile(os.path.join(self._directory, key), pk3_path)
    except FileNotFoundError:
      return False
    return True

  def write(self, key, pk3_path):
    """Stores the map DeepMind Lab just compiled to `pk3_path` as `key`."""
    path = os.path.join(self._directory, key)
    if os.path.exists(path):
      return
    handle, temporary = tempfile.mkstemp(dir=self._directory, prefix='.')
    os.close(handle)
    try:
      shutil.copyfile(pk3_path, temporary)
      os.replace(temporary, path)
    finally:
      if os.path.exists(temporary):
        os.remove(temporary)
