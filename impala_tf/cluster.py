"""Who is who in a distributed run: the learner and actor tasks' addresses,
from flags or from the standard `TF_CONFIG` cluster resolver.

A cluster has two jobs, as the paper's code: `learner` (one task, or
several synchronous learners) and `actor`. Learner i serves its actors on
its address; with several learners, it also joins their collective
all-reduce on the next port (`collective_address`). Actor tasks connect out
and listen on nothing: their addresses name them in the learner's log.
Actor task j sends to learner j mod (number of learners).
"""

import collections
import json
import os
import socket

import tensorflow as tf

JOBS = ('learner', 'actor')

Cluster = collections.namedtuple(
    'Cluster',
    [
        'learners',  # tuple of 'host:port'.
        'actors',  # tuple of 'host:port'.
    ])


def parse_address(address):
  """'host:port' -> (host, port); ValueError naming what is wrong."""
  host, separator, port = address.strip().rpartition(':')
  if not separator or not host:
    raise ValueError(f'address {address!r} is not host:port')
  if not port.isdigit() or not 0 < int(port) < 65536:
    raise ValueError(f'address {address!r} has no port in 1..65535')
  return host, int(port)


def from_hosts(learner_hosts, actor_hosts):
  """A `Cluster` from comma-separated address lists.

  Raises:
    ValueError: an empty list, a malformed or repeated address.
  """
  jobs = {}
  for job, hosts in zip(JOBS, (learner_hosts, actor_hosts)):
    addresses = tuple(a.strip() for a in hosts.split(',') if a.strip())
    if not addresses:
      raise ValueError(f'no {job} address given')
    for address in addresses:
      parse_address(address)
    jobs[job] = addresses
  collectives = (tuple(collective_address(a) for a in jobs['learner'])
                 if len(jobs['learner']) > 1 else ())
  _check_distinct(jobs['learner'] + jobs['actor'] + collectives)
  return Cluster(jobs['learner'], jobs['actor'])


def from_tf_config(tf_config):
  """(`Cluster`, job name, task index) from a `TF_CONFIG` JSON string.

  Raises:
    ValueError: not JSON, a job other than learner/actor, a missing job,
      or a task outside the cluster.
  """
  try:
    json.loads(tf_config)
  except json.JSONDecodeError as error:
    raise ValueError(f'TF_CONFIG is not JSON: {error}') from None
  saved = os.environ.get('TF_CONFIG')
  os.environ['TF_CONFIG'] = tf_config
  try:
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    jobs = resolver.cluster_spec().as_dict()
    job_name, task = resolver.task_type, resolver.task_id
  finally:
    if saved is None:
      os.environ.pop('TF_CONFIG')
    else:
      os.environ['TF_CONFIG'] = saved
  unknown = set(jobs) - set(JOBS)
  if unknown:
    raise ValueError(f'TF_CONFIG has jobs {sorted(unknown)}; a run has '
                     f'{" and ".join(JOBS)} jobs')
  for job in JOBS:
    if isinstance(jobs.get(job), dict):
      raise ValueError(f'TF_CONFIG: give the {job} job as a list')
  cluster = from_hosts(','.join(jobs.get('learner', [])),
                       ','.join(jobs.get('actor', [])))
  if job_name not in JOBS:
    raise ValueError(f'TF_CONFIG task type {job_name!r} is not one of {JOBS}')
  check_task(cluster, job_name, task)
  return cluster, job_name, task


def check_task(cluster, job_name, task):
  """ValueError unless `task` indexes a task of `job_name`."""
  tasks = cluster.learners if job_name == 'learner' else cluster.actors
  if task is None or not 0 <= task < len(tasks):
    raise ValueError(f'--task={task} is outside the {job_name} job\'s '
                     f'{len(tasks)} task{"s" if len(tasks) > 1 else ""}')


# The flags that describe the cluster and this process's place in it.
TASK_FLAGS = ('job_name', 'task', 'learner_hosts', 'actor_hosts')


def task_settings(tf_config, given_flags, config):
  """job_name, task, learner_hosts and actor_hosts (tuples), checked.

  Args:
    tf_config: the TF_CONFIG environment variable, or None.
    given_flags: the names in `TASK_FLAGS` set on the command line.
    config: {flag name: value} of the run.

  Raises:
    ValueError: the cluster or this task's settings are inconsistent.
  """
  if tf_config:
    if given_flags:
      raise ValueError(f'TF_CONFIG and '
                       f'{", ".join("--" + name for name in given_flags)} '
                       'both describe the cluster; give one of them')
    cluster, job_name, task = from_tf_config(tf_config)
  else:
    cluster = from_hosts(config['learner_hosts'], config['actor_hosts'])
    job_name, task = config['job_name'], config['task']
    if job_name != 'local':
      check_task(cluster, job_name, task)
  if job_name != 'local':
    if config['mode'] == 'test':
      raise ValueError('test mode runs on one machine: drop --job_name')
    if config['num_actors'] < len(cluster.actors):
      raise ValueError(f'--num_actors={config["num_actors"]} is fewer than '
                       f'the {len(cluster.actors)} actor tasks')
    check_every_learner_fed(len(cluster.actors), len(cluster.learners))
    if config['batch_size'] % len(cluster.learners):
      raise ValueError(f'--batch_size={config["batch_size"]} does not split '
                       f'evenly over {len(cluster.learners)} learners')
  return dict(job_name=job_name, task=task, learner_hosts=cluster.learners,
              actor_hosts=cluster.actors)


def check_every_learner_fed(num_actor_tasks, num_learners):
  """ValueError unless every learner gets an actor task: actor task i
  feeds learner i mod L, and a learner without one would wait forever in
  the synchronous all-reduce."""
  if num_actor_tasks < num_learners:
    raise ValueError(f'{num_actor_tasks} actor task(s) cannot feed '
                     f'{num_learners} learners: give at least one actor '
                     'task per learner')


def learner_of_actor(cluster, actor_task):
  """The address of the learner actor task `actor_task` sends to."""
  return cluster.learners[actor_task % len(cluster.learners)]


def collective_address(learner_address):
  """Where a synchronous learner joins the others' all-reduce."""
  host, port = parse_address(learner_address)
  return f'{host}:{port + 1}'


def collective_cluster_resolver(cluster, task):
  """The resolver `tf.distribute.MultiWorkerMirroredStrategy` takes for
  learner `task` (the learners as its workers)."""
  spec = tf.train.ClusterSpec(
      {'worker': [collective_address(a) for a in cluster.learners]})
  return tf.distribute.cluster_resolver.SimpleClusterResolver(
      spec, task_type='worker', task_id=task, rpc_layer='grpc')


def free_loopback_ports(count):
  """`count` distinct loopback ports, each with a free port after it (a
  learner's collective address), free when asked: another process may still
  take one before it is bound."""
  ports = []
  while len(ports) < count:
    port = _bindable(0)
    if (port + 1 < 65536 and _bindable(port + 1) and
        not {port, port + 1} & {p + d for p in ports for d in (0, 1)}):
      ports.append(port)
  return ports


def port_is_free(port):
  """Whether a server could bind loopback `port` now."""
  return _bindable(port) is not None


def _bindable(port):
  """The port bound (`port`, or the one the system chose for 0), or None."""
  with socket.socket() as probe:
    # As servers bind: a port left in TIME_WAIT by an earlier run is free.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
      probe.bind(('localhost', port))
    except OSError:
      return None
    return probe.getsockname()[1]


def _check_distinct(addresses):
  counts = collections.Counter(addresses)
  repeated = [address for address, count in counts.items() if count > 1]
  if repeated:
    raise ValueError(
        f'address {repeated[0]} is used twice (with several learners, '
        'learner host:port also takes host:port+1 for the all-reduce)')
