"""A planted sim gap for power tests of L4: the JAX env with every critical-hit chance doubled.

``crit_doubled()`` patches ``pokejax.damage.crit_chance`` (the chance out of 256 that the damage
roll crits: twice Showdown's, at most 256) for as long as it is entered; the engine reads that
module attribute when it is traced, so only functions *traced* inside it get the gap.
``crit_doubled_env(opponent)`` is a ``SingleAgentEnv`` whose ``reset`` and ``step`` enter it
themselves, so every trace of them (``jit``, ``vmap``, ``AutoResetWrapper``, a training loop)
has the doubled rate, whenever and wherever it is traced, while envs built the usual way keep
Showdown's. Its spec is the real env's: nothing but its behaviour gives the gap away.
"""

from __future__ import annotations

import contextlib
import threading

import jax.numpy as jnp

from pokejax import damage
from pokejax.env import SingleAgentEnv

_LOCK = threading.RLock()
_REAL = damage.crit_chance


def doubled_crit_chance(x: damage.DamageInputs):
    """Twice Showdown's critical-hit chance (out of 256), capped at certainty."""
    return jnp.minimum(_REAL(x) * 2, 256)


@contextlib.contextmanager
def crit_doubled():
    """Within this block, whatever traces the damage formula crits twice as often."""
    with _LOCK:
        saved = damage.crit_chance
        damage.crit_chance = doubled_crit_chance
        try:
            yield
        finally:
            damage.crit_chance = saved


class CritDoubledEnv(SingleAgentEnv):
    """``SingleAgentEnv`` with the critical-hit chance doubled in every trace of it."""

    def reset(self, key):
        with crit_doubled():
            return super().reset(key)

    def step(self, state, action):
        with crit_doubled():
            return super().step(state, action)

    def __repr__(self) -> str:
        return f"CritDoubledEnv({self.spec.metadata['opponent']!r})"


def crit_doubled_env(opponent="random", **kwargs) -> SingleAgentEnv:
    """``SingleAgentEnv(opponent, **kwargs)`` with critical hits twice as likely (planted)."""
    return CritDoubledEnv(opponent, **kwargs)
