"""L2: from the same state, does one transition match?"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from envport.registry import L2Suite
from envport.verify.diff import FieldDiff, diff_states, unequal_rows


@dataclass
class L2Result:
    suite: str
    cases: int = 0
    mismatches: int = 0
    examples: list[dict] = field(default_factory=list)  # first few mismatching cases


def _per_env_mismatch(ref: dict, cand: dict, tolerance) -> np.ndarray:
    bad = None
    for k, r in ref.items():
        rows = unequal_rows(r, cand[k], tolerance)
        bad = rows if bad is None else bad | rows
    return bad


def run_l2(suite: L2Suite, tolerance: float = 0.0, *, cases: int | None = None, seed: int = 0,
           progress=None, max_examples: int = 5) -> L2Result:
    total = suite.cases if cases is None else cases
    res = L2Result(suite.name)
    rng = np.random.default_rng(seed)
    batch = min(suite.batch, total)
    ref, cand = suite.make_reference(batch), suite.make_candidate(batch)
    try:
        while res.cases < total:
            state, actions = suite.make_cases(rng, batch)
            ref.load(state)
            cand.load(state)
            ref.step(actions)
            cand.step(actions)
            rs, cs = ref.state(), cand.state()
            bad = _per_env_mismatch(rs, cs, tolerance)
            res.cases += batch
            res.mismatches += int(bad.sum())
            for i in np.flatnonzero(bad)[: max(0, max_examples - len(res.examples))]:
                pick = lambda d, i=i: {k: np.asarray(v)[i: i + 1] for k, v in d.items()}  # noqa: E731
                diffs: list[FieldDiff] = diff_states(pick(rs), pick(cs), tolerance)
                res.examples.append({
                    "state": {k: np.asarray(v)[i].tolist() for k, v in state.items()
                              if np.ndim(v) and len(v) == batch},
                    "action": np.asarray(actions)[i].tolist(),
                    "fields": [d.to_json() for d in diffs],
                })
            if progress is not None:
                progress(batch)
    finally:
        ref.close()
        cand.close()
    return res
