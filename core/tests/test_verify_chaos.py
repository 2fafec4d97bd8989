"""L3's chaos-horizon suites on a chaotic map: the same dynamics with other roundoff passes, a
small real difference (a parameter 1e-9 off, a rare wrong branch) fails, and the report says so
with its table and plot."""

from __future__ import annotations

import json
from functools import partial

import numpy as np

from envport.backend import Backend, StepResult
from envport.registry import ChaosSuite, L3Suite
from envport.types import Box, EnvSpec
from envport.verify import run_suites
from envport.verify.chaos import run_chaos
from envport.verify.report import write_reports

R = 3.9  # the logistic map at r = 3.9: chaotic, Lyapunov exponent ~0.5 a step


class Logistic(Backend):
    """One env: x <- r x (1 - x) + 1e-3 a, truncated after ``limit`` steps. ``form`` computes
    the same map another way (other roundoff); ``r`` and ``branch`` plant real differences."""

    def __init__(self, num_envs: int = 1, form: str = "product", r: float = R,
                 branch: bool = False, limit: int = 300):
        self.num_envs, self.form, self.r, self.branch, self.limit = num_envs, form, r, branch, limit
        self.spec = EnvSpec("logistic", "test", Box(0, 1, (1,), np.float64),
                            Box(-1, 1, (1,), np.float64))

    def reset(self, seed: int) -> np.ndarray:
        self.x = np.array([0.1 + 0.8 * np.random.default_rng(seed).random()])
        self.t, self.done = 0, np.zeros(1, bool)
        return self.x.copy()

    def step(self, actions) -> StepResult:
        x, r = self.x, self.r
        nxt = r * x * (1 - x) if self.form == "product" else r * x - r * x * x
        if self.branch:  # a rare wrong branch: near the top of the map
            nxt = np.where(x > 0.498 and x < 0.502, nxt * (1 - 1e-7), nxt)
        self.x = np.clip(nxt + 1e-3 * np.asarray(actions, np.float64).reshape(1), 0.0, 1.0)
        self.t += 1
        self.done = np.array([self.t >= self.limit])
        return StepResult(self.x.copy(), np.zeros(1), np.zeros(1, bool), self.done.copy())

    def state(self):
        return {"x": self.x.copy(), "terminated": np.zeros(1, bool), "truncated": self.done.copy()}

    def load(self, state) -> None:
        self.x = np.asarray(state["x"], np.float64).copy()


def perturb(state, eps):
    return {**state, "x": state["x"] + eps}


def actions(rng, n):
    return rng.uniform(-1, 1, (n, 1))


def suite(**candidate) -> ChaosSuite:
    return ChaosSuite("logistic", Logistic, partial(Logistic, **candidate), perturb, actions,
                      episodes=40)


def test_the_same_map_with_other_roundoff_is_not_earlier_than_the_reference():
    res = run_chaos(suite(form="expanded"))
    assert res.passed and res.share == 1.0, [vars(e) for e in res.episodes if not e.passed]
    steps = [e.candidate_step for e in res.episodes]
    # it does part from the reference (roundoff grows through the chaos): not a trivial pass
    assert all(s is not None for s in steps) and min(steps) > 10


def test_identical_dynamics_never_diverge():
    res = run_chaos(suite())
    assert res.passed and all(e.candidate_step is None for e in res.episodes)
    # compared to the episode's end (the candidate never parts), the reference's horizon found
    assert all(e.ended and e.steps == 300 for e in res.episodes)
    assert all(e.reference_step is not None for e in res.episodes)


def test_a_parameter_1e9_off_parts_before_the_reference_horizon():
    res = run_chaos(suite(r=R + 1e-9))
    assert not res.passed and res.share < 0.5
    early = [e for e in res.episodes if not e.passed]
    assert all(e.candidate_step < e.reference_step for e in early if e.reference_step)


def test_a_rare_wrong_branch_is_found():
    res = run_chaos(suite(branch=True))
    assert not res.passed


def test_an_unfinished_reference_horizon_with_a_candidate_divergence_fails():
    """Within the steps compared the reference never left itself (eps 0), the candidate did."""
    res = run_chaos(ChaosSuite("eps 0", Logistic, partial(Logistic, form="expanded"), perturb,
                               actions, episodes=3, eps=0.0))
    assert [e.reference_step for e in res.episodes] == [None] * 3
    assert not res.passed and res.share == 0.0


def test_differing_flags_count_as_a_divergence():
    res = run_chaos(ChaosSuite("limit", Logistic, partial(Logistic, limit=5), perturb, actions,
                               episodes=2, eps=0.0))
    assert [e.candidate_step for e in res.episodes] == [4, 4] and not res.passed


def test_run_suites_reports_the_chaos_suites_with_l3(tmp_path):
    l3 = L3Suite("logistic", Logistic, Logistic, actions, episodes=2)
    good = suite(form="expanded")
    bad = ChaosSuite("planted r", Logistic, partial(Logistic, r=R + 1e-9), perturb, actions,
                     episodes=10, note="r off by 1e-9")
    out = run_suites("logistic", "ref", "cand", l3=[l3], chaos=[good, bad], tolerance=1e-9,
                     levels=["L3"], required={"L3"})
    assert out.levels["L3"]["chaos"] == {"suites": 2, "passed": 1, "episodes": 50}
    assert not out.equivalent
    ok = run_suites("logistic", "ref", "cand", l3=[l3], chaos=[good], tolerance=1e-9,
                    levels=["L3"], required={"L3"}, scale=0.25)
    assert ok.equivalent and ok.report["details"]["L3 chaos"][0]["episodes"] == 10
    json_path, md_path = write_reports(out.report, tmp_path)
    md = md_path.read_text()
    assert "## L3 chaos horizon" in md and "| planted r | 10 |" in md and "r off by 1e-9" in md
    assert (tmp_path / "logistic" / "chaos" / "planted_r.png").stat().st_size > 1000
    rows = json.loads(json_path.read_text())["details"]["L3 chaos"][1]["rows"]
    assert len(rows) == 10 and {"seed", "candidate_step", "reference_step"} <= set(rows[0])
