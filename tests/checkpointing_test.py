"""Checkpoints survive: a truncated newest checkpoint is reported in one
line and the run resumes from the newest readable one; a failing actor ends
the run with its error after a checkpoint, and so does a hanging one."""

import functools
import glob
import os
import tempfile
import threading
import time

import tensorflow as tf

from catch import domain as catch_domain
from catch import environment as catch
import experiment
from impala_tf import actor as actor_lib
from impala_tf import builders
from impala_tf import checkpointing
from impala_tf import run_status
from tests import pipeline_util


class BreakingCatch(catch.Catch):
  """Catch whose environment calls `breakdown` from its 2,001st step on."""

  def __init__(self, breakdown, seed=0):
    super().__init__(seed)
    self._breakdown = breakdown
    self._steps = 0

  def step(self, action):
    self._steps += 1
    if self._steps > 2_000:
      self._breakdown()
    return super().step(action)


def _emulator_gone():
  raise OSError('the emulator went away')


def _stop_answering():
  threading.Event().wait()  # Forever.


# Levels of this test only, added to the Catch suite's.
catch_domain.LEVELS['catch/failing'] = functools.partial(BreakingCatch,
                                                        _emulator_gone)
catch_domain.LEVELS['catch/hanging'] = functools.partial(BreakingCatch,
                                                        _stop_answering)

RUN = dict(level_name='catch/plain', num_actors=8, num_actor_threads=2,
           batch_size=4, progress_interval_secs=1)


class CheckpointingTest(tf.test.TestCase):

  def test_a_truncated_newest_checkpoint_falls_back_to_an_older_one(self):
    logdir = tempfile.mkdtemp()
    pipeline_util.train(logdir=logdir, total_environment_frames=2_000,
                        **RUN)
    pipeline_util.train(logdir=logdir, total_environment_frames=4_000,
                        **RUN)
    directory = checkpointing.directory(logdir)
    newest = tf.train.latest_checkpoint(directory)
    older = tf.train.get_checkpoint_state(
        directory).all_model_checkpoint_paths[-2]
    (data,) = glob.glob(f'{newest}.data-*')
    with open(data, 'r+b') as f:
      f.truncate(os.path.getsize(data) // 2)
    lines = []
    result = pipeline_util.train(logdir=logdir,
                                 total_environment_frames=6_000,
                                 print_fn=lines.append, **RUN)
    self.assertIn(f'Checkpoint {newest} is unreadable', '\n'.join(lines))
    resumed = [line for line in lines if line.startswith('Resuming from')]
    self.assertLen(resumed, 1)
    self.assertStartsWith(resumed[0], f'Resuming from {older} at ')
    self.assertGreaterEqual(result['frames'], 6_000)
    # What tools read instead of these lines.
    status = run_status.read(logdir)
    self.assertEqual('finished', status['state'])
    self.assertEqual([newest], status['unreadable_checkpoints'])
    self.assertEqual(older, status['resumed_from'])
    self.assertBetween(status['resumed_at_frames'], 2_000, 5_999)
    self.assertEqual(result['frames'], status['frames'])
    self.assertEqual(tf.train.latest_checkpoint(directory),
                     status['checkpoint'])

  def test_a_stop_with_no_new_update_leaves_the_newest_checkpoint_alone(self):
    # TensorFlow rewrites a checkpoint's index file in place, so a kill
    # during a rewrite of the newest one would lose it.
    logdir = tempfile.mkdtemp()
    first = pipeline_util.train(logdir=logdir, total_environment_frames=1_000,
                                **RUN)
    newest = tf.train.latest_checkpoint(checkpointing.directory(logdir))
    (data,) = glob.glob(f'{newest}.data-*')
    files = lambda: [(os.stat(path).st_ino, os.stat(path).st_mtime_ns)
                     for path in (f'{newest}.index', data)]
    before = files()
    stop = threading.Event()
    stop.set()  # As if SIGTERM came right after the restore.
    second = experiment.train(
        pipeline_util.config(logdir=logdir, total_environment_frames=2_000,
                             **RUN), stop=stop, print_fn=lambda line: None)
    self.assertEqual(first['frames'], second['frames'])
    self.assertEqual('stopped', run_status.read(logdir)['state'])
    self.assertEqual(before, files())
    self.assertEqual(newest, tf.train.latest_checkpoint(
        checkpointing.directory(logdir)))

  def test_a_checkpoint_from_before_the_evolving_variables_resumes(self):
    # Checkpoints written before the learner kept its PBT hyperparameters
    # in variables lack them: they resume, the hyperparameters the flags'.
    config = pipeline_util.config(level_name='catch/plain')
    info = experiment.domain_of('catch/plain').environment_info(
        config.suite, 'catch/plain')
    old = builders.build_learner(config, info)
    old.num_updates.assign(7)
    del old.evolving  # As the learner was.
    logdir = self.create_tempdir().full_path
    checkpointing.manager(old, logdir).save()
    new = builders.build_learner(
        pipeline_util.config(level_name='catch/plain', seed=2), info)
    path, unreadable = checkpointing.restore_latest(
        checkpointing.manager(new, logdir), print)
    self.assertIsNotNone(path)
    self.assertEqual([], unreadable)
    self.assertEqual(7, int(new.num_updates))
    for restored, saved in zip(new.agent.trainable_variables,
                               old.agent.trainable_variables):
      self.assertAllEqual(saved, restored)
    self.assertAllClose(config.learner.learning_rate,
                        new.evolving.values()['learning_rate'])

  def test_testing_with_other_frame_normalisation_is_refused(self):
    info = experiment.domain_of('catch/plain').environment_info(
        pipeline_util.config(level_name='catch/plain').suite, 'catch/plain')
    for trained, tested in ((True, False), (False, True)):
      learners = [
          builders.build_learner(pipeline_util.config(
              level_name='catch/plain', normalize_frames=normalize), info)
          for normalize in (trained, tested)]
      logdir = self.create_tempdir().full_path
      checkpointing.manager(learners[0], logdir).save()
      with self.assertRaisesRegex(checkpointing.UsageError,
                                  'trained with.* --normalize_frames'):
        checkpointing.restore_for_test(learners[1], logdir)
      self.assertTrue(checkpointing.restore_for_test(learners[0], logdir))

  def test_no_readable_checkpoint_is_one_error(self):
    logdir = tempfile.mkdtemp()
    pipeline_util.train(logdir=logdir, total_environment_frames=1_000,
                        **RUN)
    for data in glob.glob(os.path.join(checkpointing.directory(logdir),
                                       '*.data-*')):
      with open(data, 'wb'):
        pass
    with self.assertRaisesRegex(checkpointing.UsageError,
                                'no readable checkpoint'):
      pipeline_util.train(logdir=logdir, total_environment_frames=2_000,
                          **RUN)

  def test_a_failing_actor_ends_the_run_after_a_checkpoint(self):
    logdir = tempfile.mkdtemp()
    with self.assertRaisesRegex(
        actor_lib.ActorError,
        '^an actor failed: OSError: the emulator went away$'):
      pipeline_util.train(logdir=logdir, total_environment_frames=10**6,
                          **dict(RUN, level_name='catch/failing'))
    latest = tf.train.latest_checkpoint(checkpointing.directory(logdir))
    self.assertIsNotNone(latest)
    self.assertGreater(int(latest.rsplit('-', 1)[1]), 0)  # Updates done.

  def test_a_hanging_actor_ends_the_run_after_a_checkpoint(self):
    logdir = tempfile.mkdtemp()
    started = time.monotonic()
    with self.assertRaisesRegex(
        actor_lib.ActorError, r'^an actor failed: ActorHang: actor thread '
        r'\d \(catch/hanging\) made no step for 3 s \(--actor_hang_secs\)$'):
      pipeline_util.train(logdir=logdir, total_environment_frames=10**6,
                          actor_hang_secs=3,
                          **dict(RUN, level_name='catch/hanging'))
    self.assertLess(time.monotonic() - started, 120)
    latest = tf.train.latest_checkpoint(checkpointing.directory(logdir))
    self.assertIsNotNone(latest)
    self.assertGreater(int(latest.rsplit('-', 1)[1]), 0)

  def test_a_full_disk_is_one_line(self):
    # TensorFlow's own message, as measured on a full 64 KiB tmpfs.
    class FullDiskManager:
      directory = '/mnt/tiny/run/checkpoints'

      def save(self, checkpoint_number):
        raise tf.errors.ResourceExhaustedError(
            None, None, '{{function_node __wrapped__SaveV2}} /mnt/tiny/run/'
            f'checkpoints/ckpt-{checkpoint_number}_temp/part.tempstate5; '
            'No space left on device [Op:SaveV2]')

    with self.assertRaisesRegex(
        checkpointing.CheckpointWriteError,
        '^cannot write a checkpoint in /mnt/tiny/run/checkpoints: No space '
        'left on device$'):
      checkpointing.save(FullDiskManager(), 106)


if __name__ == '__main__':
  tf.test.main()
