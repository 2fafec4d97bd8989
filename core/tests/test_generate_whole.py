"""``envport generate`` on a package that builds only as a whole (``builds_as_whole``: a Rust
crate, whose modules may depend on each other in cycles). A run of several modules starts
without their files, so nothing builds until the last one is written: each module's L1 phase is
deferred, then the module that completes the package runs L1 on all of them together. A tiny
fake crate stands in for the real one: its "compiler" (``build_crate.py``) fails unless every
module's file exists and parses, its "cargo test" (``native_test.py``) checks the values."""

import json
from pathlib import Path

import pytest

from envport.generate import agent, model, records, sandbox
from envport.generate.costs import Budget
from envport.plan import ModulePlan, TranslationPlan
from envport.registry import EnvPort

USAGE = {"input_tokens": 1000, "output_tokens": 200, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0}

# the "compiler": every module of native/lib.rs must exist and read `fn <name>(x) = <expr>`;
# the functions call each other (a -> b, c -> a, b), so no module builds alone
BUILD = """\
import os, re, sys
errors = []
for name in ("a", "b", "c"):
    path = f"native/{name}.rs"
    if not os.path.exists(path):
        errors.append(f"error[E0583]: file not found for module `{name}`\\n"
                      f" --> native/lib.rs:1:1\\n"
                      f"  = help: to create the module `{name}`, create file \\"{path}\\"")
        continue
    text = open(path).read()
    if not re.fullmatch(rf"fn {name}\\(x\\) = (.+)\\n?", text):
        errors.append(f"error: expected `fn {name}(x) = <expr>`\\n --> {path}:1:1")
print("   Compiling crate v0.1.0 (.)")
if errors:
    print("\\n\\n".join(errors))
    print(f"error: could not compile `crate` (lib) due to {len(errors)} previous error(s)")
    sys.exit(101)
with open(sys.argv[1], "w") as f:
    for name in ("a", "b", "c"):
        expr = re.fullmatch(rf"fn {name}\\(x\\) = (.+)\\n?", open(f"native/{name}.rs").read())
        f.write(f"def {name}(x):\\n    return {expr.group(1)}\\n")
print("    Finished `release` profile [optimized] target(s) in 0.50s")
"""
NATIVE_TEST = """\
import runpy, sys
ns = runpy.run_path(sys.argv[1])
got = (ns["a"](1), ns["b"](1), ns["c"](1))
print("running 1 test")
if got != (3, 2, 5):
    print(f"---- tests::values stdout ----\\nassertion failed: {got} != (3, 2, 5)")
    print("test result: FAILED. 0 passed; 1 failed")
    sys.exit(101)
print("test result: ok. 1 passed; 0 failed")
"""
CRATE_TESTS = """\
from crate._native import c


def test_c():
    assert c(1) == 5
"""
L1_A = """\
from crate._native import a


def test_a():
    assert a(0) == 1
"""
CODE = {"a": "fn a(x) = b(x) + 1\n", "b": "fn b(x) = 2 * x\n", "c": "fn c(x) = a(x) + b(x)\n"}
BROKEN_C = "pub fn c(x: i32) -> i32 {\n"  # does not compile


@pytest.fixture
def pkg(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ENVPORT_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    pkg = root / "packages/crate"
    for d in ("native", "python/crate", "tests"):
        (pkg / d).mkdir(parents=True)
    for name, code in CODE.items():  # the run deletes them: the model writes them
        (pkg / f"native/{name}.rs").write_text(code)
    (pkg / "native/lib.rs").write_text("mod a;\nmod b;\nmod c;\n")
    (pkg / "python/crate/__init__.py").write_text("")
    (pkg / "build_crate.py").write_text(BUILD)
    (pkg / "native_test.py").write_text(NATIVE_TEST)
    (pkg / "tests/test_crate.py").write_text(CRATE_TESTS)
    return pkg


def crate_port(pkg: Path, builds_as_whole: bool = True) -> EnvPort:
    def module(name: str, tests=()) -> ModulePlan:
        return ModulePlan(name, f"native/{name}.rs", lambda: {f"{name}.py": "..."},
                          f"`fn {name}(x)`", tests=tests)

    plan = TranslationPlan(
        pkg, "rust", [module("a", ["tests/test_crate.py"]), module("b"),
                      module("c", ["tests/test_crate.py"])],
        python_roots=("python",), builds_as_whole=builds_as_whole,
        build=(("{python}", "build_crate.py", "python/crate/_native.py"),),
        native_tests=(("{python}", "native_test.py", "python/crate/_native.py"),))
    return EnvPort(name="crate", reference="crate.py", candidate="crate",
                   install_reference=lambda: None, check_reference=lambda: None, plan=plan)


def reply(n, *blocks) -> dict:
    return model.response(list(blocks), USAGE, id=f"msg_{n}")


def writes(n: int, **files: str) -> dict:
    return reply(n, *(model.tool_use("write_file", {"path": path, "content": text},
                                     f"toolu_{n}_{i}")
                      for i, (path, text) in enumerate(files.items())))


def write_module(name: str, n: int, code: str | None = None) -> dict:
    return writes(n, **{f"native/{name}.rs": code or CODE[name]})


def done(n: int) -> dict:
    return reply(n, model.text_block("Done."))


def config(**kw) -> agent.RunConfig:
    return agent.RunConfig(env="crate", modules=kw.pop("modules", None), levels=(),
                           budget=kw.pop("budget", Budget(iterations=3)),
                           limits=sandbox.Limits(timeout_s=120, memory_bytes=4 * 2**30), **kw)


def _repair_whole(request):
    """The repair of the whole crate: the compiler's error, every module's file and tests."""
    text = request.messages[0]["content"]
    for part in ("Repair crate, built as a whole: L1 build failed (phase L1, template "
                 "repair_whole/v1, iteration 2)",
                 "the last of them was written (`c`) and now run on all of them together",
                 "- `a`: native/a.rs\n- `b`: native/b.rs\n- `c`: native/c.rs",
                 "`{python} build_crate.py python/crate/_native.py` exited 101",
                 "error: expected `fn c(x) = <expr>`\n --> native/c.rs:1:1",
                 "- tests/test_crate.py\n- tests/test_l1_a.py\n- tests/test_l1_b.py\n"
                 "- tests/test_l1_c.py\n",
                 "iteration 2 of at most 3 for phase L1"):
        assert part in text, (part, text)
    assert "file not found" not in text  # every file exists by now
    return write_module("c", 7)


def whole_script() -> list:
    return [writes(1, **{"native/a.rs": CODE["a"], "tests/test_l1_a.py": L1_A}), done(2),
            write_module("b", 3), done(4),
            write_module("c", 5, BROKEN_C), done(6),
            _repair_whole, done(8)]


def _interrupt(request):
    raise KeyboardInterrupt


def test_l1_waits_for_the_whole_crate_then_repairs_it_as_a_whole(pkg, tmp_path):
    out = tmp_path / "reports"
    script = model.ScriptedModel(whole_script())
    s = agent.generate(crate_port(pkg), script, config(), out, run_id="whole")
    assert s["status"] == "passed", s["needs_human"]
    assert [(it["module"], it["kind"], it["phase"], it["phase_iteration"], it["checks"],
             it["verdict"]) for it in s["iteration_log"]] == [
        ("a", "translate", "L1", 0, {"L1": "deferred"}, "deferred"),
        ("b", "translate", "L1", 0, {"L1": "deferred"}, "deferred"),
        ("c", "translate", "L1", 1, {"L1": "failed"}, "failed"),
        ("c", "repair", "compose", 1, {"L1": "passed", "compose": "passed"}, "passed")]
    assert s["deferred"] == 2 and s["iterations"] == 4
    assert s["iterations_per_module"] == {"a": 1, "b": 1, "c": 2}
    assert s["iterations_per_phase"] == {"a": {"L1": 1, "compose": 0},
                                         "b": {"L1": 1, "compose": 0},
                                         "c": {"L1": 1, "compose": 1}}
    assert "repair_whole.v1" in s["templates"]
    # a deferred module ran no check at all: no build, no test output
    for it in s["iteration_log"][:2]:
        assert it["tests"] is None and it["failure"] is None and it["verification"] is None
    run = Path(s["run_dir"])
    assert not (run / "iterations/a-1").exists() and not (run / "iterations/b-1").exists()
    # the whole L1: the build (the compiler names the broken file), then every module's tests
    first = s["iteration_log"][2]
    assert first["failure"]["level"] == "L1 build" and "native/c.rs" in first["failure"]["case"]
    assert first["tests"]["paths"] == ["tests/test_crate.py", "tests/test_l1_a.py"]  # those
    # that exist of every module's declared and L1 tests
    last = s["iteration_log"][3]["tests"]
    assert last["passed"] and [(st["kind"], st["passed"]) for st in last["steps"]] == [
        ("build", True), ("native tests", True)]
    tests_txt = (run / "iterations/c-2/tests.txt").read_text()
    assert "test result: ok" in tests_txt and "2 passed" in tests_txt  # test_crate, test_l1_a
    # the prompts: three translations, then the whole crate's repair (recorded as a repair)
    assert sorted(p.name for p in (run / "prompts").iterdir()) == [
        "001-translate-a-it1.md", "002-translate-b-it1.md", "003-translate-c-it1.md",
        "004-repair-c-it2.md"]
    translate = (run / "prompts/001-translate-a-it1.md").read_text()
    assert "The package builds only as a whole" in translate
    md = (run / "generate.md").read_text()
    assert "- deferred: 2 L1 phase(s) waited for the whole package" in md
    assert "| 1 | a | translate | L1 (—) | L1 DEFERRED | — | — | deferred |" in md
    assert "| a | 1 | 0 | 1 |" in md and "| c | 1 | 1 | 2 |" in md
    diff = (run / "final.diff").read_text()  # every module as it was; the build's output and
    assert [line for line in diff.splitlines() if line.startswith("+++")] == [  # the L1 test
        "+++ b/python/crate/_native.py", "+++ b/tests/test_l1_a.py"]
    assert [it["verdict"] for it in map(json.loads, (run / "iterations.jsonl").read_text()
                                        .splitlines())] == ["deferred", "deferred", "failed",
                                                            "passed"]

    again = agent.replay(crate_port(pkg), "whole", out)
    volatile = {"run_id", "replay_of", "wall_s", "run_dir"}
    assert {k: v for k, v in again.items() if k not in volatile} == \
           {k: v for k, v in s.items() if k not in volatile}


@pytest.mark.parametrize("k", [3, 7])  # in a deferred module / in the whole crate's repair
def test_resume_between_deferred_modules(pkg, tmp_path, k):
    whole = agent.generate(crate_port(pkg), model.ScriptedModel(whole_script()), config(),
                           tmp_path / "whole", run_id="whole")
    out = tmp_path / "reports"
    script = whole_script()
    with pytest.raises(KeyboardInterrupt):
        agent.generate(crate_port(pkg), model.ScriptedModel([*script[:k - 1], _interrupt]),
                       config(), out, "cut")
    assert records.list_runs(out)[0]["status"] == "error"
    s = agent.resume(crate_port(pkg), "cut", model.ScriptedModel(script[k - 1:]), out)
    volatile = {"run_id", "wall_s", "run_dir", "resumes"}
    assert {key: v for key, v in s.items() if key not in volatile} == \
           {key: v for key, v in whole.items() if key not in volatile}
    assert s["deferred"] == 2 and s["resumes"] == 1


def test_the_whole_crate_passes_at_once(pkg, tmp_path):
    script = model.ScriptedModel([write_module("a", 1), done(2), write_module("b", 3), done(4),
                                  write_module("c", 5), done(6)])
    s = agent.generate(crate_port(pkg), script, config(), tmp_path / "reports")
    assert s["status"] == "passed", s["needs_human"]
    assert [(it["module"], it["phase"], it["verdict"]) for it in s["iteration_log"]] == [
        ("a", "L1", "deferred"), ("b", "L1", "deferred"), ("c", "compose", "passed")]
    assert s["iteration_log"][2]["tests"]["paths"] == ["tests/test_crate.py"]  # only existing


def test_the_whole_crate_that_keeps_failing_needs_a_human(pkg, tmp_path):
    script = model.ScriptedModel([write_module("a", 1), done(2), write_module("b", 3), done(4),
                                  write_module("c", 5, BROKEN_C), done(6)])
    s = agent.generate(crate_port(pkg), script, config(budget=Budget(iterations=1)),
                       tmp_path / "reports")
    assert s["status"] == "needs_human"
    assert s["needs_human_at"] == {"module": "c", "phase": "L1", "iterations": 1,
                                   "together": ["a", "b", "c"]}
    assert s["needs_human"].startswith("module 'c' still fails after 1 iterations of phase L1 "
                                       "(L1 build: ")
    assert s["needs_human"].endswith("the package builds as a whole: L1 checked modules a, b, "
                                     "c together")


def test_modules_never_checked_leave_the_run_incomplete(pkg, tmp_path):
    """The model never writes b: the package never builds, a and b wait for good."""
    script = model.ScriptedModel([write_module("a", 1), done(2), done(3)])
    s = agent.generate(crate_port(pkg), script, config(modules=("a", "b")), tmp_path / "reports")
    assert s["status"] == "incomplete" and s["deferred"] == 2
    assert s["needs_human"] == ("the L1 checks of modules a, b never ran: the package builds as "
                                "a whole and files of the plan are missing")


def test_one_module_with_the_others_present_is_checked_at_once(pkg, tmp_path):
    script = model.ScriptedModel([write_module("b", 1), done(2)])
    s = agent.generate(crate_port(pkg), script, config(modules=("b",)), tmp_path / "reports")
    assert s["status"] == "passed" and s["deferred"] == 0
    [it] = s["iteration_log"]
    assert (it["phase"], it["phase_iteration"], it["checks"]) == (
        "compose", 1, {"L1": "passed", "compose": "passed"})
    assert it["tests"]["paths"] == []  # b declares none and wrote none: build + native tests


def test_without_builds_as_whole_the_first_module_fails_l1(pkg, tmp_path):
    """Today's behaviour, kept for a plan that does not build as a whole: the first module's L1
    runs at once, the build fails on the missing modules and the repair prompt is the module's
    own."""
    script = model.ScriptedModel([write_module("a", 1), done(2), write_module("a", 3), done(4)])
    s = agent.generate(crate_port(pkg, builds_as_whole=False), script,
                       config(budget=Budget(iterations=2)), tmp_path / "reports")
    assert s["status"] == "needs_human" and s["deferred"] == 0
    assert s["needs_human_at"] == {"module": "a", "phase": "L1", "iterations": 2}
    assert [(it["kind"], it["phase"], it["phase_iteration"], it["verdict"])
            for it in s["iteration_log"]] == [("translate", "L1", 1, "failed"),
                                              ("repair", "L1", 2, "failed")]
    assert "file not found for module `b`" in s["iteration_log"][0]["failure"]["case"]
    repair = script.requests[2].messages[0]["content"]
    assert "Repair `a` of crate: L1 build failed (phase L1, template repair/v2" in repair
    assert "repair_whole.v1" not in s["templates"]
    assert "builds only as a whole" not in script.requests[0].messages[0]["content"]
    assert "deferred" not in (Path(s["run_dir"]) / "generate.md").read_text()
