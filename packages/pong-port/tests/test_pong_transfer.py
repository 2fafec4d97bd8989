"""L4 with trained policies on Pong: the port's PolicyTransfer on a tiny budget (one seed, a
short training in each direction, 300 games a side), and a planted sim gap (paddle speed 9
instead of 8 on the port) that must fail it. The full suites (5 seeds x 2 directions, 1,000
games) run in ``nox -s verify-pong -- --levels L4``."""

from __future__ import annotations

import dataclasses

import pytest

from envport import verify
from pong_port.config import PongConfig
from pong_port.env import Pong
from pong_port.port import PORT, TRANSFER, TRANSFER_STEPS

TINY = dataclasses.replace(TRANSFER, seeds=(0,), episodes=300, train={"total_steps": 1_000_000})


def run(tmp, transfer):
    report = verify.run(dataclasses.replace(PORT, transfer=[transfer], l4=[]), out_dir=tmp,
                        levels=["L4"], progress=False)
    return report["levels"]["L4"], report["details"]["L4"]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("pong-transfer")


def test_the_declared_transfer_is_the_issue_budget():
    assert len(TRANSFER.seeds) >= 5 and TRANSFER.episodes >= 1000
    assert TRANSFER.reference_train is not None  # both directions
    assert TRANSFER.train["total_steps"] == TRANSFER_STEPS


def test_policies_trained_on_either_side_score_the_same_on_both(out):
    level, details = run(out, TINY)
    assert [d["policy"]["direction"] for d in details] == ["port", "reference"]
    assert level["equivalent"] is True, details
    for d in details:
        assert d["policy"]["env_steps"] == 1_000_000 // 65_536 * 65_536  # whole updates
        assert d["n_reference"] == d["n_candidate"] == 300


def test_a_faster_paddle_on_the_port_fails_l4(out):
    planted = dataclasses.replace(
        TINY, make_candidate_env=lambda: Pong(PongConfig(frameskip=8, paddle_speed=9)))
    level, details = run(out, planted)  # the same stored policies, evaluated on the gap
    assert level["equivalent"] is False
    assert all(not d["equivalent"] and abs(d["difference"]) > TRANSFER.margin for d in details)
