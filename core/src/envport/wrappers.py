"""Behaviour added around an env without touching it (Brax style).

* :class:`VmapWrapper` — a batch of independent envs, ``reset(keys)``/``step(states, actions)``.
* :class:`AutoResetWrapper` — when an episode ends, the returned state is already reset;
  the returned ``TimeStep`` keeps the final reward/flags and the *new* episode's observation
  is available as ``ts.obs``; ``step_with_final`` also returns the episode's last observation
  (what gymnasium's same-step autoreset reports as ``infos["final_obs"]``).
* :class:`BatchedAutoResetWrapper` — ``VmapWrapper(AutoResetWrapper(env))`` with the same
  outputs, bit for bit, that computes ``reset`` only for the envs whose episode ended.
* :class:`EpisodeLimitWrapper` — truncates after ``max_steps`` steps.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from envport.env import Env
from envport.types import EnvSpec, TimeStep


class Wrapper(Env):
    def __init__(self, env: Env):
        self.env = env

    @property
    def spec(self) -> EnvSpec:
        return self.env.spec

    @property
    def unwrapped(self) -> Env:
        return getattr(self.env, "unwrapped", self.env)

    def reset(self, key):
        return self.env.reset(key)

    def step(self, state, action):
        return self.env.step(state, action)

    def __getattr__(self, name: str) -> Any:
        if name == "env":  # not yet set: avoid infinite recursion during unpickling
            raise AttributeError(name)
        return getattr(self.env, name)


class VmapWrapper(Wrapper):
    """Batch of independent copies: ``reset(keys[B])``, ``step(states, actions[B])``."""

    def reset(self, keys):
        return self.env.reset_batch(keys)

    def step(self, state, action):
        return self.env.step_batch(state, action)

    def step_with_final(self, state, action):
        """Batched :meth:`AutoResetWrapper.step_with_final` (the inner env must provide it).

        Defined here so that attribute forwarding cannot hand out the unbatched method.
        """
        return jax.vmap(self.env.step_with_final)(state, action)


class LimitState(NamedTuple):
    inner: Any
    steps: jax.Array


class EpisodeLimitWrapper(Wrapper):
    """Sets ``truncated`` once ``max_steps`` steps were taken without termination."""

    def __init__(self, env: Env, max_steps: int):
        super().__init__(env)
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.max_steps = int(max_steps)

    def reset(self, key):
        inner, ts = self.env.reset(key)
        return LimitState(inner, jnp.zeros((), jnp.int32)), ts

    def step(self, state: LimitState, action):
        inner, ts = self.env.step(state.inner, action)
        steps = state.steps + 1
        truncated = jnp.logical_or(ts.truncated, (steps >= self.max_steps) & ~ts.terminated)
        return LimitState(inner, steps), ts._replace(truncated=truncated)


class AutoResetState(NamedTuple):
    inner: Any
    key: jax.Array


class AutoResetWrapper(Wrapper):
    """Resets inside ``step`` when an episode ends (terminated or truncated).

    The new episode's first observation (and legal mask and player) replaces the step's; reward
    and flags are the ones of the step that ended the episode. Keys for the new episodes are
    split from a key carried in the state, so the wrapper stays a pure function.

    Wrap the *single* env and batch outside (``VmapWrapper(AutoResetWrapper(env))``): the
    ``done`` test is per env, so it must not see a batch axis.
    """

    def reset(self, key):
        key, sub = jax.random.split(key)
        inner, ts = self.env.reset(sub)
        return AutoResetState(inner, key), ts

    def step(self, state: AutoResetState, action):
        state, ts, _ = self.step_with_final(state, action)
        return state, ts

    def step_with_final(
        self, state: AutoResetState, action
    ) -> tuple[AutoResetState, TimeStep, jax.Array]:
        """Like :meth:`step`, also returning the observation the step itself produced.

        ``final_obs`` is the last observation of the episode that just ended where
        ``terminated | truncated``; where the episode goes on it equals ``ts.obs``. Gymnasium's same-step
        autoreset reports it in ``infos["final_obs"]``; returning it costs nothing because
        the step computed it anyway.
        """
        inner, ts = self.env.step(state.inner, action)
        key, sub = jax.random.split(state.key)
        fresh, fresh_ts = self.env.reset(sub)
        done = jnp.logical_or(ts.terminated, ts.truncated)
        pick = lambda a, b: jax.tree.map(lambda x, y: jnp.where(done, x, y), a, b)  # noqa: E731
        inner = pick(fresh, inner)
        obs = jnp.where(done, fresh_ts.obs, ts.obs)
        mask, player = ts.legal_mask, ts.player
        if mask is not None:
            mask = jnp.where(done, fresh_ts.legal_mask, mask)
        if player is not None:
            player = jnp.where(done, fresh_ts.player, player)
        new_ts = ts._replace(obs=obs, legal_mask=mask, player=player)
        return AutoResetState(inner, key), new_ts, ts.obs


class BatchedAutoResetWrapper(Wrapper):
    """``VmapWrapper(AutoResetWrapper(env))``, resetting only the envs whose episode ended.

    Under ``vmap`` a reset inside ``step`` cannot be skipped: a per-env ``where`` computes the
    fresh episode of *every* env at every step and keeps it only where one ended. Where a reset
    costs more than a step (pokejax samples two teams and starts a battle: ~5x a step), that
    is most of the batch's time. Here the batch is stepped and the ended envs are reset in
    chunks of ``max_resets`` (default: an eighth of the batch): a loop runs once per chunk,
    gathering the ended envs of that chunk, resetting only those and writing their fresh
    states back to their rows. A step where none ended runs the loop zero times. The env's
    reset is traced once, at the chunk's size (a ``lax.switch`` between a few-envs and an
    every-env reset compiled it twice, which doubled the compile time of a costly reset). The
    saving holds as long as this wrapper is not itself under ``vmap`` (there the loop runs to
    the batch's largest count).

    Each ended env is reset from the key ``AutoResetWrapper`` would split for it, so states,
    ``TimeStep`` and ``final_obs`` equal ``VmapWrapper(AutoResetWrapper(env))``'s bit for bit
    (tested). State: the same ``AutoResetState`` with a batch axis on every leaf.
    """

    def __init__(self, env: Env, max_resets: int | None = None):
        super().__init__(env)
        if max_resets is not None and max_resets < 1:
            raise ValueError(f"max_resets must be >= 1, got {max_resets}")
        self.max_resets = max_resets

    def reset(self, keys):  # vmap(AutoResetWrapper.reset)'s key split, the env's batch reset
        split = jax.vmap(jax.random.split)(keys)
        inner, ts = self.env.reset_batch(split[:, 1])
        return AutoResetState(inner, split[:, 0]), ts

    def step(self, state, action):
        state, ts, _ = self.step_with_final(state, action)
        return state, ts

    def step_with_final(self, state: AutoResetState, action):
        inner, ts = self.env.step_batch(state.inner, action)
        split = jax.vmap(jax.random.split)(state.key)
        key, sub = split[:, 0], split[:, 1]
        done = jnp.logical_or(ts.terminated, ts.truncated)
        n = done.shape[0]
        m = min(n, self.max_resets or max(1, n // 8))
        rank = jnp.cumsum(done) - 1  # an ended env's place among the ended envs
        shapes = jax.eval_shape(self.env.reset_batch, sub)

        def rows_of(a, mask):
            return mask.reshape(mask.shape + (1,) * (a.ndim - 1))

        def reset_chunk(i, fresh):  # the ended envs of rank i*m .. i*m+m-1
            in_chunk = done & (rank >= i * m) & (rank < (i + 1) * m)
            rows = jnp.nonzero(in_chunk, size=m, fill_value=0)[0]
            chunk = self.env.reset_batch(sub[rows])
            slot = jnp.clip(rank - i * m, 0, m - 1)
            return jax.tree.map(lambda acc, x: jnp.where(rows_of(acc, in_chunk), x[slot], acc),
                                fresh, chunk)

        # the stepped leaves stand in where no env ended (``pick`` keeps them anyway)
        start = jax.tree.map(lambda s, x: x.astype(s.dtype), shapes, (inner, ts))
        chunks = (jnp.sum(done) + m - 1) // m
        fresh, fresh_ts = jax.lax.fori_loop(0, chunks, reset_chunk, start)

        def pick(a, b):
            return jnp.where(rows_of(a, done), a, b)

        new_inner = jax.tree.map(pick, fresh, inner)
        new_ts = ts._replace(obs=pick(fresh_ts.obs, ts.obs))
        if ts.legal_mask is not None:
            new_ts = new_ts._replace(legal_mask=pick(fresh_ts.legal_mask, ts.legal_mask))
        if ts.player is not None:
            new_ts = new_ts._replace(player=pick(fresh_ts.player, ts.player))
        return AutoResetState(new_inner, key), new_ts, ts.obs
