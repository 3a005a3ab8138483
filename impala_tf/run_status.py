"""A run's state as a small JSON file, rewritten atomically as it goes:
what tools that watch or drive a run read, never its log lines.

The first learner writes `<logdir>/status.json`, another learner N
`<logdir>/learner_N/status.json` (beside its summaries). Fields:
  pid: the process that wrote it (a restarted run's is new);
  state: 'training', 'stopped' (by a signal or a stop request; resumable)
    or 'finished' (the frame budget spent);
  levels: the level names the run plays (a suite's expanded);
  frames, total_frames, updates: counts so far;
  frames_per_second: over the last progress interval; None before the
    first progress line;
  recent_returns: {level: mean return of its recent games};
  resumed_from, resumed_at_frames: the checkpoint this start restored and
    its frame count, or None for a fresh start;
  unreadable_checkpoints: the checkpoints this start found unreadable and
    passed over;
  checkpoint: the newest checkpoint when the run ended, else None;
  time: when it was written (Unix seconds).
"""

import json
import os
import time

from impala_tf import output_files

FILE_NAME = 'status.json'


class RunStatus:
  """Writes the status file of one learner at every `update`."""

  def __init__(self, directory, **fields):
    """Writes the first status: `fields` as the module docstring's."""
    self._path = os.path.join(directory, FILE_NAME)
    self._fields = dict(pid=os.getpid(), state='training',
                        frames_per_second=None, recent_returns={},
                        checkpoint=None)
    self.update(**fields)

  def update(self, **fields):
    self._fields.update(fields)
    output_files.write_atomically(
        self._path, json.dumps(dict(self._fields, time=time.time()),
                               indent=1))


def read(directory):
  """The status `directory`'s run wrote last (a dict), or None if it wrote
  none yet."""
  try:
    with open(os.path.join(directory, FILE_NAME)) as f:
      return json.load(f)
  except FileNotFoundError:
    return None
