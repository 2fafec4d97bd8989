"""L4 transfer: the TOST equivalence test, ``run_l4`` and the L4 level of ``verify.run``.

The toy port's L2/L3 backends are numpy counters (fast, identical on both sides); its L4
evaluators draw Bernoulli episode scores from a numpy RNG, so the planted gap is exact.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import envport.verify as verify
from envport.backend import Backend, StepResult
from envport.errors import EnvportError
from envport.registry import EnvPort, L1Target, L2Suite, L3Suite, L4Suite
from envport.types import Box, Discrete, EnvSpec
from envport.verify.checks import CheckResult
from envport.verify.l4 import L4Result, TostResult, run_l4, tost


def bern(k: int, n: int) -> np.ndarray:
    """``k`` ones then ``n - k`` zeros."""
    return np.r_[np.ones(k), np.zeros(n - k)]


# -- tost: known numbers ---------------------------------------------------------------------

def test_tost_two_bernoulli_samples_by_hand() -> None:
    # reference 50/100 ones, candidate 52/100: sample variances (ddof=1)
    #   var_r = .5 * .5 * 100/99 = .2525253,  var_c = .52 * .48 * 100/99 = .2521212
    #   se = sqrt((var_r + var_c) / 100) = .0710385,  difference = +.02
    # margin .1: z_lower = (.02 + .1)/se = 1.68922 -> p_lower = 1 - Phi(1.68922) = .045588
    #            z_upper = (.02 - .1)/se = -1.12615 -> p_upper = Phi(-1.12615) = .130051
    # 90% CI: .02 -+ 1.644854 * se = [-.096848, .136848]
    r = tost(bern(50, 100), bern(52, 100), margin=0.1, alpha=0.05)
    assert isinstance(r, TostResult)
    assert (r.n_reference, r.n_candidate) == (100, 100)
    assert r.reference_mean == pytest.approx(0.5) and r.candidate_mean == pytest.approx(0.52)
    assert r.difference == pytest.approx(0.02)
    assert r.se == pytest.approx(0.0710385, abs=1e-7)
    assert r.p_lower == pytest.approx(0.045588, abs=1e-6)
    assert r.p_upper == pytest.approx(0.130051, abs=1e-6)
    assert r.p_value == r.p_upper
    assert r.ci == pytest.approx((-0.096848, 0.136848), abs=1e-6)
    assert r.equivalent is False  # .130 >= .05: the upper one-sided test is not rejected


def test_tost_bernoulli_equivalent_by_hand() -> None:
    # reference 600/1000, candidate 590/1000: var_r = .24 * 1000/999, var_c = .2419 * 1000/999
    #   se = .0219632, difference = -.01; margin .05:
    #   p_lower = 1 - Phi((-.01 + .05)/se = 1.82123) = .034286
    #   p_upper = Phi((-.01 - .05)/se = -2.73184) = .003149
    r = tost(bern(600, 1000), bern(590, 1000), margin=0.05, alpha=0.05)
    assert r.se == pytest.approx(0.0219632, abs=1e-7)
    assert r.p_lower == pytest.approx(0.034286, abs=1e-6)
    assert r.p_upper == pytest.approx(0.003149, abs=1e-6)
    assert r.p_value == r.p_lower and r.equivalent is True
    assert r.ci == pytest.approx((-0.046126, 0.026126), abs=1e-6)
    # the same data at alpha .01 is not equivalent (p .034 >= .01), and the 98% CI is wider
    strict = tost(bern(600, 1000), bern(590, 1000), margin=0.05, alpha=0.01)
    assert strict.equivalent is False and strict.p_value == r.p_value
    assert strict.ci[0] < r.ci[0] and strict.ci[1] > r.ci[1]


def test_tost_agrees_with_its_confidence_interval() -> None:
    """TOST at alpha rejects iff the 1 - 2 alpha CI lies inside (-margin, margin)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(5, 300))
        ref = rng.normal(0, 1, n)
        cand = rng.normal(rng.uniform(-0.5, 0.5), rng.uniform(0.2, 2), int(rng.integers(5, 300)))
        margin = float(rng.uniform(0.05, 1))
        r = tost(ref, cand, margin, 0.05)
        assert r.equivalent == (-margin < r.ci[0] and r.ci[1] < margin)
        assert r.p_value == max(r.p_lower, r.p_upper)


def test_tiny_p_values_keep_their_precision() -> None:
    # 1 - Phi(z) for z ~ 10 would round to 0 with erf; erfc keeps it (about 1e-23)
    r = tost(bern(5000, 10_000), bern(5000, 10_000), margin=0.07, alpha=0.05)
    assert 0 < r.p_value < 1e-20
    assert r.p_lower == pytest.approx(r.p_upper, rel=1e-9, abs=0)  # equal means: symmetric tails
    assert r.p_value == pytest.approx(0.5 * math.erfc(0.07 / r.se / math.sqrt(2)), rel=1e-9, abs=0)


# -- tost: behaviour -------------------------------------------------------------------------

def test_identical_distributions_large_n_are_equivalent() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        r = tost(rng.random(100_000) < 0.5, rng.random(100_000) < 0.5, margin=0.02, alpha=0.05)
        assert r.equivalent and r.p_value < 1e-6
        assert -0.02 < r.ci[0] < r.ci[1] < 0.02


def test_shifted_by_a_tenth_is_not_equivalent() -> None:
    rng = np.random.default_rng(1)
    r = tost(rng.random(100_000) < 0.5, rng.random(100_000) < 0.6, margin=0.02, alpha=0.05)
    assert not r.equivalent
    assert r.difference == pytest.approx(0.1, abs=0.01)
    assert r.p_upper > 0.999 and r.p_lower < 1e-12 and r.p_value == r.p_upper
    # ... and the same shift downwards fails the other one-sided test
    r = tost(rng.random(100_000) < 0.6, rng.random(100_000) < 0.5, margin=0.02, alpha=0.05)
    assert not r.equivalent and r.p_lower > 0.999 and r.p_value == r.p_lower


def test_small_samples_are_not_equivalent() -> None:
    """No difference at all, but 30 episodes cannot show it is below 0.02 (low power)."""
    rng = np.random.default_rng(2)
    r = tost(rng.random(30) < 0.5, rng.random(30) < 0.5, margin=0.02, alpha=0.05)
    assert not r.equivalent and r.p_value > 0.4
    r = tost(bern(15, 30), bern(15, 30), margin=0.02, alpha=0.05)  # even exactly equal means
    assert r.difference == 0 and not r.equivalent


def test_type_one_error_at_the_margin_is_at_most_alpha() -> None:
    """With the true difference on the margin, TOST claims equivalence about alpha of the time
    (a test taking min instead of max of the two p-values would claim it about half)."""
    rng = np.random.default_rng(3)
    claims = sum(tost(rng.normal(0, 1, 2000), rng.normal(0.1, 1, 2000), 0.1, 0.05).equivalent
                 for _ in range(400))
    assert claims / 400 < 0.09
    # power at difference 0: se = sqrt(2/4000), 1 - 2 P(Z > 0.1/se - 1.645) = 0.995
    power = sum(tost(rng.normal(0, 1, 4000), rng.normal(0, 1, 4000), 0.1, 0.05).equivalent
                for _ in range(100))
    assert power / 100 > 0.95


def test_zero_variance_on_both_sides() -> None:
    same = tost(np.ones(10), np.ones(10), margin=0.02, alpha=0.05)
    assert (same.se, same.difference, same.p_lower, same.p_upper) == (0, 0, 0.0, 0.0)
    assert same.p_value == 0.0 and same.equivalent is True and same.ci == (0.0, 0.0)

    near = tost(np.full(5, 0.5), np.full(7, 0.51), margin=0.02, alpha=0.05)
    assert near.equivalent and near.p_value == 0.0 and near.ci == pytest.approx((0.01, 0.01))

    above = tost(np.zeros(5), np.full(5, 0.03), margin=0.02, alpha=0.05)
    assert (above.p_lower, above.p_upper, above.p_value, above.equivalent) == (0.0, 1.0, 1.0, False)
    below = tost(np.zeros(5), np.full(5, -0.03), margin=0.02, alpha=0.05)
    assert (below.p_lower, below.p_upper, below.p_value, below.equivalent) == (1.0, 0.0, 1.0, False)
    on_margin = tost(np.zeros(5), np.full(5, 0.5), margin=0.5, alpha=0.05)
    assert not on_margin.equivalent and on_margin.p_value == 1.0  # the bound is strict

    # one side constant, the other not: the ordinary test with se > 0
    one = tost(np.ones(50), bern(49, 50), margin=0.05, alpha=0.05)
    assert one.se > 0 and 0 < one.p_value < 1


@pytest.mark.parametrize(("ref", "cand", "kw", "match"), [
    (np.ones((4, 2)), np.ones(4), {}, r"reference scores must be a 1-D array.*\(4, 2\)"),
    (np.ones(4), np.float64(1.0), {}, r"candidate scores must be a 1-D array"),
    ([], np.ones(4), {}, r"at least 2 reference scores.*got 0"),
    (np.ones(4), [1.0], {}, r"at least 2 candidate scores.*got 1"),
    (np.ones(4), [1.0, np.nan, 2.0], {}, r"1 candidate score\(s\) are NaN or infinite .*index 1"),
    ([np.inf, 0.0], np.ones(4), {}, r"reference score\(s\) are NaN or infinite"),
    (["win", "loss"], np.ones(4), {}, r"reference scores are not numbers"),
    (np.ones(4), np.ones(4), {"margin": 0.0}, r"margin must be a finite number > 0, got 0.0"),
    (np.ones(4), np.ones(4), {"margin": -0.1}, r"margin must be a finite number > 0"),
    (np.ones(4), np.ones(4), {"margin": math.nan}, r"margin must be a finite number > 0"),
    (np.ones(4), np.ones(4), {"alpha": 0.0}, r"alpha must be in \(0, 0.5\)"),
    (np.ones(4), np.ones(4), {"alpha": 0.5}, r"alpha must be in \(0, 0.5\)"),
    (np.ones(4), np.ones(4), {"alpha": math.nan}, r"alpha must be in \(0, 0.5\)"),
])
def test_tost_validates_its_inputs(ref, cand, kw, match) -> None:
    kw = {"margin": 0.02, "alpha": 0.05} | kw
    with pytest.raises(EnvportError, match=match):
        tost(ref, cand, **kw)


# -- run_l4 ----------------------------------------------------------------------------------

def bernoulli_evaluator(p: float, log: list | None = None, chunk: int = 1000):
    """A 'policy' whose episode score is a win (1) with probability ``p``."""

    def evaluate(episodes: int, seed: int, progress) -> np.ndarray:
        if log is not None:
            log.append((episodes, seed))
        rng = np.random.default_rng(seed)
        out = []
        for start in range(0, episodes, chunk):
            k = min(chunk, episodes - start)
            out.append((rng.random(k) < p).astype(np.float64))
            progress(k)
        return np.concatenate(out)

    return evaluate


def l4_suite(name="greedy", p_ref=0.5, p_cand=0.5, **kw) -> L4Suite:
    return L4Suite(name=name, evaluate_reference=bernoulli_evaluator(p_ref),
                   evaluate_candidate=bernoulli_evaluator(p_cand),
                   metric="win 1, loss 0", **({"episodes": 20_000, "margin": 0.05} | kw))


def test_run_l4_calls_reference_then_candidate_with_seeds_and_progress() -> None:
    log: list = []
    suite = L4Suite("s", bernoulli_evaluator(0.5, log), bernoulli_evaluator(0.5, log), "w",
                    episodes=999, margin=0.05, seed=10)
    ticks: list[int] = []
    res = run_l4(suite, 3000, progress=ticks.append)
    assert log == [(3000, 10), (3000, 11)]  # reference first, seeds seed and seed + 1
    assert sum(ticks) == 6000 and len(ticks) == 6
    assert isinstance(res, L4Result) and res.suite == "s" and res.episodes == 3000
    assert res.reference_scores.shape == res.candidate_scores.shape == (3000,)
    assert res.test == tost(res.reference_scores, res.candidate_scores, 0.05, 0.05)
    assert not np.array_equal(res.reference_scores, res.candidate_scores)  # independent samples
    log.clear()
    run_l4(suite)  # episodes default to the suite's; progress is optional
    assert log == [(999, 10), (999, 11)]


def test_run_l4_verdicts() -> None:
    assert run_l4(l4_suite()).test.equivalent
    planted = run_l4(l4_suite(p_cand=0.6)).test
    assert not planted.equivalent and planted.difference == pytest.approx(0.1, abs=0.02)


@pytest.mark.parametrize(("returned", "match"), [
    (lambda n: np.zeros(n - 1), r"candidate evaluator returned scores of shape \(\d+,\).*exactly 50"),
    (lambda n: np.zeros(n + 1), r"'bad'.*candidate evaluator.*expected exactly 50"),
    (lambda n: np.zeros((n, 1)), r"candidate evaluator returned scores of shape \(50, 1\)"),
    (lambda n: None, r"candidate evaluator returned scores of shape \(\)"),
    (lambda n: ["x"] * n, r"candidate evaluator returned list, not an array of 50 numbers"),
    (lambda n: np.r_[np.zeros(n - 1), np.nan], r"candidate evaluator returned 1 NaN.*episode 49"),
])
def test_run_l4_rejects_a_bad_evaluator(returned, match) -> None:
    suite = L4Suite("bad", bernoulli_evaluator(0.5), lambda n, seed, progress: returned(n), "w")
    with pytest.raises(EnvportError, match=match):
        run_l4(suite, 50)


def test_run_l4_names_the_reference_too() -> None:
    suite = L4Suite("short", lambda n, s, p: np.zeros(3), bernoulli_evaluator(0.5), "w")
    with pytest.raises(EnvportError, match=r"L4 suite 'short': the reference evaluator"):
        run_l4(suite, 10)


@pytest.mark.parametrize(("kw", "episodes", "match"), [
    ({}, 1, r"at least 2 episodes per backend, got 1"),
    ({"margin": 0.0}, 100, r"L4 suite 'cfg': the equivalence margin must be"),
    ({"alpha": 0.7}, 100, r"L4 suite 'cfg': alpha must be in"),
])
def test_run_l4_checks_its_configuration_before_evaluating(kw, episodes, match) -> None:
    log: list = []
    suite = L4Suite("cfg", bernoulli_evaluator(0.5, log), bernoulli_evaluator(0.5, log), "w", **kw)
    with pytest.raises(EnvportError, match=match):
        run_l4(suite, episodes)
    assert log == []


# -- verify.run on a toy port ----------------------------------------------------------------

GOAL = 5
SPEC = EnvSpec("toy/Counter", "v0", Box(0.0, GOAL, (1,)), Discrete(3))


class Counter(Backend):
    """``pos += action``; reaching ``GOAL`` terminates and restarts at 0."""

    name, spec, supports_load = "counter", SPEC, True

    def __init__(self, num_envs: int):
        self.num_envs = num_envs
        self.pos = np.zeros(num_envs, np.int64)
        self.term = np.zeros(num_envs, bool)

    def reset(self, seed: int) -> np.ndarray:
        self.pos = np.random.default_rng(seed).integers(0, GOAL, self.num_envs)
        self.term = np.zeros(self.num_envs, bool)
        return self.pos[:, None].astype(np.float32)

    def step(self, actions) -> StepResult:
        pos = self.pos + np.asarray(actions, np.int64)
        self.term = pos >= GOAL
        self.pos = np.where(self.term, 0, pos)
        return StepResult(self.pos[:, None].astype(np.float32), self.term.astype(np.float32),
                          self.term.copy(), np.zeros(self.num_envs, bool))

    def state(self) -> dict:
        return {"pos": self.pos.copy(), "terminated": self.term.copy(),
                "truncated": np.zeros(self.num_envs, bool)}

    def load(self, state: dict) -> None:
        self.pos = np.asarray(state["pos"], np.int64).copy()
        self.term = np.asarray(state["terminated"], bool).copy()


def _actions(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 3, n)


def _cases(rng: np.random.Generator, batch: int):
    return ({"pos": rng.integers(0, GOAL, batch), "terminated": np.zeros(batch, bool),
             "truncated": np.zeros(batch, bool)}, _actions(rng, batch))


def toy_port(l4=()) -> EnvPort:
    return EnvPort(
        name="counter", reference="numpy counter 1.0", candidate="numpy counter 1.0 (copy)",
        install_reference=lambda: None, check_reference=lambda: None,
        l1=[L1Target("counter", make_env=lambda: None, sample_action=lambda rng: 0)],
        l2=[L2Suite("step", Counter, Counter, _cases, cases=200, batch=100)],
        l3=[L3Suite("random", lambda: Counter(4), lambda: Counter(4), _actions, episodes=20)],
        l4=list(l4),
    )


@pytest.fixture(autouse=True)
def fake_l1(monkeypatch):
    """The real L1 checks jit a JAX env (seconds); the toy's L1 target passes one fake check."""
    import envport.verify.checks

    monkeypatch.setattr(envport.verify.checks, "run_checks",
                        lambda env, sample, **options: [CheckResult("fake", True)])


def run(port: EnvPort, tmp_path: Path, **kw) -> tuple[dict, dict, str]:
    report = verify.run(port, out_dir=tmp_path, progress=False, **kw)
    on_disk = json.loads((tmp_path / "counter" / "verify.json").read_text())
    return report, on_disk, (tmp_path / "counter" / "verify.md").read_text()


def test_verify_runs_l4_and_claims_equivalence(tmp_path) -> None:
    suites = [l4_suite("greedy", note="vs random"),
              l4_suite("max-damage", p_ref=0.7, p_cand=0.7, margin=0.06, alpha=0.01,
                       episodes=30_000, seed=5, note=lambda: "read after the run")]
    report, on_disk, md = run(toy_port(suites), tmp_path)
    assert verify.LEVELS == ("L1", "L2", "L3", "L4")
    assert report["levels"]["L2"]["mismatches"] == 0 and report["levels"]["L3"]["mismatches"] == 0
    written = {k: v for k, v in report.items() if k != "report_paths"}  # added after writing
    assert on_disk == json.loads(json.dumps(written))

    l4, details = on_disk["levels"]["L4"], on_disk["details"]["L4"]
    assert [d["suite"] for d in details] == ["greedy", "max-damage"]
    for d in details:
        for key in ("n_reference", "n_candidate", "reference_mean", "candidate_mean", "difference",
                    "se", "p_lower", "p_upper", "p_value", "ci", "equivalent", "suite", "metric",
                    "margin", "alpha", "note"):
            assert key in d, key
        assert d["equivalent"] is True and len(d["ci"]) == 2 and d["metric"] == "win 1, loss 0"
    assert details[0]["n_reference"] == details[0]["n_candidate"] == 20_000
    assert details[1]["n_reference"] == 30_000 and details[1]["alpha"] == 0.01
    assert details[0]["note"] == "vs random" and details[1]["note"] == "read after the run"
    assert l4 == {"suites": 2, "margin": 0.06, "p_value": max(d["p_value"] for d in details),
                  "equivalent": True, "episodes": 50_000}
    assert on_disk["equivalent"] is True

    row = next(line for line in md.splitlines() if line.startswith("| L4 transfer |"))
    worst = max(details, key=lambda d: d["p_value"])
    assert re.fullmatch(
        r"\| L4 transfer \| 2 suites, 50000 episodes per backend; highest p: (greedy|max-damage), "
        r"difference [+-]\S+ \((90|98)% CI \[\S+, \S+\]\), p = \S+ < 0\.0[15] at margin 0\.0[56]: "
        r"equivalent \|", row), row
    assert f"highest p: {worst['suite']}, difference {worst['difference']:+.3g}" in row
    assert "## L4" in md
    section = md.split("## L4", 1)[1]
    assert "| suite | n_reference | n_candidate |" in section
    assert re.search(r"\| greedy \| 20000 \| 20000 \| 0\.\d+ \| .* \| \*\*yes\*\* \|", section)
    assert "*greedy* (seeds 0 reference, 1 candidate): score per episode = win 1, loss 0" in section
    assert "*max-damage*: read after the run" in section and "*greedy*: vs random" in section


def test_scale_multiplies_l4_episodes_with_at_least_two(tmp_path) -> None:
    report, _, _ = run(toy_port([l4_suite(episodes=1000)]), tmp_path, scale=0.5)
    assert report["details"]["L4"][0]["n_reference"] == 500
    assert report["levels"]["L4"]["episodes"] == 500
    report, _, _ = run(toy_port([l4_suite(episodes=1000)]), tmp_path, scale=1e-6,
                       levels=["L4"])
    assert report["details"]["L4"][0]["n_candidate"] == 2


def test_declared_l4_that_did_not_run_is_not_equivalent(tmp_path) -> None:
    report, on_disk, md = run(toy_port([l4_suite()]), tmp_path, levels=["L1", "L2", "L3"])
    assert "L4" not in report["levels"] and "L4 transfer" not in md
    assert report["levels"]["L3"]["mismatches"] == 0
    assert on_disk["equivalent"] is False


def test_a_planted_gap_is_not_equivalent(tmp_path) -> None:
    report, on_disk, md = run(toy_port([l4_suite(), l4_suite("planted", p_cand=0.6)]), tmp_path)
    assert report["levels"]["L2"]["mismatches"] == 0 and report["levels"]["L3"]["mismatches"] == 0
    good, planted = on_disk["details"]["L4"]
    assert good["equivalent"] is True and planted["equivalent"] is False
    assert planted["p_value"] > 0.99 and planted["difference"] == pytest.approx(0.1, abs=0.02)
    assert on_disk["levels"]["L4"]["equivalent"] is False
    assert on_disk["levels"]["L4"]["p_value"] == planted["p_value"]
    assert on_disk["equivalent"] is False
    row = next(line for line in md.splitlines() if line.startswith("| L4 transfer |"))
    assert "highest p: planted" in row and "≥ 0.05" in row and row.endswith(": NOT equivalent |")
    assert "- equivalent: **NO**" in md


def test_each_suite_s_verdict_is_printed_as_it_lands(tmp_path, capsys) -> None:
    """With progress on, every L4 suite's verdict goes to stderr when it ends (a level of
    several long suites otherwise says nothing until verify.json is written)."""
    port = toy_port([l4_suite(), l4_suite("planted", p_cand=0.6)])
    verify.run(port, out_dir=tmp_path, progress=True, levels=["L4"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("L4 ") and "margin" in ln]
    assert len(lines) == 2
    assert lines[0].startswith("L4 greedy: equivalent (reference 0.49")
    assert lines[1].startswith("L4 planted: NOT equivalent (")
    assert "90% CI [" in lines[1] and "margin 0.05, p " in lines[1]


def test_a_port_without_l4_can_still_be_equivalent(tmp_path) -> None:
    report, on_disk, md = run(toy_port(), tmp_path)
    assert on_disk["levels"]["L4"] == {"suites": 0, "margin": None, "p_value": None,
                                       "equivalent": None, "episodes": 0}
    assert on_disk["details"]["L4"] == [] and on_disk["equivalent"] is True
    assert "| L4 transfer | no suite declared (not required for equivalence) |" in md
    assert "## L4" not in md
    report, _, _ = run(toy_port(), tmp_path, levels=["L1", "L2", "L3"])
    assert report["equivalent"] is True and "L4" not in report["levels"]


def test_l4_alone_or_a_failing_lower_level_is_not_equivalent(tmp_path) -> None:
    report, _, _ = run(toy_port([l4_suite()]), tmp_path, levels=["L4"])
    assert report["levels"]["L4"]["equivalent"] is True and report["equivalent"] is False

    class Off(Counter):
        def step(self, actions):
            return super().step(np.asarray(actions) * 0)  # ignores every action

    port = toy_port([l4_suite()])
    port.l2 = [L2Suite("step", Counter, Off, _cases, cases=200, batch=100)]
    report, _, _ = run(port, tmp_path)
    assert report["levels"]["L2"]["mismatches"] > 0 and report["levels"]["L3"]["mismatches"] == 0
    assert report["levels"]["L4"]["equivalent"] is True
    assert report["equivalent"] is False


def test_verify_raises_on_a_bad_evaluator(tmp_path) -> None:
    suite = L4Suite("broken", bernoulli_evaluator(0.5), lambda n, s, p: np.zeros(n // 2), "w",
                    episodes=100)
    with pytest.raises(EnvportError, match=r"L4 suite 'broken': the candidate evaluator .*"
                                           r"expected exactly 100"):
        verify.run(toy_port([suite]), out_dir=tmp_path, progress=False, levels=["L4"])
