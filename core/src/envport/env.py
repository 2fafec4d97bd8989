"""The functional env interface (jumanji/brax style).

An env is a pair of pure functions over an immutable pytree state::

    state, ts = env.reset(key)
    state, ts = env.step(state, action)

The RNG lives inside ``state``. That is what lets a port carry the reference's own RNG
(glibc ``rand``, Showdown's LCG) bit for bit instead of JAX's splittable keys.
Batching is ``jax.vmap`` (see :mod:`envport.wrappers`).
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

    def observation(self, state: State) -> jax.Array:  # pragma: no cover - optional
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.id} {self.spec.version})"
