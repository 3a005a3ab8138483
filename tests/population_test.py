"""population.py end to end on Catch: a population in which a member
starts at a learning rate that cannot learn ends learned because it copies
a better member (Appendix F's exploit); Ctrl-C stops every member with a
checkpoint and the same command resumes them all; the population's line."""

import json
import os
import signal
import subprocess
import sys
import time

import tensorflow as tf

from impala_tf import pbt
from impala_tf import progress
from impala_tf import run_status
import population
from tests import pipeline_util

# The burn-in ends after the good members have learned (their 100-game mean
# crossed 0 at 15-21K frames when no one copied, docs/pbt.md): with a
# burn-in of 10K, all four were still at random play's level when they first
# compared, a good member could copy a slow one's learning rate by chance,
# and once a whole population ended at -0.6. With 25K, the worst member's
# mean over its last 100 games ended at 0.88 in two runs side by side (60K
# frames each, four members; 0.96 at 45K). The test runs two members, one
# slow, to 45K each: 38 s alone instead of 87-125 s for four in CI; it
# ended at 1.00 and 0.98, and without exploit (--pbt_exploit_threshold=1e9)
# the slow member stayed at random play's level (-0.64; 2026-12-07).
# A good member's own 100-game mean can dip to 0.56 late in a run, so the
# bar is halfway between random play (-0.6) and a perfect catcher (1.0).
LEARNED = 0.2
CATCH = ['--level_name=catch/plain', '--num_actors=8', '--batch_size=8',
         '--num_action_repeats=1', '--learning_rate=0.004',
         '--entropy_cost=0.01', '--epsilon=0.01', '--progress_interval_secs=2']


def _population_command(pbt_dir, *flags):
  return [sys.executable, os.path.join(pipeline_util.REPO_ROOT,
                                       'population.py'),
          f'--pbt_dir={pbt_dir}'] + CATCH + list(flags)


class PopulationTest(tf.test.TestCase):

  def _trains_anew(self, directory, earlier_pid):
    """Whether a process other than `earlier_pid` trains in `directory`
    and has shown a progress line."""
    status = run_status.read(directory) or {}
    return (status.get('pid') not in (None, earlier_pid) and
            status['state'] == 'training' and
            status['frames_per_second'] is not None)

  def test_members_that_cannot_learn_copy_better_ones(self):
    pbt_dir = self.create_tempdir().full_path
    finished = subprocess.run(
        _population_command(
            pbt_dir, '--population=2', '--total_environment_frames=4.5e4',
            '--pbt_burn_in_frames=2.5e4', '--pbt_ready_episodes=200',
            '--pbt_exploit_threshold=0.1',
            '--member_flags=1:--learning_rate=1e-7'),
        capture_output=True, text=True, timeout=600,
        cwd=pipeline_util.REPO_ROOT)
    self.assertEqual(0, finished.returncode, finished.stderr[-2000:])
    self.assertIn('population frames 90,000 / 90,000', finished.stdout)
    finals = {}
    for member in range(2):
      status = run_status.read(os.path.join(pbt_dir, f'member_{member}'))
      self.assertEqual('finished', status['state'])
      finals[member] = status['recent_returns']['catch/plain']
    print(f'final mean returns per member: {finals}')
    events = {member: pbt.read_events(pbt_dir, member) for member in finals}
    # The slow member started at 1e-7 and took the other's weights.
    self.assertAllClose(1e-7, events[1][0]['hparams']['learning_rate'])
    self.assertIn('exploit', [event['event'] for event in events[1]])
    self.assertGreater(min(finals.values()), LEARNED, finals)

  def test_the_line_shows_the_population_time_left_and_each_member(self):
    states = [(3_000_000, 12.5, {'learning_rate': 1e-3, 'epsilon': 1e-5}),
              (1_000_000, None, {'learning_rate': 4e-4, 'epsilon': 1e-7})]
    line = population._population_line(
        states, progress.ProgressLine(total_frames=20_000_000), 2_000.0)
    self.assertEqual(
        'population frames 4,000,000 / 20,000,000 | 2,000 frames/s | '
        '2h13m left | m0 3.00M fitness 12.50 lr 0.001 eps 1e-05 | '
        'm1 1.00M fitness - lr 0.0004 eps 1e-07', line)

  def test_ctrl_c_stops_every_member_with_a_checkpoint_and_it_resumes(self):
    pbt_dir = self.create_tempdir().full_path
    command = _population_command(pbt_dir, '--population=2',
                                  '--total_environment_frames=1e7')
    directories = [os.path.join(pbt_dir, f'member_{m}') for m in range(2)]
    for start in ('first', 'resumed'):
      earlier_pids = [(run_status.read(d) or {}).get('pid')
                      for d in directories]
      process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 cwd=pipeline_util.REPO_ROOT)
      deadline = time.monotonic() + 300
      while not all(self._trains_anew(d, pid)
                    for d, pid in zip(directories, earlier_pids)):
        self.assertLess(time.monotonic(), deadline, f'{start}: no training')
        time.sleep(1)
      process.send_signal(signal.SIGINT)
      output, errors = process.communicate(timeout=180)
      self.assertEqual(0, process.returncode, errors[-2000:])
      self.assertIn('population: all members stopped.', output)
      for directory in directories:
        status = run_status.read(directory)
        self.assertEqual('stopped', status['state'], start)
        self.assertIsNotNone(status['checkpoint'], start)
        if start == 'resumed':
          self.assertIsNotNone(status['resumed_from'])
      with open(os.path.join(directories[0], 'flags.json')) as f:
        self.assertEqual(0, json.load(f)['pbt_member'])


if __name__ == '__main__':
  tf.test.main()
