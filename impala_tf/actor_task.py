"""The actor job of a distributed run: its environments act with the newest
weights the learner gives and send trajectories to it over RPC."""

import functools

from impala_tf import builders
from impala_tf import cluster as cluster_lib
from impala_tf import local_actors
from impala_tf import rpc_client


def run_actor_task(config, domain, stop, print_fn=print):
  """Acts until the learner finishes or `stop` (a `threading.Event`) is set.

  Raises:
    rpc_client.Unreachable: the learner did not answer within
      `connect_timeout_secs`.
  """
  cluster = cluster_lib.Cluster(config.learner_hosts, config.actor_hosts)
  level_names = local_actors.actor_level_names(
      config.levels, config.actors.num_actors, len(config.actor_hosts),
      config.task)
  info = domain.environment_info(config.suite, config.levels[0])
  agent = builders.build_agent(config.agent, info, config.seed)
  address = cluster_lib.learner_of_actor(cluster, config.task)
  transport = rpc_client.RemoteTransport(
      address, config.task, agent.acting_variables,
      config.connect_timeout_secs, print_fn)
  print_fn(f'Actor {config.task} ({config.actor_hosts[config.task]}): '
           f'{len(level_names)} environments of {config.level_name}, '
           f'sending to learner {address}.')
  actors = local_actors.ActorPool.for_levels(
      config.actors,
      functools.partial(domain.training_environments, config.suite),
      level_names, agent, transport, transport.add_game,
      seed=config.seed * 1_000_003 + 7_919 * (config.task + 1))
  try:
    _report_until_done(config, transport, stop, address, print_fn)
  finally:
    actors.stop()
  unreachable = [error for error in actors.errors
                 if isinstance(error, rpc_client.Unreachable)]
  if unreachable:
    raise unreachable[0]
  actors.check()
  print_fn(f'actor {config.task}: stopped after {transport.steps_sent:,} '
           'steps.')


def _report_until_done(config, transport, stop, address, print_fn):
  while not stop.wait(config.progress_interval_secs):
    if transport.closed:
      return
    print_fn(f'actor {config.task}: {transport.steps_sent:,} steps sent, '
             f'learner update {transport.version:,}.'
             if transport.version >= 0 else
             f'actor {config.task}: waiting for learner {address}.')
