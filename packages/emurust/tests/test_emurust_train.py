"""emurust's training targets (emurust.train): the VecEnv and PyBoy backends play the same task
step for step, PPO runs on each through the host loop, wrong actions are refused, and the
comparison report is written."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest

from envport.errors import ActionError, EnvportError

pytestmark = pytest.mark.usefixtures("built_roms")


@pytest.fixture(scope="module")
def pair(pyboy_ref):
    """A VecEnv and a PyBoy backend of 6 envs (PyBoy in 2 processes), episodes truncated at 60
    steps so that a short sequence sees both kinds of episode end."""
    from emurust.train import PyBoyBackend, VecEnvBackend

    vec = VecEnvBackend(6, max_steps=60)
    ref = PyBoyBackend(6, workers=2, max_steps=60)
    yield vec, ref
    ref.close()
    vec.close()


def test_start_state_is_a_new_game(pair):
    from emurust.train import features

    for backend in pair:
        obs = backend.reset(0)
        raw = backend.state()["ram"]
        # paddle x 72, first block at x 102, y 24 (just spawned), speed 1
        assert raw.tolist() == [[72, 102, 24, 1]] * 6
        np.testing.assert_array_equal(obs, features(raw))
        assert obs.dtype == np.float32 and obs.shape == (6, 4)


def test_backends_agree_on_a_fixed_action_sequence(pair):
    vec, ref = pair
    rng = np.random.default_rng(7)
    np.testing.assert_array_equal(vec.reset(0), ref.reset(0))
    ends = {"terminated": 0, "truncated": 0, "reward": 0.0}
    for t in range(400):
        actions = rng.integers(0, 3, 6)
        a, b = vec.step(actions), ref.step(actions)
        for field in a._fields:
            x, y = getattr(a, field), getattr(b, field)
            assert x.dtype == y.dtype and x.shape == y.shape, field
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}: {field}")
        ends["terminated"] += int(a.terminated.sum())
        ends["truncated"] += int(a.truncated.sum())
        ends["reward"] += float(a.reward.sum())
    # the sequence covers catches, misses (reset to the start state) and truncations
    assert ends["terminated"] > 10 and ends["truncated"] > 0 and ends["reward"] > 0, ends
    for k, v in vec.state().items():
        np.testing.assert_array_equal(v, ref.state()[k], err_msg=k)


@pytest.mark.parametrize("bad, match", [
    (np.array([0, 1, 2, 3, 0, 0]), "out of range"),
    (np.array([0, 1, -1, 0, 0, 0]), "out of range"),
    (np.zeros(5, np.int64), "shape"),
    (np.zeros(6, np.float32), "integers"),
])
def test_wrong_actions_are_refused(pair, bad, match):
    for backend in pair:
        backend.reset(0)
        with pytest.raises(ActionError, match=match):
            backend.step(bad)
    # still usable afterwards, and still in lockstep
    a, b = (backend.step(np.full(6, 2)) for backend in pair)
    np.testing.assert_array_equal(a.obs, b.obs)


def test_step_before_reset_is_refused(pyboy_ref):
    from emurust.train import PyBoyBackend, VecEnvBackend

    with VecEnvBackend(1) as vec, PyBoyBackend(1) as ref:
        for backend in (vec, ref):
            with pytest.raises(RuntimeError, match="reset"):
                backend.step(np.zeros(1, np.int64))


def test_a_dead_worker_is_reported(pyboy_ref):
    from emurust.train import PyBoyBackend

    ref = PyBoyBackend(2, workers=2)
    try:
        ref.reset(0)
        os.kill(ref._procs[1].pid, signal.SIGKILL)
        ref._procs[1].join(timeout=10)
        with pytest.raises(EnvportError, match="exited"):
            ref.step(np.zeros(2, np.int64))
    finally:
        ref.close()


def test_targets_are_registered():
    from envport import registry

    port = registry.get("emurust")
    assert [t.name for t in port.train] == ["game.gb", "game.gb on PyBoy"]
    assert all(t.make_env is None and t.make_backend is not None for t in port.train)
    assert port.train[0].config == port.train[1].config


def test_ppo_runs_on_both_and_the_comparison_is_written(tmp_path, pyboy_ref):
    from emurust import train as et
    from envport.train import ppo, run

    settings = {**et.PPO_SETTINGS, "num_envs": 4, "num_steps": 16, "total_steps": 128,
                "num_minibatches": 2}
    cfg = ppo.PPOConfig.from_dict(settings).check()
    root = run.run_root(tmp_path, "emurust")
    for target, run_id in zip(et.TARGETS, ("v", "p"), strict=True):
        summary = run.train(run.TrainRun("emurust", target, cfg, root / run_id, progress=False))
        assert summary["finished"] and summary["updates"] == 2
        assert summary["env_steps"] == 128 and summary["sps_median"] > 0
        assert json.loads((root / run_id / "config.json").read_text())["loop"] == "host"
    # the backends agree step for step, so the same seed trains the same policy on both
    rows = {rid: [{k: v for k, v in r.items() if k not in ("wall_s", "sps")}
                  for r in run.read_metrics(root / rid)[0]] for rid in ("v", "p")}
    assert rows["v"] == rows["p"]
    assert (root / "v" / "checkpoint.msgpack").read_bytes() == \
        (root / "p" / "checkpoint.msgpack").read_bytes()
    rep = et.compare(tmp_path, "v", "p", random_episodes_per_env=1, eval_episodes=4,
                     interleaved_rounds=1)
    for name in ("comparison.json", "comparison.md"):
        assert (root / name).is_file()
    got = json.loads((root / "comparison.json").read_text())
    assert got["sps_ratio"] == pytest.approx(rep["sps_ratio"]) and got["sps_ratio"] > 0
    assert got["random_policy"]["episodes"] == 64
    assert {s: len(r) for s, r in got["runs"].items()} == {"emurust VecEnv": 1,
                                                          "PyBoy processes": 1}
    assert "PPO SPS ratio" in (root / "comparison.md").read_text()
    with pytest.raises(EnvportError, match="no training run"):
        et.compare(tmp_path, "missing", "p")
