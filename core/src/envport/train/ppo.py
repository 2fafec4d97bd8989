"""PPO for any single-agent :class:`envport.Env`, one jitted update on the device.

The structure PureJaxRL made standard: the batch of auto-resetting envs
(``BatchedAutoResetWrapper(env)``: ``VmapWrapper(AutoResetWrapper(env))``'s results, resetting
only the envs that ended) is rolled out by ``lax.scan`` for ``num_steps``, advantages by GAE
(a reverse scan), then ``update_epochs`` passes of shuffled minibatches through the clipped policy / value loss,
all inside one ``jit``. Everything the next update needs is one pytree (:class:`Runner`),
so a checkpoint is that pytree and a resumed run computes the same next update.

Actions: ``Discrete`` — a categorical over the logits with the env's legal mask applied
(illegal logits set to a large negative number, so they are never sampled and add nothing to
the entropy); ``Box`` — a Gaussian with a learnt state-independent log std, the sample
clipped to the space for the env (the log-probability is the unclipped sample's, as in CleanRL).

Truncation (``truncated`` without ``terminated``) is not a terminal state: the step's reward
gets ``gamma * V(final_obs)`` added, the value of the observation the episode stopped at
(``step_with_final``), computed only on updates where some env truncated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from envport.env import Env
from envport.errors import EnvportError
from envport.train.networks import ActorCritic, as_features, flat_obs_dim, widths_for
from envport.train.selfplay import SelfPlayBatch
from envport.types import Box, Discrete, TimeStep
from envport.wrappers import BatchedAutoResetWrapper

MASKED_LOGIT = -1e9  # finite: softmax gives exactly 0 and 0 * log 0 terms stay 0, not NaN


OPTIMIZERS = {
    "adam": lambda lr: optax.adam(lr, eps=1e-5),
    "muon": lambda lr: optax.contrib.muon(lr),
}


SHUFFLES = ("steps", "rows")


class TrainConfigError(EnvportError, ValueError):
    """A PPO configuration that cannot run (e.g. the batch does not split into minibatches)."""


@dataclass(frozen=True)
class PPOConfig:
    num_envs: int = 64
    num_steps: int = 128  # rollout horizon per update
    total_steps: int = 1_000_000  # env steps over the whole run
    update_epochs: int = 4
    num_minibatches: int = 4
    learning_rate: float = 2.5e-4
    anneal_lr: bool = True  # linearly to 0 over the run
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_coef: float = 0.2
    clip_vloss: bool = True
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    max_grad_norm: float = 0.5
    norm_adv: bool = True
    # "adam", or "muon" (optax.contrib.muon: orthogonalised momentum on the weight matrices,
    # Adam on the rest; PuffeRL's default optimiser, for like-for-like comparisons)
    optimizer: str = "adam"
    # how an epoch's minibatches are drawn: "steps" (a uniform permutation of every
    # transition) or "rows" (whole env rows of the rollout, shuffled as rows, as PuffeRL
    # samples segments: one sort of num_envs keys per epoch instead of num_envs * num_steps,
    # which on XLA:CPU was ~40 % of a small policy's update)
    shuffle: str = "steps"
    policy: str = "0.1M"
    seed: int = 0

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    @property
    def num_updates(self) -> int:
        return max(1, self.total_steps // self.batch_size)

    def check(self) -> PPOConfig:
        for name in ("num_envs", "num_steps", "total_steps", "update_epochs", "num_minibatches"):
            if int(getattr(self, name)) < 1:
                raise TrainConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.batch_size % self.num_minibatches:
            raise TrainConfigError(
                f"num_envs * num_steps = {self.batch_size} does not split into "
                f"{self.num_minibatches} minibatches")
        for name in ("learning_rate", "clip_coef"):
            if not float(getattr(self, name)) > 0:
                raise TrainConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("gamma", "gae_lambda"):
            if not 0 <= float(getattr(self, name)) <= 1:
                raise TrainConfigError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        for name, choices in (("shuffle", SHUFFLES), ("optimizer", OPTIMIZERS)):
            if getattr(self, name) not in choices:
                raise TrainConfigError(f"unknown {name} {getattr(self, name)!r}; "
                                       f"choose from {', '.join(choices)}")
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> PPOConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise TrainConfigError(f"unknown PPO setting(s): {', '.join(unknown)}")
        return cls(**d)


class EpisodeStats(NamedTuple):
    """Per env, the running totals of the episode in progress."""

    ret: jax.Array  # float32[num_envs]: sum of rewards
    score: jax.Array  # float32[num_envs]: sum of the target's per-step score
    length: jax.Array  # int32[num_envs]


class Runner(NamedTuple):
    """All the training state: a checkpoint is this pytree."""

    params: Any
    opt_state: Any
    env_state: Any  # batched, auto-resetting
    obs: jax.Array  # float32[num_envs, obs_dim]: the observation the next action answers
    mask: jax.Array  # bool[num_envs, n] legal mask (all True for Box / unmasked envs)
    stats: EpisodeStats
    key: jax.Array
    update: jax.Array  # int32: updates done


class Transition(NamedTuple):
    obs: jax.Array
    mask: jax.Array
    action: jax.Array
    logp: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array


ScoreFn = Callable[[TimeStep], jax.Array]


def _reward_score(ts: TimeStep) -> jax.Array:
    return ts.reward


class PPO:
    """PPO bound to one env and config: :meth:`init` makes a :class:`Runner`, :meth:`update`
    (jitted) advances it by one update and returns its metrics."""

    def __init__(self, env: Env | None, config: PPOConfig, score: ScoreFn | None = None,
                 spec=None, self_play: bool = False):
        # self-play: a two-player env's games as two single-agent rows each (selfplay.py)
        selfplay = SelfPlayBatch(env, config.num_envs) if self_play else None
        spec = selfplay.spec if selfplay else env.spec if env is not None else spec
        if spec.num_agents != 1:
            raise TrainConfigError(
                f"{spec.id} has {spec.num_agents} players: train a single-agent view of it "
                "(the env package's opponent wrapper) or by self-play (self_play=True)")
        space = spec.action_space
        if isinstance(space, Discrete):
            if tuple(space.shape) != ():
                raise TrainConfigError(f"a Discrete action space of shape {space.shape}: only "
                                       "scalar discrete actions are supported")
            self.continuous, self.action_dim = False, int(space.n)
        elif isinstance(space, Box):
            if len(space.shape) != 1:
                raise TrainConfigError(f"a Box action space of shape {space.shape}: only "
                                       "vector actions are supported")
            self.continuous, self.action_dim = True, int(space.shape[0])
        else:  # pragma: no cover - the spec types are closed
            raise TrainConfigError(f"unsupported action space {space!r}")
        self.env, self.config, self.spec = env, config.check(), spec
        self.obs_shape = tuple(spec.observation_space.shape)
        self.obs_dim = flat_obs_dim(self.obs_shape)
        self.widths = widths_for(config.policy, self.obs_dim, self.action_dim, self.continuous)
        self.net = ActorCritic(self.widths, self.action_dim, self.continuous)
        self.score = score or _reward_score
        # the on-device rollout; the host-loop driver (``envport.train.host``) has no JAX env
        self.batched = (selfplay or BatchedAutoResetWrapper(env)) if env is not None \
            else None
        self.tx = self._optimizer()
        self.update = jax.jit(self._update, donate_argnums=0)

    # -- setup ---------------------------------------------------------------------------

    def _optimizer(self) -> optax.GradientTransformation:
        c = self.config
        steps = c.num_updates * c.update_epochs * c.num_minibatches
        lr = (optax.linear_schedule(c.learning_rate, 0.0, steps) if c.anneal_lr
              else c.learning_rate)
        return optax.chain(optax.clip_by_global_norm(c.max_grad_norm),
                           OPTIMIZERS[c.optimizer](lr))

    def init_params(self, key: jax.Array):
        return self.net.init(key, jnp.zeros((1, self.obs_dim), jnp.float32))

    def legal(self, ts: TimeStep, n: int | None = None) -> jax.Array:
        """bool[n, actions]: the legal mask of a batch of ``n`` time steps (default: the
        config's envs); everything is legal without a mask or for Box actions."""
        n = self.config.num_envs if n is None else n
        if ts.legal_mask is None or self.continuous:
            return jnp.ones((n, self.action_dim), bool)
        return jnp.asarray(ts.legal_mask, bool).reshape(n, self.action_dim)

    def features(self, ts: TimeStep) -> tuple[jax.Array, jax.Array]:
        """(observations as the network takes them, legal mask) of the config's envs."""
        return as_features(ts.obs, self.obs_shape), self.legal(ts)

    def init(self, seed: int | None = None) -> Runner:
        seed = self.config.seed if seed is None else seed
        key = jax.random.PRNGKey(seed)
        key, k_params, k_envs = jax.random.split(key, 3)
        params = self.init_params(k_params)
        env_state, ts = jax.jit(self.batched.reset)(jax.random.split(k_envs, self.config.num_envs))
        obs, mask = self.features(ts)
        n = self.config.num_envs
        stats = EpisodeStats(jnp.zeros(n, jnp.float32), jnp.zeros(n, jnp.float32),
                             jnp.zeros(n, jnp.int32))
        return Runner(params, self.tx.init(params), env_state, obs, mask, stats, key,
                      jnp.zeros((), jnp.int32))

    # -- the policy ----------------------------------------------------------------------

    def _dist(self, params, obs, mask):
        head, log_std, value = self.net.apply(params, obs)
        if not self.continuous:
            head = jnp.where(mask, head, MASKED_LOGIT)
        return head, log_std, value

    def _sample(self, key, head, log_std):
        if self.continuous:
            action = head + jnp.exp(log_std) * jax.random.normal(key, head.shape)
            return action, self._logp(head, log_std, action)
        action = jax.random.categorical(key, head)
        return action, self._logp(head, log_std, action)

    def _logp(self, head, log_std, action):
        if self.continuous:
            z = (action - head) / jnp.exp(log_std)
            return jnp.sum(-0.5 * z * z - log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)
        logp = jax.nn.log_softmax(head)
        return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def _entropy(self, head, log_std):
        if self.continuous:
            return jnp.sum(log_std + 0.5 * jnp.log(2 * jnp.pi * jnp.e)) * jnp.ones(head.shape[:-1])
        logp = jax.nn.log_softmax(head)
        return -jnp.sum(jnp.exp(logp) * logp, axis=-1)

    def env_action(self, action):
        """The sampled action as the env takes it (Box: clipped to the space)."""
        space = self.spec.action_space
        if self.continuous:
            return jnp.clip(action, space.low, space.high).astype(space.dtype)
        return action.astype(space.dtype)

    def act(self, params, obs, mask, key=None):
        """Actions for observations ``[B, ...]`` (sampled with ``key``, greedy without): what
        evaluation and the host-loop driver call."""
        head, log_std, _ = self._dist(params, as_features(obs, self.obs_shape), mask)
        if key is None:
            return self.env_action(head if self.continuous else jnp.argmax(head, axis=-1))
        return self.env_action(self._sample(key, head, log_std)[0])

    # -- one update ----------------------------------------------------------------------

    def _rollout(self, r: Runner):
        c = self.config

        def step(carry, _):
            env_state, obs, mask, stats, key = carry
            key, k_act = jax.random.split(key)
            env_action, action, logp, value = self.policy_step(r.params, obs, mask, k_act)
            env_state, ts, final_obs = self.batched.step_with_final(env_state, env_action)
            reward = jnp.asarray(ts.reward, jnp.float32).reshape(c.num_envs)
            terminated = jnp.asarray(ts.terminated, bool).reshape(c.num_envs)
            truncated = jnp.asarray(ts.truncated, bool).reshape(c.num_envs) & ~terminated
            done = terminated | truncated

            def bootstrap(final_obs):
                v = self.value(r.params, as_features(final_obs, self.obs_shape))
                return jnp.where(truncated, c.gamma * v, 0.0)

            reward_b = reward + jax.lax.cond(jnp.any(truncated), bootstrap,
                                             lambda _: jnp.zeros_like(reward), final_obs)
            score = jnp.asarray(self.score(ts), jnp.float32).reshape(c.num_envs)
            stats = EpisodeStats(stats.ret + reward, stats.score + score, stats.length + 1)
            finished = (done, jnp.where(done, stats.ret, 0.0), jnp.where(done, stats.score, 0.0),
                        jnp.where(done, stats.length, 0))
            stats = jax.tree.map(lambda x: jnp.where(done, jnp.zeros_like(x), x), stats)
            new_obs, new_mask = self.features(ts)
            t = Transition(obs, mask, action, logp, value, reward_b, done)
            return (env_state, new_obs, new_mask, stats, key), (t, finished)

        carry = (r.env_state, r.obs, r.mask, r.stats, r.key)
        carry, (traj, finished) = jax.lax.scan(step, carry, None, length=c.num_steps)
        return carry, traj, finished

    def _advantages(self, params, traj: Transition, last_obs, last_mask):
        c = self.config
        _, _, last_value = self._dist(params, last_obs, last_mask)

        def back(carry, t):
            gae, next_value = carry
            live = 1.0 - t.done.astype(jnp.float32)
            delta = t.reward + c.gamma * next_value * live - t.value
            gae = delta + c.gamma * c.gae_lambda * live * gae
            return (gae, t.value), gae

        _, adv = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), traj, reverse=True)
        return adv, adv + traj.value

    def _loss(self, params, t: Transition, adv, ret):
        c = self.config
        head, log_std, value = self._dist(params, t.obs, t.mask)
        logp = self._logp(head, log_std, t.action)
        log_ratio = logp - t.logp
        ratio = jnp.exp(log_ratio)
        if c.norm_adv:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg_loss = jnp.maximum(-adv * ratio,
                              -adv * jnp.clip(ratio, 1 - c.clip_coef, 1 + c.clip_coef)).mean()
        if c.clip_vloss:
            clipped = t.value + jnp.clip(value - t.value, -c.clip_coef, c.clip_coef)
            v_loss = 0.5 * jnp.maximum((value - ret) ** 2, (clipped - ret) ** 2).mean()
        else:
            v_loss = 0.5 * ((value - ret) ** 2).mean()
        entropy = self._entropy(head, log_std).mean()
        total = pg_loss - c.ent_coef * entropy + c.vf_coef * v_loss
        aux = {"pg_loss": pg_loss, "v_loss": v_loss, "entropy": entropy,
               "approx_kl": ((ratio - 1) - log_ratio).mean(),
               "clipfrac": (jnp.abs(ratio - 1) > c.clip_coef).mean()}
        return total, aux

    def _update(self, r: Runner):
        (env_state, obs, mask, stats, key), traj, finished = self._rollout(r)
        params, opt_state, key, metrics = self.learn(r.params, r.opt_state, key, traj, obs, mask)
        done, ep_ret, ep_score, ep_len = finished
        metrics.update(episodes=done.sum(), return_sum=ep_ret.sum(), score_sum=ep_score.sum(),
                       length_sum=ep_len.sum())
        runner = Runner(params, opt_state, env_state, obs, mask, stats, key, r.update + 1)
        return runner, metrics

    def policy_step(self, params, obs, mask, key):
        """One rollout step's policy part: (action for the env, action, logp, value)."""
        head, log_std, value = self._dist(params, obs, mask)
        action, logp = self._sample(key, head, log_std)
        return self.env_action(action), action, logp, value

    def value(self, params, obs):
        return self.net.apply(params, obs)[2]

    def _shuffle(self, key, shape) -> jax.Array:
        """An epoch's order of the flattened rollout (``shape``: [num_steps, rows])."""
        if self.config.shuffle == "rows":
            steps, rows = shape
            order = jax.random.permutation(key, rows)
            return (order[:, None] + rows * jnp.arange(steps)[None, :]).reshape(-1)
        return jax.random.permutation(key, self.config.batch_size)

    def learn(self, params, opt_state, key, traj: Transition, last_obs, last_mask):
        """GAE over a rollout ``traj`` (leaves [num_steps, num_envs, ...]) and the PPO epochs;
        shared by the on-device update and the host-loop driver."""
        c = self.config
        adv, ret = self._advantages(params, traj, last_obs, last_mask)
        flat = lambda x: x.reshape((c.batch_size,) + x.shape[2:])  # noqa: E731
        batch = (jax.tree.map(flat, traj), flat(adv), flat(ret))
        grad_fn = jax.value_and_grad(self._loss, has_aux=True)

        def epoch(carry, _):
            params, opt_state, key = carry
            key, k_perm = jax.random.split(key)
            perm = self._shuffle(k_perm, traj.done.shape)
            shuffled = jax.tree.map(
                lambda x: x[perm].reshape((c.num_minibatches, c.minibatch_size) + x.shape[1:]),
                batch)

            def minibatch(carry, mb):
                params, opt_state = carry
                (loss, aux), grads = grad_fn(params, *mb)
                updates, opt_state = self.tx.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), {"loss": loss, **aux}

            (params, opt_state), info = jax.lax.scan(minibatch, (params, opt_state), shuffled)
            return (params, opt_state, key), info

        (params, opt_state, key), info = jax.lax.scan(
            epoch, (params, opt_state, key), None, length=c.update_epochs)
        metrics = {k: v.mean() for k, v in info.items()}
        metrics.update(value_mean=traj.value.mean(), reward_mean=traj.reward.mean())
        return params, opt_state, key, metrics


def summarize(metrics: dict) -> dict:
    """An update's device metrics as plain floats, episode means from the sums (None when no
    episode finished in the update)."""
    m = {k: float(np.asarray(v)) for k, v in metrics.items()}
    n = m.pop("episodes")
    for k in ("return", "score", "length"):
        s = m.pop(f"{k}_sum")
        m[f"episode_{k}"] = s / n if n else None
    m["episodes"] = int(n)
    return m
