import numpy as np
import pytest

from mjx_port.bench import _gymnasium_stepper, _port_rollout


@pytest.mark.parametrize("asynchronous", [False, True])
def test_gymnasium_stepper_steps(asynchronous):
    step, close = _gymnasium_stepper(2, "HalfCheetah-v5", asynchronous)
    try:
        obs, reward, *_ = step(np.zeros((2, 6), np.float32))
        assert obs.shape == (2, 17) and reward.shape == (2,)
    finally:
        close()


@pytest.mark.slow
def test_port_rollout_runs():
    steps, compile_s = _port_rollout(2, "HalfCheetah-v5")
    assert compile_s > 0
    steps(3)


@pytest.mark.slow
def test_chaos_episode_reports_the_three_steps(x64):
    from mjx_port.backends import MjxCandidate
    from mjx_port.chaos import episode

    row = episode("HalfCheetah-v5", 0, MjxCandidate(1, "HalfCheetah-v5"), max_steps=200)
    assert row["self_step"] is not None and 0 < row["self_step"] < 200  # C is chaotic here
    assert row["tight_step"] is None or row["tight_step"] > 0
