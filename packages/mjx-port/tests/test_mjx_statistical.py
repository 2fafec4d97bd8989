"""The statistical L4 suites (``mjx_port.statistical``): episode returns under uniformly random
actions, Gymnasium (MuJoCo C) against the float64 port, TOST with the declared margin.

InvertedPendulum-v5 at the suites' full 1,000 episodes a side (its episodes last a few steps):
the port is equivalent, and a planted gap fails: the port's frame_skip 3 instead of Gymnasium's
2, each env step 1.5x as long, so the pole falls in fewer steps. (A reset noise of 0.1 instead of
0.01 moved the mean return by only 0.23, inside the margin of 0.73: random actions topple the
pole whatever its start.) Every env has a declared margin and a
suite in the port.
"""

import pytest

from envport.verify.l4 import run_l4
from mjx_port.backends import GymnasiumMujoco, MjxCandidate
from mjx_port.port import ENVS, PORT
from mjx_port.statistical import MARGIN_SD, RETURN_SD, margin, random_policy_l4

ENV = "InvertedPendulum-v5"


def reference(n):
    return GymnasiumMujoco(n, ENV)


def test_every_env_has_a_declared_margin_and_a_suite() -> None:
    assert set(RETURN_SD) == set(ENVS)
    names = [s.name for s in PORT.l4]
    for env_id in ENVS:
        (suite,) = [s for s in PORT.l4 if s.name.startswith(env_id + ",")]
        assert suite.episodes == 1000
        assert suite.margin == margin(env_id) == round(MARGIN_SD * RETURN_SD[env_id], 3) > 0
    assert len(names) == len(ENVS)


@pytest.mark.usefixtures("x64")
def test_port_returns_equal_gymnasiums_and_a_planted_frame_skip_fails() -> None:
    suite = random_policy_l4(ENV, reference, lambda n: MjxCandidate(n, ENV))
    res = run_l4(suite)
    assert res.episodes == 1000
    assert res.test.equivalent, res.test
    # episodes last 1-40 steps, one point per step: the returns are whole numbers
    assert res.reference_scores.min() >= 1 and res.candidate_scores.min() >= 1

    planted = random_policy_l4(
        ENV, reference, lambda n: MjxCandidate(n, ENV, kwargs={"frame_skip": 3}))
    gap = run_l4(planted)
    assert not gap.test.equivalent, gap.test
    assert gap.test.difference < -margin(ENV)  # fewer steps before it falls
