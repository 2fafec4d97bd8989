"""Prompt templates, the translation plan and ``envport prompt``."""

from pathlib import Path

import pytest

from envport import cli
from envport.errors import EnvportError
from envport.generate import failures, prompts
from envport.plan import ModulePlan, TranslationPlan
from envport.registry import EnvPort

SOURCE = "int add(int a, int b) {\n    return a + b;\n}\n"


def _port(tmp_path: Path, language="jax") -> EnvPort:
    src = tmp_path / "add.c"
    src.write_text(SOURCE)
    plan = TranslationPlan(
        package_dir=tmp_path, language=language, constraints="- ints are int32",
        modules=[
            ModulePlan("core", "src/toy/core.py", lambda: {"add.c": src.read_text()},
                       "`add(a, b)` on int32 arrays", tests=["tests/test_core.py"]),
            ModulePlan("env", "src/toy/env.py", lambda: {}, "`ToyEnv`", depends_on=["core"]),
        ])
    return EnvPort(name="toy", reference="toy C", candidate="toy jax",
                   install_reference=lambda: None, check_reference=lambda: None, plan=plan)


def test_translate_prompt_has_every_part(tmp_path):
    port = _port(tmp_path)
    p = prompts.translate_prompt(port, port.plan.module("core"))
    assert p.template == "translate.v1.md" and len(p.sha256) == 16
    assert "`add.c`: 3 lines" in p.text and "Total: 3 lines" in p.text
    assert SOURCE.strip() in p.text                        # verbatim source
    assert "`add(a, b)` on int32 arrays" in p.text         # contract
    assert "no Python control flow on traced values" in p.text and "- ints are int32" in p.text
    assert "tests/test_core.py" in p.text and "tests/test_l1_core.py" in p.text  # L1 tests asked
    assert "$" not in p.text.replace("$env", "")           # no unrendered placeholder


def test_dependencies_and_rust_checklists(tmp_path):
    port = _port(tmp_path, language="rust")
    p = prompts.translate_prompt(port, port.plan.module("env"))
    assert "`core`: src/toy/core.py" in p.text and "PyO3" in p.text
    assert "No allocation in the hot loop" in prompts.optimise_prompt(port, None).text


def test_repair_prompt_shows_the_shortest_case(tmp_path):
    port = _port(tmp_path)
    report = {"levels": {"L1": {"passed": 3, "failed": 0}, "L3": {"mismatches": 1}},
              "first_divergence": {
                  "level": "L3", "summary": "[s] seed 4, step 7: x differs", "suite": "s",
                  "seed": 4, "step": 7, "shortest_prefix_len": 3, "shortest_prefix": [[1], [2], [0]],
                  "state_before": {"x": [1.5]},
                  "fields": [{"field": "x", "env": 0, "index": [], "reference": 2.0,
                              "candidate": 3.0, "abs_err": 1.0}]}}
    failure = failures.from_verify_report(report)
    assert failure.level == "L3"
    text = prompts.repair_prompt(port, port.plan.module("core"), failure, iteration=2).text
    assert "seed: 4" in text and "[[1], [2], [0]]" in text and "| x | 0 | [] | 2.0 | 3.0 | 1.0 |" in text
    assert "L3 failed (phase L3, template repair/v2, iteration 2)" in text
    assert "Every phase before L3 must keep passing" in text
    compose = failures.Failure("compose", "does not import", "```\nImportError\n```")
    text = prompts.repair_prompt(port, port.plan.module("core"), compose, iteration=3).text
    assert "compose failed (phase compose" in text and "ImportError" in text


def test_failures_belong_to_phases():
    assert failures.phases_for(("L1", "L2", "L3")) == ("L1", "compose", "L2", "L3")
    assert failures.phases_for(("L2", "L3")) == ("L1", "compose", "L2", "L3")
    assert failures.phases_for(()) == ("L1", "compose")
    assert [failures.phase_of(lv) for lv in ("L1 tests", "L1", "compose", "L2", "L3")] == [
        "L1", "L1", "compose", "L2", "L3"]
    # a verifier that stopped without a report: the first level it ran
    assert failures.phase_of("verification", ("L2", "L3")) == "L2"
    assert failures.phase_of("verification", ("L1", "L2")) == "L1"
    assert failures.from_verify_report({"levels": {"L2": {"mismatches": 0}}}) is None


def test_optimise_prompt_shows_the_bench_table(tmp_path):
    bench = {"targets": {"t": {"rows": [{"num_envs": 32, "reference_sps": 1000.0,
                                         "candidate_sps": 5000.0, "ratio": 5.0}]}}}
    text = prompts.optimise_prompt(_port(tmp_path), bench).text
    assert "| t | 32 | 1,000 | 5,000 | 5.00x |" in text and "lax.fori_loop" in text


def test_plan_errors(tmp_path):
    port = _port(tmp_path)
    with pytest.raises(EnvportError, match="unknown module 'nope'.*core, env"):
        port.plan.module("nope")
    with pytest.raises(EnvportError, match="depends on \\['core'\\]"):
        TranslationPlan(tmp_path, "jax", [ModulePlan("env", "e.py", dict, "", depends_on=["core"])])
    assert [m.name for m in port.plan.select(["env", "core"])] == ["core", "env"]
    with pytest.raises(EnvportError, match="unknown target language 'cobol'"):
        prompts.translate_prompt(_port(tmp_path, "cobol"), port.plan.modules[0])
    with pytest.raises(EnvportError, match="needs field 'module'"):
        prompts.render("translate", {})


def test_cli_prompt_pong(capsys):
    pytest.importorskip("pong_port")
    from pong_port import reference_build
    if not (reference_build.source_dir() / "pufferlib/ocean/pong/pong.h").exists():
        pytest.skip("pong reference sources not installed")
    assert cli.main(["prompt", "pong", "--module", "engine", "--system"]) == 0
    out = capsys.readouterr().out
    assert "Translate module `engine` of pong" in out and "void c_step(Pong* env)" in out
    assert "You are porting a reference" in out


def test_cli_prompt_errors(capsys, tmp_path):
    assert cli.main(["prompt", "no-such-env"]) == 2
    assert "unknown env 'no-such-env'" in capsys.readouterr().err
    if pytest.importorskip("pong_port"):
        assert cli.main(["prompt", "pong", "--module", "nope"]) == 2
        assert "unknown module 'nope'" in capsys.readouterr().err
        assert cli.main(["prompt", "pong", "--kind", "repair", "--report",
                         str(tmp_path / "none.json")]) == 2
        assert "envport verify pong" in capsys.readouterr().err
    assert cli.main(["prompt", "pong", "--kind", "fix"]) == 2


def test_cli_generate_without_key_names_it(capsys, monkeypatch, tmp_path):
    """What `nox -s generate-<env>` runs: without a key it stops before doing anything."""
    pytest.importorskip("pong_port")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert cli.main(["generate", "pong", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "ANTHROPIC_API_KEY is not set" in err and "Nothing was run" in err
    assert not list(tmp_path.iterdir())


def test_cli_runs_and_replay_errors(capsys, tmp_path):
    assert cli.main(["runs", "--out", str(tmp_path)]) == 0
    assert "no generation or training runs" in capsys.readouterr().out
    if pytest.importorskip("pong_port"):
        assert cli.main(["generate", "pong", "--out", str(tmp_path), "--replay", "nope"]) == 2
        assert "no run 'nope' of pong" in capsys.readouterr().err


def test_every_registered_plan_points_at_real_files():
    from envport import registry

    plans = {name: registry.get(name).plan for name in registry.available()}
    for name, plan in plans.items():
        if plan is None:
            continue
        assert plan.language in prompts.LANGUAGES, name
        for m in plan.modules:
            assert (plan.package_dir / m.target).is_file(), (name, m.target)
            for t in m.tests:
                assert (plan.package_dir / t).is_file(), (name, t)
            assert m.contract.strip(), (name, m.name)
    assert plans.get("pong") is not None
    assert [m.name for m in plans["pong"].modules] == ["glibc_rand", "stream", "engine", "env"]
