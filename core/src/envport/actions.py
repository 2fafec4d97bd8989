"""Checking actions at the numpy boundary, before they reach an engine.

Engines are jitted and cannot raise, so every user-facing entry point (backends, the
gymnasium adapter) validates here first and says exactly what is wrong.
"""

from __future__ import annotations

import numpy as np

from envport.errors import ActionError
from envport.types import Box, Discrete, Space


def validate_actions(
    space: Space, actions, num_envs: int, *, allow_out_of_range: bool = False
) -> np.ndarray:
    """Return ``actions`` as an array of shape ``(num_envs, *space.shape)`` or raise ActionError.

    ``allow_out_of_range`` lets discrete values outside ``0..n-1`` through, for verifying how a
    reference treats them; users get an error by default.
    """
    try:
        arr = np.asarray(actions)
    except (ValueError, TypeError) as e:  # ragged nested lists
        raise ActionError(f"actions must form a rectangular array: {e}") from None
    expected = (num_envs, *space.shape)
    if arr.shape != expected:
        # a scalar action for a single env is the one shape we accept silently
        if num_envs == 1 and arr.shape == space.shape:
            arr = arr.reshape(expected)
        elif isinstance(space, Box) and arr.size == int(np.prod(expected)) and space.shape in ((), (1,)):
            arr = arr.reshape(expected)
        else:
            raise ActionError(
                f"actions must have shape {expected} (num_envs={num_envs}, action shape "
                f"{space.shape}), got {arr.shape}"
            )
    if isinstance(space, Discrete):
        if arr.dtype.kind not in "iu":
            raise ActionError(
                f"discrete actions must be integers (dtype int32/int64), got dtype {arr.dtype}"
            )
        if not allow_out_of_range:
            bad = ~space.contains(arr)
            if bad.any():
                i = int(np.flatnonzero(bad.ravel())[0])
                env = i // max(1, int(np.prod(space.shape)))  # i indexes the flattened batch
                raise ActionError(
                    f"action {arr.ravel()[i]} at env {env} is out of range: legal actions are "
                    f"0..{space.n - 1}"
                )
        return arr.astype(space.dtype, copy=False)
    if arr.dtype.kind != "f":
        raise ActionError(f"continuous actions must be floating point, got dtype {arr.dtype}")
    if not np.isfinite(arr).all():
        i = int(np.flatnonzero(~np.isfinite(arr).ravel())[0])
        raise ActionError(f"continuous action at index {i} is {arr.ravel()[i]} (NaN/inf not allowed)")
    return arr.astype(space.dtype, copy=False)
