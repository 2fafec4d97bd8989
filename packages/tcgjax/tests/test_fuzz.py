"""tcgjax.fuzz: the vectorised invariants hold on reference states, each planted breakage is
caught under its own name, and a small fuzz run passes while a planted duplicate card in it is
reported with its env, step and invariant."""

import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tcgjax import fuzz
from tcgjax.engine.state import stack_states
from tcgjax.reference import deck_list, legal_actions, new_game, step
from tcgjax.reference.arrays import to_arrays
from tcgjax.reference.invariants import check as ref_check
from tcgjax.reference.state import CH_NONE, PH_MAIN, PH_OVER, ST_ASLEEP

_check = jax.jit(jax.vmap(fuzz.check))


def _states(games=30, seed=3):
    """Reference states of random games (every phase, ended games included), each passing the
    reference's own invariant check."""
    r, decks, out = random.Random(seed), deck_list(), []
    for g in range(games):
        st = new_game(decks[g % 15], decks[(g * 7 + 3) % 15], r.randrange(2**32),
                      log_enabled=False)
        while True:
            if r.random() < 0.1 or st.done:
                ref_check(st)
                out.append(to_arrays(st))
            if st.done:
                break
            step(st, r.choice(legal_actions(st)))
    return out


STATES = _states()


def test_invariants_hold_on_reference_states():
    ok = np.asarray(_check(stack_states(STATES)))
    assert ok.shape == (len(STATES), fuzz.N_INV)
    assert ok.all(), {fuzz.INVARIANTS[j] for j in np.flatnonzero(~ok.all(axis=0))}
    assert any(int(s["phase"]) == PH_OVER for s in STATES)


def _pick(pred):
    return next({k: np.array(v) for k, v in s.items()} for s in STATES if pred(s))


def _main(s):
    return int(s["phase"]) == PH_MAIN and not s["ex_present"] and int(s["hand_n"][0]) > 0


def _with_bench(s):
    return _main(s) and bool(s["pk_present"][0, 1])


def _dup(s):
    n = s["discard_n"][0]
    s["discard"][0, n] = s["hand"][0, 0]
    s["discard_n"][0] = n + 1


def _lose(s):
    n = s["hand_n"][0]
    s["hand"][0, :n] = np.r_[s["hand"][0, 1:n], -1]
    s["hand_n"][0] = n - 1


def _swap_card(s):  # a card replaced by another: 20 cards, not the deck list
    s["hand"][0, 0] = (s["hand"][0, 0] + 1) % 114 if s["hand"][0, 0] != s["hand"][0, 1] else 0


def _hp(s):
    tops = s["pk_stack"][0, 0, s["pk_stack_n"][0, 0] - 1]
    from tcgjax.engine.tables import TABLES
    s["pk_damage"][0, 0] = TABLES["hp"][tops] + 10 * 50  # past any HP bonus


PLANTS = [
    ("duplicated card", _main, _dup, {"cards_conserved"}),
    ("lost card", _main, _lose, {"cards_conserved"}),
    ("swapped card", _main, _swap_card, {"cards_conserved"}),
    ("junk past a list's length", _main,
     lambda s: s["hand"].__setitem__((0, 9), 0) if s["hand_n"][0] < 10 else None,
     {"list_padding"}),
    ("negative damage", _main, lambda s: s["pk_damage"].__setitem__((0, 0), -10), {"damage"}),
    ("damage not a multiple of 10", _main, lambda s: s["pk_damage"].__setitem__((0, 0), 15),
     {"damage"}),
    ("Pokémon past its HP in the main phase", _main, _hp, {"hp"}),
    ("3 points while running", _main, lambda s: s["points"].__setitem__(0, 3), {"points"}),
    ("negative points", _main, lambda s: s["points"].__setitem__(1, -1), {"points"}),
    ("negative energy", _main, lambda s: s["pk_energy"].__setitem__((0, 0, 0), -1), {"energy"}),
    ("undeclared zone type", _main,
     lambda s: s["zone_next"].__setitem__(0, next(t for t in range(8)
                                                   if t not in s["energy_types"][0])),
     {"energy_zone"}),
    ("asleep on the Bench", _with_bench,
     lambda s: s["pk_status"].__setitem__((0, 1), ST_ASLEEP), {"bench_conditions"}),
    ("poisoned on the Bench", _with_bench,
     lambda s: s["pk_poisoned"].__setitem__((0, 1), True), {"bench_conditions"}),
    ("winner while running", _main, lambda s: s["winner"].__setitem__((), 0), {"winner"}),
    # over: the engine's mask is empty then, as it must be; the winner field is not set
    ("over without a winner", _main, lambda s: s["phase"].__setitem__((), PH_OVER), {"winner"}),
    ("evolution card at the bottom of a stack", _main, lambda s: _bottom(s, _an_evolution()),
     {"stacks"}),
    ("hand over the limit", _main,
     lambda s: s["hand_n"].__setitem__(0, 11), {"hand_limit", "list_padding", "cards_conserved"}),
]


def _bottom(s, c):
    """The Active's Basic replaced by card ``c``, in the deck list too (conserved)."""
    old = s["pk_stack"][0, 0, 0]
    cards = list(s["deck_cards"][0])
    cards[cards.index(old)] = c
    s["deck_cards"][0] = sorted(cards)
    s["pk_stack"][0, 0, 0] = c


def _an_evolution():
    from tcgjax.engine.tables import CAT_POKEMON, TABLES
    return int(np.flatnonzero((TABLES["category"] == CAT_POKEMON) & ~TABLES["is_basic"])[0])


@pytest.mark.parametrize("name,pred,plant,expected", PLANTS, ids=[p[0] for p in PLANTS])
def test_a_planted_breakage_is_named(name, pred, plant, expected):
    s = _pick(pred)
    plant(s)
    got = set(fuzz.failed(_check(stack_states([s]))[0]))
    assert got == expected


def test_no_active_in_the_main_phase_is_named():
    s = _pick(lambda s: _main(s) and int(s["choice"]) == CH_NONE)
    s["pk_present"][0, 0] = False  # its cards vanish with it
    assert set(fuzz.failed(_check(stack_states([s]))[0])) == {"active", "cards_conserved",
                                                              "list_padding"}


def test_a_running_game_without_a_legal_action_is_named():
    from tcgjax.reference.state import CH_PROMOTE, PH_CHOICE
    s = _pick(lambda s: _main(s) and not s["pk_present"][1, 1:].any())
    # a promotion pending for a player with an empty Bench: nothing to choose
    s["phase"], s["choice"] = np.int32(PH_CHOICE), np.int32(CH_PROMOTE)
    s["promote_queue"][:] = [1, -1]
    s["decider"] = np.int32(1)
    assert set(fuzz.failed(_check(stack_states([s]))[0])) == {"legal_mask"}


def test_a_non_finite_observation_is_named(monkeypatch):
    real = fuzz.observe
    monkeypatch.setattr(fuzz, "observe",
                        lambda s, p: real(s, p).at[3].set(jnp.where(p == 1, jnp.nan, 0.0)))
    s = _pick(_main)
    assert fuzz.failed(jax.jit(fuzz.check)(s)) == ["finite_obs"]


def test_failures_keep_their_first_step_and_env():
    rec = fuzz._no_failures()
    bad = np.zeros((4, fuzz.N_INV), bool)
    bad[2, 0] = True
    rec = fuzz._note(rec, jnp.asarray(bad), 7)
    bad[:] = False
    bad[1, 0] = bad[3, 5] = bad[0, 5] = True
    rec = fuzz._note(rec, jnp.asarray(bad), 9)
    assert np.asarray(rec["count"])[[0, 5]].tolist() == [2, 2]
    assert np.asarray(rec["first_step"])[[0, 1, 5]].tolist() == [7, -1, 9]
    assert np.asarray(rec["first_env"])[[0, 5]].tolist() == [2, 0]


def test_env_streams_do_not_depend_on_the_batch():
    a = np.asarray(fuzz.draw(fuzz.env_seeds(5, 0, 6), 11, 0))
    b = np.asarray(fuzz.draw(fuzz.env_seeds(5, 4, 2), 11, 0))
    assert np.array_equal(a[4:], b)
    assert len(set(a.tolist())) == 6


def test_small_run_passes_and_a_planted_duplicate_is_caught():
    """One compile of the fuzz loop (batch 8) serves both runs: the plant is a traced input."""
    clean = fuzz.run(8 * 150, batch=8, seed=1, chunk=50, progress=False)
    assert clean["result"] == "pass", clean["failures"]
    assert clean["env_steps"] == 1200 and clean["games_finished"] >= 5
    assert sum(clean["outcomes"].values()) == clean["games_finished"]
    planted = fuzz.run(8 * 150, batch=8, seed=1, chunk=50, progress=False, plant=(60, 3))
    assert planted["result"] == "fail"
    f = planted["failures"]["cards_conserved"]
    assert (f["first_step"], f["first_env"]) == (60, 3)
    assert f["replay"] == "python -m tcgjax.fuzz --seed 1 --replay 3 --steps 61"
    # the broken game is env 3's alone, and nothing failed before it
    for other in planted["failures"].values():
        assert other["first_env"] == 3 and other["first_step"] >= 60


def test_cli_writes_the_summary(tmp_path, capsys):
    out = tmp_path / "fuzz.json"
    rc = fuzz.main(["--steps", "16", "--batch", "8", "--seed", "1", "--chunk", "2",
                    "--no-progress", "--out", str(out)])
    assert rc == 0
    import json
    summary = json.loads(out.read_text())
    assert summary["result"] == "pass" and summary["env_steps"] == 16
    assert summary["command"].startswith("python -m tcgjax.fuzz --steps 16")
    assert "cpu_model" in summary["host"]


@pytest.mark.slow
def test_replay_stops_at_the_first_failing_state_and_replays_the_reference(monkeypatch):
    """Minutes (the unbatched engine's compile). A check planted to fail from turn 3 on: the
    replay stops at the first such state, and the same game replayed on the reference equals
    the JAX state field for field (and passes the reference's own check)."""
    real = fuzz.check
    monkeypatch.setattr(fuzz, "check", lambda s: real(s).at[0].set(s["turn"] < 3))
    out = fuzz.replay(seed=1, env=3, steps=200)
    assert out["result"] == "fail" and out["failed"] == ["cards_conserved"]
    assert out["step"] >= 0 and out["game"]["chooser_indices"]
    assert out["fields_differing_from_reference"] == []
    assert out["reference_invariants"] == "passes"
    monkeypatch.setattr(fuzz, "check", real)
    assert fuzz.replay(seed=1, env=3, steps=200)["result"] == "pass"


def test_verify_session_runs_the_fuzz_after_the_levels():
    from tcgjax.port import session_commands

    assert session_commands("bench", ["--min-seconds", "8"]) == [
        ["envport", "bench", "tcgjax", "--min-seconds", "8"]]
    assert session_commands("tests", []) == []
    assert session_commands("verify", []) == [
        ["envport", "verify", "tcgjax"],
        ["python", "-m", "tcgjax.fuzz", "--steps", "1000000", "--out", "reports/tcgjax/fuzz.json"]]
    verify, fz = session_commands("verify", ["--scale", "0.002", "--out=/tmp/r"])
    assert verify == ["envport", "verify", "tcgjax", "--scale", "0.002", "--out=/tmp/r"]
    assert fz == ["python", "-m", "tcgjax.fuzz", "--steps", "2000", "--out", "/tmp/r/tcgjax/fuzz.json"]
