"""L3 on the first engine slice: whole 1-vs-1 Gen 1 duels of standard moves, random legal
choices, JAX turn == Showdown turn (HP, status, stages, modified stats, PP, confusion, PRNG
seed, winner) after every turn."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pokejax import choices, prng, teams
from pokejax.duel import STANDARD_MOVES, turn
from pokejax.showdown_state import fighter, fighter_diff


@pytest.fixture(scope="module")
def pool(team_sets):
    return team_sets([[i, 2, 2, 2] for i in range(5)])


def _duel_sets(rng, pool, include=()):
    a = dict(pool[rng.integers(len(pool))])
    b = dict(a) if rng.random() < 0.3 else dict(pool[rng.integers(len(pool))])  # mirrors: speed ties
    others = [m for m in STANDARD_MOVES if m not in include]
    for s in (a, b):
        s["moves"] = list(include) + list(rng.choice(others, 4 - len(include), replace=False))
    return a, b


def play_duels(showdown, pool, n: int, seed: int, include=()) -> tuple[int, int]:
    """Play ``n`` duels on both sides, comparing after every turn; returns (turns, endings)."""
    rng = np.random.default_rng(seed)
    run = jax.jit(lambda s, f1, f2, a1, a2: turn(prng.from_seed(s), f1, f2, a1, a2))
    turns = endings = 0
    for _ in range(n):
        a, b = _duel_sets(rng, pool, include)
        seed = rng.integers(0, 0x10000, 4).tolist()
        started = showdown.request("start", format="gen1randombattle", seed=seed,
                                   p1team=teams.pack_team([a]), p2team=teams.pack_team([b]))
        battle, state = started["battle"], started["state"]
        # the JAX side starts from Showdown's first state and then carries its own state
        f1, f2 = (fighter(side["pokemon"][0], side["lastSelectedMoveSlot"]) for side in state["sides"])
        s = jnp.asarray([int(w) for w in state["seed"].split(",")], jnp.uint32)
        while not state["ended"] and state["turn"] < 40:
            # Showdown's request decides what is legal (a frozen Pokémon gets a single slot)
            slots = [int(rng.choice(np.flatnonzero(choices.legal_mask(side["request"])[:4])))
                     for side in state["sides"]]
            res = showdown.request("choose", battle=battle, p1=f"move {slots[0] + 1}",
                                   p2=f"move {slots[1] + 1}")
            assert res["accepted"], res
            new = res["state"]
            s_after, f1, f2, result, _ = run(s, f1, f2, jnp.int32(slots[0]), jnp.int32(slots[1]))
            s = prng.to_seed(s_after)
            ctx = (state["turn"], a["moves"], b["moves"], slots)
            assert ",".join(str(int(w)) for w in s) == new["seed"], ctx
            for g, side in zip((f1, f2), new["sides"], strict=True):
                assert not fighter_diff(g, side["pokemon"][0]), (fighter_diff(g, side["pokemon"][0]), ctx)
            assert bool(result.ended) == new["ended"], ctx
            if new["ended"]:
                assert int(result.winner) == {"": 0, "p1": 1, "p2": 2}[new["winner"]], ctx
                endings += 1
            state = new
            turns += 1
        showdown.request("close", battle=battle)
    return turns, endings


def test_duels_match_showdown(showdown, pool):
    turns, endings = play_duels(showdown, pool, n=25, seed=10)
    assert turns > 100 and endings > 10


def test_recharge_and_sleep_duels_match_showdown(showdown, pool):
    """Every set carries Hyper Beam and Sleep Powder: recharge turns, the sleep-on-recharge
    bug, waking up."""
    turns, endings = play_duels(showdown, pool, n=15, seed=12, include=("hyperbeam", "sleeppowder"))
    assert turns > 60 and endings > 5


@pytest.mark.slow
def test_many_duels_match_showdown(showdown, pool):
    turns, endings = play_duels(showdown, pool, n=400, seed=11)
    assert turns > 2000 and endings > 300
