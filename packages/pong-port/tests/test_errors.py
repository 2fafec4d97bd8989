"""Bad input gets a clear, specific error and loses nothing."""

import numpy as np
import pytest

from envport import ActionError
from envport.cli import main as envport_cli
from envport.gym_adapter import JaxVectorEnv
from pong_port import Pong, PongConfig, reference
from pong_port.backends import PongCandidate


@pytest.fixture(scope="module")
def candidate():
    backend = PongCandidate(4)
    backend.reset(0)
    return backend


@pytest.mark.parametrize("actions, message", [
    (np.zeros(3, np.int32), r"shape \(4,\)"),
    (np.zeros((4, 2), np.int32), r"shape \(4,\)"),
    (np.zeros(4, np.float32), "must be integers"),
    (np.array([0, 1, 2, 3]), "out of range"),
    (np.array([0, -1, 2, 1]), "out of range"),
])
def test_bad_discrete_actions(candidate, actions, message):
    before = candidate.state()
    with pytest.raises(ActionError, match=message):
        candidate.step(actions)
    after = candidate.state()  # nothing was applied
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])


def test_continuous_nan_and_dtype():
    backend = PongCandidate(2, PongConfig(continuous=True))
    backend.reset(0)
    with pytest.raises(ActionError, match="NaN"):
        backend.step(np.array([[0.5], [np.nan]], np.float32))
    with pytest.raises(ActionError, match="floating point"):
        backend.step(np.array([[1], [0]], np.int32))
    backend.step(np.array([[0.5], [-0.25]], np.float32))  # still usable


def test_gymnasium_adapter_rejects_nan():
    venv = JaxVectorEnv(Pong(PongConfig(continuous=True)), num_envs=2)
    venv.reset(seed=0)
    with pytest.raises(ActionError, match="NaN"):
        venv.step(np.array([[np.nan], [0.0]], np.float32))


def test_reference_rejects_bad_actions_too(reference_built):
    ref = reference.PongReference(2)
    ref.reset(0)
    try:
        with pytest.raises(ActionError, match="out of range"):
            ref.step(np.array([0, 5]))
    finally:
        ref.close()


def test_cli_unknown_env(capsys):
    assert envport_cli(["verify", "no-such-env"]) == 2
    err = capsys.readouterr().err
    assert "unknown env 'no-such-env'" in err and "pong" in err


def test_cli_reference_missing(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ENVPORT_CACHE", str(tmp_path))
    reference.load_binding.cache_clear()
    try:
        assert envport_cli(["verify", "pong", "--no-progress"]) == 2
    finally:
        reference.load_binding.cache_clear()
    err = capsys.readouterr().err
    assert "not built" in err and "envport install-reference pong" in err
