"""``envport generate`` on a package that is not pure Python (a Rust crate with a PyO3
extension, in real life): the plan's ``python_roots``, ``build``, ``native_tests`` and
``copy_ignore``. A tiny fake stands in for the crate: its "compiler" (``build_native.py``) and
its "cargo test" (``native_test.py``) are small Python scripts, so these tests run in seconds;
emurust's slow test runs the real cargo."""

import json
import os
from pathlib import Path

import pytest

from envport.errors import EnvportError
from envport.generate import agent, failures, model, sandbox, tools
from envport.generate.costs import Budget
from envport.plan import ModulePlan, TranslationPlan, expand, repo_root
from envport.registry import EnvPort

KEY = "sk-ant-test-0123456789-SECRET"
USAGE = {"input_tokens": 1000, "output_tokens": 200, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0}

# the "compiler": native/add.rs must read `fn add(a, b) = <expr>`; the artifact goes to the
# target dir it is given (the env's build cache), a rustc-like error otherwise. Like cargo, it
# rebuilds only when the source is newer than the artifact.
BUILD = """\
import os, re, sys
target = sys.argv[1]
artifact = os.path.join(target, "add.py")
if os.path.exists(artifact) and os.path.getmtime(artifact) > os.path.getmtime("native/add.rs"):
    print("       Fresh fakers v0.1.0 (.)")
    sys.exit(0)
text = open("native/add.rs").read()
m = re.fullmatch(r"fn add\\(a, b\\) = (.+)\\n?", text)
if not m:
    print("   Compiling fakers v0.1.0 (.)")
    print("warning: unused import: `std::fmt`")
    print(" --> native/add.rs:1:1")
    print()
    print("error[E0001]: expected `fn add(a, b) = <expr>`")
    print(" --> native/add.rs:1:1")
    print(f"  | {text.splitlines()[0] if text else ''}")
    print()
    print("error: could not compile `fakers` (lib) due to 1 previous error")
    sys.exit(101)
os.makedirs(target, exist_ok=True)
with open(artifact, "w") as f:
    f.write(f"def add(a, b):\\n    return {m.group(1)}\\n")
print("    Finished `release` profile [optimized] target(s) in 1m 02s")
"""
# the "cargo test": runs the built artifact, reports like the Rust test harness
NATIVE_TEST = """\
import runpy, sys
add = runpy.run_path(sys.argv[1])["add"]
print("running 1 test")
if add(2, 3) != 5:
    print("test tests::add ... FAILED")
    print()
    print("failures:")
    print()
    print("---- tests::add stdout ----")
    print("thread 'tests::add' panicked at native/add.rs:1:1:")
    print("assertion `left == right` failed")
    print(f"  left: {add(2, 3)}")
    print(" right: 5")
    print()
    print("test result: FAILED. 0 passed; 1 failed; 0 ignored; finished in 0.01s")
    sys.exit(101)
print("test tests::add ... ok")
print("test result: ok. 1 passed; 0 failed; 0 ignored; finished in 0.01s")
"""
TESTS = """\
import os
import sys
from pathlib import Path

import fakers
from fakers.api import add


def test_add():
    assert add(2, 3) == 5


def test_the_work_dirs_package_and_where_it_came_from():
    work = Path.cwd().resolve()
    assert Path(fakers.__file__).resolve() == work / "python/fakers/__init__.py"
    assert sys.path.index(str(work / "python")) < sys.path.index(str(work / "src"))
    assert Path(os.environ["ENVPORT_REPO_ROOT"], "tools/helper.py").is_file()
    assert Path(os.environ["ENVPORT_PACKAGE_DIR"], "native").is_dir()
    assert not [k for k in os.environ if "ANTHROPIC" in k or "API_KEY" in k]
"""
GOOD = "fn add(a, b) = a + b\n"
WRONG = "fn add(a, b) = a - b\n"       # compiles, the native test fails
BROKEN = "pub fn add(a: i32) -> i32 {\n"  # does not compile
COPY = "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])"
PLAN_COMMANDS = dict(
    python_roots=("python", "src"),
    build=(("{python}", "build_native.py", "{cache}/target"),
           ("{python}", "-c", COPY, "{cache}/target/add.py", "python/fakers/_native.py")),
    native_tests=(("{python}", "native_test.py", "{cache}/target/add.py"),),
    copy_ignore=("target",))


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ENVPORT_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "tools").mkdir()
    (root / "tools/helper.py").write_text("")
    pkg = root / "packages/fake-rs"
    for d in ("native", "python/fakers", "src", "tests", "target/release", "roms/build"):
        (pkg / d).mkdir(parents=True)
    (pkg / "native/add.rs").write_text(GOOD)  # the run deletes it: the model writes it
    (pkg / "python/fakers/__init__.py").write_text("")
    (pkg / "python/fakers/api.py").write_text("from fakers._native import add  # noqa\n")
    (pkg / "python/fakers/_native.so").write_bytes(b"\0ELF")   # a stale build: never copied
    (pkg / "target/release/libfakers.so").write_bytes(b"\0" * 4096)
    (pkg / "target/release/libfakers.d").write_text("target/release/libfakers.so: native/add.rs\n")
    (pkg / "roms/build/x.gb").write_bytes(b"\0")
    (pkg / "build_native.py").write_text(BUILD)
    (pkg / "native_test.py").write_text(NATIVE_TEST)
    (pkg / "tests/test_fakers.py").write_text(TESTS)
    return root


def fake_port(pkg: Path, **overrides) -> EnvPort:
    plan = TranslationPlan(pkg, "rust", [
        ModulePlan("add", "native/add.rs", lambda: {"add.py": "def add(a, b): return a + b"},
                   "`fn add(a, b) = a + b`", tests=["tests/test_fakers.py"]),
        ModulePlan("api", "python/fakers/api.py", dict, "`fakers.api.add`",
                   tests=["tests/test_fakers.py"], depends_on=["add"]),
    ], **{**PLAN_COMMANDS, **overrides})
    return EnvPort(name="fakers", reference="add.py", candidate="fakers",
                   install_reference=lambda: None, check_reference=lambda: None, plan=plan)


def reply(n, *blocks) -> dict:
    return model.response(list(blocks), USAGE, id=f"msg_{n}")


def writes(code: str, n: int) -> dict:
    return reply(n, model.tool_use("write_file", {"path": "native/add.rs", "content": code},
                                   f"toolu_{n}"))


def done(n: int) -> dict:
    return reply(n, model.text_block("Done."))


def config(**kw) -> agent.RunConfig:
    return agent.RunConfig(env="fakers", modules=kw.pop("modules", ("add",)), levels=(),
                           budget=kw.pop("budget", Budget(iterations=3)),
                           limits=sandbox.Limits(timeout_s=120, memory_bytes=4 * 2**30), **kw)


def test_plan_defaults_keep_a_python_package_as_it_was(tmp_path):
    plan = TranslationPlan(tmp_path, "jax", [])
    assert plan.python_roots == ("src",) and plan.build == () and plan.native_tests == ()
    assert plan.copy_ignore == ()
    assert agent.copy_ignore(plan) is agent.COPY_IGNORE
    assert tools.tools_for(plan.build, plan.native_tests) is tools.TOOLS
    assert tools.module_names(["src/pkg/mod.py", "src/pkg/__init__.py", "src/x.rs",
                               "tests/test_a.py"]) == ("pkg.mod", "pkg")
    assert sandbox.python_path(tmp_path).split(os.pathsep)[0] == str(tmp_path / "src")


def test_plan_commands_are_checked_and_expanded(tmp_path):
    for bad in ({"build": ["cargo build"]}, {"build": [[]]}, {"native_tests": [["cargo", 1]]},
                {"python_roots": ("../elsewhere",)}, {"python_roots": ("/abs",)}):
        with pytest.raises(EnvportError, match="translation plan"):
            TranslationPlan(tmp_path, "rust", [], **bad)
    cmd = ("{python}", "-c", "print({'a': 1})", "{cache}/target", "{repo}/tools", "{unknown}")
    assert expand(cmd, {"python": "/py", "cache": "/c", "repo": "/r"}) == [
        "/py", "-c", "print({'a': 1})", "/c/target", "/r/tools", "{unknown}"]
    (tmp_path / "r/.git").mkdir(parents=True)
    (tmp_path / "r/packages/p").mkdir(parents=True)
    assert repo_root(tmp_path / "r/packages/p") == (tmp_path / "r").resolve()
    (tmp_path / "lone").mkdir()
    assert repo_root(tmp_path / "lone") == tmp_path.resolve()


def test_module_names_and_pythonpath_follow_the_python_roots(tmp_path):
    targets = ["src/lib.rs", "python/emu/utils.py", "python/emu/__init__.py", "python/top.py",
               "lib/py/deep/mod.py", "tools/x.py"]
    assert tools.module_names(targets, ("python", "lib/py")) == (
        "emu.utils", "emu", "top", "deep.mod")
    assert tools.module_names(targets) == ()
    parts = sandbox.python_path(tmp_path, ("python", "src")).split(os.pathsep)
    assert parts[:2] == [str(tmp_path / "python"), str(tmp_path / "src")]


def test_trim_command_output_keeps_the_errors():
    noise = "\n".join(f"   Compiling dep{i} v1.0.0" for i in range(200))
    warnings = "\n\n".join(f"warning: unused variable `x{i}`\n --> src/a.rs:{i}:1" for i in range(50))
    out = (f"{noise}\n{warnings}\n\nerror[E0308]: mismatched types\n --> src/timer.rs:3:5\n\n"
           f"error: could not compile `emu` (lib) due to 1 previous error\n")
    trimmed = failures.trim_command_output(out)
    assert trimmed == ("error[E0308]: mismatched types\n --> src/timer.rs:3:5\n\n"
                       "error: could not compile `emu` (lib) due to 1 previous error")
    # a failing test run: passing tests and progress dropped, the panic and the summary kept
    tests = "\n".join(["running 300 tests", *(f"test m::t{i} ... ok" for i in range(300)),
                       "test m::bad ... FAILED", "", "failures:", "", "---- m::bad stdout ----",
                       "thread 'm::bad' panicked at src/m.rs:9:5:", "boom", "",
                       "test result: FAILED. 300 passed; 1 failed"])
    trimmed = failures.trim_command_output(tests)
    assert "... ok" not in trimmed and "running 300" not in trimmed
    assert "panicked at src/m.rs:9:5" in trimmed and trimmed.endswith("300 passed; 1 failed")
    # still too long: the head (first errors) and the tail (summary), a marker between
    long = "\n\n".join(f"error[E{i:04}]: problem {i} " + "x" * 200 for i in range(100))
    trimmed = failures.trim_command_output(long, limit=3000)
    assert len(trimmed) < 3100 and trimmed.startswith("error[E0000]")
    assert trimmed.endswith("x" * 50) and "characters left out" in trimmed
    f = failures.from_command_output("native tests", "cargo test --locked", 101, tests)
    assert f.level == "L1 native tests" and failures.phase_of(f.level) == "L1"
    assert f.summary == "`cargo test --locked` exited 101" and "boom" in f.case


def test_build_runs_in_the_sandbox_with_the_jail(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    work, cache, pkg = tmp_path / "work", tmp_path / "cache/fakers", repo / "packages/fake-rs"
    work.mkdir()
    cache.mkdir(parents=True)
    script = ("import os, sys\n"
              "open(os.path.join(sys.argv[1], 'artifact'), 'w').write('built')\n"
              "print(sorted(k for k in os.environ if 'KEY' in k), os.environ['TMPDIR'])\n"
              "open(os.path.join(sys.argv[2], 'escaped.txt'), 'w').write('x')\n")
    ws = tools.Workspace(work, "fakers", sandbox.Limits(timeout_s=60), writable=(cache,),
                         build=(("{python}", "-c", script, "{cache}", "{package}"),),
                         placeholders={"cache": str(cache), "package": str(pkg)})
    run = ws.run_l1([])
    assert not run.passed and run.failed_step.kind == "build"
    assert (cache / "artifact").read_text() == "built"  # the cache is writable ...
    assert not (pkg / "escaped.txt").exists()            # ... the package is not
    assert "envport sandbox: generated code may not write to a path outside" in run.output
    assert "[] $TMPDIR" in run.log and KEY not in run.log   # no secret reaches the build
    assert run.output.startswith("$ {python} -c <215-char script> {cache} {package}: exited 1")
    assert str(cache) not in run.log
    f = tools.failure_of_tests(run)
    assert f.level == "L1 build" and "PermissionError" in f.case
    # the tool: a build-only package may run no pytest at all; pytest's exit code is the tool's
    assert not tools.execute(ws, "run_tests", {"paths": []}, lambda: tmp_path).content.startswith(
        "run_tests needs")
    plain = tools.Workspace(work, "fakers", sandbox.Limits(timeout_s=60))
    assert tools.execute(plain, "run_tests", {"paths": []}, lambda: tmp_path).content == \
        "run_tests needs at least one path"


def test_l1_builds_runs_native_tests_then_pytest(repo, tmp_path, monkeypatch):
    """Build failure, then native test failure, each an L1 failure whose case is the tool's
    output; then the fix passes L1 and the compose check, which imports the plan's Python
    module from the package's python root against the freshly built extension."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    pkg = repo / "packages/fake-rs"
    port = fake_port(pkg)
    seen = []

    def repair(expect, code, n):
        def step(request):
            seen.append(request.messages[0]["content"])
            for text in expect:
                assert text in seen[-1], (text, seen[-1])
            return writes(code, n)
        return step

    script = model.ScriptedModel([
        writes(BROKEN, 1), done(2),
        repair(["Repair `add` of fakers: L1 build failed (phase L1",
                "`{python} build_native.py {cache}/target` exited 101",
                "error[E0001]: expected `fn add(a, b) = <expr>`", "could not compile"], WRONG, 3),
        done(4),
        repair(["L1 native tests failed (phase L1",
                "`{python} native_test.py {cache}/target/add.py` exited 101",
                "---- tests::add stdout ----", "left: -1"], GOOD, 5),
        done(6)])
    s = agent.generate(port, script, config(), tmp_path / "reports")
    assert s["status"] == "passed", s["needs_human"]
    assert [(it["phase"], it["phase_iteration"], it["checks"], it["failure"] and
             it["failure"]["level"]) for it in s["iteration_log"]] == [
        ("L1", 1, {"L1": "failed"}, "L1 build"),
        ("L1", 2, {"L1": "failed"}, "L1 native tests"),
        ("compose", 1, {"L1": "passed", "compose": "passed"}, None)]
    # the build failure's case: the compiler's errors, its progress line and warnings dropped
    case = s["iteration_log"][0]["failure"]["case"]
    assert "Compiling" not in case and "warning: unused import" not in case
    assert s["iteration_log"][0]["tests"] == {
        "paths": ["tests/test_fakers.py"], "returncode": 101, "passed": False,
        "steps": [{"kind": "build", "command": "{python} build_native.py {cache}/target",
                   "returncode": 101, "passed": False}]}
    last = s["iteration_log"][2]["tests"]
    assert last["passed"] and last["returncode"] == 0
    assert [(st["kind"], st["passed"]) for st in last["steps"]] == [
        ("build", True), ("build", True), ("native tests", True)]

    run = Path(s["run_dir"])
    work = run / "work"
    # the copy leaves out target/ (the plan's copy_ignore), build outputs and stale extensions
    assert not (work / "target").exists() and not (work / "roms/build").exists()
    assert not (work / "python/fakers/_native.so").exists()
    assert (work / "python/fakers/_native.py").is_file()   # built in the work dir
    assert (tmp_path / "cache/generate/fakers/target/add.py").is_file()  # in the env's cache
    # nor does the final diff list what the copy left out as deleted
    diff = (run / "final.diff").read_text()
    assert "target/" not in diff and "roms/build" not in diff and "native/add.rs" not in diff
    tests_txt = (run / "iterations/add-3/tests.txt").read_text()
    assert tests_txt.startswith("$ {python} build_native.py {cache}/target: ok\n")
    assert "$ {python} native_test.py {cache}/target/add.py: ok" in tests_txt
    assert "test result: ok" in tests_txt and "2 passed" in tests_txt
    assert "Finished `release`" in tests_txt and "1m 02s" not in tests_txt  # scrubbed
    compose = json.loads((run / "iterations/add-3/verify/compose.json").read_text())
    assert compose["passed"] and compose["modules"] == ["fakers.api"]
    # the tools the model was given say that run_tests builds first
    calls = [json.loads(p.read_text()) for p in sorted((run / "responses").iterdir())]
    assert len(calls) == 6
    assert "builds the package (`{python} build_native.py {cache}/target`" in \
        next(t for t in script.requests[0].tools if t["name"] == "run_tests")["description"]
    assert KEY not in "\n".join(p.read_text(errors="replace")
                                for p in run.rglob("*") if p.is_file())


def test_the_compose_check_imports_from_the_python_roots(repo, tmp_path):
    """The plan's Python module under ``python/`` is imported by the compose check, which runs
    after the build (run_verification builds first: the model may call it before run_tests)."""
    pkg = repo / "packages/fake-rs"
    for port, composes in ((fake_port(pkg, build=()), False), (fake_port(pkg), True)):
        gen = agent.Generation(port, model.ScriptedModel([]), config(modules=("api",)),
                               tmp_path / f"reports-{composes}")
        ws = gen.ws
        assert ws.compose_modules == ("fakers.api",) and ws.python_roots == ("python", "src")
        agent.copy_tree(pkg, ws.root, gen.ignore)
        v = ws.run_verification(tmp_path / f"verify-{composes}")
        assert v.composed is composes and v.passed is composes, v.summary()
        if not composes:  # never built: the module under the python root fails to import
            assert "import fakers.api failed" in v.failure.case
            assert "No module named 'fakers._native'" in v.failure.case
    # a build that fails is a compose failure of the verification tool, with the compiler's case
    (ws.root / "native/add.rs").write_text(BROKEN)
    v = ws.run_verification(tmp_path / "verify-broken")
    assert not v.composed and v.failure.level == "L1 build"
    assert "error[E0001]" in v.summary() and "does not compose" in v.summary()


def test_optimise_revert_rebuilds_from_the_verified_files(repo, tmp_path):
    """A reverted change is copied back with fresh mtimes, so an mtime-based build tool (the
    fake's, cargo) rebuilds it: with the old mtimes the cache's artifact of the broken version
    would look newer than the restored source and be kept."""
    pkg = repo / "packages/fake-rs"
    port = fake_port(pkg)
    faster = "fn add(a, b) = b + a\n"
    script = model.ScriptedModel([writes(GOOD, 1), done(2), writes(faster, 3), done(4),
                                  writes(WRONG, 5), done(6)])
    s = agent.generate(port, script, config(optimise=True, budget=Budget(iterations=2)),
                       tmp_path / "reports")
    assert [(it["kind"], it["verdict"]) for it in s["iteration_log"]] == [
        ("translate", "passed"), ("optimise", "kept"), ("optimise", "reverted")]
    assert s["iteration_log"][2]["failure"]["level"] == "L1 native tests"
    work = Path(s["run_dir"]) / "work"
    assert (work / "native/add.rs").read_text() == faster
    gen = agent.Generation(port, model.ScriptedModel([]), config(), tmp_path / "again")
    gen.ws.root = work  # the run's work dir as it ended builds and passes again
    run = gen.ws.run_l1(["tests/test_fakers.py"])
    assert run.passed, run.log
    assert "return b + a" in (work / "python/fakers/_native.py").read_text()
