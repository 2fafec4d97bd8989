import json
import time

import numpy as np
import pytest

from mjx_port import bench
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


def test_brax_anchor_builds_halfcheetah_with_the_port_s_action_size():
    """Brax (mjx-port[bench]) is installed and its MJX HalfCheetah takes 6 actions, as the
    port's does (no compile: the steppers' test is slow)."""
    env = bench._brax_env("HalfCheetah-v5")
    assert env.action_size == 6  # (observation_size would run an unjitted reset: a minute)


def _fake_rollout(n, fail_at=None):
    if fail_at is not None and n >= fail_at:
        raise MemoryError("fake")
    return (lambda k: time.sleep(2e-6 * k * n)), 0.5


def test_anchors_report_ratios_skips_and_files(tmp_path, monkeypatch):
    """The anchors' report on stand-in rollouts (no compile): port / each anchor per batch
    size, an anchor out of memory skipped at larger sizes, Gymnasium above its cap skipped,
    both files written; Gymnasium's stepper is the real one (cheap)."""
    monkeypatch.setattr(bench, "anchor_rollouts", lambda env_id: {
        "port": _fake_rollout, "mjx": lambda n: _fake_rollout(n, fail_at=2)})
    report = bench.run_anchors("HalfCheetah-v5", (1, 2), 0.02, ("port", "mjx", "gymnasium"),
                               gymnasium_max=1, out_dir=tmp_path, progress=False)
    one, two = report["rows"]
    assert one["port"]["sps"] > 0 and one["port"]["compile_s"] == 0.5
    assert set(one["ratios"]) == {"port/mjx", "port/gymnasium"}
    assert two["mjx"]["skipped"] == "out of memory at num_envs=2"
    assert two["gymnasium"]["skipped"] == "num_envs > 1" and set(two["ratios"]) == set()
    assert json.loads((tmp_path / "bench_anchors.json").read_text())["batch_sizes"] == [1, 2]
    md = (tmp_path / "bench_anchors.md").read_text()
    assert "| num_envs | port | mjx | gymnasium | port/mjx | port/gymnasium |" in md


def test_anchors_report_keeps_what_was_measured_when_stopped(tmp_path, monkeypatch):
    """An accelerator lease ends a run at its time limit: the files on disk already hold every
    measurement made before the stop (here an interrupt while measuring mjx at 2 envs)."""

    def mjx(n):
        if n == 2:
            raise KeyboardInterrupt  # the run is stopped here
        return _fake_rollout(n)

    monkeypatch.setattr(bench, "anchor_rollouts", lambda env_id: {"port": _fake_rollout,
                                                                  "mjx": mjx})
    with pytest.raises(KeyboardInterrupt):
        bench.run_anchors("HalfCheetah-v5", (1, 2), 0.02, ("port", "mjx"), out_dir=tmp_path,
                          progress=False)
    one, two = json.loads((tmp_path / "bench_anchors.json").read_text())["rows"]
    assert one["mjx"]["sps"] > 0 and set(one["ratios"]) == {"port/mjx"}
    assert two["port"]["sps"] > 0 and "mjx" not in two and two["ratios"] == {}
    md = (tmp_path / "bench_anchors.md").read_text().splitlines()
    assert md[-1].startswith("| 2 | ") and md[-1].endswith("| — | — |")


@pytest.mark.slow
@pytest.mark.parametrize("anchor", ["mjx", "mjx-c", "brax"])
def test_jitted_anchors_step(anchor):
    """Each jitted anchor compiles and steps (2 envs, 2 steps; 20-70 s a compile on CPU)."""
    steps, compile_s = bench.anchor_rollouts("HalfCheetah-v5")[anchor](2)
    assert compile_s > 0
    steps(2)

