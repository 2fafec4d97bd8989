"""emurust's translation plan (``emurust.plan.PLAN``, issue 5): it validates, points at real files
in dependency order, covers every file of the crate, reads PyBoy 2.8.1's sources from the
installed ``pyboy`` (a clear error when it is missing), and ``envport prompt emurust`` renders
it for the translate, repair and optimise kinds."""

from __future__ import annotations

import dataclasses
import importlib.machinery
import importlib.util
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from emurust import plan as emurust_plan
from emurust.plan import PACKAGE_DIR, PLAN
from envport import cli, registry
from envport.errors import EnvportError
from envport.generate import prompts

# crate files that are not written from a plan module (see emurust/plan.py's docstring)
GIVEN_RUST = {"src/lib.rs", "src/sound_template.rs"}

needs_pyboy = pytest.mark.skipif(
    importlib.util.find_spec("pyboy") is None,
    reason="pyboy is not installed here: the plan's reference sources are PyBoy 2.8.1's, read "
           "from the installed package (envport install-reference emurust)")


def test_plan_is_the_ports_and_validates():
    port = registry.get("emurust")
    assert port.plan is PLAN
    assert PLAN.language == "rust" and PLAN.language in prompts.LANGUAGES
    assert PLAN.package_dir == PACKAGE_DIR and (PACKAGE_DIR / "Cargo.toml").is_file()
    assert dataclasses.replace(PLAN).modules == PLAN.modules  # TranslationPlan's own checks rerun
    # a crate compiles as a whole: a run of several modules checks L1 once all are written
    assert PLAN.builds_as_whole
    for text in ("PyBoy 2.8.1", "sound_emulated=False", "wrapping_", "Catch-up", "catch_unwind",
                 "LGPL-3.0"):
        assert text in PLAN.constraints, text


def test_loading_the_plan_imports_no_pyboy():
    code = ("import sys; from envport import registry; p = registry.get('emurust').plan; "
            "assert p.modules and 'pyboy' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_modules_are_in_dependency_order():
    names = [m.name for m in PLAN.modules]
    assert len(names) == len(set(names))
    for i, m in enumerate(PLAN.modules):
        assert set(m.depends_on) <= set(names[:i]), (m.name, m.depends_on)
    assert names.index("error") < names.index("utils") < names.index("cartridge")
    assert names.index("opcodes") < names.index("cpu") < names.index("mb") < names.index("frame")
    assert names.index("python") < names.index("vec")


def test_targets_and_tests_exist_and_contracts_are_written():
    targets = [m.target for m in PLAN.modules]
    assert len(targets) == len(set(targets))
    for m in PLAN.modules:
        assert (PACKAGE_DIR / m.target).is_file(), m.target
        assert m.tests, f"{m.name} declares no test"
        for t in m.tests:
            assert (PACKAGE_DIR / t).is_file(), (m.name, t)
        assert m.contract.strip(), m.name
    assert "emurust.tools.gen_opcodes" in PLAN.module("opcodes").contract
    assert "tests/test_opcodes_generated.py" in PLAN.module("opcodes").tests


def test_every_crate_file_is_planned_or_given():
    rust = {str(p.relative_to(PACKAGE_DIR)) for p in (PACKAGE_DIR / "src").rglob("*.rs")}
    planned = {m.target for m in PLAN.modules if m.target.endswith(".rs")}
    assert rust - GIVEN_RUST == planned


def test_missing_or_wrong_pyboy_is_a_clear_error(monkeypatch):
    read = PLAN.module("timer").reference_sources
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EnvportError, match=r"pyboy is not installed.*pip install pyboy==2\.8\.1"):
        read()
    monkeypatch.undo()

    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: importlib.machinery.ModuleSpec(name, None,
                                                                    origin="/x/pyboy/__init__.py"))
    monkeypatch.setattr(metadata, "version", lambda name: "2.7.0")
    with pytest.raises(EnvportError, match=r"pyboy 2\.7\.0 is installed.*translates PyBoy 2\.8\.1"):
        read()


@needs_pyboy
def test_reference_sources_come_from_the_installed_pyboy():
    root = emurust_plan.pyboy_dir()
    assert (root / "core" / "timer.py").is_file()
    for m in PLAN.modules:
        sources = m.reference_sources()
        if m.name in ("vec", "vec_env", "idle", "blocks", "spin_pool"):  # new code, no PyBoy counterpart
            assert sources == {}
            continue
        assert sources, m.name
        for shown, text in sources.items():
            assert shown.startswith("pyboy/") and text.strip(), (m.name, shown)
            assert (root / shown.removeprefix("pyboy/")).read_text() == text
    assert set(PLAN.module("timer").reference_sources()) == {"pyboy/core/timer.py",
                                                              "pyboy/core/timer.pxd"}


@needs_pyboy
def test_cli_prompt_translate_timer(capsys):
    assert cli.main(["prompt", "emurust", "--module", "timer", "--kind", "translate"]) == 0
    out = capsys.readouterr().out
    timer_py = (emurust_plan.pyboy_dir() / "core" / "timer.py").read_text()
    assert "Translate module `timer` of emurust" in out and "Write `src/timer.rs` in Rust" in out
    assert timer_py.rstrip() in out  # PyBoy's source, verbatim
    assert PLAN.module("timer").contract.strip() in out
    assert "- tests/test_emurust_equivalence.py" in out and "- `utils`: src/utils.rs" in out
    assert PLAN.constraints.splitlines()[0] in out  # env constraints after the Rust checklist


def test_cli_prompt_repair_and_optimise(capsys, tmp_path):
    report = tmp_path / "verify.json"
    report.write_text(json.dumps({"levels": {"L2": {"cases": 200, "mismatches": 1}}}))
    assert cli.main(["prompt", "emurust", "--module", "lcd", "--kind", "repair",
                     "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "Repair `lcd` of emurust: L2 failed" in out and "`src/lcd.rs`" in out
    assert "- tests/test_opcodes_generated.py" in out and "- tests/test_l1_lcd.py (yours)" in out

    assert cli.main(["prompt", "emurust", "--kind", "optimise",
                     "--bench", str(tmp_path / "none.json")]) == 0
    out = capsys.readouterr().out
    assert "Optimise emurust" in out and "## Checklist (Rust)" in out
    assert "no benchmark yet" in out and "- tests/test_emurust_vec.py" in out


def test_plan_says_how_a_work_dir_is_built_and_checked():
    """What ``envport generate`` needs of a crate (issue 5): the Python package under python/,
    the release extension built into the env's build cache and copied where python/ imports it,
    ``cargo test`` as L1's native tests, target/ left out of the work dir's copy."""
    from envport.generate import agent, tools

    assert PLAN.python_roots == ("python",) and "target" in PLAN.copy_ignore
    assert tools.module_names((m.target for m in PLAN.modules), PLAN.python_roots) == (
        "emurust.utils", "emurust.pyboy", "emurust.vec")
    link, cargo_build, copy = PLAN.build
    assert cargo_build[:4] == ("env", "PYO3_PYTHON={python}", "cargo", "build")
    assert "--release" in cargo_build and "--locked" in cargo_build
    assert cargo_build[cargo_build.index("--features") + 1] == "extension-module"
    # the artifacts go to the cache, never to this checkout's target/ or python/emurust/
    assert cargo_build[cargo_build.index("--target-dir") + 1] == "{cache}/target"
    assert copy[0] == "{python}" and copy[-2:] == (
        "{cache}/target/release/libemurust.so", "python/emurust/_emurust.abi3.so")
    assert link[-2:] == ("{package}/target/vectors", "target/vectors")
    [cargo_test] = PLAN.native_tests
    assert cargo_test[:3] == ("cargo", "test", "--locked") and "{cache}/target" in cargo_test
    ignore = agent.copy_ignore(PLAN)
    assert {"target", "build", "_emurust.abi3.so"} <= set(
        ignore(str(PACKAGE_DIR), ["target", "build", "_emurust.abi3.so", "src", "python"]))


def test_link_vectors_step(tmp_path):
    """The build's first step links target/vectors to the checkout's (the Rust tests read them
    from the crate's own target/), and says how to make them when there are none."""
    link = PLAN.build[0]
    work, vectors = tmp_path / "work", tmp_path / "pkg/target/vectors"
    work.mkdir()
    run = [sys.executable, *link[1:-2], str(vectors), "target/vectors"]
    missing = subprocess.run(run, cwd=work, capture_output=True, text=True)
    assert missing.returncode != 0 and "./dev tests" in missing.stderr
    vectors.mkdir(parents=True)
    for _ in range(2):  # idempotent: every L1 check runs it
        subprocess.run(run, cwd=work, check=True)
    assert (work / "target/vectors").resolve() == vectors.resolve()


@needs_pyboy
def test_generated_files_tests_run_from_a_copy_of_the_package(tmp_path):
    """A work dir of ``envport generate`` is a copy of the package only (its python/ first on
    PYTHONPATH): the tests that rerun the generators use the copy's own ``emurust.tools`` (the
    package carries them; nothing outside the copy is needed) and check the copy's own files."""
    import os
    import shutil

    copy = tmp_path / "work"
    shutil.copytree(PACKAGE_DIR / "tests", copy / "tests",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # the Python package with the installed extension, copied (not rebuilt)
    shutil.copytree(PACKAGE_DIR / "python", copy / "python",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("opcodes.rs", "sound_template.rs"):
        (copy / "src").mkdir(exist_ok=True)
        shutil.copy(PACKAGE_DIR / "src" / name, copy / "src" / name)
    tests = ["tests/test_opcodes_generated.py", "tests/test_sound_template.py"]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
    env = {k: v for k, v in os.environ.items() if k != "ENVPORT_REPO_ROOT"}
    env["PYTHONPATH"] = str(copy / "python")

    def run():
        return subprocess.run(cmd, cwd=copy, capture_output=True, text=True, timeout=300, env=env)

    ok = run()
    assert ok.returncode == 0 and "4 passed" in ok.stdout, ok.stdout + ok.stderr
    # the copy's own file is the one checked: a changed opcodes.rs fails
    (copy / "src/opcodes.rs").write_text("// hand edit\n")
    changed = run()
    assert changed.returncode == 1 and "src/opcodes.rs differs" in changed.stdout
    # and the copy's own generator is the one run (not the checkout's)
    probe = subprocess.run([sys.executable, "-c", "import emurust.tools as t; print(t.__file__)"],
                           cwd=copy, capture_output=True, text=True, env=env, check=True)
    assert Path(probe.stdout.strip()).is_relative_to(copy)
