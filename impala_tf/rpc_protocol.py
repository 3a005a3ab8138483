"""What the two sides of the RPC transport agree on: the learner's
`rpc_service` serves these methods with `tf.distribute.experimental.rpc`
(gRPC), the actors' `rpc_client` calls them.

- `send(actor_index, *unroll, *games)`: part of an actor's unroll (a
  `Trajectory` of some of its environments, flattened as
  `trajectory.unroll_spec`) and the games it finished (`GAME_SPECS`);
  returns the learner's update count;
- `policy_version()`: the learner's update count, and whether training
  ended;
- `weights_<k>()`: the agent's trainable variables of group k of
  `weight_groups`.

gRPC carries messages of at most 4 MiB, so unrolls travel in chunks of
environments and weights in groups of variables, each under
`MESSAGE_BYTES`.
"""

import re

import tensorflow as tf

MESSAGE_BYTES = 3 * 2**20  # gRPC's limit is 4 MiB.

# The finished games that come with an unroll.
GAME_SPECS = [tf.TensorSpec([None], tf.string),  # level_name
              tf.TensorSpec([None], tf.float32),  # episode_return
              tf.TensorSpec([None], tf.int64)]  # episode_frames


def weight_groups(variables):
  """Indices of `variables` in consecutive groups of at most
  `MESSAGE_BYTES` (a larger variable alone)."""
  groups, size = [[]], 0
  for index, variable in enumerate(variables):
    nbytes = variable.shape.num_elements() * variable.dtype.size
    if groups[-1] and size + nbytes > MESSAGE_BYTES:
      groups.append([])
      size = 0
    groups[-1].append(index)
    size += nbytes
  return groups


def first_line(error):
  """An error's first line, without TensorFlow's {{function_node ...}}."""
  message = re.sub(r'\{\{[^}]*\}\}\s*', '',
                   getattr(error, 'message', None) or str(error)).strip()
  return message.splitlines()[0] if message else repr(error)
