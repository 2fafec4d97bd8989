"""L4 transfer: is there a sim-to-sim gap for learning?

A fixed policy (trained on one backend, or built in, e.g. a greedy heuristic) plays many
episodes on the reference and on the candidate; each episode gives one score. A two one-sided
test (TOST) then asks whether the mean scores are *equivalent*: whether the difference of means
``candidate - reference`` lies inside ``(-margin, +margin)``. The null hypothesis is "not
equivalent", so a small sample cannot pass by accident; failing to find a difference is not
enough, the data must show the difference is small.

The test statistic is Welch's: ``se = sqrt(var_ref / n_ref + var_cand / n_cand)`` with sample
variances (``ddof=1``), and the two one-sided p-values come from the standard normal, which is
the large-sample limit of Welch's t (the verifier runs thousands of episodes per backend; with
a few dozen the normal is slightly liberal). No scipy: the normal CDF is ``math.erfc`` (accurate
far into the tails, so p-values like 1e-12 are meaningful) and its inverse is the stdlib's
``statistics.NormalDist``.

TOST at level ``alpha`` is the same decision as "the ``1 - 2 * alpha`` confidence interval of
the difference lies inside ``(-margin, +margin)``"; that interval is reported too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from envport.errors import EnvportError
from envport.registry import L4Suite

__all__ = ["TostResult", "L4Result", "tost", "run_l4"]


@dataclass
class TostResult:
    n_reference: int
    n_candidate: int
    reference_mean: float
    candidate_mean: float
    difference: float  # candidate_mean - reference_mean
    se: float  # standard error of the difference (Welch)
    p_lower: float  # H0: difference <= -margin
    p_upper: float  # H0: difference >= +margin
    p_value: float  # max(p_lower, p_upper): the TOST p-value
    ci: tuple[float, float]  # the 1 - 2 * alpha confidence interval of the difference
    equivalent: bool  # p_value < alpha


@dataclass
class L4Result:
    suite: str
    episodes: int  # per backend
    test: TostResult
    reference_scores: np.ndarray = field(repr=False)
    candidate_scores: np.ndarray = field(repr=False)


def _phi(x: float) -> float:
    """The standard normal CDF; ``erfc`` keeps its precision in both tails."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _check_params(margin: float, alpha: float, where: str) -> None:
    if not (isinstance(margin, int | float) and math.isfinite(margin) and margin > 0):
        raise EnvportError(f"{where}: the equivalence margin must be a finite number > 0, "
                           f"got {margin!r}")
    if not (isinstance(alpha, int | float) and 0 < alpha < 0.5):
        raise EnvportError(f"{where}: alpha must be in (0, 0.5) (the CI is 1 - 2 * alpha), "
                           f"got {alpha!r}")


def _as_scores(x, what: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise EnvportError(f"TOST: the {what} scores are not numbers ({exc})") from None
    if a.ndim != 1:
        raise EnvportError(f"TOST: the {what} scores must be a 1-D array (one score per "
                           f"episode), got shape {a.shape}")
    if a.size < 2:
        raise EnvportError(f"TOST: need at least 2 {what} scores (a sample variance), "
                           f"got {a.size}")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise EnvportError(f"TOST: {bad.size} {what} score(s) are NaN or infinite "
                           f"(first at index {bad[0]}: {a[bad[0]]})")
    return a


def tost(ref_scores, cand_scores, margin: float, alpha: float = 0.05) -> TostResult:
    """Two one-sided tests of ``|mean(cand) - mean(ref)| < margin`` at level ``alpha``.

    Equivalent when ``p_value = max(p_lower, p_upper) < alpha``, i.e. when both
    ``H0: difference <= -margin`` and ``H0: difference >= +margin`` are rejected.

    Zero variance on both sides (``se == 0``, e.g. a deterministic policy and env): the
    difference is known exactly, so the result is equivalent iff ``|difference| < margin``, each
    one-sided p-value is 0.0 (its null is false) or 1.0 (its null holds), and the CI is the
    single point ``(difference, difference)``.

    Each side needs at least 2 finite scores in a 1-D array; ``margin > 0`` and
    ``0 < alpha < 0.5``. Anything else raises :class:`~envport.errors.EnvportError`.
    """
    _check_params(margin, alpha, "TOST")
    ref = _as_scores(ref_scores, "reference")
    cand = _as_scores(cand_scores, "candidate")
    n_r, n_c = ref.size, cand.size
    m_r, m_c = float(ref.mean()), float(cand.mean())
    diff = m_c - m_r
    se = math.sqrt(float(ref.var(ddof=1)) / n_r + float(cand.var(ddof=1)) / n_c)
    if se == 0.0:
        p_lower = 0.0 if diff > -margin else 1.0
        p_upper = 0.0 if diff < margin else 1.0
        ci = (diff, diff)
    else:
        p_lower = _phi(-(diff + margin) / se)  # P(Z >= (diff + margin) / se), upper tail
        p_upper = _phi((diff - margin) / se)
        z = NormalDist().inv_cdf(1.0 - alpha)
        ci = (diff - z * se, diff + z * se)
    p = max(p_lower, p_upper)
    return TostResult(n_reference=n_r, n_candidate=n_c, reference_mean=m_r, candidate_mean=m_c,
                      difference=diff, se=se, p_lower=p_lower, p_upper=p_upper, p_value=p,
                      ci=(float(ci[0]), float(ci[1])), equivalent=bool(p < alpha))


def _evaluate(suite: L4Suite, backend: str, episodes: int, seed: int,
              progress: Callable[[int], None]) -> np.ndarray:
    fn = suite.evaluate_reference if backend == "reference" else suite.evaluate_candidate
    raw = fn(episodes, seed, progress)
    where = f"L4 suite {suite.name!r}: the {backend} evaluator"
    try:
        scores = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise EnvportError(f"{where} returned {type(raw).__name__}, not an array of "
                           f"{episodes} numbers (one score per episode)") from None
    if scores.ndim != 1 or scores.size != episodes:
        raise EnvportError(f"{where} returned scores of shape {scores.shape} "
                           f"({type(raw).__name__}); expected exactly {episodes} (one per "
                           f"episode, 1-D)")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise EnvportError(f"{where} returned {bad.size} NaN/infinite score(s) (first at "
                           f"episode {bad[0]}: {scores[bad[0]]})")
    return scores


def run_l4(suite: L4Suite, episodes: int | None = None,
           progress: Callable[[int], None] | None = None) -> L4Result:
    """Evaluate the suite's policy on the reference (seed ``suite.seed``) then the candidate
    (seed ``suite.seed + 1``), ``episodes`` each (default ``suite.episodes``), and apply
    :func:`tost`. ``progress(k)`` receives both evaluators' episode increments.

    The margin, alpha and episode count are checked before anything runs; an evaluator that
    does not return exactly ``episodes`` finite scores raises
    :class:`~envport.errors.EnvportError` naming the suite and the backend.
    """
    n = suite.episodes if episodes is None else episodes
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise EnvportError(f"L4 suite {suite.name!r}: need at least 2 episodes per backend, "
                           f"got {n!r}")
    n = int(n)
    _check_params(suite.margin, suite.alpha, f"L4 suite {suite.name!r}")
    tick = progress if progress is not None else (lambda k: None)
    ref = _evaluate(suite, "reference", n, suite.seed, tick)
    cand = _evaluate(suite, "candidate", n, suite.seed + 1, tick)
    return L4Result(suite.name, n, tost(ref, cand, suite.margin, suite.alpha), ref, cand)
