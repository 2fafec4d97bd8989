"""envport.train: PPO learns, resumes exactly, refuses what it cannot run."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy_corridor import NumpyCorridor

from envport import Box, Env, EnvSpec, TimeStep, cli
from envport.errors import EnvportError
from envport.registry import TrainTarget
from envport.toy import Corridor
from envport.train import PPO, PRESETS, PPOConfig, count_params, evaluate, run, widths_for
from envport.train.host import BackendOutputError, HostPPO
from envport.train.memory import PolicyTooLargeError, check_fits, estimate_bytes
from envport.train.networks import PolicyPresetError, tree_size
from envport.train.ppo import TrainConfigError, summarize
from envport.train.run import ResumeMismatchError, RunExistsError, TrainRun, read_metrics, train
from envport.wrappers import EpisodeLimitWrapper

SMALL = PPOConfig(num_envs=16, num_steps=32, total_steps=16 * 32 * 3, policy="16,16",
                  learning_rate=3e-3)


def corridor():
    return EpisodeLimitWrapper(Corridor(length=6, slip=0.1), 30)


def corridor_target(**kw) -> TrainTarget:
    return TrainTarget(name="corridor", make_env=corridor, goal=0.9, goal_episodes=20, **kw)


class Aim(NamedTuple):
    x: jax.Array
    key: jax.Array


class AimEnv(Env):
    """One-step episodes: observe x in [-1, 1], act a in [-1, 1], reward -(a - x)^2."""

    @property
    def spec(self):
        return EnvSpec("test/Aim", "v0", Box(-1.0, 1.0, (1,)), Box(-1.0, 1.0, (1,)))

    def reset(self, key):
        key, sub = jax.random.split(key)
        x = jax.random.uniform(sub, (1,), minval=-1.0, maxval=1.0)
        return Aim(x, key), TimeStep(x, jnp.float32(0), jnp.bool_(False), jnp.bool_(False))

    def step(self, state, action):
        reward = -jnp.sum((action - state.x) ** 2)
        return state, TimeStep(state.x, reward, jnp.bool_(True), jnp.bool_(False))


@pytest.mark.parametrize("optimizer,lr,shuffle",
                         [("adam", 3e-3, "steps"), ("muon", 0.02, "steps"), ("adam", 3e-3, "rows")])
def test_ppo_learns_the_corridor(optimizer, lr, shuffle):
    cfg = PPOConfig(num_envs=16, num_steps=32, total_steps=16 * 32 * 25, policy="32,32",
                    learning_rate=lr, optimizer=optimizer, shuffle=shuffle)
    ppo = PPO(corridor(), cfg)
    r = ppo.init()
    first = None
    for _ in range(cfg.num_updates):
        r, m = ppo.update(r)
        first = first if first is not None else float(m["length_sum"] / m["episodes"])
    scores = evaluate(ppo, r.params, Corridor(length=6), 64, seed=1, greedy=True, max_steps=30)
    assert np.all(scores == 1.0)  # every greedy episode reaches the goal
    assert float(m["length_sum"] / m["episodes"]) < first  # and sooner than at the start


def test_evaluate_compiles_once_per_env_and_uses_the_params_it_is_given():
    """Periodic evaluations of one env reuse one compiled player (the parameters are its
    argument, not constants of the program); each call still plays the parameters it got."""
    from envport.train.evaluate import _player

    ppo, env = PPO(AimEnv(), SMALL), AimEnv()  # scores are rewards that depend on the params
    first, second = ppo.init().params, ppo.init(seed=1).params
    _player.cache_clear()
    a = evaluate(ppo, first, env, 32, seed=3, greedy=True)
    b = evaluate(ppo, second, env, 32, seed=3, greedy=True)
    info = _player.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    _player.cache_clear()
    np.testing.assert_array_equal(evaluate(ppo, second, env, 32, seed=3, greedy=True), b)
    np.testing.assert_array_equal(evaluate(ppo, first, AimEnv(), 32, seed=3, greedy=True), a)
    assert not np.array_equal(a, b)  # the two policies differ: a stale program would not


def test_legal_mask_is_never_broken():
    ppo = PPO(corridor(), SMALL)
    params = ppo.init().params
    obs = jnp.zeros((512, 6)).at[:, 0].set(1.0)
    mask = jnp.tile(jnp.array([False, True, True]), (512, 1))
    acts = ppo.act(params, obs, mask, jax.random.PRNGKey(0))
    assert not np.any(np.asarray(acts) == 0)
    only = jnp.tile(jnp.array([True, False, False]), (512, 1))
    assert np.all(np.asarray(ppo.act(params, obs, only, jax.random.PRNGKey(1))) == 0)


def test_continuous_actions_learn_and_stay_in_the_box():
    cfg = PPOConfig(num_envs=64, num_steps=8, total_steps=64 * 8 * 40, policy="32,32",
                    learning_rate=3e-3, gamma=0.0, ent_coef=0.0)
    ppo = PPO(AimEnv(), cfg)
    r = ppo.init()
    rewards = []
    for _ in range(cfg.num_updates):
        r, m = ppo.update(r)
        rewards.append(float(m["return_sum"] / m["episodes"]))
    assert np.mean(rewards[-5:]) > 2 * np.mean(rewards[:3])  # the error shrinks
    acts = ppo.act(r.params, jnp.linspace(-1, 1, 200)[:, None], jnp.ones((200, 1), bool),
                   jax.random.PRNGKey(0))
    assert acts.shape == (200, 1) and float(jnp.abs(acts).max()) <= 1.0


def test_presets_hit_their_parameter_counts():
    for name, target in PRESETS.items():
        widths = widths_for(name, 100, 9)
        assert abs(count_params(100, 9, widths) - target) / target < 0.05, name
    ppo = PPO(corridor(), PPOConfig(policy="0.1M"))
    exact = count_params(ppo.obs_dim, ppo.action_dim, ppo.widths)
    assert tree_size(jax.eval_shape(ppo.init_params, jax.random.PRNGKey(0))) == exact
    with pytest.raises(PolicyPresetError, match="unknown policy '3M'"):
        widths_for("3M", 10, 3)


def test_memory_check_refuses_before_allocating():
    cfg = PPOConfig(num_envs=4096, num_steps=128, policy="200M")
    widths = widths_for("200M", 100, 9)
    need = estimate_bytes(cfg, 100, 9, widths)
    assert need > 6 * 200_000_000 * 4  # at least the parameters, gradients and Adam state
    with pytest.raises(PolicyTooLargeError, match=r"policy 200M .* needs about .* GiB"):
        check_fits(need, "200M", 200_000_000, available=2**30)
    check_fits(10, "0.1M", 100_000, available=2**30)


def test_bad_configs_are_refused():
    with pytest.raises(TrainConfigError, match="does not split into 3 minibatches"):
        PPOConfig(num_envs=16, num_steps=32, num_minibatches=3).check()
    with pytest.raises(TrainConfigError, match="unknown PPO setting"):
        PPOConfig.from_dict({"learnin_rate": 1.0})
    with pytest.raises(TrainConfigError, match="unknown optimizer 'sgd'; choose from adam, muon"):
        PPOConfig(optimizer="sgd").check()
    with pytest.raises(TrainConfigError, match="unknown shuffle 'env'; choose from steps, rows"):
        PPOConfig(shuffle="env").check()


def test_rows_shuffle_keeps_each_envs_steps_together():
    cfg = PPOConfig(num_envs=8, num_steps=5, num_minibatches=4, shuffle="rows")
    ppo = PPO(corridor(), cfg)
    perm = np.asarray(ppo._shuffle(jax.random.PRNGKey(3), (5, 8)))
    assert sorted(perm) == list(range(40))  # every transition once
    for mb in perm.reshape(4, 10):  # the flat rollout is [step, env]: index = step * 8 + env
        env, step = mb % 8, mb // 8
        # two whole env rows per minibatch, each with its steps in order
        assert len(set(env[:5])) == 1 and len(set(env[5:])) == 1 and env[0] != env[5]
        assert list(step) == [0, 1, 2, 3, 4] * 2
    assert len({tuple(np.asarray(ppo._shuffle(jax.random.PRNGKey(k), (5, 8))))
                for k in range(4)}) > 1  # the order depends on the key


def _rows(run_dir: Path) -> list[dict]:
    rows, _ = read_metrics(run_dir)
    return [{k: v for k, v in r.items() if k not in ("wall_s", "sps")} for r in rows]


@pytest.mark.parametrize("optimizer", ["adam", "muon"])
def test_resume_continues_exactly(tmp_path, optimizer):
    target, cfg = corridor_target(), dataclasses.replace(SMALL, optimizer=optimizer)
    whole = tmp_path / "corridor/train/whole"
    train(TrainRun("corridor", target, cfg, whole, progress=False))
    part = tmp_path / "corridor/train/part"
    first = train(TrainRun("corridor", target, cfg, part, progress=False, stop_after=2))
    assert not first["finished"] and (part / "checkpoint.msgpack").exists()
    done = train(TrainRun("corridor", target, cfg, part, progress=False), resume=True)
    assert done["finished"] and done["updates"] == 3
    assert _rows(part) == _rows(whole)  # the resumed update equals the uninterrupted one
    assert (whole / "curve.png").exists() and json.loads((whole / "config.json").read_text())[
        "policy_params"] == count_params(6, 3, (16, 16))


def test_runs_are_never_overwritten_and_resume_checks_the_config(tmp_path):
    target = corridor_target()
    run_dir = tmp_path / "corridor/train/r"
    train(TrainRun("corridor", target, SMALL, run_dir, progress=False, stop_after=1))
    before = (run_dir / "metrics.jsonl").read_text()
    with pytest.raises(RunExistsError, match="exists"):
        train(TrainRun("corridor", target, SMALL, run_dir, progress=False))
    other = PPOConfig(**{**SMALL.to_dict(), "learning_rate": 1e-3})
    with pytest.raises(ResumeMismatchError, match="its config is"):
        train(TrainRun("corridor", target, other, run_dir, progress=False), resume=True)
    renamed = TrainTarget(name="other", make_env=corridor)
    with pytest.raises(ResumeMismatchError, match="its target is 'corridor'"):
        train(TrainRun("corridor", renamed, SMALL, run_dir, progress=False), resume=True)
    assert (run_dir / "metrics.jsonl").read_text() == before


def test_envport_runs_lists_training_runs(tmp_path, capsys):
    train(TrainRun("corridor", corridor_target(), SMALL, tmp_path / "corridor/train/listed",
                   progress=False, stop_after=1))
    assert cli.main(["runs", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "corridor  listed  train corridor  policy=16,16" in out and "updates=1/3" in out


def test_evaluation_envs_are_played_as_training_goes(tmp_path):
    target = corridor_target(evaluate={"no slip": lambda: Corridor(length=6)})
    run_dir = tmp_path / "corridor/train/e"
    train(TrainRun("corridor", target, SMALL, run_dir, progress=False, eval_every=2,
                   eval_episodes=16))
    _, evals = read_metrics(run_dir)
    assert [e["update"] for e in evals] == [2, 3]
    assert evals[0]["eval"]["no slip"]["episodes"] == 16


def test_a_finished_run_is_evaluated_on_its_evaluation_envs(tmp_path, capsys):
    """``envport evaluate``'s work: the checkpointed policy, many episodes per env, sampled and
    most likely actions, each with a CI, in the run's evaluation.json; the trained corridor
    walker reaches the goal of the unslippery corridor every time with its best actions."""
    target = corridor_target(evaluate={"no slip": lambda: EpisodeLimitWrapper(Corridor(length=6), 30)})
    run_dir = tmp_path / "corridor/train/ev"
    train(TrainRun("corridor", target, dataclasses.replace(SMALL, total_steps=16 * 32 * 12), run_dir,
                   progress=False))
    report = run.evaluate_run(run_dir, target, episodes=40, seed=3)
    assert json.loads((run_dir / "evaluation.json").read_text()) == report
    assert report["env_steps"] == 16 * 32 * 12 and sorted(report["results"]) == ["no slip"]
    modes = report["results"]["no slip"]
    assert sorted(modes) == ["argmax", "sample"] and modes["argmax"]["episodes"] == 40
    assert modes["argmax"]["mean"] == 1.0 and modes["argmax"]["ci95"] == [1.0, 1.0]
    with pytest.raises(ResumeMismatchError, match="trained target 'corridor', not 'other'"):
        run.evaluate_run(run_dir, dataclasses.replace(target, name="other"), episodes=4)
    assert cli.main(["evaluate", "pong", "no-such-run", "--out", str(tmp_path)]) == 2
    assert "no-such-run is not a training run" in capsys.readouterr().err


def test_cli_errors_are_one_line(capsys):
    assert cli.main(["train", "no-such-env"]) == 2
    assert "unknown env 'no-such-env'" in capsys.readouterr().err
    assert cli.main(["train", "pong", "--target", "nope"]) == 2
    assert "unknown training target 'nope'" in capsys.readouterr().err
    assert cli.main(["train", "pong", "--set", "lr"]) == 2
    assert "expected NAME=VALUE" in capsys.readouterr().err
    assert cli.main(["train", "pong", "--policy", "3M", "--out", "/nonexistent/x"]) == 2
    assert "unknown policy '3M'" in capsys.readouterr().err


SHARDED = """
import json, sys
import jax
from envport.toy import Corridor
from envport.wrappers import EpisodeLimitWrapper
from envport.train import PPO, PPOConfig
from envport.train.sharding import data_mesh, shard_runner
from envport.train.ppo import summarize
cfg = PPOConfig(num_envs=16, num_steps=16, total_steps=16 * 16 * 3, policy="16,16")
ppo = PPO(EpisodeLimitWrapper(Corridor(length=6, slip=0.1), 30), cfg)
r = shard_runner(ppo.init(), data_mesh(int(sys.argv[1]), cfg.num_envs))
out = []
for _ in range(3):
    r, m = ppo.update(r)
    out.append(summarize(m))
shards = len(r.obs.sharding.device_set)
print(json.dumps({"metrics": out, "shards": shards,
                  "params": [x.tolist() for x in jax.tree.leaves(jax.device_get(r.params))]}))
"""


def test_two_devices_match_one_up_to_float_reduction_order(tmp_path):
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    runs = [json.loads(subprocess.run([sys.executable, str(script), n], env=env, check=True,
                                      capture_output=True, text=True).stdout) for n in "12"]
    one, two = runs
    assert (one["shards"], two["shards"]) == (1, 2)
    # the same episodes: the rollouts are identical, only float sums may differ in order
    for a, b in zip(one["metrics"], two["metrics"], strict=True):
        assert a["episodes"] == b["episodes"] and a["episode_length"] == b["episode_length"]
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4, abs=1e-6)
    for a, b in zip(one["params"], two["params"], strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_host_loop_ppo_learns_on_a_numpy_backend():
    cfg = PPOConfig(num_envs=16, num_steps=32, total_steps=16 * 32 * 20, policy="32,32",
                    learning_rate=3e-3)
    host = HostPPO(NumpyCorridor(16), cfg)
    s = host.init()
    lengths = []
    for _ in range(cfg.num_updates):
        s, m = host.update(s)
        m = summarize(m)
        lengths.append(m["episode_length"])
    assert m["episode_return"] == 1.0 and np.mean(lengths[-3:]) < 0.6 * lengths[0]


def test_host_loop_refuses_nan_observations():
    cfg = PPOConfig(num_envs=4, num_steps=8, total_steps=64, policy="8")
    host = HostPPO(NumpyCorridor(4, nan_at=3), cfg)
    with pytest.raises(BackendOutputError, match=r"NaN or inf observations \(envs \[1\]\)"):
        host.update(host.init())


def test_a_host_target_trains_through_train_and_does_not_resume(tmp_path):
    target = TrainTarget(name="numpy corridor", make_backend=lambda n: NumpyCorridor(n),
                         goal=0.5, goal_episodes=10)
    cfg = PPOConfig(num_envs=8, num_steps=16, total_steps=8 * 16 * 3, policy="8")
    summary = train(TrainRun("corridor", target, cfg, tmp_path / "h", progress=False))
    assert summary["updates"] == 3 and summary["finished"]
    config = json.loads((tmp_path / "h" / "config.json").read_text())
    assert config["loop"] == "host" and config["devices"][1] == "host: numpy-corridor"
    assert len(read_metrics(tmp_path / "h")[0]) == 3 and (tmp_path / "h" / "checkpoint.msgpack").exists()
    with pytest.raises(ResumeMismatchError, match="host-loop runs do not resume"):
        train(TrainRun("corridor", target, cfg, tmp_path / "h", progress=False), resume=True)
    with pytest.raises(EnvportError, match="neither make_env"):
        train(TrainRun("corridor", TrainTarget(name="none"), cfg, tmp_path / "n", progress=False))
    assert not (tmp_path / "n").exists()


def test_init_from_starts_from_another_runs_policy(tmp_path):
    cfg = PPOConfig(num_envs=16, num_steps=32, total_steps=16 * 32 * 20, policy="32,32",
                    learning_rate=3e-3)
    first = train(TrainRun("corridor", corridor_target(), cfg, tmp_path / "a", progress=False))
    short = PPOConfig.from_dict({**cfg.to_dict(), "total_steps": 16 * 32})
    train(TrainRun("corridor", corridor_target(), short, tmp_path / "b", progress=False,
                   init_from=tmp_path / "a"))
    fresh = train(TrainRun("corridor", corridor_target(), short, tmp_path / "c", progress=False))
    a, b, c = (read_metrics(tmp_path / x)[0] for x in "abc")
    assert json.loads((tmp_path / "b" / "config.json").read_text())["init_from"] == str(tmp_path / "a")
    # b's first update plays a's trained policy: walks as short as a's last, shorter than fresh
    assert b[0]["episode_length"] < 0.7 * c[0]["episode_length"]
    assert first["finished"] and fresh["finished"]
    other = PPOConfig.from_dict({**short.to_dict(), "policy": "8"})
    with pytest.raises(EnvportError, match="--init-from .* other shapes|does not fit"):
        train(TrainRun("corridor", corridor_target(), other, tmp_path / "d", progress=False,
                       init_from=tmp_path / "a"))
    assert not (tmp_path / "d").exists()  # refused before anything was written
