"""Writing result files: never a half-written file, never an overwrite the
user did not ask for."""

import os
import sys


def check_overwrite(path, overwrite):
  """Raises FileExistsError unless `path` may be written.

  It may if it does not exist, if `overwrite` is set, or if the user answers
  yes at the terminal; without a terminal the answer is no.
  """
  if not os.path.exists(path) or overwrite:
    return
  if sys.stdin.isatty():
    answer = input(f'{path} exists; overwrite it? [y/N] ')
    if answer.strip().lower() in ('y', 'yes'):
      return
  raise FileExistsError(f'{path} exists; pass --overwrite to replace it')


def write_atomically(path, data):
  """Writes `data` (str or bytes) to `path` through a temporary file, so a
  crash leaves the old file or the new one, never a mix."""
  directory = os.path.dirname(path)
  if directory:
    os.makedirs(directory, exist_ok=True)
  temporary = f'{path}.tmp{os.getpid()}'
  with open(temporary, 'wb' if isinstance(data, bytes) else 'w') as f:
    f.write(data)
  os.replace(temporary, path)
