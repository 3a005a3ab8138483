"""The IMPALA learner: V-trace loss (or another off-policy correction),
RMSProp, learning-rate annealing.

One `Learner` owns the agent's optimiser state and the global frame counter;
`train_step` consumes a time-major batch of trajectories (see
`trajectory.py`) and is compiled with XLA when asked.
"""

import collections
import functools
import math

import tensorflow as tf

from impala_tf import corrections
from impala_tf import frame_normalizer
from impala_tf import losses
from impala_tf import trajectory as trajectory_lib

LearnerHParams = collections.namedtuple(
    'LearnerHParams',
    [
        'learning_rate',  # Initial learning rate, annealed linearly to 0.
        'learning_rate_anneal_frames',  # Frames over which it is annealed.
        'num_action_repeats',  # Environment frames per agent step.
        'decay',  # RMSProp decay of the squared-gradient average.
        'momentum',  # RMSProp momentum.
        'epsilon',  # RMSProp epsilon.
        'max_grad_norm',  # Global-norm gradient clipping; None or 0: none.
        'discounting',  # gamma.
        'baseline_cost',  # Weight of the baseline loss.
        'entropy_cost',  # Weight of the entropy loss.
        'reward_clipping',  # One of losses.REWARD_CLIPPING_MODES.
        'off_policy_correction',  # One of corrections.CORRECTIONS.
        'vtrace_lambda',  # lambda of the traces (Remark 2); 1: the paper's.
    ])


# The hyperparameters a learner keeps in variables, which population-based
# training changes as it runs (impala_tf/pbt.py).
EVOLVING = ('learning_rate', 'entropy_cost', 'epsilon', 'max_grad_norm')

# Each numeric hyperparameter's allowed range: (description, test).
HPARAM_RANGES = {
    'learning_rate': ('> 0', lambda x: x > 0),
    'total_environment_frames': ('>= 1', lambda x: x >= 1),
    'learning_rate_anneal_frames': ('>= 1', lambda x: x >= 1),
    'num_action_repeats': ('>= 1', lambda x: x >= 1),
    'decay': ('in [0, 1)', lambda x: 0 <= x < 1),
    'momentum': ('in [0, 1)', lambda x: 0 <= x < 1),
    'epsilon': ('> 0', lambda x: x > 0),
    'max_grad_norm': ('>= 0 (0: no clipping)', lambda x: x >= 0),
    'discounting': ('in [0, 1]', lambda x: 0 <= x <= 1),
    'vtrace_lambda': ('in [0, 1]', lambda x: 0 <= x <= 1),
    'baseline_cost': ('>= 0', lambda x: x >= 0),
    'entropy_cost': ('>= 0', lambda x: x >= 0),
    'replay_proportion': ('in [0, 1)', lambda x: 0 <= x < 1),
}


def check_hparams(values):
  """Raises ValueError naming the first flag in `values` ({name: number})
  that is not finite or outside `HPARAM_RANGES`."""
  for name, (allowed, test) in HPARAM_RANGES.items():
    if name in values and (values[name] is None or
                           not math.isfinite(values[name]) or
                           not test(values[name])):
      raise ValueError(f'--{name}={values[name]} is out of range: it must '
                       f'be finite and {allowed}')


class RMSProp(tf.Module):
  """RMSProp as TF1's `RMSPropOptimizer`, which the paper's code used.

  ms <- decay * ms + (1 - decay) * g^2
  mom <- momentum * mom + lr * g / sqrt(ms + epsilon)
  w <- w - mom

  The mean square starts at one, not zero, as in TF1, so the first updates
  are not blown up by a tiny denominator.
  """

  def __init__(self, variables, decay, momentum, name='rmsprop'):
    super().__init__(name=name)
    self._decay = decay
    self._momentum = momentum
    with self.name_scope:
      self.mean_squares = [
          tf.Variable(tf.ones_like(v), trainable=False, name='ms')
          for v in variables
      ]
      self.moments = [
          tf.Variable(tf.zeros_like(v), trainable=False, name='mom')
          for v in variables
      ]

  def apply(self, gradients, variables, learning_rate, epsilon):
    """Applies one update; `gradients` and `variables` are aligned lists.

    Returns the global norm of the step taken (scalar float32).
    """
    for gradient, variable, mean_square, moment in zip(
        gradients, variables, self.mean_squares, self.moments):
      mean_square.assign(self._decay * mean_square +
                         (1.0 - self._decay) * tf.square(gradient))
      moment.assign(self._momentum * moment + learning_rate * gradient *
                    tf.math.rsqrt(mean_square + epsilon))
      variable.assign_sub(moment)
    return tf.linalg.global_norm(self.moments)


def dead_fraction(activations):
  """The fraction of units that are zero (or below) at every step of every
  trajectory: ReLU units that no longer fire and pass no gradient.

  Args:
    activations: float32 `[T, B, units]`.

  Returns:
    float32 scalar.
  """
  dead = tf.reduce_all(activations <= 0.0, axis=[0, 1])
  return tf.reduce_mean(tf.cast(dead, tf.float32))


def explained_variance(targets, predictions):
  """1 - Var(targets - predictions) / Var(targets): 1 for a perfect
  baseline, 0 for one no better than the targets' mean, `[T, B]` each."""
  return 1.0 - tf.math.reduce_variance(targets - predictions) / tf.maximum(
      tf.math.reduce_variance(targets), 1e-8)


def impala_loss(agent, hparams, entropy_cost, trajectory, use_cudnn):
  """The summed IMPALA loss of a batch.

  Args:
    agent: the `agents.Agent` trained.
    hparams: `LearnerHParams` (its entropy cost is `entropy_cost`'s).
    entropy_cost: scalar, the entropy loss's weight now.
    trajectory: `Trajectory` with fields `[T + 1, B, ...]`.
    use_cudnn: unroll the LSTM with cuDNN's kernel.

  Returns:
    (total_loss scalar, dict of scalar diagnostics).
  """
  env_outputs = trajectory.env_outputs
  agent_outputs = trajectory.agent_outputs
  learner_outputs, _, torso = agent.unroll(
      agent_outputs.action, env_outputs, trajectory.agent_state,
      use_cudnn=use_cudnn)
  bootstrap_value = learner_outputs.baseline[-1]
  # Step t of the learner's view scores the action chosen at x_t, which the
  # trajectory stores at t + 1 with its reward and episode end.
  target_logits = learner_outputs.policy_logits[:-1]
  values = learner_outputs.baseline[:-1]
  rewards = losses.clip_rewards(env_outputs.reward[1:],
                                hparams.reward_clipping)
  discounts = losses.discounts_from_done(env_outputs.done[1:],
                                         hparams.discounting)
  actions = agent_outputs.action[1:]
  targets = corrections.targets(
      hparams.off_policy_correction,
      vtrace_lambda=hparams.vtrace_lambda,
      behaviour_policy_logits=agent_outputs.policy_logits[1:],
      target_policy_logits=target_logits,
      actions=actions,
      discounts=discounts,
      rewards=rewards,
      values=values,
      bootstrap_value=bootstrap_value)
  policy_gradient_loss = losses.policy_gradient_loss(
      targets.action_log_probs, targets.pg_advantages)
  baseline_loss = losses.baseline_loss(targets.vs - values)
  entropy_loss = losses.entropy_loss(target_logits)
  total_loss = (
      policy_gradient_loss + hparams.baseline_cost * baseline_loss +
      entropy_cost * entropy_loss)
  num_steps = tf.cast(tf.size(values), tf.float32)
  return total_loss, {
      'baseline_explained_variance': explained_variance(
          targets.vs, values),
      'advantage_std': tf.math.reduce_std(targets.pg_advantages),
      'total_loss': total_loss,
      'policy_gradient_loss': policy_gradient_loss,
      'baseline_loss': baseline_loss,
      'entropy': -entropy_loss / num_steps,
      'mean_importance_weight': tf.reduce_mean(
          tf.exp(targets.log_rhos)),
      # An LSTM core's collapse shows here first (docs/learning.md).
      'torso_dead_fraction': dead_fraction(torso),
  }


class EvolvingHparams(tf.Module):
  """The hyperparameters population-based training evolves, as variables:
  a change needs no retracing and checkpoints keep them. `[name]` is a
  variable; whether gradients are clipped stays the run's (`clips`)."""

  def __init__(self, hparams, name='evolving'):
    super().__init__(name=name)
    with self.name_scope:
      self.by_name = {
          name: tf.Variable(float(getattr(hparams, name) or 0.0),
                            trainable=False, name=name)
          for name in EVOLVING
      }
    self.clips = bool(hparams.max_grad_norm)

  def __getitem__(self, name):
    return self.by_name[name]

  def values(self):
    """{name: value} of those in effect (the clipping threshold only where
    the run clips)."""
    return {name: float(variable.numpy())
            for name, variable in self.by_name.items()
            if name != 'max_grad_norm' or self.clips}

  def assign(self, values):
    """Sets those of `values` ({name: value}) in effect here."""
    in_effect = self.values()
    for name, value in values.items():
      if name in in_effect:
        self.by_name[name].assign(value)


class Learner(tf.Module):
  """Trains an `agents.Agent` on batches of trajectories with V-trace."""

  def __init__(self, agent, hparams, xla=False, strategy=None,
               name='learner'):
    """
    Args:
      agent: `agents.Agent`.
      hparams: `LearnerHParams`.
      xla: compile the loss and gradients with XLA.
      strategy: None, or a `tf.distribute.MultiWorkerMirroredStrategy` over
        synchronous learners (one replica each): each computes gradients on
        its own batch, their sum is all-reduced, and every learner applies
        the same update to its own copy of the variables, which therefore
        stay one set of weights (after `broadcast_from_first`).
      name: module name.
    """
    super().__init__(name=name)
    self.agent = agent
    self.hparams = hparams
    with self.name_scope:
      self.evolving = EvolvingHparams(hparams)
      self.optimizer = RMSProp(agent.trainable_variables, hparams.decay,
                               hparams.momentum)
      self.num_environment_frames = tf.Variable(
          0, dtype=tf.int64, trainable=False, name='num_environment_frames')
      self.num_updates = tf.Variable(
          0, dtype=tf.int64, trainable=False, name='num_updates')
    # XLA cannot compile cuDNN's LSTM kernel; on a GPU without XLA use it.
    self._use_cudnn = bool(tf.config.list_logical_devices('GPU')) and not xla
    self._strategy = strategy
    # No Python control flow depends on a tensor in these steps: tracing
    # without AutoGraph's source rewrite starts every run sooner.
    compile_step = functools.partial(tf.function, autograph=False)
    # Outside XLA, which cannot gather the new trajectories' frames (their
    # number is known only from the batch).
    self._update_frame_statistics = (
        compile_step(self._add_new_frames_on_every_learner)
        if agent.frame_normalizer else None)
    if strategy is None:
      self._compiled_step = compile_step(self._train_step, jit_compile=xla)
    else:
      # Collectives stay outside XLA.
      self._compiled_gradients = compile_step(self._gradients,
                                              jit_compile=xla)
      self._compiled_step = compile_step(self._synchronous_step)
      self._any_learner = compile_step(
          functools.partial(_any_replica, strategy))

  def train_step(self, trajectory):
    """One RMSProp update on a batch `Trajectory` `[T + 1, B]`.

    Only the numeric fields reach the compiled step (see
    `trajectory.LEARNER_FIELDS`); the frames of the trajectories not marked
    `replayed` are counted, and with frame normalisation added to the
    statistics after the update. Returns a dict of scalar diagnostics.
    """
    stats = self._compiled_step(
        *[getattr(trajectory, field) for field in trajectory_lib.LEARNER_FIELDS])
    if self._update_frame_statistics:
      self._update_frame_statistics(trajectory.replayed,
                                    trajectory.env_outputs.frame)
    return stats

  def learning_rate(self):
    """The current rate annealed linearly to 0 over the anneal frames,
    then 0."""
    total = float(self.hparams.learning_rate_anneal_frames)
    done = tf.minimum(tf.cast(self.num_environment_frames, tf.float32), total)
    return self.evolving['learning_rate'] * (1.0 - done / total)

  def loss(self, trajectory):
    """`impala_loss` of a batch with this learner's agent and settings."""
    return impala_loss(self.agent, self.hparams,
                       self.evolving['entropy_cost'], trajectory,
                       self._use_cudnn)

  def _gradients(self, replayed, agent_state, env_outputs, agent_outputs):
    """(gradients, diagnostics, environment frames) of a batch."""
    trajectory = trajectory_lib.Trajectory(
        level_name=None, policy_version=None, replayed=replayed,
        agent_state=agent_state, env_outputs=env_outputs,
        agent_outputs=agent_outputs)
    with tf.GradientTape() as tape:
      total_loss, stats = self.loss(trajectory)
    gradients = tape.gradient(total_loss, self.agent.trainable_variables)
    unroll_length = env_outputs.reward.shape[0] - 1
    # Replayed trajectories were counted when they were new.
    new_trajectories = tf.reduce_sum(
        tf.cast(tf.logical_not(replayed), tf.int64))
    frames = (unroll_length * self.hparams.num_action_repeats *
              new_trajectories)
    return gradients, stats, frames

  def _apply(self, gradients, frames):
    """Clips and applies the gradients; counts the frames and the update."""
    learning_rate = self.learning_rate()
    gradient_norm = tf.linalg.global_norm(gradients)
    if self.evolving.clips:
      gradients, _ = tf.clip_by_global_norm(
          gradients, self.evolving['max_grad_norm'], use_norm=gradient_norm)
    step_norm = self.optimizer.apply(
        gradients, self.agent.trainable_variables, learning_rate,
        self.evolving['epsilon'])
    self.num_environment_frames.assign_add(frames)
    self.num_updates.assign_add(1)
    return {
        'learning_rate': learning_rate,
        'gradient_norm': gradient_norm,
        # How far one update moves the weights, relative to their size.
        'update_to_weight_ratio': step_norm / tf.linalg.global_norm(
            self.agent.trainable_variables),
    }

  def _train_step(self, replayed, agent_state, env_outputs, agent_outputs):
    gradients, stats, frames = self._gradients(replayed, agent_state,
                                               env_outputs, agent_outputs)
    stats.update(self._apply(gradients, frames))
    return stats

  def _add_new_frames(self, replayed, frames):
    """Adds the frames of the trajectories not `replayed` (bool `[B]`) to
    the agent's frame statistics; synchronous learners add all learners'.

    Args:
      replayed: bool `[B]`.
      frames: uint8 `[T + 1, B, H, W, C]`; each trajectory's first frame is
        its predecessor's last, counted there.
    """
    moments = frame_normalizer.batch_moments(
        tf.boolean_mask(frames[1:], tf.logical_not(replayed), axis=1))
    # With one learner (the default strategy) the sum is the moments.
    self.agent.frame_normalizer.update(
        *tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, moments))

  def _add_new_frames_on_every_learner(self, replayed, frames):
    """`_add_new_frames` on each learner: this one, or every synchronous
    one."""
    strategy = (self._strategy if self._strategy is not None
                else tf.distribute.get_strategy())
    strategy.run(self._add_new_frames, args=(replayed, frames))

  def _synchronous_step(self, replayed, agent_state, env_outputs,
                        agent_outputs):
    def replica_step(replayed, agent_state, env_outputs, agent_outputs):
      gradients, stats, frames = self._compiled_gradients(
          replayed, agent_state, env_outputs, agent_outputs)
      context = tf.distribute.get_replica_context()
      # The losses are sums over the batch: summed gradients are those of
      # the learners' batches taken as one.
      gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
      # Every learner's batch holds as many new trajectories (same size,
      # same replay proportion).
      stats.update(self._apply(
          gradients, frames * context.num_replicas_in_sync))
      return stats

    # Each learner trains on its own batch, `replayed` marks included.
    return self._strategy.run(
        replica_step, args=(replayed, agent_state, env_outputs,
                            agent_outputs))

  def broadcast_from_first(self):
    """Synchronous learners: every variable (weights, optimiser state,
    counters) takes the first learner's value, e.g. the checkpoint it
    restored. Every learner must call it."""
    if self._strategy is not None:
      _broadcast_from_first_replica(self._strategy, self.variables)

  def any_learner(self, flag):
    """Whether `flag` (bool) is set on any synchronous learner (each must
    call it at the same step); with one learner, `flag`."""
    if self._strategy is None:
      return flag
    return bool(self._any_learner(tf.constant(float(flag))))


def _broadcast_from_first_replica(strategy, variables):
  """Every replica's `variables` take the first replica's values."""

  @tf.function
  def broadcast():
    def replica_fn():
      context = tf.distribute.get_replica_context()
      is_first = tf.equal(context.replica_id_in_sync_group, 0)
      # One all-reduce per dtype (one may not mix them).
      for dtype in {variable.dtype for variable in variables}:
        of_dtype = [v for v in variables if v.dtype == dtype]
        mine = [tf.where(is_first, v, tf.zeros_like(v)) for v in of_dtype]
        for variable, value in zip(of_dtype, context.all_reduce(
            tf.distribute.ReduceOp.SUM, mine)):
          variable.assign(value)

    strategy.run(replica_fn)

  broadcast()


def _any_replica(strategy, flag):
  """Whether `flag` (a float tensor, 0 or 1) is set on any replica."""
  def replica_fn(flag):
    # A tensor made in the replica: an argument has no device to reduce
    # to.
    return tf.distribute.get_replica_context().all_reduce(
        tf.distribute.ReduceOp.SUM, tf.identity(flag)) > 0

  return strategy.run(replica_fn, args=(flag,))
