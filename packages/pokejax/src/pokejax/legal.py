"""Legal actions from the JAX battle state: Showdown's request, without Showdown.

``legal_mask(b)`` is ``bool[2, 9]`` (side, action; actions as in ``choices``: 0-3 move slot,
4-8 "switch 2..6") and equals ``choices.legal_mask`` of the request Showdown sends each side at
the same decision point (``tests/test_legal.py`` checks it at every decision of whole
battles). The rules, from ``Pokemon.getMoveRequestData`` / ``getMoves`` and the Gen 1 mod:

* battle over: nothing is legal for either side;
* forced switch (a fainted active with Pokémon left): the forced sides may switch to any
  non-fainted benched Pokémon and nothing else; a side that is not forced waits (no action);
* a *hard-locked* Pokémon — one that must recharge (``mustrecharge``'s ``LockMove`` →
  "Recharge") or is in the middle of a two-turn move (``twoturnmove``) — has one move option,
  action 0, and ``trapped`` (no switch);
* a frozen or sleeping Pokémon gets the single option "Fight" (action 0) and may switch;
* otherwise every move slot with PP left is legal (0 PP → ``disabled``), and when none is,
  the single option is Struggle (action 0); switching to any non-fainted benched Pokémon is
  always allowed (Gen 1 has no trapping abilities; partial trapping is not in the engine).

``check_actions(b, actions)`` is the Python-side guard (not jittable): it raises
``IllegalActionError`` for a choice Showdown would reject. A side that has nothing to choose
(waiting during the other side's forced switch, or the battle is over) passes: its action is
ignored by ``battle.step``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envport.errors import ActionError
from pokejax import choices
from pokejax.battle import Battle
from pokejax.duel import FRZ, SLP

NUM_ACTIONS = choices.NUM_ACTIONS
ACTION_NAMES = tuple(choices.choice_string(a) for a in range(NUM_ACTIONS))


class IllegalActionError(ActionError):
    """A choice Showdown would reject at this decision point."""


def _side_mask(b: Battle, side: int) -> jax.Array:
    f = jax.tree.map(lambda x: x[side], b.actives)
    hard_locked = f.must_recharge
    if hasattr(f, "twoturn"):  # the engine's two-turn moves (Dig, Fly, Solar Beam, ...)
        hard_locked = hard_locked | (f.twoturn >= 0)
    usable = (f.moves >= 0) & (f.pp > 0)
    single = hard_locked | (f.status == SLP) | (f.status == FRZ) | ~jnp.any(usable)
    moves = jnp.where(single, jnp.arange(4) == 0, usable)
    can_switch = b.bench.hp[side] > 0
    normal = jnp.concatenate([moves, can_switch & ~hard_locked])
    forced = jnp.concatenate([jnp.zeros(4, bool), can_switch])
    row = jnp.where(jnp.any(b.forced), jnp.where(b.forced[side], forced, False), normal)
    return row & ~b.ended


def legal_mask(b: Battle) -> jax.Array:
    """bool[2, 9]: the actions each side may choose now (a row of False: the side waits)."""
    return jnp.stack([_side_mask(b, 0), _side_mask(b, 1)])


def check_actions(b: Battle, actions) -> np.ndarray:
    """``actions`` (int[2]) as int32 if Showdown would accept them now, else raise.

    Raises ``envport.ActionError`` for a wrong shape/dtype/range and ``IllegalActionError``
    (a subclass) for a choice that is illegal at this decision point. Works on one battle
    (no batch axis); for a batch, call it per battle or compare with ``legal_mask`` yourself.
    """
    arr = np.asarray(actions)
    if arr.shape != (2,):
        raise ActionError(f"actions must have shape (2,) (one per side), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ActionError(f"actions must be integers, got dtype {arr.dtype}")
    mask = np.asarray(jax.device_get(legal_mask(b)))
    if mask.ndim != 2:
        raise ValueError(f"check_actions takes one battle, got a batch (mask shape {mask.shape})")
    for side in (0, 1):
        if not mask[side].any():
            continue  # nothing to choose: the action is ignored
        a = int(arr[side])
        if not 0 <= a < NUM_ACTIONS or not mask[side, a]:
            what = ACTION_NAMES[a] if 0 <= a < NUM_ACTIONS else "out of range"
            legal = ", ".join(f"{i} ({ACTION_NAMES[i]})" for i in np.flatnonzero(mask[side]))
            raise IllegalActionError(
                f"p{side + 1}: action {a} ({what}) is not legal now; legal: {legal}"
                + (" (forced switch)" if bool(np.asarray(b.forced)[side]) else ""))
    return arr.astype(np.int32)
