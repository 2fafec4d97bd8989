"""Every way a gen1randombattle ends that random play rarely reaches, driven in the live
Showdown and in the engine from the same state: the turn limit and each case of Gen 1's
Endless Battle Clause (``Battle.maybeTriggerEndlessBattleClause``), with the positions a
step short of each as controls.

States are put in place by the driver's ``edit`` (``pokejax.end_states``: turn counter, status,
HP, moves, types of a live Showdown battle, its requests made again), exported, and loaded into
the engine; then both play the same decisions and must agree on everything after each one
(``ended`` and ``winner`` included)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from pokejax import backends as K
from pokejax import battle, choices, reference, showdown_battle
from pokejax.end_states import SCENARIOS

_step = jax.jit(battle.step)


def crafted(showdown, seed: int, turn: int | None = None, pokemon=()):
    """A seeded random battle, edited; returns (handle, exported state, engine battle)."""
    setup = K.battle_setups(showdown, seed, 1, False)[0]
    handle, _ = K.start(showdown, setup)
    args = {"pokemon": list(pokemon)} | ({} if turn is None else {"turn": turn})
    state = showdown.request("edit", battle=handle, **args)
    b = showdown_battle.load(state)
    assert showdown_battle.diff(b, state) == []  # the engine holds the edited battle exactly
    return handle, state, b


def decide(showdown, handle, state, b, rng):
    """Random legal choices on both sides, one decision on both engines, compared."""
    acts = [reference.choose_random(rng, side["request"]) for side in state["sides"]]
    res = showdown.request("choose", battle=handle, **K.choose_args(acts))
    assert res["accepted"], res
    b = _step(b, np.asarray([-1 if a is None else a for a in acts], np.int32))
    assert showdown_battle.diff(b, res["state"]) == [], (acts, showdown_battle.diff(b, res["state"]))
    return res["state"], b


def test_the_turn_limit_ties_the_battle_after_turn_1000(showdown):
    # switching only: nothing can end the battle before the limit does
    handle, state, b = crafted(showdown, 3, turn=999)
    try:
        for expect_turn, expect_end in ((1000, False), (1001, True)):
            acts = [4, 4]  # "switch 2" on both sides: legal at the start of a turn here
            assert all(choices.legal_mask(s["request"])[4] for s in state["sides"])
            res = showdown.request("choose", battle=handle, **K.choose_args(acts))
            assert res["accepted"], res
            b = _step(b, np.asarray(acts, np.int32))
            state = res["state"]
            assert showdown_battle.diff(b, state) == []
            assert (state["turn"], state["ended"], state["winner"]) == (expect_turn, expect_end, "")
            assert bool(b.ended) == expect_end and int(b.winner) == 0
        assert not K.reference_canonical(state)["legal"].any()  # nothing to choose once tied
    finally:
        showdown.request("close", battle=handle)


@pytest.mark.parametrize("name", [n for n in SCENARIOS if not n.startswith("turn")])
def test_endless_battle_clause(showdown, name):
    rng = np.random.default_rng(1)
    edits, ties = SCENARIOS[name]
    handle, state, b = crafted(showdown, 5, **edits)
    try:
        state, b = decide(showdown, handle, state, b, rng)
        assert state["ended"] == ties, name
        if ties:
            assert state["winner"] == "" and int(b.winner) == 0
    finally:
        showdown.request("close", battle=handle)


def test_the_clause_is_checked_at_every_turn_end_not_only_after_turn_100(showdown):
    """Gen 1's clause comes before the turn-100 guard of the limit: early turns tie too."""
    handle, state, b = crafted(showdown, 7, turn=2, **SCENARIOS["every Pokémon frozen"].edit)
    try:
        state, _ = decide(showdown, handle, state, b, np.random.default_rng(2))
        assert state["ended"] and state["turn"] == 3
    finally:
        showdown.request("close", battle=handle)
