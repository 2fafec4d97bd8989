"""Planted sim gaps: ``SingleAgentEnv`` variants that bend one rule, for the power checks of L4
(``tests/test_tcgjax_transfer.py``). Never used by the port itself.

Each gap is applied while the env's functions are traced (jit traces ``_step`` / ``_reset``
once; the engine's tables and RNG functions are read at trace time), so the compiled program
carries the bent rule and the real engine's module state is restored right after.

* ``"extra_damage"``: every attack with printed damage does one damage counter (10) more.
* ``"biased_coins"``: a coin is heads with probability 3/4 (the top two bits of the draw not
  both 0) instead of 1/2: every coin attack, the first-player coin, Burn and Sleep checks.
* ``"heuristic_order"``: the heuristic opponent attacks before attaching the Energy Zone's
  energy (two of its main-phase priorities swapped): on a turn it can attack, it attaches none.
"""

from __future__ import annotations

import contextlib

import jax.numpy as jnp

from tcgjax.engine import heuristic, legal, rng
from tcgjax.env import SingleAgentEnv
from tcgjax.reference import actions as A
from tcgjax.reference.state import PH_MAIN

GAPS = ("extra_damage", "biased_coins", "heuristic_order")


@contextlib.contextmanager
def _bent(gap: str):
    if gap == "extra_damage":
        real = legal.T["atk_damage"]
        legal.T["atk_damage"] = real + jnp.where(real > 0, 10, 0).astype(real.dtype)
        try:
            yield
        finally:
            legal.T["atk_damage"] = real
    elif gap == "biased_coins":
        real = rng.coin

        def coin(seed, counter):
            u = rng.raw_u32(seed, counter)
            return (u >> 30) != rng.U32(0), counter + rng.U32(1)

        rng.coin = coin
        try:
            yield
        finally:
            rng.coin = real
    else:
        yield


def _attack_first(s):
    """The heuristic's action, except that in the main phase a usable attack comes before
    attaching energy (and everything after it)."""
    a = heuristic.heuristic_action(s)
    m = legal.legal_mask(s)
    attaching = (a >= A.ATTACH) & (a < A.ABILITY)
    usable = jnp.any(m[A.ATTACK : A.RETREAT])
    # the attack the heuristic would pick once nothing else is left: the highest damage
    tops = legal.top_cards(s)
    dmg = legal.T["atk_damage"][jnp.maximum(tops[s["decider"], 0], 0)]
    k = jnp.where(m[A.ATTACK + 1] & (~m[A.ATTACK] | (dmg[1] >= dmg[0])), 1, 0)
    swap = (s["phase"] == PH_MAIN) & attaching & usable
    return jnp.where(swap, A.ATTACK + k, a).astype(jnp.int32)


class PlantedSingleAgentEnv(SingleAgentEnv):
    """``SingleAgentEnv`` with one planted gap (``GAPS``)."""

    def __init__(self, gap: str, opponent: str = "random", **kw):
        if gap not in GAPS:
            raise ValueError(f"unknown planted gap {gap!r}; one of {GAPS}")
        if gap == "heuristic_order" and opponent != "heuristic":
            raise ValueError("the heuristic_order gap bends the heuristic opponent")
        self.gap = gap
        super().__init__(opponent, **kw)

    def _opponent_action(self, s, key):
        if self.gap == "heuristic_order":
            return _attack_first(s)
        return super()._opponent_action(s, key)

    def _engine(self):
        return _bent(self.gap)
