"""The small data types every envport env shares: spaces, the env spec and the TimeStep."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import numpy as np

Array = jax.Array | np.ndarray


@dataclass(frozen=True)
class Discrete:
    """``n`` integer actions ``0 .. n-1``."""

    n: int
    dtype: Any = np.int32
    shape: tuple[int, ...] = ()

    def contains(self, x: np.ndarray) -> np.ndarray:
        return (x >= 0) & (x < self.n)

    def sample(self, rng: np.random.Generator, batch: tuple[int, ...] = ()) -> np.ndarray:
        return rng.integers(0, self.n, size=batch + self.shape).astype(self.dtype)

    def to_gymnasium(self):
        from envport.extras import require

        gymnasium = require("gymnasium", "gym", "to_gymnasium()")

        return gymnasium.spaces.Discrete(self.n)


@dataclass(frozen=True)
class Box:
    """A real-valued array in ``[low, high]`` (bounds broadcast over ``shape``)."""

    low: float
    high: float
    shape: tuple[int, ...]
    dtype: Any = np.float32

    def contains(self, x: np.ndarray) -> np.ndarray:
        axes = tuple(range(x.ndim - len(self.shape), x.ndim))
        return np.all((x >= self.low) & (x <= self.high), axis=axes)

    def sample(self, rng: np.random.Generator, batch: tuple[int, ...] = ()) -> np.ndarray:
        return rng.uniform(self.low, self.high, size=batch + self.shape).astype(self.dtype)

    def to_gymnasium(self):
        from envport.extras import require

        gymnasium = require("gymnasium", "gym", "to_gymnasium()")

        return gymnasium.spaces.Box(self.low, self.high, shape=self.shape, dtype=self.dtype)


Space = Discrete | Box


def spaces_equal(a: Space, b: Space) -> bool:
    """Same kind, size, shape, dtype and bounds (bounds may be arrays, so not ``==``)."""
    if type(a) is not type(b) or tuple(a.shape) != tuple(b.shape):
        return False
    if np.dtype(a.dtype) != np.dtype(b.dtype):
        return False
    if isinstance(a, Discrete):
        return a.n == b.n
    return bool(np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high))


@dataclass(frozen=True)
class EnvSpec:
    """What a user needs to know to drive an env without reading its code."""

    id: str
    version: str
    observation_space: Space
    action_space: Space
    num_agents: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)
    # whether one step may report terminated and truncated together. Gymnasium allows it (a
    # time limit reached on the terminal step); envs that never do keep the L1 check strict
    terminated_and_truncated: bool = False


class TimeStep(NamedTuple):
    """What one ``reset``/``step`` returns besides the new state.

    ``legal_mask`` is ``None`` for continuous or unconstrained envs; ``player`` says whose
    turn it is in turn-based multi-player games (``None`` otherwise).
    """

    obs: Array
    reward: Array
    terminated: Array
    truncated: Array
    legal_mask: Array | None = None
    player: Array | None = None
