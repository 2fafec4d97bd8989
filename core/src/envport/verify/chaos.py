"""L3 for chaotic dynamics: the candidate's divergence step against the reference's own chaos
horizon (:class:`~envport.registry.ChaosSuite`).

Three backends run each seeded episode in lockstep: the reference, the candidate, and a second
reference loaded with the reset state perturbed by ``eps``. Per episode the result is the first
step at which the candidate leaves the reference by more than ``threshold`` and the first step
at which the perturbed reference does. A candidate that is the same dynamics computed with other
roundoff parts from the reference around where the reference parts from itself; one with a real
difference (a wrong contact, another solver stop) parts earlier.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from envport.backend import CanonicalState
from envport.registry import ChaosSuite

FLAGS = ("terminated", "truncated")


@dataclass
class ChaosEpisode:
    seed: int
    steps: int  # steps compared
    candidate_step: int | None  # first step past the threshold (None: never, within steps)
    reference_step: int | None  # the perturbed reference's (the chaos horizon)
    ended: bool  # the episode ended (terminated or truncated) within the steps compared

    @property
    def passed(self) -> bool:
        """The candidate's divergence is never earlier than the reference's own."""
        if self.candidate_step is None:
            return True
        return self.reference_step is not None and self.candidate_step >= self.reference_step


@dataclass
class ChaosResult:
    suite: str
    threshold: float
    eps: float
    share_required: float
    episodes: list[ChaosEpisode] = field(default_factory=list)

    @property
    def share(self) -> float:
        return float(np.mean([e.passed for e in self.episodes])) if self.episodes else 0.0

    @property
    def passed(self) -> bool:
        return bool(self.episodes) and self.share >= self.share_required

    def to_json(self) -> dict:
        rows = [vars(e) | {"passed": e.passed} for e in self.episodes]
        cand = [e.candidate_step for e in self.episodes if e.candidate_step is not None]
        ref = [e.reference_step for e in self.episodes if e.reference_step is not None]
        return {
            "suite": self.suite, "episodes": len(self.episodes), "passed": self.passed,
            "share_not_before_reference": round(self.share, 4),
            "share_required": self.share_required, "threshold": self.threshold,
            "eps": self.eps,
            "candidate_median_step": float(np.median(cand)) if cand else None,
            "reference_median_step": float(np.median(ref)) if ref else None,
            "rows": rows,
        }


def _float_fields(state: CanonicalState, fields: tuple[str, ...]) -> tuple[str, ...]:
    if fields:
        return fields
    return tuple(k for k, v in state.items() if np.asarray(v).dtype.kind == "f")


def _distance(a: CanonicalState, b: CanonicalState, fields: tuple[str, ...]) -> float:
    """Largest absolute difference over ``fields``; inf when a flag differs or a value is NaN
    on one side only."""
    for k in FLAGS:
        if k in a and not np.array_equal(np.asarray(a[k]), np.asarray(b[k])):
            return float("inf")
    worst = 0.0
    for k in fields:
        x, y = np.asarray(a[k], np.float64), np.asarray(b[k], np.float64)
        d = np.abs(x - y)
        d = np.where(np.isnan(x) & np.isnan(y), 0.0, np.where(np.isnan(d), np.inf, d))
        worst = max(worst, float(d.max(initial=0.0)))
    return worst


def _ended(state: CanonicalState) -> bool:
    return any(bool(np.asarray(state[k]).any()) for k in FLAGS if k in state)


def run_episode(suite: ChaosSuite, ref, cand, other, seed: int) -> ChaosEpisode:
    """One seeded episode on three one-env backends (reference, candidate, perturbed
    reference)."""
    ref.reset(seed)
    cand.reset(seed)
    other.reset(seed)
    other.load(suite.perturb(other.state(), suite.eps))
    rng = np.random.default_rng(seed)
    cand_step = ref_step = None
    fields: tuple[str, ...] = ()
    steps, ended = 0, False
    for t in range(suite.max_steps):
        actions = suite.sample_actions(rng, 1)
        ref.step(actions)
        cand.step(actions)
        other.step(actions)
        r, c, o = ref.state(), cand.state(), other.state()
        fields = fields or _float_fields(r, suite.fields)
        steps = t + 1
        if cand_step is None and _distance(r, c, fields) > suite.threshold:
            cand_step = t
        if ref_step is None and _distance(r, o, fields) > suite.threshold:
            ref_step = t
        ended = _ended(r) or _ended(c)
        if ended or (cand_step is not None and ref_step is not None):
            break
    return ChaosEpisode(seed, steps, cand_step, ref_step, ended)


def run_chaos(suite: ChaosSuite, episodes: int | None = None,
              progress: Callable[[int], None] | None = None) -> ChaosResult:
    """Seeds ``0 .. episodes - 1`` (default ``suite.episodes``), in this process."""
    n = suite.episodes if episodes is None else episodes
    result = ChaosResult(suite.name, suite.threshold, suite.eps, suite.share)
    ref, cand, other = suite.make_reference(), suite.make_candidate(), suite.make_reference()
    try:
        for seed in range(n):
            result.episodes.append(run_episode(suite, ref, cand, other, seed))
            if progress:
                progress(1)
    finally:
        for b in (ref, cand, other):
            b.close()
    return result


def plot(result: dict, path) -> None:
    """The two distributions of one suite (``ChaosResult.to_json()``): per episode the
    reference's own horizon (x) against the candidate's divergence step (y); an episode where a
    side never diverged is drawn at the steps compared, hollow. Below the diagonal: the
    candidate parted first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    fig, ax = plt.subplots(figsize=(5, 5))
    for filled in (True, False):
        pts = [r for r in rows if (r["candidate_step"] is not None
                                   and r["reference_step"] is not None) == filled]
        xs = [r["reference_step"] if r["reference_step"] is not None else r["steps"] for r in pts]
        ys = [r["candidate_step"] if r["candidate_step"] is not None else r["steps"] for r in pts]
        colors = ["tab:blue" if r["passed"] else "tab:red" for r in pts]
        ax.scatter(xs, ys, s=14, c=colors if filled else "none",
                   edgecolors=colors, label="both diverged" if filled else "a side never did")
    top = max([r["steps"] for r in rows] + [1])
    ax.plot([0, top], [0, top], color="grey", lw=0.8)
    ax.set_xlabel(f"reference vs itself (+{result['eps']:g}): first step > {result['threshold']:g}")
    ax.set_ylabel(f"candidate vs reference: first step > {result['threshold']:g}")
    ax.set_title(f"{result['suite']}\n{result['share_not_before_reference']:.0%} not before "
                 f"the reference's own horizon ({len(rows)} episodes)", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
