"""``envport verify pokejax`` on a sample: L2 and L3 through the core against the live
Showdown (the full counts run in ``nox -s verify-pokejax``), the pieces they rest on
(Showdown's serialisation, the fast loader, mask-agnostic actions), and a planted divergence
that both levels must catch."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envport.verify as verify
from envport.testing import assert_shortest_prefix
from envport.verify.l2 import run_l2
from envport.verify.l3 import run_l3
from pokejax import backends as K
from pokejax import battle as B
from pokejax import port, reference, showdown_battle

ENVS = 4  # one batch size for every candidate here: the engine compiles once per process


def _battle(showdown, seed=3):
    setup = K.battle_setups(showdown, seed, 1, port.ONLY_SUPPORTED_TEAMS)[0]
    return K.start(showdown, setup)


def _play(showdown, handle, export, rng):
    acts = [reference.choose_random(rng, s["request"]) for s in export["sides"]]
    res = showdown.request("choose", battle=handle, **K.choose_args(acts))
    assert res["accepted"], res
    return acts, res["state"]


def test_restored_battle_continues_identically(showdown):
    """Battle.fromJSON of a serialised battle is the same battle: the same exported state
    (PRNG seed, every Pokémon, requests) now and after every later decision."""
    handle, export = _battle(showdown)
    rng = np.random.default_rng(0)
    try:
        for _ in range(6):
            _, export = _play(showdown, handle, export, rng)
        restored = showdown.request("restore", json=showdown.request("serialize", battle=handle))
        copy = restored["battle"]
        assert restored["state"] == export
        steps = 0
        while not export["ended"] and steps < 300:
            acts, export = _play(showdown, handle, export, rng)
            res = showdown.request("choose", battle=copy, **K.choose_args(acts))
            assert res["accepted"] and res["state"] == export, steps
            steps += 1
        assert steps > 5
    finally:
        showdown.request("close_many", battles=[handle, copy])


def test_loader_leaves_have_the_engine_dtypes(showdown):
    """The loader builds numpy leaves directly (fast, no device dispatch per field); they must
    be exactly what the engine's step returns, or every loaded batch would recompile."""
    handle, export = _battle(showdown, seed=4)
    showdown.request("close", battle=handle)
    loaded = showdown_battle.load(export)
    stepped = jax.eval_shape(B.step, loaded, np.zeros(2, np.int32))
    for a, b in zip(jax.tree.leaves(loaded), jax.tree.leaves(stepped), strict=True):
        assert isinstance(a, np.ndarray | np.generic) and (a.dtype, a.shape) == (b.dtype, b.shape)


def test_normalize_keeps_the_side_selections_of_a_fainted_active(showdown):
    """A fainted active's record still carries its side's last selections (the Pokémon
    switched in for it takes them over), so the canonical state must not zero them — L2
    loads the candidate from it (this zeroing once made 12% of L2 cases differ)."""
    handle, export = _battle(showdown, seed=6)
    showdown.request("close", battle=handle)
    flat = K.flatten(showdown_battle.load(export))
    flat["team.hp"] = flat["team.hp"].copy()
    flat["team.hp"][1, 0] = 0
    flat["team.sel_move"] = flat["team.sel_move"].copy()
    flat["team.sel_move"][1, 0] = 40
    out = K.normalize(flat)
    assert out["team.sel_move"][1, 0] == 40 and out["team.species"][1, 0] == 0


def test_pick_is_the_same_on_both_sides():
    masks = ((np.arange(512)[:, None] >> np.arange(9)) & 1).astype(bool)  # every bool[9]
    ks = np.random.default_rng(0).integers(0, K.ACTION_CHOICES, size=512)
    got = np.asarray(jax.jit(jax.vmap(K.pick_jax))(jnp.asarray(ks), jnp.asarray(masks)))
    want = [K.pick(k, m) for k, m in zip(ks, masks, strict=True)]
    assert got.tolist() == want
    # uniform k gives each legal action the same number of k values, for every n
    for n in range(1, 10):
        counts = np.bincount([K.pick(k, np.arange(9) < n) for k in range(K.ACTION_CHOICES)])
        assert (counts == K.ACTION_CHOICES // n).all()


def test_unmodelled_state_is_counted(showdown):
    handle, export = _battle(showdown, seed=5)
    showdown.request("close", battle=handle)
    assert K.reference_canonical(export)["unmodelled"] == 0
    export = json.loads(json.dumps(export))
    export["sides"][0]["pokemon"][0]["volatiles"]["leechseed"] = {}
    export["sides"][1]["sideConditions"]["spikes"] = {}
    assert K.reference_canonical(export)["unmodelled"] == 2


def _suites(**kw):
    return port._l2(cases=8, batch=ENVS, **kw), port._l3(ENVS, 4, **kw)


def test_verify_sample_through_the_core(tmp_path):
    """L2 (8 recorded decision points) and L3 (4 whole battles) through ``verify.run``: zero
    mismatches, the report written with the scope notes."""
    l2, l3 = _suites()
    p = dataclasses.replace(port.PORT, l2=[l2], l3=[l3])
    report = verify.run(p, out_dir=tmp_path, progress=False, levels=["L2", "L3"])
    assert report["levels"]["L2"] == {"cases": 8, "mismatches": 0}, report["first_divergence"]
    l3r = report["levels"]["L3"]
    assert l3r["episodes"] >= 4 and l3r["mismatches"] == 0, report["first_divergence"]
    notes = [d["note"] for d in report["details"]["L2"] + report["details"]["L3"]]
    if port.ONLY_SUPPORTED_TEAMS:
        assert all("FILTERED" in n and "drawn battles kept" in n for n in notes), notes
    md = (tmp_path / "pokejax" / "verify.md").read_text()
    assert "| L2 interaction | 8 cases, 0 mismatches |" in md


def test_two_workers_write_the_report_one_process_writes(tmp_path):
    """L2 and L3 sharded over two worker processes, each with its own Showdown and JAX engine
    (compiled once, from the persistent cache): the same report as one process, notes (with
    their counts summed over the workers) included."""
    def run(workers):
        l2, l3 = _suites()
        l3 = dataclasses.replace(l3, episodes=2 * ENVS)  # two seeds: one per worker
        report = verify.run(dataclasses.replace(port.PORT, l2=[l2], l3=[l3]),
                            out_dir=tmp_path / str(workers), progress=False,
                            levels=["L2", "L3"], workers=workers)
        return {k: v for k, v in report.items() if k not in ("wall_s", "execution",
                                                              "report_paths")}

    one, two = run(1), run(2)
    assert one == two
    assert one["levels"]["L3"]["mismatches"] == 0 and one["details"]["L3"][0]["seeds"] == 2


def test_a_switch_only_chooser_plays_to_the_turn_limit_on_both_sides():
    """L3 with the switch-only chooser: four battles of 1,000 turns, every decision compared,
    each ends as Showdown ends it, a tie after turn 1000."""
    suite = port._l3_switching(ENVS, ENVS)
    res = run_l3(suite)
    assert res.mismatches == 0, [d.summary() for d in res.divergences]
    assert res.episodes == ENVS and res.seeds == 1
    ref = suite.make_reference()
    try:  # the same seed on its own: where those battles end
        ref.reset(0)
        rng = np.random.default_rng(0)
        while not ref.state()["ended"].all():
            ref.rollout(np.stack([suite.sample_actions(rng, ENVS) for _ in range(512)]))
        final = ref.state()
        assert (final["turn"] == 1001).all() and (final["winner"] == 0).all()
    finally:
        ref.close()


class NoEndRules(K.JaxCandidate):
    """A planted gap: a battle that this step tied plays on, as an engine without the turn
    limit and the Endless Battle Clause would (a double knock-out tie is rare in these cases)."""

    def step(self, actions):
        before = self.battle.ended
        out = super().step(actions)
        tied = self.battle.ended & ~before & (self.battle.winner == 0)
        self.battle = self.battle._replace(ended=self.battle.ended & ~tied)
        self.terminated = self.terminated & ~tied
        self._rows = None
        return out


def test_crafted_end_positions_match_and_a_missing_rule_is_caught():
    crafted = port._l2_crafted(cases=16, batch=ENVS)
    res = run_l2(crafted)
    assert res.cases == 16 and res.mismatches == 0, res.examples[:1]
    planted = dataclasses.replace(port._l2_crafted(cases=16, batch=ENVS), make_candidate=(
        lambda n: NoEndRules(n, only_supported=port.ONLY_SUPPORTED_TEAMS)))
    res = run_l2(planted)
    assert res.mismatches >= 1
    assert {f["field"] for f in res.examples[0]["fields"]} >= {"ended"}


class HpOffByOne(K.JaxCandidate):
    """A planted bug: after the engine's step, on turn 3 and later, p1's active loses one HP
    more (as an off-by-one in a damage or residual formula would)."""

    def step(self, actions):
        out = super().step(actions)
        team = self.battle.team
        hit = (self.battle.turn >= 3) & ~self.battle.ended & (team.hp[:, 0, 0] > 1)
        hp = team.hp.at[:, 0, 0].add(-hit.astype(team.hp.dtype))
        self.battle = B.with_team(self.battle, team._replace(hp=hp))
        self._rows = None
        return out


def _planted(suite):
    def make(num_envs=ENVS):  # L2 passes its batch size, L3 nothing
        return HpOffByOne(num_envs, only_supported=port.ONLY_SUPPORTED_TEAMS)

    return dataclasses.replace(suite, make_candidate=make)


def test_planted_divergence_is_caught(tmp_path):
    l2, l3 = (_planted(s) for s in _suites())
    res2 = run_l2(l2, cases=8)
    assert res2.mismatches >= 1 and res2.examples[0]["fields"][0]["field"] == "team.hp"
    res3 = run_l3(l3, episodes=4, regressions_dir=tmp_path)
    assert res3.mismatches == 1
    div = res3.divergences[0]
    assert div.diffs and div.diffs[0].field == "team.hp", [str(d) for d in div.diffs]
    assert div.prefix_len is not None and 1 <= div.prefix_len <= div.step + 1
    saved = json.loads(next(tmp_path.glob("l3-*.json")).read_text())
    assert saved["shortest_prefix_len"] == div.prefix_len
    # the shortest prefix reproduces it, one action less does not
    assert_shortest_prefix(l3.make_reference, l3.make_candidate, div.seed, div.prefix)


@pytest.mark.slow
def test_verify_full_scale(tmp_path):
    """What ``nox -s verify-pokejax`` runs (L2/L3 part)."""
    l2 = port._l2()
    l3 = port._l3()
    report = verify.run(dataclasses.replace(port.PORT, l2=[l2], l3=[l3]), out_dir=tmp_path,
                        progress=False, levels=["L2", "L3"])
    assert report["levels"]["L2"]["cases"] >= 10_000
    assert report["levels"]["L3"]["episodes"] >= 1_000
    assert report["levels"]["L2"]["mismatches"] == 0 and report["levels"]["L3"]["mismatches"] == 0
