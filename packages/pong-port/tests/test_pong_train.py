"""Training smoke: PPO runs on pong-port's training target and resumes exactly."""

import dataclasses

from envport.train import PPOConfig, check_resume
from pong_port.train import TARGETS


def test_ppo_runs_and_resumes_on_pong(tmp_path):
    target = TARGETS[0]
    tiny = {**target.config, "num_envs": 32, "num_steps": 16, "total_steps": 32 * 16 * 2}
    rows = check_resume("pong", target, PPOConfig.from_dict(tiny), tmp_path)
    assert all(r["loss"] == r["loss"] for r in rows)  # finite, not NaN
    assert dataclasses.asdict(PPOConfig.from_dict(target.config))["total_steps"] == 12_000_000
