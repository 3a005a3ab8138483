"""Distributed training on loopback: learner and actor jobs as separate
processes (experiment.py --job_name=...), TensorFlow's RPC between them,
synchronous learners, and the faults they must survive. Real Pong, tiny
batches: a few updates each."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import tensorflow as tf

import experiment
from impala_tf import cluster as cluster_lib
from tests import pipeline_util

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_RUN = ['--level_name=atari/pong', '--num_actors=4', '--batch_size=4',
            '--unroll_length=5', '--progress_interval_secs=1',
            '--checkpoint_interval_secs=1', '--actor_silence_secs=3']
WAIT_SECS = 120  # For any one expected line.


class Process:
  """A subprocess whose output lines the test waits for."""

  def __init__(self, args, log_path):
    self._log_path = log_path
    self._log = open(log_path, 'w')  # pylint: disable=consider-using-with
    self.process = subprocess.Popen(
        [sys.executable] + args, cwd=REPO_ROOT, stdout=self._log,
        stderr=subprocess.STDOUT, text=True)
    self._seen = 0  # Lines matched so far are not matched again.

  def text(self):
    with open(self._log_path) as f:
      return f.read()

  def wait_for(self, pattern, timeout=WAIT_SECS):
    """The first match of `pattern` in lines after the last match."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
      lines = self.text().splitlines()
      for number in range(self._seen, len(lines)):
        match = re.search(pattern, lines[number])
        if match:
          self._seen = number + 1
          return match
      if self.process.poll() is not None:
        break
      time.sleep(0.2)
    raise AssertionError(f'no line matching {pattern!r} in {timeout} s; '
                         f'output:\n{self.text()[-3000:]}')

  def stop(self, timeout=60):
    """Ctrl-C (SIGINT); returns the exit status."""
    if self.process.poll() is None:
      self.process.send_signal(signal.SIGINT)
    return self.exit_status(timeout)

  def exit_status(self, timeout=60):
    """Waits for the process to end by itself."""
    try:
      return self.process.wait(timeout)
    finally:
      self._log.close()

  def kill(self):
    self.process.kill()
    self.process.wait()


class FreeLoopbackPortsTest(tf.test.TestCase):

  def test_ports_and_the_ones_after_them_are_distinct_and_bindable(self):
    ports = cluster_lib.free_loopback_ports(6)
    taken = [p + d for p in ports for d in (0, 1)]
    self.assertLen(set(taken), 12)
    for port in taken:
      self.assertTrue(cluster_lib.port_is_free(port), port)
    with socket.socket() as busy:
      busy.bind(('localhost', ports[0]))
      busy.listen()
      self.assertFalse(cluster_lib.port_is_free(ports[0]))


class DistributedTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.logdir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, self.logdir, ignore_errors=True)
    self.processes = []

  def tearDown(self):
    for process in self.processes:
      if process.process.poll() is None:
        process.kill()
    super().tearDown()

  def start(self, name, *args):
    process = Process(['experiment.py'] + TINY_RUN +
                      [f'--logdir={self.logdir}'] + list(args),
                      os.path.join(self.logdir, f'{name}.out'))
    self.processes.append(process)
    return process

  def cluster(self, num_learners=1, num_actors=2):
    ports = cluster_lib.free_loopback_ports(num_learners + num_actors)
    return [
        '--learner_hosts=' + ','.join(
            f'localhost:{p}' for p in ports[:num_learners]),
        '--actor_hosts=' + ','.join(
            f'localhost:{p}' for p in ports[num_learners:]),
    ]

  def wait_for_a_checkpoint(self):
    """Until the learner wrote a checkpoint (it does every second)."""
    deadline = time.monotonic() + WAIT_SECS
    while not tf.train.latest_checkpoint(
        os.path.join(self.logdir, 'checkpoints')):
      self.assertLess(time.monotonic(), deadline, 'no checkpoint written')
      time.sleep(0.2)

  def progress_frames(self, process):
    return int(process.wait_for(r'^frames ([\d,]+) /').group(1).replace(
        ',', ''))

  def test_learner_and_two_actors_train_until_done(self):
    cluster = self.cluster()
    learner = self.start('learner', *cluster, '--job_name=learner',
                         '--total_environment_frames=2000')
    actors = [self.start(f'actor{task}', *cluster, '--job_name=actor',
                         f'--task={task}') for task in range(2)]
    learner.wait_for(r'serving actor tasks 0, 1')
    done = learner.wait_for(r'^Stopped at ([\d,]+) frames, ([\d,]+) updates')
    # 4 trajectories of 5 steps of 4 frames per update.
    frames, updates = (int(g.replace(',', '')) for g in done.groups())
    self.assertEqual(80 * updates, frames)
    self.assertGreaterEqual(frames, 2000)
    self.assertEqual(0, learner.exit_status())
    # Told that training ended, the actors stop by themselves.
    for actor in actors:
      actor.wait_for(r'stopped after [\d,]+ steps')
      self.assertEqual(0, actor.exit_status())

  def test_a_killed_actor_is_noticed_and_rejoins(self):
    cluster = self.cluster()
    learner = self.start('learner', *cluster, '--job_name=learner',
                         '--total_environment_frames=10000000')
    actors = [self.start(f'actor{task}', *cluster, '--job_name=actor',
                         f'--task={task}') for task in range(2)]
    actors[1].wait_for(r'actor 1: [\d,]+ steps sent')
    actors[1].kill()
    learner.wait_for(r'actor 1 \(localhost:\d+\): nothing received')
    # Training goes on with actor 0 alone.
    before = self.progress_frames(learner)
    self.assertGreater(self.progress_frames(learner), before)
    again = self.start('actor1_again', *cluster, '--job_name=actor',
                       '--task=1')
    learner.wait_for(r'actor 1 \(localhost:\d+\): sending again')
    # With every actor gone (as after a terminal's Ctrl-C), no batch comes:
    # a stop must still end the wait for one, and checkpoint.
    for actor in (actors[0], again):
      actor.kill()
    self.assertEqual(0, learner.stop(timeout=30))
    self.assertIn('Stop requested: writing a checkpoint.', learner.text())
    self.assertRegex(learner.text(), r'Stopped at .* checkpoint \S+ckpt-\d+')

  def test_a_restarted_learner_resumes_and_actors_reconnect(self):
    cluster = self.cluster(num_actors=1)
    learner_args = (*cluster, '--job_name=learner',
                    '--total_environment_frames=10000000')
    learner = self.start('learner', *learner_args)
    actor = self.start('actor', *cluster, '--job_name=actor', '--task=0')
    self.progress_frames(learner)
    self.wait_for_a_checkpoint()
    learner.kill()  # No chance to write a last checkpoint.
    actor.wait_for(r'learner localhost:\d+ unreachable .*; retry 1')
    restarted = self.start('learner_again', *learner_args)
    resumed = int(restarted.wait_for(
        r'Resuming from .* at ([\d,]+) frames').group(1).replace(',', ''))
    self.assertGreater(resumed, 0)
    actor.wait_for(r'learner localhost:\d+ answers again')
    self.assertGreater(self.progress_frames(restarted), resumed)
    self.assertEqual(0, restarted.stop())
    # A learner stopped (not finished) may come back: its actors wait for
    # it until they are stopped themselves.
    actor.wait_for(r'unreachable')
    self.assertEqual(0, actor.stop())
    self.assertIn('stopped after', actor.text())

  def test_two_synchronous_learners_hold_one_set_of_weights(self):
    # With frame normalisation, whose statistics they must also share.
    cluster = self.cluster(num_learners=2)
    learners = [
        self.start(f'learner{task}', *cluster, '--job_name=learner',
                   f'--task={task}', '--total_environment_frames=2000',
                   '--normalize_frames')
        for task in range(2)
    ]
    for task in range(2):
      self.start(f'actor{task}', *cluster, '--job_name=actor',
                 f'--task={task}', '--normalize_frames')
    results = []
    for learner in learners:
      results.append(learner.wait_for(
          r'^Stopped at ([\d,]+) frames, ([\d,]+) updates; .*weights '
          r'fingerprint ([\d.]+)').groups())
    # The frames of both learners' batches (2 + 2 trajectories) counted
    # once per update, globally; the same weights on both.
    frames, updates, _ = results[0]
    self.assertEqual(80 * int(updates), int(frames.replace(',', '')))
    self.assertEqual(results[0], results[1])
    for learner in learners:
      self.assertEqual(0, learner.exit_status())

  def test_bad_cluster_settings_end_in_one_line(self):
    cases = [
        (dict(job_name='actor', task=2,
              actor_hosts='localhost:9001,localhost:9002'),
         'outside the actor job'),
        (dict(job_name='learner', learner_hosts='localhost'),
         'is not host:port'),
        (dict(job_name='learner',
              learner_hosts='localhost:8000,localhost:8001'), 'used twice'),
        (dict(job_name='learner',
              learner_hosts='localhost:8000,localhost:8002',
              actor_hosts='localhost:9001,localhost:9002', batch_size=5),
         'does not split evenly'),
        (dict(job_name='learner',
              learner_hosts='localhost:8000,localhost:8002',
              actor_hosts='localhost:9001'),
         '1 actor task(s) cannot feed 2 learners'),
    ]
    for overrides, message in cases:  # The checks, in-process.
      with self.assertRaisesRegex(experiment.UsageError, re.escape(message),
                                  msg=overrides):
        pipeline_util.config(**overrides)
    # The way out, in a process: the first case's one line.
    result = subprocess.run(
        [sys.executable, 'experiment.py', '--job_name=actor', '--task=2',
         '--actor_hosts=localhost:9001,localhost:9002'], cwd=REPO_ROOT,
        capture_output=True, text=True, timeout=120, check=False)
    self.assertEqual(1, result.returncode)
    self.assertNotIn('Traceback', result.stderr)
    self.assertRegex(result.stderr.strip().splitlines()[-1],
                     r'^impala_tf: error: .*outside the actor job')
    result = subprocess.run(
        [sys.executable, 'launch.py', '--num_learners=2',
         '--num_actor_tasks=1'], cwd=REPO_ROOT, capture_output=True,
        text=True, timeout=120, check=False)
    self.assertEqual(1, result.returncode)
    self.assertEqual('launch: error: 1 actor task(s) cannot feed 2 learners: '
                     'give at least one actor task per learner',
                     result.stderr.strip().splitlines()[-1])
    with socket.socket() as busy:
      busy.bind(('localhost', 0))
      port = busy.getsockname()[1]
      result = subprocess.run(
          [sys.executable, 'launch.py', f'--base_port={port}'],
          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
          check=False)
    self.assertEqual(f'launch: error: port {port} is in use; choose another '
                     '--base_port, or 0 for free ones',
                     result.stderr.strip().splitlines()[-1])
    result = subprocess.run(
        [sys.executable, 'experiment.py', '--task=1'], cwd=REPO_ROOT,
        capture_output=True, text=True, timeout=120, check=False,
        env=dict(os.environ, TF_CONFIG='{"cluster": {"learner": '
                 '["localhost:8000"]}, "task": {"type": "actor", '
                 '"index": 0}}'))
    self.assertIn('TF_CONFIG and --task both describe the cluster',
                  result.stderr.strip().splitlines()[-1])

  def test_tf_config_and_an_unreachable_learner(self):
    (port,) = cluster_lib.free_loopback_ports(1)
    tf_config = ('{"cluster": {"learner": ["localhost:%d"], "actor": '
                 '["localhost:%d"]}, "task": {"type": "actor", "index": 0}}'
                 % (port, port + 1))
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, 'experiment.py'] + TINY_RUN +
        [f'--logdir={self.logdir}', '--connect_timeout_secs=4'],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        check=False, env=dict(os.environ, TF_CONFIG=tf_config))
    self.assertEqual(1, result.returncode)
    output = result.stdout + result.stderr
    # The actor job TF_CONFIG names retried with backoff, then gave up.
    self.assertIn('Actor 0 (localhost:', output)
    self.assertIn('retry 1 in 0.5 s', output)
    self.assertRegex(result.stderr.strip().splitlines()[-1],
                     rf'^impala_tf: error: learner localhost:{port} '
                     r'unreachable for \d+ s')
    self.assertNotIn('Traceback', result.stderr)
    self.assertLess(time.monotonic() - started, 90)


if __name__ == '__main__':
  tf.test.main()
