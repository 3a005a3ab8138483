"""A run's checkpoints: where they live, what they hold (the learner: weights,
RMSProp slots, frame and update counters), resuming, and refusing to resume
a run whose network or levels differ."""

import json
import os
import re
import time

import tensorflow as tf

from impala_tf import output_files
from impala_tf.domain import UsageError

# The settings a checkpoint's network and run depend on, with the suite's
# own (its Domain.run_defining_flags); a resumed run must keep them.
RUN_DEFINING_FLAGS = ('level_name', 'agent', 'core', 'normalize_frames',
                      'num_action_repeats')
MAX_TO_KEEP = 3


def check_logdir(logdir):
  """Makes `logdir` if needed and checks that files can be written there.

  Raises:
    UsageError: naming the path and the cause (a file, no permission, a full
      disk, ...).
  """
  if os.path.exists(logdir) and not os.path.isdir(logdir):
    raise UsageError(f'cannot write in --logdir={logdir}: it is a file, not '
                     'a directory')
  try:
    os.makedirs(logdir, exist_ok=True)
    probe = os.path.join(logdir, f'.write_test{os.getpid()}')
    with open(probe, 'w') as f:
      f.write('impala_tf')
    os.remove(probe)
  except OSError as error:
    raise UsageError(f'cannot write in --logdir={logdir}: '
                     f'{error.strerror or error}') from None


def directory(logdir):
  return os.path.join(logdir, 'checkpoints')


class CheckpointWriteError(RuntimeError):
  """A checkpoint could not be written (a full disk, ...): one line."""


def save(checkpoint_manager, checkpoint_number):
  """`checkpoint_manager.save`, with a failure to write as one
  `CheckpointWriteError` naming the directory and the cause."""
  try:
    return checkpoint_manager.save(checkpoint_number=checkpoint_number)
  except (tf.errors.OpError, OSError) as error:
    cause = (error.strerror if isinstance(error, OSError) else
             re.sub(r'\s*\[Op:\w+\]$', '', error.message).split('; ')[-1])
    raise CheckpointWriteError(
        f'cannot write a checkpoint in {checkpoint_manager.directory}: '
        f'{cause}') from None


class Schedule:
  """When the first learner writes checkpoints: every `interval_secs` while
  training, and at the end unless the newest already holds that state
  (TensorFlow rewrites a checkpoint's index file in place, and a kill then
  would lose it). Other learners write none."""

  def __init__(self, checkpoint_manager, interval_secs, is_chief,
               restored_updates):
    """`restored_updates`: the update count of the checkpoint restored, or
    None."""
    self._manager = checkpoint_manager
    self._interval_secs = interval_secs
    self._is_chief = is_chief
    self._saved_updates = restored_updates
    self._last_save = time.monotonic()

  @property
  def latest(self):
    """The newest checkpoint's path; None on other learners."""
    return self._manager.latest_checkpoint if self._is_chief else None

  def save_if_due(self, num_updates):
    if time.monotonic() - self._last_save > self._interval_secs:
      self._save(num_updates)

  def save_final(self, num_updates):
    if num_updates != self._saved_updates:
      self._save(num_updates)

  def _save(self, num_updates):
    if self._is_chief:
      save(self._manager, num_updates)
      self._saved_updates = num_updates
    self._last_save = time.monotonic()


def manager(learner, logdir):
  """A `tf.train.CheckpointManager` of `learner` in `logdir`."""
  return tf.train.CheckpointManager(
      tf.train.Checkpoint(learner=learner), directory(logdir),
      max_to_keep=MAX_TO_KEEP)


def _restore_whole(checkpoint, path):
  """Restores `path` into `checkpoint`, every value bound both ways; but a
  checkpoint written before the learner kept its evolving hyperparameters
  in variables restores without them (they keep the flags' values)."""
  learner = checkpoint.learner
  if any('/evolving/' in name for name, _ in tf.train.list_variables(path)):
    checkpoint.restore(path).assert_consumed()
    return
  evolving = learner.evolving
  del learner.evolving  # The object graph of such a checkpoint.
  try:
    checkpoint.restore(path).assert_consumed()
  finally:
    learner.evolving = evolving


def restore_latest(checkpoint_manager, print_fn=print):
  """Restores the newest readable checkpoint, if any; returns its path (or
  None) and the paths of the newer ones found unreadable.

  An unreadable one (truncated or half-written by a crash) is reported in
  one line and the next older one is tried.

  Raises:
    UsageError: checkpoints exist but none is readable.
  """
  paths = list(reversed(checkpoint_manager.checkpoints))
  unreadable = []
  for path in paths:
    try:
      _restore_whole(checkpoint_manager.checkpoint, path)
      return path, unreadable
    except (tf.errors.OpError, ValueError, AssertionError,
            IndexError) as error:
      print_fn(f'Checkpoint {path} is unreadable '
               f'({type(error).__name__}); trying an older one.')
      unreadable.append(path)
  if paths:
    raise UsageError(f'no readable checkpoint in '
                     f'{os.path.dirname(paths[0])}; move them away to start '
                     'afresh')
  return None, unreadable


def restore_for_test(learner, logdir, checkpoint=''):
  """Restores `checkpoint`, or else the newest checkpoint of `logdir`, into
  `learner` (weights are enough: optimiser slots may be absent); returns
  its path.

  Raises:
    UsageError: there is none, `checkpoint` is not one, or it was trained
      with frame normalisation and `learner` is without it, or the reverse.
  """
  if checkpoint:
    if not tf.io.gfile.exists(checkpoint + '.index'):
      raise UsageError(f'--test_checkpoint={checkpoint} is not a checkpoint '
                       '(no .index file)')
    latest = checkpoint
  else:
    latest = tf.train.latest_checkpoint(directory(logdir))
  if latest is None:
    raise UsageError(f'no checkpoint in {directory(logdir)}; train first')
  # Restoring skips what is missing on either side, so say it here.
  trained_normalized = any('/frame_normalizer/' in name
                           for name, _ in tf.train.list_variables(latest))
  if trained_normalized != bool(learner.agent.frame_normalizer):
    raise UsageError(
        f'{latest} was trained {"with" if trained_normalized else "without"}'
        ' --normalize_frames; test it the same way')
  tf.train.Checkpoint(learner=learner).restore(latest).expect_partial()
  return latest


def check_resumable(config, suite_run_defining_flags):
  """Writes the run's settings (`config.flags`) on the first start; refuses
  to resume a run in `logdir` whose network or level differ (the flags of
  `RUN_DEFINING_FLAGS` and `suite_run_defining_flags`)."""
  path = os.path.join(config.logdir, 'flags.json')
  settings = config.flags
  if os.path.exists(path):
    with open(path) as f:
      saved = json.load(f)
    # Runs saved before a flag existed ran with its default.
    changed = [name for name in RUN_DEFINING_FLAGS + suite_run_defining_flags
               if name in saved and saved[name] != settings[name]]
    if changed:
      raise UsageError(
          f'{config.logdir} holds a run with other ' + ', '.join(
              f'--{name}={saved.get(name)}' for name in changed) +
          '; use another --logdir or the same flags')
  output_files.write_atomically(
      path, json.dumps(settings, indent=2, sort_keys=True))
