"""L2: from the same state, does one transition match?

The unit of work is one batch (:func:`run_l2_batch`): ``suite.make_cases`` draws ``batch``
cases (a state and an action per env) from ``default_rng([seed, batch_index])``, both backends
load the state, take the action, and every field of the new canonical state is compared. A
batch depends only on its index, so batches can run in worker processes and be merged in
order into the report one process would write (provided ``make_cases`` is a function of the
generator it is given, not of earlier calls).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from envport.backend import Backend
from envport.registry import L2Suite
from envport.verify.diff import (
    FieldDiff,
    ToleranceSpec,
    diff_states,
    field_abs_errs,
    field_tolerances,
    tolerance_for,
    unequal_rows,
)
from envport.verify.l3 import worst_err


@dataclass
class BatchResult:
    index: int
    cases: int = 0
    mismatches: int = 0
    examples: list[dict] = field(default_factory=list)  # the first mismatching cases
    counters: dict | None = None  # increments of the suite's counters (set by the executor)
    max_abs_err: dict[str, float] = field(default_factory=dict)  # per float field


@dataclass
class L2Result:
    suite: str
    cases: int = 0
    mismatches: int = 0
    examples: list[dict] = field(default_factory=list)  # first few mismatching cases
    # per float field, the largest |candidate - reference| over every case (NaN where one side
    # alone is NaN, as the comparator's): what a declared tolerance is measured against
    max_abs_err: dict[str, float] = field(default_factory=dict)

    def add(self, batch: BatchResult, max_examples: int) -> None:
        self.cases += batch.cases
        self.mismatches += batch.mismatches
        self.examples += batch.examples[: max(0, max_examples - len(self.examples))]
        for k, v in batch.max_abs_err.items():
            self.max_abs_err[k] = worst_err(v, self.max_abs_err.get(k, 0.0))


def _per_env_mismatch(ref: dict, cand: dict, tolerance) -> np.ndarray:
    """bool[num_envs]: which envs differ in any field (a field missing on either side, or of
    another shape or dtype, makes every env differ)."""
    n = len(next(iter(ref.values())))
    bad = np.zeros(n, bool)
    for k, r in ref.items():
        c = cand.get(k)
        if c is None or np.shape(c) != np.shape(r):
            bad[:] = True
        else:
            bad |= unequal_rows(r, c, tolerance_for(tolerance, k))
    if set(cand) - set(ref):
        bad[:] = True
    return bad


def batch_rng(seed: int, index: int) -> np.random.Generator:
    """The generator of batch ``index``: independent of every other batch's."""
    return np.random.default_rng([int(seed), int(index)])


def run_l2_batch(suite: L2Suite, ref: Backend, cand: Backend, index: int,
                 tolerance: ToleranceSpec = 0.0, *, seed: int = 0,
                 max_examples: int = 5) -> BatchResult:
    """Batch ``index`` of ``suite`` on two backends made with ``num_envs == suite.batch``."""
    state, actions = suite.make_cases(batch_rng(seed, index), ref.num_envs)
    ref.load(state)
    cand.load(state)
    ref.step(actions)
    cand.step(actions)
    rs, cs = ref.state(), cand.state()
    field_tolerances(tolerance, set(rs) | set(cs))  # no tolerance for a field that is not there
    bad = _per_env_mismatch(rs, cs, tolerance)
    out = BatchResult(index, cases=ref.num_envs, mismatches=int(bad.sum()),
                      max_abs_err=field_abs_errs(rs, cs))
    for i in np.flatnonzero(bad)[:max_examples]:
        pick = lambda d, i=i: {k: np.asarray(v)[i: i + 1] for k, v in d.items()}  # noqa: E731
        diffs: list[FieldDiff] = diff_states(pick(rs), pick(cs), tolerance)
        for d in diffs:
            d.env = int(i)
        out.examples.append({
            "batch": index, "env": int(i),
            "state": {k: np.asarray(v)[i].tolist() for k, v in state.items()
                      if np.ndim(v) and len(v) == ref.num_envs},
            "action": np.asarray(actions)[i].tolist(),
            "fields": [d.to_json() for d in diffs],
        })
    return out


def batches_for(suite: L2Suite, cases: int) -> tuple[int, int]:
    """``(batch size, number of batches)`` for at least ``cases`` cases."""
    batch = max(1, min(suite.batch, cases))
    return batch, math.ceil(cases / batch)


def suite_tolerance(suite: L2Suite, plan) -> ToleranceSpec:
    """The suite's own tolerance where it declares one, else the port's (the plan's)."""
    return plan.tolerance if suite.tolerance is None else suite.tolerance


def run_l2(suite: L2Suite, tolerance: ToleranceSpec = 0.0, *, cases: int | None = None,
           seed: int = 0, progress: Callable[[int], None] | None = None, max_examples: int = 5,
           executor=None, index: int = 0) -> L2Result:
    """At least ``cases`` cases (default: the suite's) in whole batches of
    ``min(suite.batch, cases)``. ``progress(k)`` gets the cases of each finished batch.
    ``executor`` (see :mod:`envport.verify.workers`) runs the batches, ``suite`` being its
    plan's L2 suite number ``index``; by default they run in this process."""
    from envport.verify.workers import SerialExecutor, Shard, ShardPlan

    total = suite.cases if cases is None else cases
    batch, n_batches = batches_for(suite, total)
    own = executor is None
    if own:
        plan = ShardPlan(l2=[suite], tolerance=tolerance, l2_seed=seed, max_examples=max_examples)
        executor, index = SerialExecutor(plan), 0
    res = L2Result(suite.name)
    try:
        shards = (Shard("L2", index, b, size=batch) for b in range(n_batches))
        for result in executor.ordered(shards, lambda in_flight: True):
            executor.merge_counters(suite, result.counters)
            res.add(result, max_examples)
            if progress is not None:
                progress(result.cases)
    finally:
        if own:
            executor.close()
    return res
