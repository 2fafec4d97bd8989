"""pong_port.side_by_side: both trainers' curves read by one rule (the one envport's trainer
reports its goal step by), the pairs matched in size and batch shape as stated, and a whole
side-by-side run with our trainer for real on a tiny config (PuffeRL stood in for); a slow
test runs both trainers for real, briefly."""

import dataclasses
import json
import random

import pytest

from envport.train.networks import count_params, widths_for
from envport.train.run import _GoalTracker
from pong_port import pufferl, side_by_side
from pong_port.train import PPO_SETTINGS, TARGETS


def _core_goal_step(points, goal, episodes):
    tracker = _GoalTracker(goal, episodes)
    for step, n, s in points:
        tracker.add(n, s, step)
    return tracker.reached_at


@pytest.mark.parametrize("seed", range(40))
def test_recent_means_reach_the_goal_where_envports_trainer_does(seed):
    rng = random.Random(seed)
    points, step = [], 0
    for _ in range(rng.randint(1, 30)):
        step += 131072
        n = rng.choice([0, 0, 3, 40, 60, 99, 100, 150, 400])
        points.append((step, n, n * rng.uniform(18.5, 21.0)))
    means = pufferl.recent_means(points, episodes=100)
    assert [s for s, _ in means] == [s for s, _, _ in points]
    assert pufferl.first_at_goal(means, 20.0) == _core_goal_step(points, 20.0, 100)


def test_recent_means_window():
    points = [(1, 60, 60 * -21.0), (2, 0, 0.0), (3, 50, 50 * 10.0), (4, 120, 120 * 20.5)]
    assert pufferl.recent_means(points) == [
        (1, None), (2, None), (3, pytest.approx((60 * -21.0 + 500) / 110)), (4, 20.5)]
    assert pufferl.first_at_goal(pufferl.recent_means(points)) == 4
    assert pufferl.first_at_goal(pufferl.recent_means(points), goal=20.6) is None


def test_steady_sps_skips_the_first_fifth():
    points = [(100, 50.0), (200, 51.0), (300, 52.0), (1000, 59.0)]
    assert pufferl.steady_sps(points) == pytest.approx((1000 - 200) / (59.0 - 51.0))
    assert pufferl.steady_sps(points, skip=0.0) == pytest.approx(900 / 9.0)
    assert pufferl.steady_sps([(100, 5.0)]) is None and pufferl.steady_sps([]) is None


def _ours_params(target):
    return count_params(8, 3, widths_for(target.config["policy"], 8, 3))


def test_pairs_match_in_size_and_batch_shape():
    ini = pufferl.sdist_ini_config()
    # PuffeRL's Serial vectoriser steps half of vec.num_envs (batch_size auto) x env.num_envs
    agents = ini["vec"]["num_envs"] // 2 * ini["env"]["num_envs"]
    assert agents == 2048
    for pair in side_by_side.PAIRS.values():
        c = pair.ours.config
        assert c["num_envs"] == agents and c["num_steps"] == ini["train"]["bptt_horizon"]
        assert c["num_envs"] * c["num_steps"] // c["num_minibatches"] == \
            ini["train"]["minibatch_size"]
        assert c["gamma"] == pytest.approx(ini["train"]["gamma"], abs=1e-3)
        assert c["total_steps"] == ini["train"]["total_timesteps"] == side_by_side.STEPS
        ours, theirs = _ours_params(pair.ours), pair.puffer.params()
        assert abs(ours - theirs) / theirs < 0.01, (pair.name, ours, theirs)
    assert side_by_side.PAIRS["lstm-size"].puffer == pufferl.PONG_INI_POLICY
    # the matched pair runs PuffeRL's update: its epochs, optimiser and learning rate
    matched, train = side_by_side.PAIRS["matched"], ini["train"]
    assert matched.puffer == pufferl.PONG_INI_POLICY
    assert matched.ours.config["update_epochs"] == train["update_epochs"] == 1
    assert matched.ours.config["optimizer"] == train["optimizer"] == "muon"
    assert matched.ours.config["learning_rate"] == pytest.approx(train["learning_rate"], rel=0.01)
    assert _ours_params(side_by_side.PAIRS["small"].ours) == _ours_params(TARGETS[0]) == 9_732
    # the default target is untouched: the side by side adds targets
    assert TARGETS[0].name == "frameskip=8" and TARGETS[0].config == PPO_SETTINGS


def test_budget_is_whole_updates_as_puffer_trains():
    assert side_by_side.budget(12_000_000, 131_072) == 92 * 131_072
    assert side_by_side.budget(262_144, 131_072) == 262_144


def _fake_puffer(sps_time):
    """pufferl.train's stand-in: a 3-log run whose steady SPS is 131072 / sps_time."""
    def train(steps, seed, out, policy):
        recs = [{"kind": "args", "args": {"policy_name": "Policy", "rnn_name": None}},
                {"kind": "trainer", "config": {"batch_size": 131072, "bptt_horizon": 64,
                                               "update_epochs": 1, "optimizer": "muon",
                                               "learning_rate": 0.0711},
                 "model_size": policy.params(), "total_agents": 2048, "segments": 2048,
                 "minibatch_size": 32768, "total_minibatches": 4, "total_epochs": 3}]
        for i, score in enumerate([-21.0, 20.5, 21.0], 1):
            recs.append({"kind": "log", "phase": "train", "step": i * 131072,
                         "logs": {"agent_steps": i * 131072, "uptime": 2.0 + i * sps_time,
                                  "environment/score": score},
                         "episodes": 100.0, "score_sum": 100 * score})
        recs.append({"kind": "done"})
        out.mkdir(parents=True)
        return {"steps_requested": steps, "seed": seed, "wall_time_s": 9.0,
                **pufferl.summarize(recs)}
    return train


def test_run_writes_the_table(tmp_path, monkeypatch):
    tiny = {**PPO_SETTINGS, "num_envs": 16, "num_steps": 8, "num_minibatches": 2,
            "update_epochs": 1, "policy": "8"}
    pair = side_by_side.Pair("tiny", dataclasses.replace(TARGETS[0], config=tiny),
                             pufferl.PufferPolicy(8, rnn=False), "a test pair")
    monkeypatch.setattr(pufferl, "train", _fake_puffer(sps_time=4.0))
    res = side_by_side.run([pair], [0, 1], steps=3 * 128 - 5, out=tmp_path, stamp="t")
    root = tmp_path / "pong" / "train"
    assert json.loads((root / "side-by-side.json").read_text()) == json.loads(json.dumps(res))
    entry = res["pairs"]["tiny"]
    runs = entry["runs"]
    assert [(r["trainer"], r["seed"]) for r in runs] == [
        ("ours", 0), ("pufferl", 0), ("ours", 1), ("pufferl", 1)]
    ours = runs[0]
    assert ours["steps"] == 3 * 128 and ours["batch"] == 128 and ours["minibatches"] == 2
    assert ours["params"] == count_params(8, 3, (8,)) and ours["sps_steady"] > 0
    assert (root / "t-tiny-s1" / "summary.json").exists()  # an ordinary envport run
    assert ours["goal_reached_at_step"] is None  # 384 steps learn nothing
    assert ours["goal_reached_at_step"] == ours["trainer_goal_reached_at_step"]
    puff = runs[1]
    assert puff["params"] == 8 * 13 + 4 and puff["sps_steady"] == pytest.approx(131072 / 4.0)
    assert puff["goal_reached_at_step"] == 2 * 131072 and puff["final_score"] == 21.0
    assert puff["run_dir"] == str(root / "t-tiny-s0-pufferl")
    s = entry["summary"]
    assert s["ours"]["seeds"] == s["pufferl"]["seeds"] == 2
    assert s["pufferl"]["reached"] == 2 and s["ours"]["reached"] == 0
    mid = sorted(r["sps_steady"] for r in runs if r["trainer"] == "ours")
    assert s["sps_steady_ratio"] == pytest.approx((mid[0] + mid[1]) / 2 / (131072 / 4.0))
    md = (root / "side-by-side.md").read_text()
    assert "| pufferl | 1 | 108 | 393,216 |" in md and "**tiny**: a test pair." in md
    assert "- ours: MLP 8 x2 (actor, critic), tanh = 180 parameters; 16 envs x 8 steps" in md
    assert "- pufferl: MLP 8 (PufferLib Default) = 108 parameters" in md
    assert f"ratio **{s['sps_steady_ratio']:.2f}x**" in md


def test_cli_rejects_unknown_pairs(capsys):
    with pytest.raises(SystemExit) as exc:
        side_by_side.main(["--pairs", "small,huge"])
    assert exc.value.code == 2 and "huge" in capsys.readouterr().err


@pytest.mark.slow
def test_both_trainers_for_real_briefly(tmp_path):
    res = side_by_side.run([side_by_side.PAIRS["small"]], [0], steps=2 * 131072, out=tmp_path)
    ours, puff = res["pairs"]["small"]["runs"]
    for r in (ours, puff):
        assert r["steps"] == 2 * 131072 and r["batch"] == 131072 and r["minibatches"] == 4
        assert r["sps"] > 0 and -21 <= r["final_score"] <= -15
    assert (ours["params"], puff["params"]) == (9_732, 9_728)
    assert puff["epochs"] == 1 and puff["optimizer"].startswith("Muon")
