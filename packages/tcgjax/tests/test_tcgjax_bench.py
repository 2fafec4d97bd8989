"""tcgjax.bench: both sides of ``envport bench tcgjax`` play and count the same workload."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tcgjax import bench
from tcgjax.engine.state import to_reference
from tcgjax.reference.invariants import check
from tcgjax.reference.state import PH_OVER, PH_SETUP


def _ks(seed, steps, n):
    return np.random.default_rng(seed).integers(0, bench.CHOOSER, (steps, n))


def test_reference_games_restart_and_count():
    g = bench.RefGames(3, seed=5)
    ks = _ks(0, 400, 3)
    for row in ks:
        g.step(row)
    assert g.decisions == 400 * 3
    # random games last ~97 decisions: 1,200 decisions finish several games
    assert 5 <= g.finished <= 40
    assert all(not st.done for st in g.games)  # an ended game was replaced at once
    h = bench.RefGames(3, seed=5)
    for row in ks:
        h.step(row)
    assert (h.decisions, h.finished) == (g.decisions, g.finished)
    assert [st.seed for st in h.games] == [st.seed for st in g.games]


def test_reference_stepper_processes_split_the_batch():
    """Two worker processes play exactly what two in-process shares seeded RUN_SEED + p play."""
    ks = _ks(1, 150, 5)
    step, close = bench.reference_stepper(5, processes=2)
    try:
        for row in ks:
            step(row)
    finally:
        close()
    rec = bench.RECORDS[("reference", 2, 5)]
    lo = bench.RefGames(2, bench.RUN_SEED)  # bounds of 5 over 2 processes: [0, 2), [2, 5)
    hi = bench.RefGames(3, bench.RUN_SEED + 1)
    for row in ks:
        lo.step(row[:2])
        hi.step(row[2:])
    assert rec["decisions"] == rec["env_steps"] == 150 * 5 == lo.decisions + hi.decisions
    assert rec["games"] == lo.finished + hi.finished > 0


def test_reference_stepper_refuses_a_wrong_batch():
    step, close = bench.reference_stepper(3)
    try:
        with pytest.raises(ValueError, match="expected 3 actions"):
            step(np.zeros(4, np.int64))
    finally:
        close()


def test_restart_replaces_only_ended_games():
    states = bench.initial_states(4, seed=3)
    over = jnp.array([False, True, False, True])
    states = dict(states, phase=jnp.where(over, PH_OVER, states["phase"]))
    a = jnp.array([0, 7, 0, 14], jnp.int32)
    seeds = jnp.array([0, 11, 0, 12], jnp.uint32)
    f = jax.jit(bench.restart)
    out = f(states, over, a, a, seeds)
    assert np.asarray(out["phase"]).tolist() == [PH_SETUP] * 4
    assert np.array_equal(out["deck_cards"][1, 0], bench.DECK_CARDS[7])
    assert np.array_equal(out["deck_cards"][3, 1], bench.DECK_CARDS[14])
    assert (int(out["seed"][1]), int(out["seed"][3])) == (11, 12)
    fresh = jax.jit(bench.start_games)(a, a, seeds)
    for k in states:  # ended games are new games; the others keep every field
        for i in (1, 3):
            assert np.array_equal(out[k][i], fresh[k][i]), k
        for i in (0, 2):
            assert np.array_equal(out[k][i], states[k][i]), k
    none = f(states, jnp.zeros(4, bool), a, a, seeds)
    for k in states:
        assert np.array_equal(none[k], states[k])


def test_games_report_divides_by_each_sides_game_length():
    lengths = {"reference": {"decisions_per_game": 100.0, "games": 10},
               "candidate": {"decisions_per_game": 50.0, "games": 20}}
    table = {"targets": {
        "one": {"rows": [{"num_envs": 32, "reference_sps": 100.0, "candidate_sps": 400.0}]},
        "two": {"rows": [{"num_envs": 32, "reference_sps": 300.0, "candidate_sps": None}]},
    }}
    rep = bench.games_report(table, lengths)
    one, two = rep["rows"]
    assert one["reference_games_per_s"] == pytest.approx(1.0)
    assert one["candidate_games_per_s"] == pytest.approx(8.0)
    assert one["games_ratio"] == pytest.approx(8.0)
    assert two["reference_games_per_s"] == pytest.approx(3.0)
    assert two["candidate_games_per_s"] is None and two["games_ratio"] is None
    best = rep["best_games_per_s"]
    assert (best["reference"], best["reference_target"]) == (pytest.approx(3.0), "two")
    assert best["ratio_of_bests"] == pytest.approx(8.0 / 3.0)
    assert rep["best_decisions_per_s"]["ratio_of_bests"] == pytest.approx(400.0 / 300.0)
    md = bench.games_markdown({**rep, "host_line": "h", "date": "d"})
    assert "100.00 decisions per game over 10 games" in md and "8.000×" in md


def test_reference_game_length_is_a_random_games_length():
    out = bench.mean_game_length("reference", games=30)
    assert out["games"] == 30
    assert 60 < out["decisions_per_game"] < 140  # random games: ~97 decisions


def test_release_programs_drops_the_cached_runners():
    """One compiled batched step holds ~9,000 memory mappings: the benchmark keeps one size's
    program at a time, or ten of them pass Linux's default vm.max_map_count (65,530)."""
    bench._runner(2, 1)  # the pmapped function only: nothing compiles until it is called
    assert bench._runner.cache_info().currsize >= 1
    bench.release_programs()
    assert bench._runner.cache_info().currsize == 0


@pytest.mark.slow
def test_candidate_rollout_counts_decisions_and_games():
    """Minutes: compiles the rollout. Every env-step is a decision (ended games restart in the
    same step) and finished games are counted."""
    bench.RECORDS.clear()
    run, compile_s = bench.candidate_rollout(4, max_devices=1)
    assert compile_s > 0
    run(200)
    rec = bench.RECORDS[("candidate", 1, 4)]
    assert rec["env_steps"] == 201 * 4 == rec["decisions"]
    assert 2 <= rec["games"] <= 40
    states = jax.device_get(run.holder["carry"][0])
    for i in range(4):  # every game runs (ended ones were restarted) and is a valid state
        st = to_reference({k: v[0, i] for k, v in states.items()})
        assert st.phase != PH_OVER
        check(st)
    run1, _ = bench.candidate_rollout(1, max_devices=1)  # the un-vmapped path
    assert bench._runner.cache_info().currsize == 1  # the batch-4 program was released
    run1(300)
    rec1 = bench.RECORDS[("candidate", 1, 1)]
    assert rec1["env_steps"] == 301 == rec1["decisions"] and rec1["games"] >= 1
    length = bench.mean_game_length("candidate", games=40)
    assert length["games"] >= 40 and 60 < length["decisions_per_game"] < 140
