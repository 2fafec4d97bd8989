"""envport overhead: the replay update is the env update without the env; reports; refusals."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from envport import cli
from envport.registry import TrainTarget
from envport.toy import Corridor
from envport.train import PPO, count_params, memory, overhead
from envport.wrappers import EpisodeLimitWrapper


def corridor():
    # short episodes, so that the rollout has terminations and truncations (the bootstrap)
    return EpisodeLimitWrapper(Corridor(length=6, slip=0.1), 6)


TARGET = TrainTarget(name="corridor", make_env=corridor)


def test_the_replay_update_computes_the_env_update():
    cfg = overhead.size_config(TARGET, "16x16", num_envs=8, num_steps=16, updates=1)
    ppo = PPO(corridor(), cfg)
    start = ppo.init()
    data = overhead.record(ppo, start)
    ts, final_obs = data
    assert ts.obs.shape == (16, 8, 6) and final_obs.shape == (16, 8, 6)
    assert np.asarray(ts.truncated).any() and np.asarray(ts.terminated).any()

    replay = overhead.replay_runner(start, data)
    real, m_real = ppo.update(overhead._copy(start))
    rep, m_rep = overhead.replay_ppo(ppo).update(replay)
    # the same transitions, actions, episodes, losses and new parameters
    assert {k: float(v) for k, v in m_real.items()} == pytest.approx(
        {k: float(v) for k, v in m_rep.items()}, rel=1e-6, abs=1e-7)
    assert int(m_real["episodes"]) > 0
    for a, b in zip(jax.tree.leaves(real.params), jax.tree.leaves(rep.params), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(np.asarray(real.key), np.asarray(rep.key))
    assert int(rep.env_state.t) == cfg.num_steps  # it stepped through the whole recording


def test_a_report_with_a_size_that_does_not_fit(tmp_path, monkeypatch):
    # 1 GiB "available": the 16x16 policy fits, 200M (~10 GiB for the two updates) does not
    monkeypatch.setattr(memory, "available_bytes", lambda device=None: 2**30)
    report = overhead.run_overhead(
        "corridor", TARGET, ["16x16", "200M"], num_envs=8, num_steps=8, updates=1,
        min_seconds=0.01, max_seconds=5, out=tmp_path, progress=False, phases=False)
    small, big = report["sizes"]
    assert small["status"] == "ok" and small["params"] == count_params(6, 3, (16, 16)) == 836
    assert small["t_env"]["timed"] >= 1 and small["t_replay"]["timed"] >= 1
    assert -1.0 < small["share"] < 1.0  # noise can take a tiny env's share below 0
    assert small["share"] == pytest.approx(
        1 - small["t_replay"]["median_s"] / small["t_env"]["median_s"])
    assert big["status"] == "did not fit" and big["estimate_gib"] > 1
    assert "needs about" in big["reason"] and "t_env" not in big

    out = tmp_path / "corridor" / "overhead"
    stored = json.loads((out / "overhead.json").read_text())
    assert stored["batch"] == 64 and stored["hardware"]["cpu_count"] >= 1
    assert stored["env_only"]["sps"] > 0 and len(stored["sizes"]) == 2
    md = (out / "overhead.md").read_text()
    assert "| 16x16 | 836 | 16x16 |" in md and "| 200M |" in md and "did not fit" in md
    assert (out / "overhead.png").exists()


def test_cli_refuses_unknown_presets_and_targets(capsys):
    assert cli.main(["overhead", "pong", "--sizes", "0.1M,3M", "--out", "/nonexistent/x"]) == 2
    assert "unknown policy '3M'" in capsys.readouterr().err
    assert cli.main(["overhead", "pong", "--target", "nope"]) == 2
    assert "unknown training target 'nope'" in capsys.readouterr().err
    assert cli.main(["overhead", "no-such-env"]) == 2
    assert "unknown env 'no-such-env'" in capsys.readouterr().err
