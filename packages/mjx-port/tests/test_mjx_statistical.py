"""The statistical L4 suites (``mjx_port.statistical``): episode returns under uniformly random
actions, Gymnasium (MuJoCo C) against the float64 port, TOST with the declared margin.

InvertedPendulum-v5 at the suites' full 1,000 episodes a side (its episodes last a few steps):
the port is equivalent, and a planted gap fails: the port's frame_skip 3 instead of Gymnasium's
2, each env step 1.5x as long, so the pole falls in fewer steps. (A reset noise of 0.1 instead of
0.01 moved the mean return by only 0.23, inside the margin of 0.73: random actions topple the
pole whatever its start.) Every env has a declared margin and a
suite in the port.
"""

import dataclasses
import json

import jax
import pytest

from envport import verify
from envport.verify.l4 import run_l4
from mjx_port.backends import GymnasiumMujoco, MjxCandidate
from mjx_port.port import ENVS, PORT
from mjx_port.statistical import (
    MARGIN_SD,
    RETURN_SD,
    TRAINED_RETURN_SD,
    margin,
    random_policy_l4,
)

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


def test_trained_policy_transfers_are_declared_with_their_margin() -> None:
    (transfer,) = PORT.transfer
    assert transfer.target == "HalfCheetah-v5" and transfer.seeds == (0, 1, 2, 3, 4)
    assert transfer.episodes == 1000 and transfer.reference_train == {}  # both directions
    assert transfer.margin == margin("HalfCheetah-v5", TRAINED_RETURN_SD) == 53.595
    (target,) = [t for t in PORT.train if t.name == transfer.target]
    assert target.x64 is False  # float32 training, also inside verify's x64 process


@pytest.mark.usefixtures("x64")
def test_a_policy_trained_on_the_float32_port_plays_on_gymnasium_and_the_float64_port(
        tmp_path) -> None:
    """The transfer's wiring on a tiny budget, in verify's x64 process: one update of PPO on the
    float32 port and one on Gymnasium (host loop), each played for 4 episodes on both sides."""
    (transfer,) = PORT.transfer
    tiny = dataclasses.replace(transfer, seeds=(0,), episodes=4,
                               train={"total_steps": 2048, "num_minibatches": 4})
    report = verify.run(dataclasses.replace(PORT, l4=[], transfer=[tiny]), out_dir=tmp_path,
                        levels=["L4"], progress=False)
    assert jax.config.jax_enable_x64  # the process's setting is untouched
    details = report["details"]["L4"]
    assert [d["policy"]["direction"] for d in details] == ["port", "reference"]
    for d in details:
        assert d["n_reference"] == d["n_candidate"] == 4
        # HalfCheetah never terminates: every episode is the TimeLimit's 1,000 steps, and an
        # untrained policy's return is a few hundred below zero on both sides
        assert -1000 < d["reference_mean"] < 0 and -1000 < d["candidate_mean"] < 0, d
        config = json.loads((tmp_path / "mjx" / "train" / d["policy"]["run_dir"].split("/")[-1]
                             / "config.json").read_text())
        assert config["config"]["total_steps"] == 2048
        loop = "device" if d["policy"]["direction"] == "port" else "host"
        assert config["loop"] == loop
