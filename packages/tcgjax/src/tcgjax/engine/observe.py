"""Per-player observations (§18) of the JAX state, observer first, as one float32 vector.

Shown: both boards (top card, stack size, damage, energy, Tool, conditions, effects, played this
turn, ability used), points, deck / hand / discard sizes, the discard piles, discarded energy,
Energy Zone current / next, per-turn flags, the turn, phase, pending choice and the resolving
attack / ability / trainer, the observer's own hand and deck list. Hidden: the opponent's hand
contents, both decks' order, the opponent's deck list, the RNG seed and counter; during setup the
opponent's placement (their board reads empty, their hand size as before placing, D4).
"""

from __future__ import annotations

import jax.numpy as jnp

from ..reference.state import PH_SETUP
from .legal import top_cards

F32 = jnp.float32


def _side(s, q, tops, hide_board):
    keep = ~hide_board
    board = [
        s["pk_present"][q],
        tops[q],
        s["pk_stack_n"][q],
        s["pk_damage"][q],
        s["pk_tool"][q],
        s["pk_poisoned"][q],
        s["pk_burned"][q],
        s["pk_status"][q],
        s["pk_played_turn"][q] == s["turn"],
        s["pk_ability_used"][q],
    ]
    parts = [
        jnp.where(keep, x.astype(F32), jnp.where(i in (1, 4), -1.0, 0.0))
        for i, x in enumerate(board)
    ]
    parts.append(jnp.where(keep, s["pk_energy"][q].astype(F32), 0.0).reshape(-1))
    parts.append(jnp.where(keep, s["pk_effects"][q].astype(F32), 0.0).reshape(-1))
    placed = jnp.sum(s["pk_present"][q])
    hand_n = s["hand_n"][q] + jnp.where(hide_board, placed, 0)
    scalars = jnp.stack(
        [
            s["points"][q],
            s["deck_n"][q],
            hand_n,
            s["discard_n"][q],
            s["zone_current"][q],
            s["zone_next"][q],
            s["supporter_played"][q],
            s["retreated"][q],
            s["zone_attached"][q],
            s["setup_done"][q],
        ]
    ).astype(F32)
    return jnp.concatenate(
        [p.reshape(-1) for p in parts]
        + [
            scalars,
            s["discard"][q].astype(F32),
            s["discarded_energy"][q].astype(F32),
            s["energy_types"][q].astype(F32),
            s["player_effects"][q].astype(F32).reshape(-1),
        ]
    )


def observe(s, player):
    """float32 vector of what ``player`` may know (§18)."""
    me, opp = player, 1 - player
    tops = top_cards(s)
    setup = s["phase"] == PH_SETUP
    mine = _side(s, me, tops, jnp.asarray(False))
    theirs = _side(s, opp, tops, setup)
    general = jnp.stack(
        [
            s["turn"],
            s["phase"],
            s["choice"],
            s["decider"] == me,
            s["first_player"] == me,
            s["retreat_target"],
            s["retreat_left"],
            s["winner"] == me,
            s["winner"] == opp,
            s["ex_present"],
            s["ex_kind"],
            s["ex_player"] == me,
            s["ex_card"],
            s["ex_attack"],
            s["ex_phase"],
            s["ex_units_left"],
        ]
    ).astype(F32)
    own = jnp.concatenate([s["hand"][me], s["deck_cards"][me]]).astype(F32)
    return jnp.concatenate([general, s["ex_addr"].astype(F32), own, mine, theirs])


OBS_SIZE = None  # set below from a real state


def _size() -> int:
    from ..reference import get_deck, new_game
    from .state import from_reference

    return int(
        observe(from_reference(new_game(get_deck(0), get_deck(1), 0, log_enabled=False)), 0).shape[
            0
        ]
    )


OBS_SIZE = _size()
