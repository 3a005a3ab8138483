"""The library's threads carry their names to the operating system."""

import sys
import threading
import unittest

from impala_tf import os_threads


def _kernel_name(native_id):
  with open(f'/proc/self/task/{native_id}/comm') as comm:
    return comm.read().strip()


@unittest.skipUnless(sys.platform.startswith('linux'), 'names via /proc')
class OsThreadsTest(unittest.TestCase):

  def _name_seen_by_kernel(self, name):
    seen = []

    def run():
      before = _kernel_name(threading.get_native_id())
      os_threads.name_current_thread()
      seen.append((before, _kernel_name(threading.get_native_id())))

    thread = threading.Thread(target=run, name=name)
    thread.start()
    thread.join()
    return seen[0]

  def test_the_kernel_sees_the_python_name(self):
    before, after = self._name_seen_by_kernel('actor_7')
    self.assertNotEqual('actor_7', before)
    self.assertEqual('actor_7', after)

  def test_long_names_are_cut_to_the_kernels_15_bytes(self):
    _, after = self._name_seen_by_kernel('dynamic_batching_server')
    self.assertEqual('dynamic_batchin', after)


if __name__ == '__main__':
  unittest.main()
