"""Training smoke: PPO runs on pokejax's training targets (legal mask applied) and resumes
exactly; the win score counts wins only."""

import jax.numpy as jnp
import numpy as np

from envport import TimeStep
from envport.train import PPOConfig, check_resume
from pokejax.train import TARGETS, won


def test_ppo_runs_and_resumes_on_pokejax(tmp_path):
    target = TARGETS[0]
    tiny = {**target.config, "num_envs": 8, "num_steps": 8, "total_steps": 8 * 8 * 2,
            "policy": "16"}
    rows = check_resume("pokejax", target, PPOConfig.from_dict(tiny), tmp_path)
    assert all(np.isfinite(r["loss"]) for r in rows)


def test_the_score_is_a_win():
    ts = lambda r: TimeStep(0, jnp.float32(r), True, False)  # noqa: E731
    assert [float(won(ts(r))) for r in (1.0, -1.0, 0.0)] == [1.0, 0.0, 0.0]
