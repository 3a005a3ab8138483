"""Population-based training as the paper's Appendix F: the rule as pure
functions, and `Member`, the part of an ordinary training run that takes
part in a population.

Each member is one training run (local, or a distributed run's learner) with
its own logdir. Members meet only in a shared directory, read and written
through `tf.io.gfile` (a local path, a network file system or a bucket):

  <pbt_dir>/member_<k>/pbt/record.json     its latest fitness, frames and
                                           hyperparameters, and the snapshot
                                           they belong to (written last,
                                           atomically: a reader never sees a
                                           record of a snapshot not written)
  <pbt_dir>/member_<k>/pbt/snapshot-<n>.*  its weights, optimiser slots and
                                           hyperparameters, n counting up
                                           (the last two kept)
  <pbt_dir>/member_<k>/pbt/events.jsonl    every exploit and explore, rewritten
                                           atomically

A member is ready once past the burn-in frames and `ready_episodes` games
after its last change; its fitness counts only the games finished since
then (the last 100 per level of them), so it is judged on its present
weights and hyperparameters, not on the ones they replaced (games under way
at the change count too). With several levels it waits until each has
finished a game since then. Then it publishes a snapshot and its record,
reads one other member's record drawn at random and, if that one's fitness
is more than `exploit_threshold` higher, copies its snapshot (weights and
hyperparameters, not its frame and update counts); then each evolved
hyperparameter is multiplied by `perturb_factor` or its inverse with
`perturb_probability`.
The hyperparameters live in the learner's variables, so a member's
checkpoint keeps them and a restarted member rejoins where it was.
"""

import collections
import json
import math
import os
import time

import numpy as np
import tensorflow as tf

# Table D.1: the initial values' distributions.
LOG_UNIFORM_RANGES = {'entropy_cost': (5e-5, 1e-2),
                      'learning_rate': (5e-6, 5e-3)}
EPSILON_CHOICES = (1e-1, 1e-3, 1e-5, 1e-7)

SNAPSHOTS_KEPT = 2

# A member's part in the population.
PbtSettings = collections.namedtuple(
    'PbtSettings',
    [
        'pbt_dir',  # The shared directory.
        'member',  # This member's index.
        'evolve',  # The names of learner.EVOLVING that evolve.
        'burn_in_frames',  # No evolution before (the paper: 20M).
        'ready_episodes',  # Games between changes (the paper: 5,000).
        'exploit_threshold',  # Absolute fitness margin (the paper: 5%).
        'perturb_probability',  # Per hyperparameter (the paper: 1/3).
        'perturb_factor',  # x this or 1 / this (the paper: 1.2).
    ])


def sample_initial(rng, names):
  """{name: value} drawn from Table D.1 for those of `names` it gives a
  distribution (entropy cost and learning rate log-uniform, RMSProp epsilon
  one of four); others keep their flag's value."""
  values = {}
  for name in names:
    if name in LOG_UNIFORM_RANGES:
      low, high = LOG_UNIFORM_RANGES[name]
      values[name] = float(math.exp(rng.uniform(math.log(low),
                                                math.log(high))))
    elif name == 'epsilon':
      values[name] = float(rng.choice(EPSILON_CHOICES))
  return values


def is_ready(frames, episodes_since_change, settings):
  """Whether a member evolves now: past the burn-in, and enough games
  since its last change."""
  return (frames >= settings.burn_in_frames and
          episodes_since_change >= settings.ready_episodes)


def should_exploit(own_fitness, other_fitness, threshold):
  """Whether to copy the other member: its fitness more than `threshold`
  (absolute) above this one's."""
  return other_fitness - own_fitness > threshold


def perturb(hparams, names, rng, probability, factor):
  """`hparams` ({name: value}) with each of `names` multiplied, with
  `probability`, by `factor` or `1 / factor` (even odds)."""
  perturbed = dict(hparams)
  for name in names:
    if rng.uniform() < probability:
      perturbed[name] *= factor if rng.uniform() < 0.5 else 1.0 / factor
  return perturbed


def fitness(recent_means, levels, benchmark):
  """A member's fitness: with one level, the mean return of its recent
  games; with several, the mean human-normalised score capped at 100% per
  level (the paper's DMLab-30 and Atari-57 multi-task fitness). None until
  every level finished a game.

  Args:
    recent_means: {level: (games, mean recent return)}.
    levels: the run's levels.
    benchmark: the suite's `scoring.Benchmark` (several levels need one).
  """
  if any(level not in recent_means for level in levels):
    return None
  if len(levels) == 1:
    return recent_means[levels[0]][1]
  normalized = benchmark.normalized(
      {level: recent_means[level][1] for level in levels})
  return float(np.mean(np.minimum(list(normalized.values()), 100.0)))


def member_directory(pbt_dir, member):
  return os.path.join(pbt_dir, f'member_{member}', 'pbt')


def write_atomically(path, text):
  """Writes `text` through a temporary file and a rename (`tf.io.gfile`,
  so buckets too): readers see the old file or the new one."""
  temporary = f'{path}.tmp{os.getpid()}'
  with tf.io.gfile.GFile(temporary, 'w') as f:
    f.write(text)
  tf.io.gfile.rename(temporary, path, overwrite=True)


def read_records(pbt_dir):
  """{member: record} of every member that published one."""
  records = {}
  for path in tf.io.gfile.glob(os.path.join(pbt_dir, 'member_*', 'pbt',
                                            'record.json')):
    with tf.io.gfile.GFile(path) as f:
      record = json.load(f)
    records[record['member']] = record
  return records


def read_events(pbt_dir, member):
  path = os.path.join(member_directory(pbt_dir, member), 'events.jsonl')
  if not tf.io.gfile.exists(path):
    return []
  with tf.io.gfile.GFile(path) as f:
    return [json.loads(line) for line in f if line.strip()]


class Member:
  """A training run's part in its population: called after every update,
  it evolves when ready (see the module docstring)."""

  def __init__(self, settings, learner, game_log, levels, benchmark, seed,
               print_fn=print):
    """Args:
      settings: `PbtSettings`.
      learner: the run's `learner.Learner`; its evolving hyperparameters
        are read and assigned through it.
      game_log: the run's `progress.GameLog`.
      levels, benchmark: the run's levels and its suite's benchmark, for
        `fitness`.
      seed: the run's seed.
      print_fn: where each event's line goes.
    """
    self._settings = settings
    self._learner = learner
    self._game_log = game_log
    self._levels = levels
    self._benchmark = benchmark
    self._print = print_fn
    self._directory = member_directory(settings.pbt_dir, settings.member)
    tf.io.gfile.makedirs(self._directory)
    # Fresh random streams after a restart, not a replay of the first's.
    self._rng = np.random.default_rng(
        [seed, settings.member, int(learner.num_updates.numpy())])
    # Clipping evolves only where the run clips (Atari, not DMLab).
    self._evolve = [name for name in settings.evolve
                    if name in learner.evolving.values()]
    self._events = read_events(settings.pbt_dir, settings.member)
    self._writer = tf.summary.create_file_writer(self._directory)
    self._counts_at_change = {}  # progress.GameLog.counts() then.

  def start(self, resumed, sampled):
    """A fresh member draws `sampled` (names) from Table D.1; a resumed
    one keeps its checkpoint's hyperparameters."""
    if resumed:
      return
    self._learner.evolving.assign(sample_initial(self._rng, sampled))
    self._log({'event': 'start', 'frames': self._frames(), 'updates': 0,
               'hparams': self._learner.evolving.values()})

  def _frames(self):
    return int(self._learner.num_environment_frames.numpy())

  def after_update(self, num_updates):
    """Evolves if ready: publish, maybe exploit, explore."""
    # After every update: only counts here, the means once ready.
    frames, counts = self._frames(), self._game_log.counts()
    games_since_change = (sum(counts.values()) -
                          sum(self._counts_at_change.values()))
    if not is_ready(frames, games_since_change, self._settings):
      return
    # Only games since the last change, not those of the weights before.
    own = fitness(self._game_log.recent_means(since=self._counts_at_change),
                  self._levels, self._benchmark)
    if own is None:
      return
    self._publish(num_updates, frames, own)
    event = {'event': 'explore', 'frames': frames, 'updates': num_updates,
             'fitness': own}
    other = self._draw_other()
    if other is not None and should_exploit(
        own, other['fitness'], self._settings.exploit_threshold):
      if self._copy(other):
        event.update(event='exploit', copied=other['member'],
                     copied_fitness=other['fitness'],
                     copied_frames=other['frames'])
    event['hparams'] = perturb(
        self._learner.evolving.values(), self._evolve, self._rng,
        self._settings.perturb_probability, self._settings.perturb_factor)
    self._learner.evolving.assign(event['hparams'])
    # Games the old weights finished while this turn wrote and read files
    # are not the new ones'.
    self._counts_at_change = self._game_log.counts()
    self._log(event)

  def _publish(self, num_updates, frames, own_fitness):
    """A snapshot of the learner, then the record naming it."""
    # Numbered up from the last one, also after a restart from an older
    # checkpoint: the newest is always the highest.
    older = _snapshots(self._directory)
    number = int(older[-1].rsplit('-', 1)[1]) + 1 if older else 1
    snapshot = f'snapshot-{number}'
    tf.train.Checkpoint(learner=self._learner).write(
        os.path.join(self._directory, snapshot))
    record = {'member': self._settings.member, 'frames': frames,
              'updates': num_updates, 'fitness': own_fitness,
              'hparams': self._learner.evolving.values(),
              'snapshot': snapshot,  # In its member's directory.
              'time': time.time()}
    write_atomically(os.path.join(self._directory, 'record.json'),
                     json.dumps(record))
    for old in _snapshots(self._directory)[:-SNAPSHOTS_KEPT]:
      for path in tf.io.gfile.glob(old + '.*'):
        tf.io.gfile.remove(path)

  def _draw_other(self):
    """Another member's record, drawn uniformly; None if none has one."""
    try:
      records = read_records(self._settings.pbt_dir)
    except (tf.errors.OpError, ValueError) as error:
      self._print(f'PBT member {self._settings.member}: cannot read the '
                  f'population\'s records ({type(error).__name__}); no '
                  'copy this time.')
      return None
    others = [record for member, record in sorted(records.items())
              if member != self._settings.member]
    if not others:
      return None
    return others[self._rng.integers(len(others))]

  def _copy(self, record):
    """Takes the weights, optimiser slots and hyperparameters of the
    member of `record`, keeping this run's frame and update counts; False
    (and a line) if its snapshot cannot be read."""
    learner = self._learner
    counts = (learner.num_environment_frames.numpy(),
              learner.num_updates.numpy())
    path = os.path.join(
        member_directory(self._settings.pbt_dir, record['member']),
        record['snapshot'])
    try:
      tf.train.Checkpoint(learner=learner).read(path).expect_partial()
    except (tf.errors.OpError, ValueError) as error:
      self._print(f'PBT member {self._settings.member}: cannot read '
                  f'{path} ({type(error).__name__}); not copied this time.')
      return False
    learner.num_environment_frames.assign(counts[0])
    learner.num_updates.assign(counts[1])
    return True

  def _log(self, event):
    """Keeps `event` (JSON lines, TensorBoard) and prints it."""
    event = dict(event, member=self._settings.member, time=time.time())
    self._events.append(event)
    write_atomically(os.path.join(self._directory, 'events.jsonl'),
                     ''.join(json.dumps(e) + '\n' for e in self._events))
    with self._writer.as_default(step=event['frames']):
      for name, value in event['hparams'].items():
        tf.summary.scalar(f'pbt/{name}', value)
      if 'fitness' in event:
        tf.summary.scalar('pbt/fitness', event['fitness'])
      tf.summary.scalar('pbt/copied_member', event.get('copied', -1))
    self._writer.flush()
    self._print(describe_event(event))


def describe_event(event):
  """One line for a PBT event."""
  hparams = ' '.join(f'{name} {value:.3g}'
                     for name, value in event['hparams'].items())
  text = f'PBT member {event["member"]} at {event["frames"]:,} frames: '
  if event['event'] == 'start':
    return text + f'starts with {hparams}.'
  if event['event'] == 'exploit':
    text += (f'fitness {event["fitness"]:.2f}, copied member '
             f'{event["copied"]} ({event["copied_fitness"]:.2f}); ')
  else:
    text += f'fitness {event["fitness"]:.2f}, kept its weights; '
  return text + f'now {hparams}.'


def _snapshots(directory):
  """The snapshot prefixes in `directory`, oldest first."""
  prefixes = [path[:-len('.index')] for path in
              tf.io.gfile.glob(os.path.join(directory, 'snapshot-*.index'))]
  return sorted(prefixes, key=lambda prefix: int(prefix.rsplit('-', 1)[1]))
