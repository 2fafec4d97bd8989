"""Shrunk L3 divergences from real bugs (the XLA float rewrites), replayed against the live
reference. Regenerate with ``python packages/pong-port/tests/regressions/regenerate.py``."""

import json
from pathlib import Path

import numpy as np
import pytest
from mutants import XlaFma, XlaReciprocal, mutant_suite

from envport.verify.diff import unequal
from pong_port.port import PORT

HERE = Path(__file__).parent / "regressions"
CASES = {
    "l3-continuous__num_envs_1__frameskip_1-seed0-step432.json": XlaFma,
    "l3-num_envs_16__frameskip_8-seed0-step-1.json": XlaReciprocal,
}


def replay(suite, seed, actions):
    """The step of the first difference between reference and candidate, or None."""
    ref, cand = suite.make_reference(), suite.make_candidate()
    try:
        ref.reset(seed)
        cand.reset(seed)
        if any(np.any(unequal(v, cand.state()[k])) for k, v in ref.state().items()):
            return -1
        if len(actions) == 0:
            return None
        rs, cs = ref.rollout(actions), cand.rollout(actions)
        bad = np.zeros(len(actions), bool)
        for k, v in rs.items():
            bad |= unequal(v, cs[k]).reshape(len(actions), -1).any(axis=1)
        return int(np.flatnonzero(bad)[0]) if bad.any() else None
    finally:
        ref.close()
        cand.close()


@pytest.mark.parametrize("name", CASES)
def test_regression_case(reference_built, name):
    case = json.loads((HERE / name).read_text())
    suite = next(s for s in PORT.l3 if s.name == case["suite"])
    actions = np.asarray(case["shortest_prefix"])
    actions = actions.astype(np.float32 if actions.dtype.kind == "f" else np.int32)
    assert len(actions) == case["shortest_prefix_len"]
    # the honest port matches the reference on the whole prefix ...
    assert replay(suite, case["seed"], actions) is None
    # ... and the bug it was recorded from still diverges exactly at its last step
    assert replay(mutant_suite(suite, CASES[name]), case["seed"], actions) == case["step"]
