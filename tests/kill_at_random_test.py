"""Kill-at-random: a Catch training run killed at random moments, once in
each way (SIGKILL or SIGTERM at a random moment or during a checkpoint
write, SIGTERM then SIGKILL during the stop's checkpoint), and restarted
after each kill; every restart resumes from the newest checkpoint the
killed run left, at its frame count, and a SIGTERM stop exits 0 with a
checkpoint of the frames it stopped at (experiments/kill_campaign.py)."""

import tempfile

import tensorflow as tf

from experiments import kill_campaign


class KillAtRandomTest(tf.test.TestCase):

  def test_every_restart_resumes_from_the_newest_checkpoint(self):
    lines = []
    kills = kill_campaign.run_campaign(
        tempfile.mkdtemp(), len(kill_campaign.KINDS), seed=0,
        max_wait_secs=3, print_fn=lines.append)
    report = '\n'.join(lines)
    self.assertLen(kills, len(kill_campaign.KINDS), report)
    for kill in kills:
      self.assertEqual([], kill.failures, report)
      self.assertEqual(0, kill.fallbacks, report)
      self.assertIsNotNone(kill.newest[1], report)
      # The newest checkpoint, at its frame count: none lost, none older.
      self.assertEqual(kill.newest, kill.resumed, report)
    signals = [kill.signals for kill in kills]
    self.assertIn(('SIGKILL',), signals, report)
    self.assertIn(('SIGTERM',), signals, report)
    self.assertGreaterEqual(sum(kill.at_write for kill in kills), 1, report)
    frames = [kill.newest[1] for kill in kills]
    self.assertEqual(sorted(frames), frames, report)
    self.assertGreater(frames[-1], frames[0], report)
    self.assertIn(', 0 lost checkpoints,', kill_campaign.summary(kills))


if __name__ == '__main__':
  tf.test.main()
