"""The functional env interface (jumanji/brax style).

An env is a pair of pure functions over an immutable pytree state::

    state, ts = env.reset(key)
    state, ts = env.step(state, action)

The RNG lives inside ``state``. That is what lets a port carry the reference's own RNG
(glibc ``rand``, Showdown's LCG) bit for bit instead of JAX's splittable keys.
Batching is ``jax.vmap`` (see :mod:`envport.wrappers`), through ``reset_batch``/``step_batch``:
an env whose step branches by state (a per-game phase loop) can override them with a batch-level
step that gives ``vmap(step)``'s results for less (tcgjax); the wrappers that batch call them.
"""

from __future__ import annotations

import abc
from typing import Any, Generic, TypeVar

import jax

from envport.types import EnvSpec, TimeStep

State = TypeVar("State")


class Env(abc.ABC, Generic[State]):
    """A single (unbatched) environment with pure ``reset``/``step``."""

    @property
    @abc.abstractmethod
    def spec(self) -> EnvSpec: ...

    @abc.abstractmethod
    def reset(self, key: jax.Array) -> tuple[State, TimeStep]:
        """Start an episode. ``key`` is a JAX PRNG key (or whatever the env documents)."""

    @abc.abstractmethod
    def step(self, state: State, action: Any) -> tuple[State, TimeStep]:
        """Advance one step. Must be jittable: no Python control flow on traced values."""

    def reset_batch(self, keys: jax.Array) -> tuple[State, TimeStep]:
        """``jax.vmap(reset)(keys)``; an env may override it with a faster equivalent."""
        return jax.vmap(self.reset)(keys)

    def step_batch(self, states: State, actions: Any) -> tuple[State, TimeStep]:
        """``jax.vmap(step)(states, actions)``, the default. An env may override it with a
        batch-level step giving the same results: under ``vmap`` every branch of a state-dependent
        ``lax.switch``/``while_loop`` runs for every env, where a batch-level step can gather the
        envs by branch. A wrapper inherits this default (the vmap of its own ``step``), so
        wrapping never hands out the inner env's batch step without the wrapper's behaviour."""
        return jax.vmap(self.step)(states, actions)

    def observation(self, state: State) -> jax.Array:  # pragma: no cover - optional
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.id} {self.spec.version})"
