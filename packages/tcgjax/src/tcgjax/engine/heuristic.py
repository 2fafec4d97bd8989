"""``heuristic_action(state)``: the reference's ``heuristic_chooser`` (``reference.choosers``,
docs/tcgjax.md "Choosers") as one branch-free jnp expression, decision for decision.

Every phase's pick is computed and the phase selects (jits and vmaps). "The first legal of a
group" is ``argmax`` over a bool mask (the lowest index); a ``max``/``min`` with a tie-break is
narrowed key by key (:func:`_best`), so no key is packed into another and nothing overflows.
The values read are the ones the reference reads: the card's printed HP (``top(pk).hp``, no
Tool bonus), the damage counters, the attached energy and the attack's printed damage.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..reference import actions as A
from ..reference.state import CH_TARGET, PH_CHOICE, PH_MAIN, PH_SETUP
from .legal import T, legal_mask, step_row, target_slots, top_cards
from .tables import OP, SC

_IDX = jnp.arange(A.N_ACTIONS)
_SLOTS = jnp.arange(4)


def _in(lo: int, hi: int):
    return (_IDX >= lo) & (_IDX < hi)


def _first(mask):
    """The lowest True index of ``mask`` (callers check that one exists)."""
    return jnp.argmax(mask).astype(jnp.int32)


def _best(cands, *keys):
    """Narrow ``cands`` to the maximum of each key in turn (``-key`` for a minimum); the
    survivors' lowest index is the tie-break the reference's ``-a`` / ``s`` keys give."""
    for key in keys:
        top = jnp.max(jnp.where(cands, key, jnp.iinfo(jnp.int32).min))
        cands = cands & (key == top)
    return cands


def heuristic_action(s):
    """int32: the action ``heuristic_chooser`` takes in ``s`` (0 once the game is over)."""
    m = legal_mask(s)
    p = s["decider"]
    tops = top_cards(s)
    hand = jnp.maximum(s["hand"][p], 0)
    # per action, the hand card it plays (PLAY i -> slot i, HAND_ON(i, s) -> slot i)
    play_card = hand[jnp.clip(_IDX - A.PLAY, 0, 9)]
    on_card = hand[jnp.clip((_IDX - A.HAND_ON) // 4, 0, 9)]
    plays = m & _in(A.PLAY, A.HAND_ON)
    hand_on = m & _in(A.HAND_ON, A.ATTACH)

    # setup: the highest-HP Basic Active (ties: lowest action), then every Basic in order
    placing = m & (_IDX != A.END)
    hp = T["hp"][play_card]
    active_empty = ~s["pk_present"][p, 0]
    setup_pick = jnp.where(active_empty, _first(_best(placing, hp)), _first(placing))
    setup = jnp.where(jnp.any(placing), setup_pick, A.END)

    # pending choice: a CHOOSE slot by the side the choice concerns, else the first legal
    slots = m[A.CHOOSE : A.CHOOSE + 4]
    target = s["choice"] == CH_TARGET
    row = step_row(s)
    q, _ = target_slots(s, tops, row)
    side = jnp.where(target, q, p)
    remaining = T["hp"][jnp.maximum(tops[side], 0)] - s["pk_damage"][side]
    hurting = target & (row[SC["op"]] == OP["damage_other"])
    energy = jnp.sum(s["pk_energy"][side], axis=-1)
    slot = jnp.select(
        [side != p, hurting],
        [_first(_best(slots, -remaining)), _first(_best(slots, remaining))],
        _first(_best(slots, s["pk_damage"][side], energy)),
    )
    choice = jnp.where(jnp.any(slots), A.CHOOSE + slot, _first(m))

    # main phase: the first non-empty group, in the reference's order
    evolve = hand_on & (T["stage"][on_card] > 0)
    basics = plays & T["is_basic"][play_card]
    attach = m & _in(A.ATTACH, A.ABILITY)
    ability = m & _in(A.ABILITY, A.ATTACK)
    attacks = m & _in(A.ATTACK, A.RETREAT)
    atk_dmg = T["atk_damage"][jnp.maximum(tops[p, 0], 0), jnp.clip(_IDX - A.ATTACK, 0, 1)]
    # max by (damage, a): among equal damage the higher action
    attack = _first(_best(attacks, atk_dmg, _IDX))
    groups = [evolve, basics, attach, plays, hand_on, ability]
    main = jnp.select(
        [jnp.any(g) for g in groups] + [jnp.any(attacks)],
        [_first(g) for g in groups] + [attack],
        A.END,
    )

    ph = s["phase"]
    out = jnp.select([ph == PH_SETUP, ph == PH_CHOICE, ph == PH_MAIN], [setup, choice, main], 0)
    return out.astype(jnp.int32)
