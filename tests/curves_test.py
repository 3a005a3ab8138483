"""Learning curves: running means against numpy, events read back from a
real summary writer, the CSV and PNG written, one-line errors."""

import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf

from impala_tf import curves
from impala_tf import run_status
from impala_tf import test_results

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def games(pairs, seconds_per_frame=0.0):
  """`Scalar`s of (frames, return) games, written at `seconds_per_frame`."""
  return [curves.Scalar(frames, value, 1000.0 + seconds_per_frame * frames)
          for frames, value in pairs]


class CurvesTest(tf.test.TestCase):

  def test_running_mean_over_the_last_games(self):
    returns = np.arange(250, dtype=np.float64)
    run_curve = curves.curve(games([(10 * i, r)
                                     for i, r in enumerate(returns)]))
    for index in (0, 5, 99, 100, 249):
      start = max(0, index + 1 - curves.WINDOW_GAMES)
      self.assertAllClose(np.mean(returns[start:index + 1]),
                          run_curve.running_mean[index])
    self.assertEqual(10 * 249, run_curve.frames[-1])

  def test_csv_keeps_the_last_game_of_each_frame_interval(self):
    run_curve = curves.curve(games([(f, -21.0 + i) for i, f in enumerate(
        [10, 20, 120, 130, 250])]), window=1)
    rows = curves.to_csv({'r': run_curve}, every_frames=100).splitlines()
    self.assertEqual(['r,20,-20.000', 'r,130,-18.000', 'r,250,-17.000'],
                     rows[1:])

  def test_csv_quotes_labels_with_commas(self):
    run_curve = curves.curve(games([(10, 1.0)]), window=1)
    rows = list(csv.reader(io.StringIO(curves.to_csv(
        {'batch 8, lr 1e-3': run_curve}))))
    self.assertEqual([['run', 'frames', 'mean_return'],
                      ['batch 8, lr 1e-3', '10', '1.000']], rows)

  def test_frames_and_training_time_to_reach(self):
    # Written 0.01 s per frame from t = 1000 s; the run began at 990 s.
    run_curve = curves.curve(
        games([(100, -21.0), (200, -1.0), (300, 20.0)], 0.01), window=1,
        activity=[990.0])
    self.assertEqual((200, 12.0), curves.frames_to_reach(run_curve, -5.0))
    self.assertIsNone(curves.frames_to_reach(run_curve, 21.0))

  def test_a_long_silence_is_a_pause_not_training_time(self):
    resumed = 160.0 + curves.PAUSE_SECS + 1.0
    points = [curves.Scalar(10, 0.0, 100.0), curves.Scalar(20, 0.0, 160.0),
              curves.Scalar(30, 0.0, resumed),
              curves.Scalar(40, 0.0, resumed + 30.0)]
    self.assertAllClose([10.0, 70.0, 70.0, 100.0],
                        curves.training_seconds(points, activity=[90.0]))
    # A first game long after the start, with other summaries between
    # (Sample Factory reports returns once 100 games are over): training.
    late = [curves.Scalar(10, 0.0, 90.0 + 2 * curves.PAUSE_SECS)]
    busy = np.arange(90.0, 90.0 + 2 * curves.PAUSE_SECS, 10.0)
    self.assertAllClose([2 * curves.PAUSE_SECS],
                        curves.training_seconds(late, activity=busy))
    self.assertAllClose([0.0], curves.training_seconds(late,
                                                       activity=[90.0]))

  def _write_games(self, logdir, pairs):
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default():
      for frames, value in pairs:
        tf.summary.scalar('atari/pong/episode_return', value, step=frames)
        tf.summary.scalar('atari/pong/episode_frames', 7.0, step=frames)
        tf.summary.scalar('learner/entropy', 1.5, step=frames)
    writer.close()

  def test_reads_events_and_writes_csv_and_png(self):
    logdir = os.path.join(tempfile.mkdtemp(), 'run_a')
    pairs = [(1000 * i, float(i % 3 - 21)) for i in range(1, 31)]
    self._write_games(logdir, pairs)
    self.assertEqual(pairs, [(game.step, game.value) for game in
                             curves.read_scalars(logdir,
                                                 'atari/pong/episode_return')])
    output = os.path.join(tempfile.mkdtemp(), 'curve')
    result = subprocess.run(
        [sys.executable, '-m', 'impala_tf.curves', logdir,
         f'--output={output}', '--target=-20.5'], capture_output=True,
        text=True, check=False, timeout=120, cwd=REPO_ROOT)
    self.assertEqual(0, result.returncode, result.stderr)
    self.assertIn('run_a: 30 games to 30,000 frames', result.stdout)
    self.assertIn('  -20.5 first at 1,000 frames, 0.0 minutes',
                  result.stdout)
    with open(f'{output}.csv') as f:
      rows = f.read().splitlines()
    self.assertEqual('run,frames,mean_return', rows[0])
    self.assertLen(rows, 2)  # All 30 games fall in the first 50k frames.
    self.assertEqual('run_a,30000,-20.000', rows[-1])
    with open(f'{output}.png', 'rb') as f:
      self.assertEqual(b'\x89PNG', f.read(4))
    labelled, entropies, _ = curves.load_runs([f'paper settings={logdir}'],
                                              'atari/pong')
    self.assertEqual(['paper settings'], list(labelled))
    self.assertEqual([(frames, 1.5) for frames, _ in pairs],
                     [(point.step, point.value)
                      for point in entropies['paper settings']])

  def test_reads_a_sample_factory_run_as_its_own_running_mean(self):
    from tensorboard.compat.proto import event_pb2  # pylint: disable=g-import-not-at-top
    from tensorboard.compat.proto import summary_pb2  # pylint: disable=g-import-not-at-top
    from tensorboard.summary.writer import event_file_writer  # pylint: disable=g-import-not-at-top
    logdir = tempfile.mkdtemp()
    created = time.time()
    writer = event_file_writer.EventFileWriter(logdir)
    # As torch's SummaryWriter writes them: simple values, frames as steps;
    # here 20 s and 50 s after the file's first event.
    for frames, mean, entropy, seconds in [(5000, -20.5, 1.79, 20.0),
                                           (10000, -19.0, 1.7, 50.0)]:
      writer.add_event(event_pb2.Event(
          step=frames, wall_time=created + seconds,
          summary=summary_pb2.Summary(
          value=[summary_pb2.Summary.Value(tag='reward/reward',
                                           simple_value=mean),
                 summary_pb2.Summary.Value(tag='train/entropy',
                                           simple_value=entropy)])))
    writer.close()
    runs, entropies, _ = curves.load_runs([f'sample factory={logdir}'],
                                          'atari/pong')
    self.assertAllEqual([5000, 10000], runs['sample factory'].frames)
    self.assertAllClose([-20.5, -19.0], runs['sample factory'].running_mean)
    frames, seconds = curves.frames_to_reach(runs['sample factory'], -19.5)
    self.assertEqual(10000, frames)
    self.assertAllClose(50.0, seconds, atol=1.0)
    self.assertAllClose([(5000, 1.79), (10000, 1.7)],
                        [(point.step, point.value)
                         for point in entropies['sample factory']])

  def test_a_csv_it_wrote_comes_back_as_a_curve(self):
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, 'two.csv')
    written = {
        'a, with a comma=and #': curves.curve(games(
            [(40_000 * i, float(i)) for i in range(1, 6)]), window=2),
        'b': curves.curve(games([(60_000, 3.0)])),
    }
    with open(path, 'w') as f:
      f.write(curves.to_csv(written))
    runs, entropies, _ = curves.load_runs(
        [f'{path}#a, with a comma=and #', f'mine={path}#b'], 'atari/pong')
    self.assertEqual(['a, with a comma=and #', 'mine'], list(runs))
    # The CSV keeps the last game before each 50k frames: 40k, 80k, 120k,
    # 160k and 200k (the end).
    self.assertAllEqual([40_000, 80_000, 120_000, 160_000, 200_000],
                        runs['a, with a comma=and #'].frames)
    self.assertAllClose([1.0, 1.5, 2.5, 3.5, 4.5],
                        runs['a, with a comma=and #'].running_mean)
    self.assertAllClose([3.0], runs['mine'].running_mean)
    self.assertEqual([], entropies['mine'])
    with self.assertRaisesRegex(curves.InputError, 'name one as'):
      curves.load_runs([path], 'atari/pong')

  def test_frames_per_level_divides_a_multi_level_run(self):
    root = tempfile.mkdtemp()
    single, multi = os.path.join(root, 'single'), os.path.join(root, 'multi')
    pairs = [(3000 * i, float(i)) for i in range(1, 4)]
    three_games = 'atari/pong,atari/breakout,atari/boxing'
    for logdir, level_name in ((single, 'atari/pong'), (multi, three_games)):
      self._write_games(logdir, pairs)
      with open(os.path.join(logdir, 'flags.json'), 'w') as f:
        f.write(f'{{"level_name": "{level_name}"}}')
    with open(os.path.join(multi, 'test_results.json'), 'w') as f:
      json.dump(test_results.build('ckpt', 9000, 1, {'atari/pong': [1.0]},
                                   None), f)
    runs, entropies, tests = curves.load_runs(
        [single, multi], 'atari/pong', frames_per_level=True)
    self.assertAllEqual([3000, 6000, 9000], runs['single'].frames)
    self.assertAllEqual([1000, 2000, 3000], runs['multi'].frames)
    self.assertEqual([3000], [point.frames for point in tests['multi']])
    self.assertEqual([1000, 2000, 3000],
                     [point.step for point in entropies['multi']])
    runs, _, _ = curves.load_runs([multi], 'atari/pong')
    self.assertAllEqual([3000, 6000, 9000], runs['multi'].frames)
    # A suite's name counts its levels, which the status file lists.
    run_status.RunStatus(single, levels=['catch/plain', 'catch/memory'])
    runs, _, _ = curves.load_runs([single], 'atari/pong',
                                  frames_per_level=True)
    self.assertAllEqual([1500, 3000, 4500], runs['single'].frames)

  def test_test_mode_results_are_drawn_and_written(self):
    logdir = os.path.join(tempfile.mkdtemp(), 'run_t')
    self._write_games(logdir, [(1000 * i, -20.0) for i in range(1, 11)])
    # As test mode writes them: periodic tests, then the final checkpoint.
    results = {
        f'{logdir}/periodic_tests/ckpt-9.json': (9000, [20.0, 16.0]),
        f'{logdir}/periodic_tests/ckpt-3.json': (3000, [-21.0, -19.0]),
        f'{logdir}/test_results.json': (10_000, [15.0, 15.0, 12.0]),
    }
    os.makedirs(f'{logdir}/periodic_tests')
    for path, (frames, returns) in results.items():
      with open(path, 'w') as f:
        json.dump(test_results.build('ckpt', frames, len(returns),
                                     {'atari/pong': returns}, None), f)
    _, _, tests = curves.load_runs([logdir], 'atari/pong')
    self.assertEqual([(3000, -20.0, 1.0, 2), (9000, 18.0, 2.0, 2),
                      (10_000, 14.0, np.sqrt(2.0), 3)],
                     [tuple(point) for point in tests['run_t']])
    output = os.path.join(tempfile.mkdtemp(), 'curve')
    result = subprocess.run(
        [sys.executable, '-m', 'impala_tf.curves', logdir,
         f'--output={output}'], capture_output=True, text=True, check=False,
        timeout=120, cwd=REPO_ROOT)
    self.assertEqual(0, result.returncode, result.stderr)
    self.assertIn('test mode: -20.0 ± 1.0 at 3,000, 18.0 ± 2.0 at 9,000, '
                  '14.0 ± 1.4 at 10,000', result.stdout)
    with open(f'{output}_test_mode.csv') as f:
      rows = f.read().splitlines()
    self.assertEqual(['run,frames,test_mean_return,test_std_return,games',
                      'run_t,3000,-20.000,1.000,2',
                      'run_t,9000,18.000,2.000,2',
                      'run_t,10000,14.000,1.414,3'], rows)
    # Drawn again without test results: the file is the old drawing's.
    plain = os.path.join(tempfile.mkdtemp(), 'plain')
    self._write_games(plain, [(1000, -20.0)])
    result = subprocess.run(
        [sys.executable, '-m', 'impala_tf.curves', plain,
         f'--output={output}', '--overwrite'], capture_output=True,
        text=True, check=False, timeout=120, cwd=REPO_ROOT)
    self.assertEqual(0, result.returncode, result.stderr)
    self.assertFalse(os.path.exists(f'{output}_test_mode.csv'))
    with open(f'{logdir}/test_results.json', 'w') as f:
      f.write('{"levels": 3}')
    with self.assertRaisesRegex(curves.InputError,
                                'test_results.json has no "levels" object'):
      curves.load_runs([logdir], 'atari/pong')

  def test_a_run_without_games_is_one_line(self):
    logdir = tempfile.mkdtemp()
    result = subprocess.run(
        [sys.executable, '-m', 'impala_tf.curves', logdir,
         f'--output={logdir}/out'], capture_output=True, text=True,
        check=False, timeout=120, cwd=REPO_ROOT)
    self.assertNotEqual(0, result.returncode)
    self.assertEqual(
        f'curves: error: {logdir} has no atari/pong/episode_return summaries '
        "(nor Sample Factory's reward/reward)",
        result.stderr.strip().splitlines()[-1])
    self.assertNotIn('Traceback', result.stderr)


if __name__ == '__main__':
  tf.test.main()
