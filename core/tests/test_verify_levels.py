"""L2 and L3 with planted differences on small numpy backends (tests/walk.py): each level finds
the difference it exists to find, names it, and a pair with nothing planted shows nothing."""

from __future__ import annotations

import json
import math
from functools import partial

import numpy as np
import pytest
from walk import Tally, Walk, actions, cases, stay

from envport.registry import L2Suite, L3Suite
from envport.testing import assert_shortest_prefix
from envport.verify.diff import Tolerance
from envport.verify.l2 import run_l2
from envport.verify.l3 import run_l3


def l2_suite(bug=None, **kw) -> L2Suite:
    return L2Suite("walk", Walk, partial(Walk, bug=bug), cases, cases=200, batch=50, **kw)


def l3_suite(bug=None, n=4, **kw) -> L3Suite:
    kw.setdefault("episodes", 40)
    return L3Suite("walk", partial(Walk, n), partial(Walk, n, bug=bug), actions,
                   neutral_action=stay, **kw)


# -- L2 ---------------------------------------------------------------------------------------
def test_l2_nothing_planted_sees_nothing():
    res = run_l2(l2_suite())
    assert (res.cases, res.mismatches, res.examples) == (200, 0, [])


def test_l2_finds_a_one_field_difference():
    res = run_l2(l2_suite("score"))
    assert res.cases == 200 and res.mismatches > 0
    ex = res.examples[0]
    assert [f["field"] for f in ex["fields"]] == ["score"]  # that field and no other
    field = ex["fields"][0]
    assert field["kind"] == "value" and field["candidate"] - field["reference"] == 0.5
    # the example names its case: after the action, the walker stands on cell 3
    assert ex["state"]["pos"] + ex["action"] - 1 == 3
    assert len(res.examples) == 5  # at most max_examples


def test_l2_counts_only_cases_that_differ():
    # on cell 3 after the step means pos + a - 1 == 3: count the cases by hand
    from envport.verify.l2 import batch_rng

    expected = 0
    for b in range(4):
        state, a = cases(batch_rng(0, b), 50)
        expected += int(np.sum(np.maximum(state["pos"] + a - 1, 0) == 3))
    assert run_l2(l2_suite("score")).mismatches == expected


def test_l2_reports_a_dtype_difference_as_such():
    res = run_l2(l2_suite("int32_pos"))
    assert res.mismatches == 200  # every case: a dtype difference is everywhere
    kinds = {f["field"]: f["kind"] for f in res.examples[0]["fields"]}
    assert kinds == {"pos": "dtype"}


def test_l2_counters_are_counted():
    tally = Tally()
    suite = L2Suite("walk", partial(Walk, tally=tally), Walk, cases, cases=100, batch=50,
                    counters=tally)
    run_l2(suite)
    assert tally.steps == 2  # one step per batch on the reference


# -- L3 ---------------------------------------------------------------------------------------
def test_l3_nothing_planted_sees_nothing():
    res = run_l3(l3_suite())
    assert res.mismatches == 0 and res.divergences == []
    assert res.episodes >= 40 and res.steps > 0 and res.max_abs_err == 0.0


def first_third_right(seed: int, n: int = 4) -> int:
    """The step at which the first walker of ``seed`` takes its third step right (in one
    episode), replayed with the actions L3 draws from the same generator."""
    rng = np.random.default_rng(seed)
    ref = Walk(n)
    ref.reset(seed)
    for t in range(1000):
        a = actions(rng, n)
        ref.step(a)
        if np.any((a == 2) & (ref.rights == 3)):
            return t
    raise AssertionError("no third right")


def test_l3_finds_the_divergence_step_and_shrinks_to_the_shortest_prefix():
    suite = l3_suite("third_right")
    res = run_l3(suite)
    assert res.mismatches == 1 and res.seeds == 1
    div = res.divergences[0]
    assert div.seed == 0 and div.step == first_third_right(0)
    assert [d.field for d in div.diffs][:1] == ["pos"]
    assert div.prefix_len == div.step + 1  # nothing shorter can diverge
    assert_shortest_prefix(suite.make_reference, suite.make_candidate, div.seed, div.prefix)
    # the shrinker replaced what it could by the neutral action: still diverges
    assert np.sum(np.asarray(div.prefix) == 1) > np.sum(
        np.stack([actions(np.random.default_rng(0), 4) for _ in range(div.step + 1)]) == 1)


def test_assert_shortest_prefix_fails_on_a_prefix_that_is_too_long_or_too_short():
    suite = l3_suite("third_right")
    div = run_l3(suite).divergences[0]
    prefix = np.asarray(div.prefix)
    longer = np.concatenate([prefix, prefix[-1:]])
    with pytest.raises(AssertionError, match="not the shortest"):
        assert_shortest_prefix(suite.make_reference, suite.make_candidate, div.seed, longer)
    with pytest.raises(AssertionError, match="does not diverge"):
        assert_shortest_prefix(suite.make_reference, suite.make_candidate, div.seed, prefix[:-1])


def test_l3_divergence_right_after_reset_has_an_empty_prefix():
    suite = L3Suite("walk", partial(Walk, 2), partial(Walk, 2, bug="int32_pos"), actions,
                    episodes=5)
    res = run_l3(suite)
    div = res.divergences[0]
    assert div.step == -1 and div.prefix == [] and div.diffs[0].kind == "dtype"
    assert_shortest_prefix(suite.make_reference, suite.make_candidate, 0, [])


def test_l3_saves_the_shrunk_case_as_a_regression(tmp_path):
    res = run_l3(l3_suite("third_right"), regressions_dir=tmp_path)
    (path,) = tmp_path.glob("l3-*.json")
    saved = json.loads(path.read_text())
    assert saved["shortest_prefix_len"] == res.divergences[0].prefix_len
    assert saved["fields"][0]["field"] == "pos"


def test_l3_ends_a_seed_on_truncation_too():
    """A walker that only stays never terminates: each env's episode ends by truncation at
    max_steps, and the seed ends there (not at max_steps_per_seed)."""
    suite = L3Suite("stay", partial(Walk, 3, max_steps=7), partial(Walk, 3, max_steps=7),
                    lambda rng, n: stay(n), episodes=6, chunk=5, max_steps_per_seed=10_000)
    res = run_l3(suite)
    assert res.mismatches == 0 and res.seeds == 2 and res.episodes == 6
    assert res.steps == 2 * 10 * 3  # two chunks of 5 per seed: the first end comes at step 7


def test_l3_first_episode_only_ignores_what_follows_an_episode_end():
    """Restarts drawn from another generator differ after each env's first episode: a suite
    comparing everything finds it; with first_episode_only it is not compared."""
    everything = run_l3(l3_suite("reset_draw", episodes=20))
    assert everything.mismatches == 1
    div = everything.divergences[0]
    first = run_l3(l3_suite("reset_draw", episodes=20, first_episode_only=True))
    assert first.mismatches == 0 and first.episodes >= 20
    assert first.episodes == 4 * first.seeds  # one episode per env and seed
    assert div.diffs[0].field == "pos"


def test_l3_tolerance_decides_and_nan_is_never_close():
    noisy = l3_suite("score_noise", episodes=8)
    assert run_l3(noisy).mismatches == 1  # bit-exact: 1e-9 is a difference
    res = run_l3(noisy, Tolerance(atol=1e-6))
    assert res.mismatches == 0 and 0 < res.max_abs_err < 1e-6
    assert run_l3(noisy, {"score": 1e-6}).mismatches == 0
    nan = run_l3(l3_suite("score_nan", episodes=8), Tolerance(atol=1.0))
    assert nan.mismatches == 1 and nan.divergences[0].diffs[0].field == "score"
    assert math.isnan(nan.divergences[0].diffs[0].abs_err) and math.isnan(nan.max_abs_err)


def test_l3_needs_the_flags_in_the_state():
    class NoFlags(Walk):
        def state(self):
            out = super().state()
            del out["truncated"]
            return out

    from envport.errors import EnvportError

    with pytest.raises(EnvportError, match="truncated"):
        run_l3(L3Suite("noflags", NoFlags, NoFlags, actions, episodes=2))


def test_l3_unknown_tolerance_field_is_an_error():
    from envport.errors import EnvportError

    with pytest.raises(EnvportError, match="'speed'"):
        run_l3(l3_suite(episodes=2), {"speed": 1e-3})



# -- verify.run's suites filter ---------------------------------------------------------------
def _walk_port():
    from envport.registry import EnvPort

    planted = l2_suite("score")
    planted.name = "walk, planted score"
    return EnvPort(name="walk", reference="walk", candidate="walk", install_reference=lambda: None,
                   check_reference=lambda: None, l2=[l2_suite(), planted], l3=[l3_suite()])


def test_a_suites_filter_runs_only_the_matching_suites_and_claims_nothing(tmp_path):
    from envport import verify
    from envport.errors import EnvportError

    report = verify.run(_walk_port(), out_dir=tmp_path, suites=["PLANTED"], progress=False)
    assert list(report["levels"]) == ["L2"]  # no L1 target, no L3 suite matches
    assert [d["suite"] for d in report["details"]["L2"]] == ["walk, planted score"]
    assert report["selected_passed"] is False and report["equivalent"] is False
    assert report["suites_filter"] == ["PLANTED"]
    md = (tmp_path / "walk" / "verify.md").read_text()
    assert "- suites: only those whose name contains PLANTED: NOT all passed" in md

    honest = verify.run(_walk_port(), out_dir=tmp_path, suites=["walk"], progress=False)
    assert [d["suite"] for d in honest["details"]["L2"]] == ["walk", "walk, planted score"]
    assert honest["equivalent"] is False  # every suite ran, but a filtered run claims nothing
    only_clean = verify.run(_walk_port(), out_dir=tmp_path, levels=["L3"], suites=["walk"],
                            progress=False)
    assert list(only_clean["levels"]) == ["L3"] and only_clean["selected_passed"] is True

    with pytest.raises(EnvportError, match=r"no suite .* \['cheetah'\]; the suites are: walk; "
                                           r"walk, planted score"):
        verify.run(_walk_port(), out_dir=tmp_path, suites=["cheetah"], progress=False)


def test_an_l2_suite_can_declare_its_own_tolerance_and_reports_its_largest_errors(tmp_path):
    """A suite's tolerance replaces the port's for that suite only (a float32 candidate beside
    float64 ones), and each L2 suite reports its largest error per float field: what the
    tolerance is measured against."""
    import dataclasses

    from envport import verify
    from envport.registry import EnvPort

    noisy = partial(Walk, bug="score_noise", noise=1e-4)
    exact = L2Suite("exact", Walk, noisy, cases, cases=200, batch=50)
    loose = dataclasses.replace(exact, name="loose", tolerance={"score": 1e-3})
    port = EnvPort(name="walk", reference="walk", candidate="walk",
                   install_reference=lambda: None, check_reference=lambda: None,
                   tolerance=1e-6, l2=[exact, loose])
    report = verify.run(port, out_dir=tmp_path, levels=["L2"], progress=False)
    by = {d["suite"]: d for d in report["details"]["L2"]}
    assert by["exact"]["mismatches"] > 0 and by["loose"]["mismatches"] == 0
    assert by["exact"]["tolerance"] == 1e-6 and by["loose"]["tolerance"] == {
        "score": {"atol": 1e-3, "rtol": 0.0}}
    for d in by.values():
        assert d["max_abs_err"]["score"] == pytest.approx(1e-4)
        assert "pos" not in d["max_abs_err"]  # an int field: compared exactly, not measured
    md = (tmp_path / "walk" / "verify.md").read_text()
    assert "| loose | 200 | 0 | score atol 0.001, rtol 0 | reward 0, score 0.0001 |" in md
