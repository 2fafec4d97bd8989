"""L3 on the whole-battle engine: seeded Showdown random battles (six Pokémon a side,
switching, faints, forced switches), random legal choices, and after every decision the JAX
battle equals Showdown's exported battle (every Pokémon of both teams, PRNG seed, turn,
forced switches, winner)."""

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from pokejax import battle, choices, reference, showdown_battle
from pokejax.duel import SUPPORTED_MOVES, switched_out

FORMAT = reference.FORMAT


def _supported(sets) -> bool:
    return all(m in SUPPORTED_MOVES for s in sets for m in s["moves"])


def seeded_battles(showdown, seed: int, n: int):
    """The first ``n`` battles of run ``seed`` whose teams only use moves the engine has."""
    i = 0
    while n:
        seeds = reference.derive_seeds(seed, i)
        i += 1
        teams = [showdown.request("team", format=FORMAT, seed=seeds[p]) for p in ("p1", "p2")]
        if all(_supported(t["sets"]) for t in teams):
            n -= 1
            yield seeds, [t["packed"] for t in teams]


_step = jax.jit(battle.step)
_clear_bench = jax.jit(jax.vmap(jax.vmap(switched_out)))


def bench_not_cleared(b) -> list[str]:
    """The ``battle.BENCH_CLEARED`` fields where a benched record is not at its cleared value
    (the switch skips them, which is exact only while this list is empty)."""
    cleared = _clear_bench(b.bench)
    return [k for k in battle.BENCH_CLEARED
            if not np.array_equal(getattr(b.bench, k), getattr(cleared, k))]


def decide(showdown, handle, b, acts, context) -> tuple:
    """One decision on both engines; asserts the JAX battle equals Showdown's afterwards.
    Returns (JAX battle, Showdown's exported state)."""
    res = showdown.request(
        "choose", battle=handle,
        p1=None if acts[0] is None else choices.choice_string(acts[0]),
        p2=None if acts[1] is None else choices.choice_string(acts[1]))
    assert res["accepted"], res
    b = _step(b, np.asarray([-1 if a is None else a for a in acts], np.int32))
    bad = showdown_battle.diff(b, res["state"])
    assert not bad, (context, acts, bad)
    assert bench_not_cleared(b) == bench_not_cleared(showdown_battle.load(res["state"])) == []
    return b, res["state"]


def play_battles(showdown, n: int, seed: int, max_turns: int = 300) -> dict:
    rng = np.random.default_rng(seed)
    stats = {"battles": 0, "decisions": 0, "forced": 0, "switches": 0, "ended": 0}
    for seeds, (p1, p2) in seeded_battles(showdown, seed, n):
        started = showdown.request("start", format=FORMAT, seed=seeds["battle"], p1team=p1, p2team=p2)
        handle, state = started["battle"], started["state"]
        b = showdown_battle.load(state)
        try:
            while not state["ended"] and state["turn"] <= max_turns:
                acts = [reference.choose_random(rng, side["request"]) for side in state["sides"]]
                stats["forced"] += bool(b.forced.any())
                stats["switches"] += sum(a is not None and a >= 4 for a in acts)
                b, state = decide(showdown, handle, b, acts, (seeds, state["turn"]))
                stats["decisions"] += 1
        finally:
            showdown.request("close", battle=handle)
        stats["battles"] += 1
        stats["ended"] += state["ended"]
    return stats


def test_start_state_loads_exactly(showdown):
    for seeds, (p1, p2) in seeded_battles(showdown, 1, 3):
        state = showdown.request("start", format=FORMAT, seed=seeds["battle"], p1team=p1, p2team=p2)
        showdown.request("close", battle=state["battle"])
        assert showdown_battle.diff(showdown_battle.load(state["state"]), state["state"]) == []


def test_battles_match_showdown(showdown):
    stats = play_battles(showdown, n=6, seed=20)
    assert stats["ended"] >= 5 and stats["forced"] > 10 and stats["switches"] > 20, stats


def test_bench_records_stay_cleared():
    """The invariant behind BENCH_CLEARED along 400 decisions of 256 random battles (resets
    included), and the check itself catches a record that is not cleared."""
    import jax.numpy as jnp

    from pokejax import bench

    pool = bench.start_pool()
    carry = (jax.tree.map(lambda x: x[:256], pool), jax.random.PRNGKey(5), jnp.int32(0))
    step = jax.jit(lambda c: bench._batched_step(c, pool))
    one = jax.tree.map(lambda x: x[0], pool)
    assert bench_not_cleared(one) == []
    broken = one._replace(bench=one.bench._replace(twoturn=one.bench.twoturn.at[0, 2].set(7)))
    assert bench_not_cleared(broken) == ["twoturn"]
    for t in range(400):
        carry = step(carry)
        if t % 20 == 0:
            bad = [k for k in battle.BENCH_CLEARED
                   if not np.array_equal(getattr(carry[0].bench, k),
                                         getattr(jax.vmap(_clear_bench)(carry[0].bench), k))]
            assert bad == [], (t, bad)


@pytest.mark.slow
def test_many_battles_match_showdown(showdown):
    stats = play_battles(showdown, n=300, seed=21)
    assert stats["ended"] == 300, stats


REGRESSIONS = Path(__file__).parent / "regressions" / "battles.json"


@pytest.mark.parametrize("entry", json.loads(REGRESSIONS.read_text()), ids=lambda e: e["why"][:40])
def test_regression_battles(showdown, entry):
    """Battles where the whole-battle L3 once diverged (``tests/regressions/regenerate.py``
    regenerates the file): replayed with their recorded choices, equal at every decision."""
    seeds = entry["seeds"]
    p1, p2 = (showdown.request("team", format=FORMAT, seed=seeds[p])["packed"] for p in ("p1", "p2"))
    started = showdown.request("start", format=FORMAT, seed=seeds["battle"], p1team=p1, p2team=p2)
    handle, state = started["battle"], started["state"]
    b = showdown_battle.load(state)
    try:
        for acts in entry["actions"]:
            b, state = decide(showdown, handle, b, acts, (entry["why"], state["turn"]))
    finally:
        showdown.request("close", battle=handle)
    assert state["ended"] and state["turn"] == entry["turns"]
