"""Training smoke: PPO (the shared trainer, Box actions as a Gaussian) runs on the mjx port's
HalfCheetah-v5 target in float32 and resumes exactly; the targets and ``./dev train-mjx``."""

import numpy as np
import pytest

from envport.train import PPOConfig, check_resume
from mjx_port.port import PORT, session_commands
from mjx_port.train import PPO_SETTINGS, TARGETS


def test_ppo_runs_and_resumes(tmp_path):
    # two updates of 4 envs x 8 steps, then again stopped after the first and resumed from its
    # checkpoint: the rows (losses, KL, value means) must be equal. The MJX compile is most of
    # the time (one for the reset, one for the update; the persistent cache serves the
    # resumed runs' when JAX_COMPILATION_CACHE_DIR is set, as nox's sessions set it)
    target = TARGETS[0]
    tiny = {**target.config, "num_envs": 4, "num_steps": 8, "total_steps": 4 * 8 * 2,
            "update_epochs": 2, "num_minibatches": 2, "policy": "16"}  # fmt: skip
    rows = check_resume("mjx", target, PPOConfig.from_dict(tiny), tmp_path)
    assert len(rows) == 2
    for r in rows:
        for k in ("loss", "pg_loss", "v_loss", "entropy", "approx_kl", "value_mean"):
            assert np.isfinite(r[k]), (k, r)
        # HalfCheetah's reward is the forward velocity minus 0.1 x the control cost: never
        # exactly zero under a Gaussian policy, and the critic starts near zero
        assert r["reward_mean"] != 0.0 and r["v_loss"] > 0.0
        assert r["episodes"] == 0  # 1,000-step episodes: none ends within 16 steps
    # the Gaussian's entropy with log std 0 in 6 dimensions, moved by the updates
    assert rows[0]["entropy"] == pytest.approx(6 * 0.5 * np.log(2 * np.pi * np.e), abs=0.05)


def test_targets_and_the_train_session():
    assert [t.name for t in TARGETS] == ["HalfCheetah-v5", "Hopper-v5"]
    assert list(PORT.train) == TARGETS
    for t, obs, act in zip(TARGETS, (17, 11), (6, 3), strict=True):
        spec = t.make_env().spec
        assert spec.id == t.name
        assert spec.observation_space.shape == (obs,)
        assert spec.observation_space.dtype == np.float32  # the float32 port
        assert spec.action_space.shape == (act,)
        assert t.config == PPO_SETTINGS
    PPOConfig.from_dict(PPO_SETTINGS).check()  # the settings are the trainer's names, and valid
    assert session_commands("train", []) == [
        ["envport", "train", "mjx", "--target", t.name, "--seeds", "0"] for t in TARGETS
    ]
    # with arguments: the core's default (one `envport train` with them)
    assert session_commands("train", ["--steps", "1000"]) == [
        ["envport", "train", "mjx", "--steps", "1000"]
    ]
    assert session_commands("verify", []) == [["envport", "verify", "mjx"]]
