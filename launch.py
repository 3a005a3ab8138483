r"""A distributed run on this machine over loopback: learner and actor jobs
as separate processes, as they would run on separate machines.

  .venv/bin/python launch.py --num_actor_tasks=2 --level_name=atari/pong \
      --logdir=logs/pong_distributed

starts `experiment.py --job_name=learner` (or `--num_learners` synchronous
learners) and `--num_actor_tasks` actor jobs on ports from `--base_port`
(0: free ones the system picks), forwarding every other flag to them. It shows the first learner's output;
each process's output goes to `<logdir>/launch/<job>_<task>.log`. A process
that dies (killed, crashed) is started again, up to `--max_restarts` times
per task: a learner resumes from its checkpoint and the actors reconnect by
themselves. Ctrl-C stops them all (the learner writes a checkpoint).
"""

import os
import sys

from absl import app
from absl import flags

import experiment
from impala_tf import child_processes
from impala_tf import cluster as cluster_lib

flags.DEFINE_integer('num_learners', 1, 'Synchronous learner processes.',
                     lower_bound=1)
flags.DEFINE_integer('num_actor_tasks', 2, 'Actor processes; --num_actors '
                     'environments are split over them.', lower_bound=1)
flags.DEFINE_integer('base_port', 8000, 'First loopback port: learner i '
                     'takes base_port + 2i (and the next port), the actors '
                     'the ports after; 0: free ports the system picks.',
                     lower_bound=0, upper_bound=65000)
flags.DEFINE_integer('max_restarts', 3, 'Restarts of each task after it '
                     'died.', lower_bound=0)
FLAGS = flags.FLAGS

LAUNCHER_FLAGS = ('num_learners', 'num_actor_tasks', 'base_port',
                  'max_restarts')


def _launch(argv):
  config = experiment.make_config(FLAGS)  # Bad flags: one line, here.
  if config.job_name != 'local':
    raise experiment.UsageError('launch.py assigns the jobs: drop '
                                '--job_name, --task and TF_CONFIG')
  try:
    cluster_lib.check_every_learner_fed(FLAGS.num_actor_tasks,
                                        FLAGS.num_learners)
  except ValueError as error:
    raise experiment.UsageError(str(error)) from None
  del argv  # absl keeps only positional arguments; forward the flags.
  tasks = _tasks(os.path.join(config.logdir, 'launch'))
  for task in tasks:
    task.start()
  stop = child_processes.stop_requested_by_signals()
  status = _supervise(tasks, stop)
  child_processes.stop_all(tasks)
  print('launch: all tasks stopped.', flush=True)
  return status


def _tasks(log_dir):
  """The learner and actor processes, on free loopback ports."""
  learner_ports, actor_ports = _ports()
  forwarded = child_processes.forwarded_flags(sys.argv, LAUNCHER_FLAGS)
  cluster = [
      '--learner_hosts=' + ','.join(f'localhost:{p}' for p in learner_ports),
      '--actor_hosts=' + ','.join(f'localhost:{p}' for p in actor_ports),
  ]
  os.makedirs(log_dir, exist_ok=True)
  script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        'experiment.py')
  print(f'launch: {FLAGS.num_learners} learner(s) on ports {learner_ports}, '
        f'{FLAGS.num_actor_tasks} actor task(s); logs in {log_dir}.',
        flush=True)
  return [
      child_processes.ChildProcess(
          f'{job_name} {index}',
          [sys.executable, script] + forwarded + cluster +
          [f'--job_name={job_name}', f'--task={index}'],
          os.path.join(log_dir, f'{job_name}_{index}.log'),
          echo=(job_name, index) == ('learner', 0))
      for job_name, count in (('learner', FLAGS.num_learners),
                              ('actor', FLAGS.num_actor_tasks))
      for index in range(count)
  ]


def _ports():
  """(learner ports, actor ports): from `--base_port`, or free ones for 0."""
  count = FLAGS.num_learners + FLAGS.num_actor_tasks
  if not FLAGS.base_port:
    ports = cluster_lib.free_loopback_ports(count)
    return ports[:FLAGS.num_learners], ports[FLAGS.num_learners:]
  learner_ports = [FLAGS.base_port + 2 * i for i in range(FLAGS.num_learners)]
  actor_ports = [learner_ports[-1] + 2 + j
                 for j in range(FLAGS.num_actor_tasks)]
  busy = [port for port in learner_ports + actor_ports +
          [p + 1 for p in learner_ports] if not cluster_lib.port_is_free(port)]
  if busy:
    raise experiment.UsageError(f'port {busy[0]} is in use; choose another '
                                '--base_port, or 0 for free ones')
  return learner_ports, actor_ports


def _supervise(tasks, stop):
  """Restarts tasks that die until the learners finish or `stop` is set;
  returns the exit status (1: a task died too often)."""
  learners = tasks[:FLAGS.num_learners]
  while not stop.wait(0.5):
    if all(task.process.poll() == 0 for task in learners):
      return 0  # Training done.
    if not child_processes.restart_dead(
        tasks, FLAGS.max_restarts, lambda line: print(f'launch: {line}',
                                                      flush=True)):
      return 1
  return 0


def main(argv):
  try:
    sys.exit(_launch(argv))
  except experiment.UsageError as error:
    sys.exit(f'launch: error: {error}')


if __name__ == '__main__':
  app.run(main)
