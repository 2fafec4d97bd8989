"""pong_port.pufferl: offline tests of the config reading, policy sizes, log parsing and build
errors, and a slow test that builds the PuffeRL venv (minutes, a large torch download, once)
and trains both policies briefly."""

import json
import tarfile
import urllib.error

import pytest

from pong_port import pufferl
from pong_port import reference_build as rb

DEFAULT_INI = """
[base]
package = None
rnn_name = None
[vec]
backend = Multiprocessing
num_envs = 2
batch_size = auto
[train]
seed = 42
device = cuda
optimizer = muon
total_timesteps = 10_000_000
learning_rate = 0.015
gamma = 0.995
minibatch_size = 8192
bptt_horizon = 64
"""
PONG_INI = """
[base]
package = ocean
env_name = puffer_pong
rnn_name = Recurrent
[vec]
num_envs = 4
[env]
num_envs = 1024
frameskip = 8
[train]
total_timesteps = 12_000_000
gamma = 0.9608378504980243
minibatch_size = 32768
"""


def test_ini_config_overlays_env_ini_and_parses_values_like_load_config():
    cfg = pufferl.ini_config(DEFAULT_INI, PONG_INI)
    assert cfg["train"]["total_timesteps"] == 12_000_000  # underscores, pong.ini wins
    assert cfg["train"]["gamma"] == pytest.approx(0.9608378504980243)
    assert cfg["train"]["learning_rate"] == 0.015  # from default.ini
    assert cfg["train"]["optimizer"] == "muon"  # bare words stay strings
    assert cfg["vec"] == {"backend": "Multiprocessing", "num_envs": 4, "batch_size": "auto"}
    assert cfg["base"]["package"] == "ocean" and cfg["base"]["rnn_name"] == "Recurrent"
    assert cfg["env"] == {"num_envs": 1024, "frameskip": 8}


def test_puffer_flags_use_load_config_spelling():
    flags = pufferl.puffer_flags(200_000, 7, pufferl.Path("/x"))
    pairs = dict(zip(flags[::2], flags[1::2], strict=True))
    assert pairs == {
        "--train.device": "cpu", "--vec.backend": "Serial",
        "--train.total-timesteps": "200000", "--train.seed": "7", "--vec.seed": "7",
        "--train.data-dir": "/x",
    }


def test_policy_sizes():
    # 133,764: the model size PuffeRL printed for pong.ini's policy (MLP 128 + LSTM 128)
    assert pufferl.PONG_INI_POLICY.params() == 133_764
    assert pufferl.PufferPolicy(128, rnn=False).params() == 9 * 128 + 129 * 3 + 129
    assert pufferl.PufferPolicy(748, rnn=False).params() == 9_728
    assert pufferl.PufferPolicy(64).params() == 13 * 64 + 4 + 4 * 64 * 128 + 8 * 64
    assert pufferl.PufferPolicy(748, rnn=False).describe() == "MLP 748"
    assert pufferl.PONG_INI_POLICY.describe() == "MLP 128 + LSTM 128"


def _records(scores, batch=131072, sps_time=1.0, episodes=50):
    """The runner's records of a run with one log per update of ``batch`` steps; a None score
    is a log without finished episodes."""
    args = {"policy_name": "Policy", "rnn_name": "Recurrent", "vec": {"num_envs": 4},
            "env": {"num_envs": 1024, "frameskip": 8}, "policy": {}, "rnn": {}}
    config = {k: None for k in pufferl.TRAIN_KEYS} | {"gamma": 0.96, "batch_size": batch}
    recs = [
        {"kind": "args", "args": args},
        {"kind": "trainer", "config": config, "model_size": 133764, "total_agents": 2048,
         "segments": 2048, "minibatch_size": 32768, "total_minibatches": 4,
         "total_epochs": len(scores), "torch": "2.15.0"},
    ]
    for i, score in enumerate(scores, 1):
        logs = {"agent_steps": float(i * batch), "uptime": 1.0 + i * sps_time, "SPS": 1.0}
        n = 0.0 if score is None else float(episodes)
        if score is not None:
            logs["environment/score"] = score
        recs.append({"kind": "log", "phase": "train", "step": i * batch, "logs": logs,
                     "episodes": n, "score_sum": n * (score or 0.0)})
    recs.append({"kind": "log", "phase": "final_eval", "step": 99 * batch,
                 "logs": {"agent_steps": 99.0 * batch, "uptime": 500.0,
                          "environment/score": 20.9}, "episodes": 10.0, "score_sum": 209.0})
    recs.append({"kind": "done"})
    return recs


def test_summarize_curve_goal_step_and_sps():
    # 50 episodes per log: the mean of the latest 100 is that of two logs
    scores = [None, -21.0, -5.0, 19.99, 20.0, 20.01, 20.9, 20.5, 20.96, 21.0]
    res = pufferl.summarize(_records(scores))
    assert res["score_curve"][0] == [2 * 131072, -21.0]  # logs without a score are skipped
    assert res["recent_curve"][:3] == [[131072, None], [2 * 131072, None], [3 * 131072, -13.0]]
    # (20.0 + 20.01) / 2 at the 6th log: the first mean of >= 100 episodes that reaches +20
    assert res["goal_reached_at_step"] == 6 * 131072
    assert res["final_score"] == pytest.approx(20.98) and res["final_eval_score"] == 20.9
    assert res["episodes"] == 9 * 50
    assert res["train_steps"] == 10 * 131072 and isinstance(res["train_steps"], int)
    assert res["train_time_s"] == 11.0
    assert res["sps"] == pytest.approx(10 * 131072 / 11.0)
    # steady state starts at the first log past 20% of the steps (step 2 of 10), 1 s apart
    assert res["sps_steady"] == pytest.approx(131072.0)
    cfg = res["config"]
    assert cfg["policy_params"] == 133764 and cfg["batch_size"] == 131072
    assert cfg["num_agents"] == 2048 and cfg["minibatches_per_epoch"] == 4
    assert res["finished"] is True
    json.dumps(res, allow_nan=False)


def test_summarize_never_reaching_20_and_crashed_runs():
    res = pufferl.summarize(_records([-21.0, 19.0, 19.9])[:-1])
    assert res["goal_reached_at_step"] is None and res["finished"] is False
    assert res["final_score"] == pytest.approx(19.45)
    # fewer than 100 episodes in all: no mean yet, so no goal either
    res = pufferl.summarize(_records([21.0], episodes=99))
    assert res["final_score"] is None and res["goal_reached_at_step"] is None
    with pytest.raises(pufferl.PufferlError, match="never started"):
        pufferl.summarize(_records([-21.0])[:1])


def test_venv_location_and_stamp(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVPORT_PUFFERL_DIR", str(tmp_path))
    venv = pufferl.venv_dir()
    assert venv.parent == tmp_path and venv.name == f"venv-{pufferl.recipe_hash()}"
    assert not pufferl.is_current()
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    assert not pufferl.is_current()  # no stamp: an interrupted build
    (venv / pufferl.STAMP).write_text(json.dumps({"recipe": pufferl.RECIPE}))
    assert pufferl.is_current()
    (venv / pufferl.STAMP).write_text(json.dumps({"recipe": {**pufferl.RECIPE, "torch": "x"}}))
    assert not pufferl.is_current()
    (venv / pufferl.STAMP).write_text("[]")
    assert not pufferl.is_current()


def test_build_step_failure_shows_the_log_and_the_hint(tmp_path):
    log = tmp_path / "build.log"
    with pytest.raises(pufferl.PufferlError, match="PIP_INDEX_URL") as exc:
        pufferl._run(["sh", "-c", "echo no route to host; exit 3"], log, "pip install torch",
                     pufferl.NETWORK_HINT)
    msg = str(exc.value)
    assert "pip install torch failed (exit 3)" in msg and "no route to host" in msg
    assert pufferl.BUILD_COMMAND in msg and str(log) in msg


def test_build_without_the_package_index_says_what_to_do(tmp_path, monkeypatch):
    """A real build in a fresh folder with pip cut off from every index: it stops at the
    torch install, naming the step, pip's error and what to do, and leaves no stamp."""
    monkeypatch.setenv("ENVPORT_PUFFERL_DIR", str(tmp_path / "pufferl"))
    monkeypatch.setattr(pufferl, "_source", lambda: tmp_path / "src")
    wheels = tmp_path / "no-wheels"
    wheels.mkdir()
    for key, value in {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels),
                       "PIP_CONFIG_FILE": "/dev/null"}.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(pufferl.PufferlError) as exc:
        pufferl.build()
    msg = str(exc.value)
    assert f"pip install {pufferl.TORCH}" in msg and "No matching distribution" in msg
    assert "Without network" in msg and pufferl.BUILD_COMMAND in msg
    assert not pufferl.is_current() and not (pufferl.venv_dir() / pufferl.STAMP).exists()


def test_sdist_download_failure_says_what_to_do(monkeypatch):
    def offline(dest):
        raise urllib.error.URLError("[Errno 101] Network is unreachable")

    monkeypatch.setattr(rb, "download_sdist", offline)
    with pytest.raises(pufferl.PufferlError, match="Network is unreachable") as exc:
        pufferl._sdist()
    assert rb.SDIST_SHA256 in str(exc.value) and pufferl.BUILD_COMMAND in str(exc.value)


def test_setup_py_patch_and_pong_ini_of_the_pinned_sdist():
    """The glob line we patch is in the real setup.py; pong.ini is what the docs say. The
    sdist is the one `envport install-reference pong` downloads (downloaded here if not)."""
    sdist = pufferl._sdist()
    with tarfile.open(sdist) as tar:
        setup_py = tar.extractfile(f"pufferlib-{rb.PUFFERLIB_VERSION}/setup.py").read().decode()
    assert setup_py.count(pufferl.GLOB_LINE) == 1
    cfg = pufferl.sdist_ini_config()
    assert cfg["base"]["env_name"] == "puffer_pong" and cfg["base"]["rnn_name"] == "Recurrent"
    assert cfg["train"]["bptt_horizon"] == 64 and cfg["train"]["minibatch_size"] == 32768
    assert cfg["train"]["total_timesteps"] == 12_000_000 and cfg["train"]["update_epochs"] == 1
    assert cfg["env"] == {"num_envs": 1024, "frameskip": 8} and not cfg.get("policy")


def test_cli_errors_exit_nonzero_with_the_message(monkeypatch, capsys):
    def fail(force=False):
        raise pufferl.PufferlError("the index is unreachable")

    monkeypatch.setattr(pufferl, "build", fail)
    with pytest.raises(SystemExit) as exc:
        pufferl.main(["build"])
    assert exc.value.code == "error: the index is unreachable"
    with pytest.raises(SystemExit) as exc:
        pufferl.main(["train", "--no-such-flag"])
    assert exc.value.code == 2


@pytest.mark.slow
@pytest.mark.parametrize("policy", [None, pufferl.PufferPolicy(748, rnn=False)],
                         ids=["pong.ini", "mlp748"])
def test_build_and_short_training(tmp_path, policy):
    res = pufferl.train(steps=200_000, seed=1, out=tmp_path, policy=policy)
    on_disk = json.loads((tmp_path / "pufferl.json").read_text())
    assert on_disk["train_steps"] == res["train_steps"] >= 200_000
    assert res["finished"] and res["sps"] > 0 and res["episodes"] > 0
    cfg = res["config"]
    assert cfg["policy_params"] == (policy or pufferl.PONG_INI_POLICY).params()
    assert cfg["rnn"] == (None if policy else "Recurrent")
    assert cfg["bptt_horizon"] == 64 and cfg["num_agents"] == 2048
    assert cfg["minibatch_size"] == 32768 and cfg["total_timesteps"] == 200_000
    assert cfg["device"] == "cpu" and cfg["vec"]["backend"] == "Serial"
    assert res["final_eval_score"] is not None and -21 <= res["final_eval_score"] <= 21
    assert -21 <= res["final_score"] <= -15  # 200K steps are too few to learn
