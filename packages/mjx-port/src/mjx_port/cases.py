"""L2 cases: states taken from Gymnasium's own rollouts (MuJoCo C), and the actions to apply.

A batch is a function of the generator it is given only (the verifier's contract): rollouts
start from seeded resets drawn from it, take uniformly random actions from it, and record the
state (qpos, qvel, ``qacc_warmstart``, the step count) at random intervals, so the cases cover
early steps, contact-rich gaits, falls and, for envs that end, the states just before the end.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from mjx_port.backends import make_gymnasium

GAP = (1, 12)  # steps between two recorded states along a rollout


@cache
def _env(env_id: str, kwargs_items: tuple):
    return make_gymnasium(env_id, dict(kwargs_items))


def sample_states(
    rng: np.random.Generator, batch: int, env_id: str, kwargs: dict[str, Any] | None = None
) -> dict[str, np.ndarray]:
    env = _env(env_id, tuple(sorted((kwargs or {}).items())))
    low, high = env.action_space.low, env.action_space.high
    out: dict[str, list] = {"qpos": [], "qvel": [], "warmstart": [], "t": []}
    env.reset(seed=int(rng.integers(2**31)))
    data = env.unwrapped.data
    while len(out["t"]) < batch:
        for _ in range(int(rng.integers(GAP[0], GAP[1] + 1))):
            _, _, term, trunc, _ = env.step(rng.uniform(low, high).astype(np.float32))
            if term or trunc:
                env.reset(seed=int(rng.integers(2**31)))
        out["qpos"].append(data.qpos.copy())
        out["qvel"].append(data.qvel.copy())
        out["warmstart"].append(data.qacc_warmstart.copy())
        out["t"].append(env._elapsed_steps)
    return {
        "qpos": np.stack(out["qpos"]),
        "qvel": np.stack(out["qvel"]),
        "warmstart": np.stack(out["warmstart"]),
        "t": np.asarray(out["t"], np.int64),
    }


def sample_actions(rng: np.random.Generator, n: int, nu: int, bound: float = 1.0) -> np.ndarray:
    """Uniform in Gymnasium's action space [-bound, bound] (1 for most v5 envs, 2 for Pusher,
    3 for InvertedPendulum) widened by 10% so MuJoCo's ctrl clamping is exercised too (the
    control cost uses the raw action, as Gymnasium's does)."""
    return rng.uniform(-1.1 * bound, 1.1 * bound, (n, nu)).astype(np.float32)
