"""The core's packaging contract: lean runtime dependencies as ranges, extras in step with
``envport.extras``, a missing extra named with its ``pip install``, one version source; and the
stage hooks an env package gives the generic noxfile (``envport prepare``,
``envport session-commands``, ``bench_batch_sizes``, ``extra_benches``)."""

from __future__ import annotations

import json
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import envport
from envport import extras, registry, sessions
from envport.cli import main
from envport.errors import EnvportError
from envport.registry import BenchTarget, EnvPort, ExtraBench, SystemRequirement

CORE = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((CORE / "pyproject.toml").read_text())["project"]


def _names(reqs: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower() for r in reqs}


def test_runtime_dependencies_are_lean_ranges():
    deps = PYPROJECT["dependencies"]
    assert not {"anthropic", "matplotlib", "gymnasium", "flax", "optax", "ray"} & _names(deps)
    pinned = [d for d in deps if "==" in d]
    assert pinned == [], f"exact pins belong in uv.lock only: {pinned}"
    assert any(d.startswith("jax>=") and "<" in d for d in deps)


def test_extras_match_the_registry_of_features():
    declared = PYPROJECT["optional-dependencies"]
    assert set(declared) == set(extras.EXTRAS) | {"all"}
    for extra, (_, dists) in extras.EXTRAS.items():
        assert _names(declared[extra]) == set(dists), extra
    assert declared["all"] == [f"envport[{','.join(extras.EXTRAS)}]"]


def test_a_missing_extra_names_its_pip_install():
    with pytest.raises(extras.MissingExtraError) as e:
        extras.require("envport_no_such_module_xyz", "plot", "a plot")
    assert str(e.value) == ("a plot needs 'envport_no_such_module_xyz', which is not installed: "
                            "pip install 'envport[plot]'")
    assert isinstance(e.value, ImportError) and isinstance(e.value, EnvportError)
    with pytest.raises(KeyError, match="envport's extras"):
        extras.install_hint("nope")
    assert extras.require("json", "gym") is json


def test_version_has_one_source():
    assert PYPROJECT["dynamic"] == ["version"] and "version" not in PYPROJECT
    assert metadata.version("envport") == envport.__version__


def _port(**hooks) -> EnvPort:
    return EnvPort(name="fake", reference="r", candidate="c", install_reference=lambda: None,
                   check_reference=lambda: None, **hooks)


def test_prepare_checks_system_programs_then_calls_the_hook(monkeypatch):
    seen = []
    port = _port(prepare=seen.append,
                 system_requirements=[SystemRequirement("true", "coreutils", "a test")])
    sessions.prepare(port, "verify")
    assert seen == ["verify"]
    missing = _port(prepare=seen.append, system_requirements=[
        SystemRequirement("envport-no-such-assembler", "binutils-nope", "the ROMs")])
    with pytest.raises(sessions.MissingSystemRequirementError) as e:
        sessions.prepare(missing, "tests")  # without --install-system: named, not installed
    assert "envport-no-such-assembler not found (the ROMs)" in str(e.value)
    assert "sudo apt-get install -y binutils-nope" in str(e.value)
    assert seen == ["verify"], "the hook must not run before its requirements are met"
    with pytest.raises(EnvportError, match="unknown stage 'deploy'"):
        sessions.prepare(port, "deploy")


def test_stage_commands_default_and_hook():
    port = _port()
    assert sessions.commands(port, "tests") == []
    assert sessions.commands(port, "verify", ["--scale", "0.1"]) == [
        ["envport", "verify", "fake", "--scale", "0.1"]]
    assert sessions.commands(port, "train") == [["envport", "train", "fake", "--seeds", "0,1,2"]]
    hooked = _port(session_commands=lambda stage, args: [["envport", stage, "fake", *args],
                                                         ["python", "-m", "fake.after", 1]])
    assert sessions.commands(hooked, "bench", ["--out", "x"])[1] == [
        "python", "-m", "fake.after", "1"]
    assert sessions.out_dir(["--out", "a"]) == "a" and sessions.out_dir(["--out=b"]) == "b"
    assert sessions.out_dir([]) == "reports"


@pytest.fixture
def installed(monkeypatch):
    ran = []

    def reference(n):
        return (lambda actions: None), (lambda: None)

    def candidate(n):
        return (lambda k: None), 0.0

    port = _port(
        prepare=lambda stage: ran.append(("prepare", stage)),
        bench=[BenchTarget("t", reference, candidate, lambda rng, n: rng.integers(0, 2, n))],
        bench_batch_sizes=(1, 2),
        extra_benches=[ExtraBench("single", lambda out, progress: ran.append(("extra", out)),
                                  outputs="single.md")])

    class EP:
        name, value = "fake", "fake_pkg:PORT"

        def load(self):
            return port

    monkeypatch.setattr(registry, "available", lambda: {"fake": EP()})
    return ran


def test_cli_prepare_and_session_commands(installed, capsys):
    assert main(["prepare", "fake", "--stage", "bench"]) == 0
    assert installed == [("prepare", "bench")]
    assert main(["session-commands", "fake", "train", "--", "--steps", "10"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == [
        ["envport", "train", "fake", "--steps", "10"]]
    assert main(["prepare", "fake", "--stage", "nope"]) == 2


def test_bench_uses_the_env_sizes_and_runs_its_extra_benches(installed, tmp_path, capsys):
    assert main(["bench", "fake", "--out", str(tmp_path), "--min-seconds", "0.01",
                 "--no-progress"]) == 0
    rep = json.loads((tmp_path / "fake" / "bench.json").read_text())
    assert rep["batch_sizes"] == [1, 2]  # the env's default, not the core's 1 ... 8192
    assert installed == [("extra", tmp_path)]
    assert "single: written to" in capsys.readouterr().out
    # --targets (a chosen subset) and --no-extras skip the extra benches
    for flag in (["--targets", "t"], ["--no-extras"]):
        assert main(["bench", "fake", "--out", str(tmp_path), "--min-seconds", "0.01",
                     "--no-progress", *flag]) == 0
    assert installed == [("extra", tmp_path)]


def test_host_info_is_the_one_record_with_package_versions():
    from envport.bench import host_info

    info = host_info(packages=("envport", "envport-no-such-dist"))
    assert info["envport"] == envport.__version__ and info["envport-no-such-dist"] is None
    assert info["cpu_count"] >= 1 and "jax" in info
