r"""A population of training runs on this machine: population-based training
as the paper's Appendix F (impala_tf/pbt.py holds the rule).

  .venv/bin/python population.py --population=4 --pbt_dir=logs/pbt_catch \
      --level_name=catch/plain

starts `--population` members, each `experiment.py` with every other flag
of this command, `--logdir=<pbt_dir>/member_<k>`, `--pbt_member=<k>` and
`--seed=<seed + k>`; `--member_flags=K:--flag=value` (repeatable) gives one
member a flag of its own. Members meet only in `--pbt_dir`, so members on
other machines (any `experiment.py` or `launch.py` run with the same
`--pbt_dir` and their own `--pbt_member`) join the same population. One
progress line shows the population's frames, frames/s and time left, then
every member's frames, fitness and hyperparameters; a member's output
goes to `<pbt_dir>/member_<k>/train.log`. A member that dies is started
again (it resumes from its checkpoint), up to `--max_restarts` times.
Ctrl-C stops them all, each writing a checkpoint; the same command resumes
the population.
"""

import os
import sys

from absl import app
from absl import flags

import experiment
from impala_tf import child_processes
from impala_tf import pbt
from impala_tf import progress
from impala_tf import run_status

flags.DEFINE_integer('population', 24, 'Members (the paper: 24).',
                     lower_bound=1)
flags.DEFINE_multi_string('member_flags', [], 'K:--flag=value: a flag for '
                          'member K only (e.g. 2:--learning_rate=1e-7).')
flags.DEFINE_integer('max_restarts', 3, 'Restarts of a member after it '
                     'died.', lower_bound=0)
FLAGS = flags.FLAGS

LAUNCHER_FLAGS = ('population', 'member_flags', 'max_restarts')
# Set here for each member.
MEMBER_FLAGS = ('logdir', 'pbt_member', 'seed')
ABBREVIATIONS = {'learning_rate': 'lr', 'entropy_cost': 'entropy',
                 'epsilon': 'eps', 'max_grad_norm': 'clip'}


def _member_argv(member, forwarded, own_flags):
  script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        'experiment.py')
  return ([sys.executable, script] + forwarded + [
      f'--logdir={_member_logdir(member)}', f'--pbt_member={member}',
      f'--seed={FLAGS.seed + member}'] + own_flags.get(member, []))


def _member_logdir(member):
  return os.path.join(FLAGS.pbt_dir, f'member_{member}')


def _own_flags():
  """{member: [flag]} from --member_flags."""
  own = {}
  for item in FLAGS.member_flags:
    member, _, flag = item.partition(':')
    if not member.isdigit() or int(member) >= FLAGS.population or (
        not flag.startswith('--')):
      raise experiment.UsageError(
          f'--member_flags={item}: expected K:--flag=value with K a member '
          f'(0 to {FLAGS.population - 1})')
    own.setdefault(int(member), []).append(flag)
  return own


def _member_states(config):
  """[(frames, fitness or None, {hyperparameter: value})] per member, from
  its status file and its last PBT event."""
  benchmark = experiment.domain_of(config.levels[0]).benchmark
  states = []
  for member in range(FLAGS.population):
    status = run_status.read(_member_logdir(member)) or {}
    recent = {level: (None, mean) for level, mean in
              status.get('recent_returns', {}).items()}
    events = pbt.read_events(FLAGS.pbt_dir, member)
    states.append((status.get('frames', 0),
                   pbt.fitness(recent, config.levels, benchmark),
                   events[-1]['hparams'] if events else {}))
  return states


def _population_line(states, progress_line, frames_per_second):
  """One line: frames in all, per second and time left for the whole
  population, then each member's frames, fitness and hyperparameters.

  Args:
    states: from `_member_states`.
    progress_line: a `progress.ProgressLine` over all members' frames.
    frames_per_second: float, the population's (0: unknown).
  """
  members = []
  for index, (frames, fitness, hparams) in enumerate(states):
    fitness_text = '-' if fitness is None else f'{fitness:.2f}'
    members.append(f'm{index} {frames / 1e6:.2f}M fitness {fitness_text} ' +
                   ' '.join(f'{ABBREVIATIONS.get(name, name)} {value:.2g}'
                            for name, value in hparams.items()))
  total = sum(frames for frames, _, _ in states)
  return (f'population {progress_line.head(total, frames_per_second)} | ' +
          ' | '.join(members))


def _run(argv):
  del argv  # absl keeps only positional arguments; forward the flags.
  if not FLAGS.pbt_dir:
    raise experiment.UsageError('population.py needs --pbt_dir')
  config = experiment.make_config(FLAGS)  # Bad flags: one line, here.
  if config.job_name != 'local':
    raise experiment.UsageError('population.py runs local members: drop '
                                '--job_name, --task and TF_CONFIG')
  own = _own_flags()
  forwarded = child_processes.forwarded_flags(
      sys.argv, LAUNCHER_FLAGS + MEMBER_FLAGS)
  members = []
  for member in range(FLAGS.population):
    os.makedirs(_member_logdir(member), exist_ok=True)
    members.append(child_processes.ChildProcess(
        f'member {member}', _member_argv(member, forwarded, own),
        os.path.join(_member_logdir(member), 'train.log')))
  for member in members:
    member.start()
  print(f'population: {FLAGS.population} members of {config.level_name} '
        f'in {FLAGS.pbt_dir}; each member\'s output in '
        f'<pbt_dir>/member_<k>/train.log.', flush=True)
  stop = child_processes.stop_requested_by_signals()
  progress_line = progress.ProgressLine(
      FLAGS.population * config.total_environment_frames,
      config.progress_interval_secs)
  status = _supervise(config, members, stop, progress_line)
  child_processes.stop_all(members)
  print(_population_line(_member_states(config), progress_line, 0.0),
        flush=True)
  print('population: all members stopped.', flush=True)
  return status


def _supervise(config, members, stop, progress_line):
  """Restarts members that die and shows the population's line until all
  finish or `stop` is set; returns the exit status (1: a member died too
  often)."""
  while not stop.wait(config.progress_interval_secs):
    if all(member.process.poll() == 0 for member in members):
      return 0
    if not child_processes.restart_dead(
        members, FLAGS.max_restarts,
        lambda line: print(f'population: {line}', flush=True)):
      return 1
    states = _member_states(config)
    rate = progress_line.rate_if_due(sum(state[0] for state in states))
    print(_population_line(states, progress_line, rate or 0.0), flush=True)
  return 0


def main(argv):
  try:
    sys.exit(_run(argv))
  except experiment.UsageError as error:
    sys.exit(f'population: error: {error}')


if __name__ == '__main__':
  app.run(main)
