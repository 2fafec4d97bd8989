"""The ``envport`` command line, against fake installed env packages."""

from __future__ import annotations

import json
import sys
import time
import types
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport import registry
from envport.cli import main, parse_batch_sizes
from envport.errors import ActionError, ReferenceNotInstalledError
from envport.registry import BenchTarget, EnvPort


def _reference(n: int):
    state = np.zeros(n, np.int64)

    def step(actions):
        state[:] += actions

    return step, lambda: None


def _candidate(n: int):
    fn = jax.jit(lambda s, k: jax.lax.fori_loop(0, k, lambda i, x: x + 1.0, s))
    state = jnp.zeros((n,), jnp.float32)
    t0 = time.perf_counter()
    fn(state, 1).block_until_ready()
    compile_s = time.perf_counter() - t0
    return (lambda k: fn(state, k).block_until_ready()), compile_s


@dataclass
class FakePort(EnvPort):
    """An EnvPort that records which hooks the CLI called."""

    calls: list[str] = field(default_factory=list)


def make_port(missing: bool = False) -> FakePort:
    calls: list[str] = []

    def check() -> None:
        calls.append("check")
        if missing:
            raise ReferenceNotInstalledError(
                "reference 'numpy counter' is not installed; run: pip install numpy-counter==1.0"
            )

    return FakePort(
        name="fake", reference="numpy counter 1.0", candidate="jax counter 0.1",
        install_reference=lambda: calls.append("install"), check_reference=check,
        bench=[BenchTarget(name="t", reference_stepper=_reference, candidate_rollout=_candidate,
                           sample_actions=lambda rng, n: rng.integers(0, 3, n),
                           how_actions="uniform 0..2")],
        calls=calls,
    )


class FakeEntryPoint:
    def __init__(self, name: str, value: str, load):
        self.name, self.value, self._load = name, value, load

    def load(self):
        return self._load()


def _broken_load():
    raise ImportError("No module named 'broken_pkg'")


@pytest.fixture
def installed(monkeypatch):
    """Two installed envs: ``fake`` (loads) and ``broken`` (its import fails)."""
    state = {"port": make_port()}
    eps = {
        "fake": FakeEntryPoint("fake", "fake_pkg:PORT", lambda: state["port"]),
        "broken": FakeEntryPoint("broken", "broken_pkg:PORT", _broken_load),
    }
    monkeypatch.setattr(registry, "available", lambda: eps)
    return state


@pytest.fixture
def verify_calls(monkeypatch):
    """Replaces ``envport.verify`` (written elsewhere) with a recorder."""
    calls: list[dict] = []
    result = {"equivalent": True}

    def run(port, *, out_dir, scale, levels, progress, workers, ray, suites):
        calls.append(dict(port=port, out_dir=out_dir, scale=scale, levels=levels,
                          progress=progress, workers=workers, ray=ray, suites=suites))
        if isinstance(result.get("raise"), Exception):
            raise result["raise"]
        return dict(result)

    mod = types.ModuleType("envport.verify")
    mod.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "envport.verify", mod)
    return calls, result


def test_list_shows_envs_and_survives_broken_ones(installed, capsys) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "fake  (fake_pkg:PORT)" in out
    assert "reference: numpy counter 1.0" in out and "candidate: jax counter 0.1" in out
    assert "broken  (broken_pkg:PORT)" in out
    assert "error loading: ImportError: No module named 'broken_pkg'" in out
    assert out.index("broken") < out.index("fake")  # sorted


def test_list_with_nothing_installed(monkeypatch, capsys) -> None:
    monkeypatch.setattr(registry, "available", lambda: {})
    assert main(["list"]) == 0
    assert "no envs installed" in capsys.readouterr().out


@pytest.mark.parametrize("cmd", ["verify", "bench"])
def test_unknown_env_exits_2_naming_it_and_installed_ones(installed, capsys, cmd) -> None:
    assert main([cmd, "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown env 'nope'")
    assert "Installed envs: broken, fake" in err
    assert "Traceback" not in err


def test_verify_passes_arguments(installed, verify_calls, tmp_path, capsys) -> None:
    calls, _ = verify_calls
    rc = main(["verify", "fake", "--out", str(tmp_path / "r"), "--scale", "0.5",
               "--levels", "L1,l3", "--no-progress"])
    assert rc == 0
    (call,) = calls
    assert call["port"] is installed["port"]
    assert call["out_dir"] == tmp_path / "r" and isinstance(call["out_dir"], Path)
    assert call["scale"] == 0.5 and call["levels"] == ["L1", "L3"] and call["progress"] is False
    assert installed["port"].calls == ["check"]
    out = capsys.readouterr().out
    assert "EQUIVALENT" in out and str(tmp_path / "r" / "fake" / "verify.json") in out


def test_verify_defaults_and_not_equivalent(installed, verify_calls) -> None:
    calls, result = verify_calls
    result["equivalent"] = False
    assert main(["verify", "fake"]) == 1
    assert calls[0]["out_dir"] == Path("reports")
    assert calls[0]["scale"] == 1.0 and calls[0]["levels"] is None
    assert calls[0]["progress"] is True
    assert calls[0]["workers"] is None and calls[0]["ray"] is None  # one per core, no Ray


def test_verify_says_which_required_levels_did_not_run(installed, verify_calls, capsys) -> None:
    _, result = verify_calls
    result.update(equivalent=False, levels={"L3": {}}, required_levels=["L1", "L2", "L3"])
    assert main(["verify", "fake", "--levels", "L3"]) == 1
    assert "(equivalence needs L1, L2, L3; not run: L1, L2)" in capsys.readouterr().out


def test_verify_suites_filter_reports_the_chosen_suites_not_the_port(installed, verify_calls,
                                                                     capsys) -> None:
    calls, result = verify_calls
    result.update(equivalent=False, selected_passed=True)
    assert main(["verify", "fake", "--suites", "HalfCheetah, trained"]) == 0
    assert calls[-1]["suites"] == ["HalfCheetah", "trained"]
    out = capsys.readouterr().out
    assert "the suites matching HalfCheetah, trained PASSED (a --suites run claims no " \
           "equivalence)" in out and "NOT EQUIVALENT" not in out
    result["selected_passed"] = False
    assert main(["verify", "fake", "--suites", "HalfCheetah"]) == 1
    assert "HalfCheetah FAILED" in capsys.readouterr().out
    assert main(["verify", "fake"]) == 1 and calls[-1]["suites"] is None  # no filter: the port


def test_verify_workers_and_ray(installed, verify_calls) -> None:
    calls, _ = verify_calls
    assert main(["verify", "fake", "--workers", "3", "--ray"]) == 0
    assert calls[-1]["workers"] == 3 and calls[-1]["ray"] is True
    assert main(["verify", "fake", "--ray", "10.0.0.5:6379"]) == 0
    assert calls[-1]["ray"] == "10.0.0.5:6379"


@pytest.mark.parametrize("bad", ["0", "-2", "two"])
def test_verify_bad_worker_count_exits_2_naming_it(installed, verify_calls, capsys, bad) -> None:
    calls, _ = verify_calls
    assert main(["verify", "fake", "--workers", bad]) == 2
    assert "--workers" in capsys.readouterr().err and not calls


def test_missing_reference_exits_2_with_install_command(installed, verify_calls, capsys) -> None:
    calls, _ = verify_calls
    installed["port"] = make_port(missing=True)
    assert main(["verify", "fake"]) == 2
    err = capsys.readouterr().err
    assert "error: reference 'numpy counter' is not installed" in err
    assert "pip install numpy-counter==1.0" in err and "Traceback" not in err
    assert calls == []
    assert main(["bench", "fake", "--no-progress"]) == 2


def test_install_flag_installs_instead_of_checking(installed, verify_calls) -> None:
    installed["port"] = make_port(missing=True)
    assert main(["verify", "fake", "--install"]) == 0
    assert installed["port"].calls == ["install"]


def test_action_error_exits_2(installed, verify_calls, capsys) -> None:
    _, result = verify_calls
    result["raise"] = ActionError("action 7 out of range 0..2 for env 3")
    assert main(["verify", "fake"]) == 2
    assert capsys.readouterr().err == "error: action 7 out of range 0..2 for env 3\n"


def test_bench_end_to_end(installed, tmp_path, capsys) -> None:
    rc = main(["bench", "fake", "--out", str(tmp_path), "--batch-sizes", "1,4",
               "--min-seconds", "0.02", "--no-progress"])
    assert rc == 0
    rep = json.loads((tmp_path / "fake" / "bench.json").read_text())
    rows = rep["targets"]["t"]["rows"]
    assert [r["num_envs"] for r in rows] == [1, 4]
    assert all(r["ratio"] == pytest.approx(r["candidate_sps"] / r["reference_sps"]) for r in rows)
    assert (tmp_path / "fake" / "bench.md").exists() and (tmp_path / "fake" / "bench.png").exists()
    out = capsys.readouterr().out
    assert f"t num_envs=4: {rows[1]['ratio']:.2f}x" in out
    assert str(tmp_path / "fake" / "bench.json") in out


def test_bench_argument_parsing(installed, monkeypatch, tmp_path) -> None:
    import envport.bench

    seen: list[dict] = []

    def fake_run_bench(port, **kw):
        seen.append(kw)
        return {"targets": {}}

    monkeypatch.setattr(envport.bench, "run_bench", fake_run_bench)
    assert main(["bench", "fake", "--batch-sizes", " 1, 32 ,128", "--targets", "a,b",
                 "--min-seconds", "0.5", "--out", str(tmp_path)]) == 0
    assert seen[-1] == dict(out_dir=tmp_path, batch_sizes=(1, 32, 128), min_seconds=0.5,
                            progress=True, targets=["a", "b"])
    assert main(["bench", "fake", "--no-progress"]) == 0
    assert "batch_sizes" not in seen[-1]  # run_bench's own default (1 ... 8192)
    assert seen[-1]["min_seconds"] == 2.0 and seen[-1]["targets"] is None
    assert seen[-1]["progress"] is False


@pytest.mark.parametrize("bad, msg", [("1,x", "not an integer"), ("0,4", ">= 1"),
                                      (",", "comma-separated")])
def test_bad_batch_sizes(installed, capsys, bad, msg) -> None:
    assert main(["bench", "fake", "--batch-sizes", bad]) == 2
    assert msg in capsys.readouterr().err


def test_parse_batch_sizes() -> None:
    assert parse_batch_sizes("8192") == (8192,)
    assert parse_batch_sizes("1,32,128,512,2048,8192") == (1, 32, 128, 512, 2048, 8192)


def test_bad_levels_and_no_subcommand(installed, capsys) -> None:
    assert main(["verify", "fake", "--levels", "L1,L9"]) == 2
    assert "unknown level(s) L9" in capsys.readouterr().err
    assert main([]) == 2
    assert "usage: envport" in capsys.readouterr().err
    assert main(["--help"]) == 0


def test_console_script_declared() -> None:
    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "envport"]
    assert ep.value == "envport.cli:main"
