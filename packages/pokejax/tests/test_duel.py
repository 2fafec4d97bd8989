"""L3 on the duel engine: whole 1-vs-1 Gen 1 duels, random legal choices, JAX turn ==
Showdown turn after every turn (HP, status, stages, stored and modified stats, moves and PP
with their base copies, types, species, Transform, Substitute HP, two-turn charge, last move,
the side's selections and last used move, pokemon.speed, battle.lastDamage, PRNG seed, winner)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pokejax import choices, prng, teams
from pokejax.duel import STANDARD_MOVES, SUPPORTED_MOVES, Field, turn
from pokejax.showdown_state import fighter, fighter_diff, side_diff


@pytest.fixture(scope="module")
def pool(team_sets):
    return team_sets([[i, 2, 2, 2] for i in range(5)])


def _duel_sets(rng, pool, include=(), moves=SUPPORTED_MOVES):
    a = dict(pool[rng.integers(len(pool))])
    b = dict(a) if rng.random() < 0.3 else dict(pool[rng.integers(len(pool))])  # mirrors: speed ties
    others = [m for m in moves if m not in include and m != "struggle"]
    for s in (a, b):
        s["moves"] = list(include) + list(rng.choice(others, 4 - len(include), replace=False))
    return a, b


_run = jax.jit(lambda s, f1, f2, a1, a2, fld: turn(prng.from_seed(s), f1, f2, a1, a2, fld))


def _events(state: dict, new: dict, slots: list[int]) -> set[str]:
    """What happened in a turn, from Showdown's states (to show a test reached a mechanic)."""
    seen = set()
    for side, old_side, slot in zip(new["sides"], state["sides"], slots, strict=True):
        mon, old = side["pokemon"][0], old_side["pokemon"][0]
        vols = mon["volatiles"]
        seen |= {v for v in ("substitute", "twoturnmove") if v in vols}
        if "substitute" in old["volatiles"] and "substitute" not in vols:
            seen.add("substitute broken")
        if mon["transformed"]:
            seen.add("transformed")
        if not mon["transformed"] and [m["id"] for m in mon["moves"]] != [m["id"] for m in mon["baseMoves"]]:
            seen.add("mimicked")
        if side["lastSelectedMove"] == "struggle":
            seen.add("struggle")
        if old["moves"][slot]["id"] == "mirrormove" and side["lastSelectedMove"] not in ("mirrormove", old_side["lastSelectedMove"]):
            seen.add("mirrored")
        if side["lastEnemyMove"] == "counter" and new["lastDamage"] > 0:
            seen.add("countered")
    if new["ended"] and not new["winner"]:
        seen.add("tie")
    return seen


def play_duels(showdown, pool, n: int, seed: int, include=(), moves=SUPPORTED_MOVES,
               pp=None) -> tuple[int, int, set[str]]:
    """Play ``n`` duels on both sides, comparing after every turn; returns (turns, endings,
    events seen). ``pp``: a function rng -> the four starting PP of a side (reaches Struggle)."""
    rng = np.random.default_rng(seed)
    turns = endings = 0
    seen = set()
    for _ in range(n):
        a, b = _duel_sets(rng, pool, include, moves)
        seed = rng.integers(0, 0x10000, 4).tolist()
        extra = {"pp": {"p1": pp(rng), "p2": pp(rng)}} if pp else {}
        started = showdown.request("start", format="gen1randombattle", seed=seed,
                                   p1team=teams.pack_team([a]), p2team=teams.pack_team([b]),
                                   unvalidated=True, **extra)  # any move on any species
        battle, state = started["battle"], started["state"]
        # the JAX side starts from Showdown's first state and then carries its own state
        f1, f2 = (fighter(side["pokemon"][0], side["lastSelectedMoveSlot"], side) for side in state["sides"])
        fld = Field(last_damage=jnp.int32(state["lastDamage"]))
        s = jnp.asarray([int(w) for w in state["seed"].split(",")], jnp.uint32)
        while not state["ended"] and state["turn"] < 40:
            # Showdown's request decides what is legal (a frozen Pokémon gets a single slot)
            slots = [int(rng.choice(np.flatnonzero(choices.legal_mask(side["request"])[:4])))
                     for side in state["sides"]]
            res = showdown.request("choose", battle=battle, p1=f"move {slots[0] + 1}",
                                   p2=f"move {slots[1] + 1}")
            assert res["accepted"], res
            new = res["state"]
            s_after, f1, f2, result, fld = _run(s, f1, f2, jnp.int32(slots[0]), jnp.int32(slots[1]), fld)
            s = prng.to_seed(s_after)
            ctx = (state["turn"], a["moves"], b["moves"], slots)
            assert ",".join(str(int(w)) for w in s) == new["seed"], ctx
            for g, side in zip((f1, f2), new["sides"], strict=True):
                mon = side["pokemon"][0]
                diff = fighter_diff(g, mon) + side_diff(g, side)
                if mon["hp"] > 0 and int(g.speed) != mon["speed"]:
                    diff.append(f"speed: {int(g.speed)} != {mon['speed']}")
                assert not diff, (side["id"], diff, ctx)
            assert int(fld.last_damage) == new["lastDamage"], (int(fld.last_damage), new["lastDamage"], ctx)
            assert bool(result.ended) == new["ended"], ctx
            if new["ended"]:
                assert int(result.winner) == {"": 0, "p1": 1, "p2": 2}[new["winner"]], ctx
                endings += 1
            seen |= _events(state, new, slots)
            state = new
            turns += 1
        showdown.request("close", battle=battle)
    return turns, endings, seen


def test_duels_match_showdown(showdown, pool):
    turns, endings, _ = play_duels(showdown, pool, n=25, seed=10, moves=STANDARD_MOVES)
    assert turns > 100 and endings > 10


def test_recharge_and_sleep_duels_match_showdown(showdown, pool):
    """Every set carries Hyper Beam and Sleep Powder: recharge turns, the sleep-on-recharge
    bug, waking up."""
    turns, endings, _ = play_duels(showdown, pool, n=15, seed=12, include=("hyperbeam", "sleeppowder"),
                                moves=STANDARD_MOVES)
    assert turns > 60 and endings > 5


@pytest.mark.parametrize("include, n, seed, expect", [
    (("superfang", "highjumpkick", "selfdestruct"), 12, 20, {"tie"}),
    (("explosion", "counter"), 12, 21, {"countered", "tie"}),
    (("doublekick", "twineedle", "pinmissile"), 8, 22, set()),
    (("skyattack", "counter", "seismictoss"), 8, 23, {"twoturnmove", "countered"}),
    (("substitute", "pinmissile", "psybeam"), 8, 24, {"substitute", "substitute broken"}),
    (("mirrormove", "mimic", "transform"), 8, 25, {"mirrored", "mimicked", "transformed"}),
])
def test_special_move_duels_match_showdown(showdown, pool, include, n, seed, expect):
    turns, endings, seen = play_duels(showdown, pool, n=n, seed=seed, include=include)
    print(include, turns, endings, sorted(seen))
    assert turns > n and endings > n // 3 and expect <= seen, (turns, endings, seen)


def test_struggle_duels_match_showdown(showdown, pool):
    """Few PP on both sides: the request offers only Struggle once they are spent."""
    turns, endings, seen = play_duels(showdown, pool, n=8, seed=26,
                                      pp=lambda rng: rng.integers(0, 3, 4).tolist())
    print(turns, endings, sorted(seen))
    assert turns > 20 and endings > 2 and "struggle" in seen


@pytest.mark.slow
def test_many_duels_match_showdown(showdown, pool):
    turns, endings, seen = play_duels(showdown, pool, n=400, seed=11)
    print(turns, endings, sorted(seen))
    assert turns > 2000 and endings > 300
    assert {"substitute broken", "transformed", "mimicked", "mirrored", "twoturnmove", "countered", "tie"} <= seen
