"""Behaviour added around an env without touching it (Brax style).

* :class:`VmapWrapper` — a batch of independent envs, ``reset(keys)``/``step(states, actions)``.
* :class:`AutoResetWrapper` — when an episode ends, the returned state is already reset;
  the returned ``TimeStep`` keeps the final reward/flags and the *new* episode's observation
  is available as ``ts.obs`` (gymnasium "next-step" semantics are left to the adapter).
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
        return jax.vmap(self.env.reset)(keys)

    def step(self, state, action):
        return jax.vmap(self.env.step)(state, action)


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

    The new episode's first observation replaces ``ts.obs``; reward and flags are the ones of
    the step that ended the episode. Keys for the new episodes are split from a key carried
    in the state, so the wrapper stays a pure function.
    """

    def reset(self, key):
        key, sub = jax.random.split(key)
        inner, ts = self.env.reset(sub)
        return AutoResetState(inner, key), ts

    def step(self, state: AutoResetState, action):
        inner, ts = self.env.step(state.inner, action)
        key, sub = jax.random.split(state.key)
        fresh, fresh_ts = self.env.reset(sub)
        done = jnp.logical_or(ts.terminated, ts.truncated)
        pick = lambda a, b: jax.tree.map(lambda x, y: jnp.where(done, x, y), a, b)  # noqa: E731
        inner = pick(fresh, inner)
        obs = jnp.where(done, fresh_ts.obs, ts.obs)
        mask = ts.legal_mask
        if mask is not None:
            mask = jnp.where(done, fresh_ts.legal_mask, mask)
        return AutoResetState(inner, key), ts._replace(obs=obs, legal_mask=mask)
