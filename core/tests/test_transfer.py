"""L4 with trained policies (envport.train.transfer), on the corridor: a JAX env as the port,
a numpy backend of the same task as the reference. Policies are trained in both directions,
stored, reused, and a planted gap fails the test."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from numpy_corridor import NumpyCorridor

from envport import verify
from envport.errors import EnvportError
from envport.registry import EnvPort, PolicyTransfer, TrainTarget
from envport.toy import Corridor
from envport.train import transfer as tr
from envport.train.host import evaluate_backend

LENGTH = 6


def step_cost(ts):
    """The score: 1 at the goal, -0.1 per step, so a faster walk scores more."""
    return ts.reward - 0.1


TARGET = TrainTarget(name="walk right", make_env=lambda: Corridor(length=LENGTH), score=step_cost,
                     score_name="1 - 0.1 x steps", config={
                         "num_envs": 16, "num_steps": 32, "total_steps": 16 * 32 * 12,
                         "policy": "32,32", "learning_rate": 3e-3})

TRANSFER = PolicyTransfer(
    name="corridor PPO", target="walk right", make_reference=lambda n: NumpyCorridor(n, LENGTH),
    margin=0.1, margin_note="a tenth of the score of one step saved per episode",
    seeds=(0, 1), episodes=300, reference_train={}, max_steps=200)


def port(transfer: PolicyTransfer = TRANSFER) -> EnvPort:
    return EnvPort(name="corridor", reference="numpy corridor", candidate="envport.toy.Corridor",
                   install_reference=lambda: None, check_reference=lambda: None,
                   train=[TARGET], transfer=[transfer])


def l4(report: dict) -> tuple[dict, list[dict]]:
    return report["levels"]["L4"], report["details"]["L4"]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("transfer")
    return out, verify.run(port(), out_dir=out, levels=["L4"], progress=False)


def test_trained_policies_transfer_in_both_directions(first_run):
    out, report = first_run
    level, details = l4(report)
    assert level["suites"] == 4 and level["equivalent"] is True
    assert [(d["policy"]["direction"], d["policy"]["seed"]) for d in details] == [
        ("port", 0), ("port", 1), ("reference", 0), ("reference", 1)]
    for d in details:
        assert d["n_reference"] == d["n_candidate"] == 300
        assert d["margin"] == 0.1 and d["note"].startswith("a tenth")
        # trained: the walk is near the shortest (mean start 2 cells away: score ~0.7)
        assert d["reference_mean"] > 0.5 and d["candidate_mean"] > 0.5
        stored = json.loads((out / "corridor" / "train" / d["policy"]["run_dir"].split("/")[-1]
                             / "policy.json").read_text())
        assert stored["direction"] == d["policy"]["direction"]
        assert stored["policy_params"] == d["policy"]["policy_params"] > 0
    written = json.loads((out / "corridor" / "verify.json").read_text())
    assert [d["policy"]["run_dir"] for d in written["details"]["L4"]] == [
        d["policy"]["run_dir"] for d in details]
    assert "policy trained on the reference, seed 1* policy" in (
        out / "corridor" / "verify.md").read_text()


def test_stored_policies_are_reused_not_retrained(first_run, monkeypatch):
    out, report = first_run

    def no_training(*a, **k):
        raise AssertionError("a stored policy was trained again")

    monkeypatch.setattr(tr, "train", no_training)
    again = verify.run(port(), out_dir=out, levels=["L4"], progress=False)
    assert [d["reference_mean"] for d in l4(again)[1]] == [
        d["reference_mean"] for d in l4(report)[1]]  # same policies, same seeds


def test_a_stored_policy_is_only_reused_by_the_env_it_was_trained_for():
    """The stored policy's folder is keyed by the env's spec too: an env whose observation
    changed (a longer corridor: a wider one-hot) trains its own policies instead of loading
    parameters of the wrong shape."""
    config = tr.policy_config(TARGET, TRANSFER, "port", 0)
    same = [tr.policy_dir(Path("r"), "corridor", TARGET, config, "port", Corridor(LENGTH).spec)
            for _ in range(2)]
    longer = tr.policy_dir(Path("r"), "corridor", TARGET, config, "port", Corridor(LENGTH + 1).spec)
    assert same[0] == same[1] != longer


def test_a_planted_gap_fails_l4(first_run):
    """The port slips: half of its moves do nothing, so walks take longer on it."""
    out, _ = first_run
    planted = dataclasses.replace(TRANSFER, make_candidate_env=lambda: Corridor(LENGTH, slip=0.5),
                                  reference_train=None)
    level, details = l4(verify.run(port(planted), out_dir=out, levels=["L4"], progress=False))
    assert level["equivalent"] is False
    assert all(not d["equivalent"] and d["difference"] < -0.1 for d in details)


def test_a_transfers_own_score_is_what_l4_compares(first_run):
    """``PolicyTransfer.score`` replaces the target's in both evaluations (here the episode's
    length in steps), with the same stored policies."""
    out, report = first_run
    length = dataclasses.replace(TRANSFER, score=lambda ts: ts.reward * 0 + 1,
                                 metric="steps", margin=1.0,
                                 reference_train=None)
    level, details = l4(verify.run(port(length), out_dir=out, levels=["L4"], progress=False))
    by_score = {d["policy"]["seed"]: d for d in l4(report)[1] if d["policy"]["direction"] == "port"}
    assert level["suites"] == 2 and level["equivalent"] is True
    for d in details:
        # walks of 1..LENGTH steps; the target's score of the same walks is 1 - 0.1 x steps
        assert 1 <= d["reference_mean"] <= 2 * LENGTH and d["metric"] == "steps"
        assert d["reference_mean"] == pytest.approx(
            (1 - by_score[d["policy"]["seed"]]["reference_mean"]) / 0.1, abs=1e-3)


def test_the_backend_evaluator_counts_first_episodes_only(first_run):
    out, _ = first_run
    p = tr.ensure_policy(port(), TRANSFER, "port", 0, out, progress=False)
    ended = []
    scores = evaluate_backend(p.ppo, p.params, NumpyCorridor(50, LENGTH), seed=3,
                              score=step_cost, progress=ended.append)
    assert scores.shape == (50,) and sum(ended) == 50
    # a first episode: 1 - 0.1 x its steps, at least one step and at most the cap
    steps = np.round((1 - scores) / 0.1)
    assert np.all(steps >= 1) and np.all(steps <= 200)
    np.testing.assert_allclose(scores, 1 - 0.1 * steps, atol=1e-5)


def test_a_transfer_naming_no_target_is_refused(tmp_path):
    bad = dataclasses.replace(TRANSFER, target="walk left")
    with pytest.raises(EnvportError, match="names training target 'walk left'.*walk right"):
        verify.run(port(bad), out_dir=tmp_path, levels=["L4"], progress=False)
    assert not (tmp_path / "corridor").exists()  # refused before anything was written


# -- a port that is a numpy backend: trained and evaluated through the host loop -------------

class SlipperyCorridor(NumpyCorridor):
    """The planted gap of a backend port: each move does nothing with probability ``slip``."""

    name = "slippery-numpy-corridor"

    def __init__(self, num_envs: int, length: int = LENGTH, slip: float = 0.5):
        super().__init__(num_envs, length)
        self.slip = slip

    def step(self, actions):
        actions = np.asarray(actions)
        slipped = self.rng.random(self.num_envs) < self.slip
        return super().step(np.where(slipped, 1, actions))


HOST_TARGET = dataclasses.replace(TARGET, name="walk right on the host", make_env=None,
                                  make_backend=lambda n: NumpyCorridor(n, LENGTH))
HOST_TRANSFER = dataclasses.replace(TRANSFER, name="host corridor PPO",
                                    target="walk right on the host")


def host_port(transfer: PolicyTransfer = HOST_TRANSFER, target: TrainTarget = HOST_TARGET):
    return dataclasses.replace(port(transfer), train=[target])


@pytest.fixture(scope="module")
def host_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("host-transfer")
    return out, verify.run(host_port(), out_dir=out, levels=["L4"], progress=False)


def test_a_backend_port_trains_and_plays_through_the_host_loop(host_run):
    out, report = host_run
    level, details = l4(report)
    assert level["suites"] == 4 and level["equivalent"] is True, details
    assert [(d["policy"]["direction"], d["policy"]["seed"]) for d in details] == [
        ("port", 0), ("port", 1), ("reference", 0), ("reference", 1)]
    for d in details:
        assert d["n_reference"] == d["n_candidate"] == 300
        assert d["reference_mean"] > 0.5 and d["candidate_mean"] > 0.5  # trained
        run_dir = out / "corridor" / "train" / d["policy"]["run_dir"].split("/")[-1]
        config = json.loads((run_dir / "config.json").read_text())
        # both directions on the host loop, the port's on the target's backend (no JAX env)
        assert config["devices"][-1] == "host: numpy-corridor"
        assert config["target"] == "walk right on the host"


def test_a_planted_slip_in_a_backend_port_fails_l4(host_run, monkeypatch):
    out, _ = host_run

    def no_training(*a, **k):
        raise AssertionError("a stored policy was trained again")

    monkeypatch.setattr(tr, "train", no_training)  # the same policies, played on the gap
    planted = dataclasses.replace(HOST_TRANSFER, make_candidate_backend=SlipperyCorridor)
    level, details = l4(verify.run(host_port(planted), out_dir=out, levels=["L4"],
                                   progress=False))
    assert level["suites"] == 4 and level["equivalent"] is False
    for d in details:
        assert not d["equivalent"] and d["difference"] < -0.1, d
        assert d["reference_mean"] > 0.5  # the reference side is still the honest corridor


def test_a_transfer_needs_one_port_side(tmp_path):
    both = dataclasses.replace(HOST_TRANSFER, make_candidate_backend=SlipperyCorridor,
                               make_candidate_env=lambda: Corridor(LENGTH, slip=0.5))
    with pytest.raises(EnvportError, match="both make_candidate_env and make_candidate_backend"):
        verify.run(host_port(both), out_dir=tmp_path, levels=["L4"], progress=False)
    nothing = dataclasses.replace(HOST_TARGET, make_backend=None)
    with pytest.raises(EnvportError, match="neither make_env .* nor make_backend"):
        verify.run(host_port(target=nothing), out_dir=tmp_path, levels=["L4"], progress=False)
    assert not (tmp_path / "corridor").exists()  # refused before anything was written


# -- a float32 env in an x64 process: TrainTarget.x64 -----------------------------------------

class Float32Corridor(Corridor):
    """The corridor as a float32-only env (as MJX in float32 is): building or tracing it under
    x64 fails (MJX sizes its model's arrays when the env is built)."""

    def __init__(self, *a, **k):
        self._check()
        super().__init__(*a, **k)

    def _check(self):
        import jax

        if jax.config.jax_enable_x64:
            raise EnvportError("Float32Corridor traced under jax_enable_x64")

    def reset(self, key):
        self._check()
        return super().reset(key)

    def step(self, state, action):
        self._check()
        return super().step(state, action)


def x64_port(x64):
    target = dataclasses.replace(TARGET, make_env=lambda: Float32Corridor(length=LENGTH),
                                 x64=x64)
    return dataclasses.replace(port(dataclasses.replace(TRANSFER, seeds=(0,),
                                                        reference_train=None)), train=[target])


def test_a_float32_target_trains_and_plays_in_an_x64_process(tmp_path):
    import jax

    with jax.enable_x64(True):  # as a port's verify turns it on for its float64 candidate
        with pytest.raises(EnvportError, match="traced under jax_enable_x64"):
            verify.run(x64_port(None), out_dir=tmp_path / "as-is", levels=["L4"], progress=False)
        level, details = l4(verify.run(x64_port(False), out_dir=tmp_path / "x32", levels=["L4"],
                                       progress=False))
        assert jax.config.jax_enable_x64  # the process's setting is back after the suite
    assert level["suites"] == 1 and level["equivalent"] is True, details
    assert details[0]["candidate_mean"] > 0.5  # trained, and played on the float32 env
