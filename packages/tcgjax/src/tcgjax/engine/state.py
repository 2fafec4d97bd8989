"""The JAX engine's state: a flat dict of fixed-size arrays with exactly the reference's
``tcgjax.reference.arrays.FIELDS`` layout (names, shapes, dtypes), so reference states load
into the JAX engine and back without any translation (L2 / L3 compare field by field)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..reference.arrays import FIELDS, _check, from_arrays, to_arrays
from ..reference.state import GameState


def from_reference(st: GameState) -> dict:
    """A reference state as the JAX engine's state (jnp arrays)."""
    return {k: jnp.asarray(v) for k, v in to_arrays(st).items()}


def to_numpy(state: dict) -> dict[str, np.ndarray]:
    """A JAX state (unbatched) as numpy arrays, checked against the layout."""
    out = {k: np.asarray(v) for k, v in state.items()}
    _check(out)
    return out


def to_reference(state: dict) -> GameState:
    """A JAX state (unbatched) as a reference state (empty log)."""
    return from_arrays(to_numpy(state))


def stack_states(states: list[dict]) -> dict:
    """A batch (leading axis) of unbatched states, for vmap."""
    # numpy first: one device transfer per field, not one per state and field
    return {k: jnp.asarray(np.stack([np.asarray(s[k]) for s in states])) for k in FIELDS}


def diff(a: dict, b: dict) -> list[str]:
    """Names of the fields where two unbatched states differ (empty when equal)."""
    return [k for k in FIELDS if not np.array_equal(np.asarray(a[k]), np.asarray(b[k]))]
