"""A tiny JAX env for tests and docs: small enough to check by hand, jittable and vmappable.

``Corridor``: a position on a line of ``length`` cells. Actions are ``Discrete(3)``: 0 left,
1 stay, 2 right. Reaching the right end gives reward 1 and terminates. The legal mask forbids
"left" at position 0 (so it is never empty). The start position is drawn from the JAX key kept
in the state (or fixed with ``start``); with ``slip > 0`` each move is ignored with that probability, drawn from the same
key, so the env shows the "RNG lives in the state" pattern that the ports rely on.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from envport.env import Env
from envport.types import Box, Discrete, EnvSpec, TimeStep

LEFT, STAY, RIGHT = 0, 1, 2


class CorridorState(NamedTuple):
    pos: jax.Array  # int32 scalar, 0 .. length-1
    key: jax.Array  # the env's own RNG, split on every draw


class Corridor(Env[CorridorState]):
    """Walk right to the goal. Stepping after termination is undefined; use AutoResetWrapper."""

    def __init__(self, length: int = 5, slip: float = 0.0, start: int | None = None):
        if length < 2:
            raise ValueError(f"length must be >= 2 (a start cell and a goal), got {length}")
        if not 0.0 <= slip < 1.0:
            raise ValueError(f"slip must be in [0, 1), got {slip}")
        if start is not None and not 0 <= start < length - 1:
            raise ValueError(f"start must be a cell before the goal, 0..{length - 2}, got {start}")
        self.length, self.slip, self.start = int(length), float(slip), start
        self._spec = EnvSpec("envport/Corridor", "v0", Box(0.0, 1.0, (self.length,)), Discrete(3),
                             metadata={"length": self.length, "slip": self.slip, "start": start})

    @property
    def spec(self) -> EnvSpec:
        return self._spec

    def observation(self, state: CorridorState) -> jax.Array:
        return jax.nn.one_hot(state.pos, self.length, dtype=jnp.float32)

    def _timestep(self, state: CorridorState, reward, terminated) -> TimeStep:
        mask = jnp.array([True, True, True]).at[LEFT].set(state.pos > 0)
        return TimeStep(self.observation(state), jnp.asarray(reward, jnp.float32),
                        jnp.asarray(terminated, bool), jnp.zeros((), bool), mask)

    def reset(self, key: jax.Array) -> tuple[CorridorState, TimeStep]:
        key, sub = jax.random.split(key)
        pos = (jax.random.randint(sub, (), 0, self.length - 1, jnp.int32) if self.start is None
               else jnp.int32(self.start))
        state = CorridorState(pos, key)
        return state, self._timestep(state, 0.0, False)

    def step(self, state: CorridorState, action) -> tuple[CorridorState, TimeStep]:
        key, sub = jax.random.split(state.key)
        slipped = jax.random.uniform(sub) < self.slip
        move = jnp.where(slipped, 0, jnp.asarray(action, jnp.int32) - 1)
        pos = jnp.clip(state.pos + move, 0, self.length - 1).astype(jnp.int32)
        at_goal = pos == self.length - 1
        new = CorridorState(pos, key)
        return new, self._timestep(new, at_goal, at_goal)
