"""Python threads named for the operating system, so `top -H`, `perf` and
`gdb` show `actor_0` or `staging` instead of the program's name.

Python 3.11 names its threads only for itself; the kernel's name of a thread
(15 bytes, Linux `prctl(PR_SET_NAME)`) stays the process's. Elsewhere than
Linux this does nothing.
"""

import ctypes
import sys
import threading

_PR_SET_NAME = 15
_MAX_NAME_BYTES = 15
# The C library already loaded into this process (Linux only).
_LIBC = ctypes.CDLL(None) if sys.platform.startswith('linux') else None


def name_current_thread():
  """Gives the calling thread's Python name to the operating system."""
  if _LIBC is None:
    return
  name = threading.current_thread().name.encode()[:_MAX_NAME_BYTES]
  _LIBC.prctl(_PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)
