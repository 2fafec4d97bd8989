"""Training smoke: PPO runs on tcgjax's training targets (legal mask applied) and resumes
exactly; the score counts wins only; ``./dev train-tcgjax`` trains each target once."""

import dataclasses

import jax.numpy as jnp
import numpy as np

from envport import TimeStep
from envport.train import PPOConfig, check_resume
from tcgjax.port import session_commands
from tcgjax.train import EVAL_EVERY, TARGETS, won


def test_ppo_runs_and_resumes(tmp_path):
    # without the evaluations: each evaluation env is one more compile of the engine's step
    # (minutes on XLA:CPU); the update with the env inside it is what this smoke is about
    target = dataclasses.replace(TARGETS[0], evaluate={})
    tiny = {**target.config, "num_envs": 4, "num_steps": 8, "total_steps": 4 * 8 * 2,
            "num_minibatches": 2, "policy": "16"}  # fmt: skip
    rows = check_resume("tcgjax", target, PPOConfig.from_dict(tiny), tmp_path)
    assert all(np.isfinite(r["loss"]) for r in rows)


def test_the_score_is_a_win():
    ts = lambda r: TimeStep(0, jnp.float32(r), True, False)  # noqa: E731
    assert [float(won(ts(r))) for r in (1.0, -1.0, 0.0)] == [1.0, 0.0, 0.0]


def test_targets_and_the_train_session():
    assert [t.name for t in TARGETS] == ["vs-random", "vs-heuristic"]
    for t in TARGETS:
        assert sorted(t.evaluate) == ["vs heuristic", "vs random"]
        assert t.make_env().opponent == t.name.removeprefix("vs-")
    every = ["--eval-every", str(EVAL_EVERY), "--eval-episodes", "200"]
    assert session_commands("train", []) == [
        ["envport", "train", "tcgjax", "--target", t.name, "--seeds", "0", *every] for t in TARGETS
    ]
    # with arguments: the core's default (one `envport train` with them)
    assert session_commands("train", ["--steps", "1000"])[0][:3] == ["envport", "train", "tcgjax"]
