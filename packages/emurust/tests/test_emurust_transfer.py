"""L4 with trained policies on emurust: the port's PolicyTransfer, small (one seed trained on
emurust's VecEnv at the declared budget, 600 games a side on VecEnv and on PyBoy 2.8.1), and a
planted sim gap (the joypad one step late, ``emurust.planted``) that must fail it. The full
suites (5 seeds x 2 directions, 1,000 games) run in ``envport verify emurust --levels L4``.

The budget is the declared one because a policy must be good before a late joypad costs it
more than the margin: at 300k steps (3.8 catches per game) the gap moves it by 1.4 catches,
at 500k by 12-15 (docs/training.md)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from envport import verify

pytestmark = pytest.mark.usefixtures("built_roms", "pyboy_ref")

EPISODES = 600  # the difference's standard error ~0.7 catches: the margin of 3 is 4 of them


def run(tmp, transfer):
    from emurust.port import make_port

    report = verify.run(dataclasses.replace(make_port(), transfer=[transfer], l4=[]),
                        out_dir=tmp, levels=["L4"], progress=False)
    return report["levels"]["L4"], report["details"]["L4"]


@pytest.fixture(scope="module")
def tiny():
    from emurust.train import TRANSFER

    # one seed, trained on the port only (PyBoy-trained policies: the full suites)
    return dataclasses.replace(TRANSFER, seeds=(0,), episodes=EPISODES, reference_train=None)


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("emurust-transfer")


def test_the_declared_transfer_is_the_issue_budget():
    from emurust.port import make_port
    from emurust.train import TRANSFER, TRANSFER_STEPS, PyBoyBackend

    assert make_port().transfer == [TRANSFER]
    assert tuple(TRANSFER.seeds) == (0, 1, 2, 3, 4) and TRANSFER.episodes >= 1000
    assert TRANSFER.reference_train == {}  # both directions: PyBoy-trained policies too
    assert TRANSFER.target == "game.gb" and TRANSFER.make_reference is PyBoyBackend
    assert TRANSFER.train["total_steps"] == TRANSFER_STEPS
    assert f"Margin {TRANSFER.margin:g} catches" in TRANSFER.margin_note


def test_late_input_is_the_game_with_each_action_one_step_later():
    from emurust.planted import LateInput
    from emurust.train import VecEnvBackend

    rng = np.random.default_rng(3)
    with LateInput(8, max_steps=50) as late, VecEnvBackend(8, max_steps=50) as real:
        np.testing.assert_array_equal(late.reset(0), real.reset(0))
        held = np.zeros(8, np.int64)
        ends = 0
        for t in range(300):
            actions = rng.integers(0, 3, 8)
            a, b = late.step(actions), real.step(held)
            for field in a._fields:
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field),
                                              err_msg=f"step {t}: {field}")
            done = b.terminated | b.truncated
            ends += int(done.sum())
            held = np.where(done, 0, actions)
        assert ends > 8  # restarts covered
        assert late.spec == real.spec


@pytest.fixture(scope="module")
def honest(out, tiny):
    """The policy trained (and stored in ``out``), played on VecEnv and on PyBoy."""
    return run(out, tiny)


def test_a_trained_policy_scores_the_same_on_vecenv_and_pyboy(honest):
    level, (d,) = honest
    assert level["equivalent"] is True, d
    assert d["n_reference"] == d["n_candidate"] == EPISODES
    assert d["policy"]["direction"] == "port" and d["metric"] == "catches per game"
    assert d["reference_mean"] > 10  # trained (random: 0.31)


def test_the_joypad_one_step_late_fails_l4(out, tiny, honest):
    from emurust.planted import LateInput

    # the stored policy (nothing is trained again), played on the planted gap
    level, (d,) = run(out, dataclasses.replace(tiny, make_candidate_backend=LateInput))
    assert d["policy"]["run_dir"] == honest[1][0]["policy"]["run_dir"]
    assert level["equivalent"] is False and not d["equivalent"]
    assert d["difference"] < -tiny.margin and d["ci"][1] < -tiny.margin, d
