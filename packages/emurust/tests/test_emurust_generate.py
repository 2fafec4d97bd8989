"""``envport generate emurust`` for real, one module (issue 5): a scripted model (the only test
double) writes src/timer.rs back unchanged; the L1 phase then links the PyBoy vectors, builds the
release extension with cargo into a fresh build cache and copies it into the work dir's
python/emurust, runs ``cargo test --locked`` and the timer's pytest files against that
extension; the compose check imports the plan's Python modules from the work dir's python/.

Slow (a cold cargo build of the crate and its dependencies, release with LTO, plus the debug
test build): run with ``-m slow``. Needs cargo, pyboy==2.8.1, binutils-z80 and the PyBoy vectors
in target/vectors (``./dev tests``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emurust.plan import PACKAGE_DIR
from emurust.port import make_port
from envport.generate import agent, model, sandbox
from envport.generate.costs import Budget

pytestmark = pytest.mark.slow

USAGE = {"input_tokens": 1000, "output_tokens": 200, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0}


def test_generate_timer_builds_runs_cargo_test_and_pytest(tmp_path, monkeypatch):
    # a build cache of its own: nothing is built into this checkout (target/, python/emurust/)
    monkeypatch.setenv("ENVPORT_CACHE", str(tmp_path / "cache"))
    installed = PACKAGE_DIR / "python/emurust/_emurust.abi3.so"
    before = installed.stat().st_mtime_ns
    timer = (PACKAGE_DIR / "src/timer.rs").read_text()
    script = model.ScriptedModel([
        model.response([model.text_block("Writing the timer."),
                        model.tool_use("write_file", {"path": "src/timer.rs", "content": timer},
                                       "toolu_1")], USAGE, id="msg_1"),
        model.response([model.text_block("Done.")], USAGE, id="msg_2")])
    config = agent.RunConfig(env="emurust", modules=("timer",), levels=(),
                             budget=Budget(iterations=1),
                             # the default address-space limit (8 GiB, as the CLI's); a cold
                             # release build with fat LTO on a small machine needs the time
                             limits=sandbox.Limits(timeout_s=3000))
    s = agent.generate(make_port(), script, config, tmp_path / "reports")
    run = Path(s["run_dir"])
    log = run / "iterations/timer-1/tests.txt"
    assert s["status"] == "passed", (s["needs_human"], log.read_text()[-6000:]
                                     if log.exists() else None)

    [it] = s["iteration_log"]
    assert it["checks"] == {"L1": "passed", "compose": "passed"}
    steps = it["tests"]["steps"]
    assert [(st["kind"], st["passed"]) for st in steps] == [
        ("build", True), ("build", True), ("build", True), ("native tests", True)]
    assert steps[1]["command"].startswith("env PYO3_PYTHON={python} cargo build --release")
    assert steps[3]["command"].startswith("cargo test --locked")
    assert it["tests"]["paths"] == ["tests/test_emurust_equivalence.py"]
    text = log.read_text()
    assert "timer::vector_tests::timer_matches_pyboy_vectors ... ok" in text
    assert "test result: ok." in text and " passed" in text.splitlines()[-1]
    compose = json.loads((run / "iterations/timer-1/verify/compose.json").read_text())
    assert compose["passed"] and compose["modules"] == [
        "emurust.utils", "emurust.pyboy", "emurust.vec"]

    work = run / "work"
    assert (work / "python/emurust/_emurust.abi3.so").is_file()        # built for the work dir
    assert (tmp_path / "cache/generate/emurust/target/release/libemurust.so").is_file()
    assert sorted(p.name for p in (work / "target").iterdir()) == ["vectors"]  # only the link
    assert installed.stat().st_mtime_ns == before                     # never rebuilt
    assert (run / "final.diff").read_text() == ""                     # timer.rs as it was
