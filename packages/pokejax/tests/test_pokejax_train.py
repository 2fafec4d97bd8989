"""Training smoke: PPO runs on pokejax's training targets (legal mask applied) and resumes
exactly; the win score counts wins only."""

import jax.numpy as jnp
import numpy as np

from envport import TimeStep
from envport.train import PPOConfig, check_resume
from envport.train.run import TrainRun, read_metrics, train
from pokejax.train import TARGETS, won


def test_ppo_runs_and_resumes_on_pokejax(tmp_path):
    target = TARGETS[0]
    tiny = {**target.config, "num_envs": 8, "num_steps": 8, "total_steps": 8 * 8 * 2,
            "policy": "16"}
    rows = check_resume("pokejax", target, PPOConfig.from_dict(tiny), tmp_path)
    assert all(np.isfinite(r["loss"]) for r in rows)


def test_self_play_runs_on_both_sides_of_battles(tmp_path):
    target = next(t for t in TARGETS if t.name == "self-play")
    tiny = {**target.config, "num_envs": 8, "num_steps": 8, "total_steps": 8 * 8 * 2,
            "policy": "16"}
    summary = train(TrainRun("pokejax", target, PPOConfig.from_dict(tiny), tmp_path / "sp",
                             progress=False, eval_episodes=4))
    rows, evals = read_metrics(tmp_path / "sp")
    assert summary["finished"] and all(np.isfinite(r["loss"]) for r in rows)
    assert sorted(evals[-1]["eval"]) == ["vs greedy", "vs random"]  # the single-agent views


def test_the_score_is_a_win():
    ts = lambda r, end=True: TimeStep(0, jnp.float32(r), end, False)  # noqa: E731
    assert [float(won(ts(r))) for r in (1.0, -1.0, 0.0)] == [1.0, 0.0, 0.0]
    # with the HP shaping: a win's last step stays above 1/2, a tie's below; damage dealt on a
    # step that does not end the battle is no win
    assert [float(won(ts(r))) for r in (1 - 1 / 3, 1 / 3, -1 + 1 / 3)] == [1.0, 0.0, 0.0]
    assert float(won(ts(1 / 6, end=False))) == 0.0


def test_train_session_trains_against_greedy_then_evaluates_that_run():
    from envport.sessions import commands
    from pokejax.port import PORT

    train_cmd, evaluate_cmd = commands(PORT, "train")
    run_id = train_cmd[train_cmd.index("--run-id") + 1]
    assert train_cmd[:5] == ["envport", "train", "pokejax", "--target", "vs-greedy"]
    assert evaluate_cmd == ["envport", "evaluate", "pokejax", run_id, "--episodes", "2000"]
    assert commands(PORT, "train", ["--steps", "10"]) == [
        ["envport", "train", "pokejax", "--steps", "10"]]
    greedy = next(t for t in TARGETS if t.name == "vs-greedy")
    assert greedy.make_env().hp_weight == 1 / 6 and TARGETS[0].make_env().hp_weight == 0.0
