"""The generation loop on a tiny pure-Python package: the real Anthropic SDK against a mock HTTP
transport (the request it sends, usage -> cost log, retries), the sandbox, the records, replay,
resume and budgets. No JAX and no reference here; pong-port's tests run the loop end to end."""

import json
from pathlib import Path

import httpx2
import pytest

from envport import cli
from envport.errors import EnvportError
from envport.generate import agent, model, records, sandbox, tools
from envport.generate.costs import Budget, Usage
from envport.plan import ModulePlan, TranslationPlan
from envport.registry import EnvPort

KEY = "sk-ant-test-0123456789-SECRET"
SOURCE = "int add(int a, int b) { return a + b; }\n"
GOOD = "def add(a, b):\n    return a + b\n"
BAD = "def add(a, b):\n    return a - b\n"
TESTS = """\
import os

from toy_gen.core import add

def test_add():
    assert add(2, 3) == 5

def test_no_secret_reaches_generated_code():
    assert not [k for k in os.environ if "ANTHROPIC" in k or "API_KEY" in k]
"""
USAGE = {"input_tokens": 1000, "output_tokens": 200, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0}
# claude-sonnet-4-6 (the default model): $3 / $15 per million tokens
USD_PER_CALL = (1000 * 3 + 200 * 15) / 1e6


@pytest.fixture
def port(tmp_path) -> EnvPort:
    pkg = tmp_path / "toy-gen"
    (pkg / "src/toy_gen").mkdir(parents=True)
    (pkg / "src/toy_gen/__init__.py").write_text("")
    (pkg / "src/toy_gen/core.py").write_text(GOOD)  # the run deletes it: the model writes it
    (pkg / "tests").mkdir()
    (pkg / "tests/test_core.py").write_text(TESTS)
    plan = TranslationPlan(pkg, "jax", [ModulePlan(
        "core", "src/toy_gen/core.py", lambda: {"add.c": SOURCE}, "`add(a, b)`",
        tests=["tests/test_core.py"])])
    return EnvPort(name="toygen", reference="add.c", candidate="toy_gen",
                   install_reference=lambda: None, check_reference=lambda: None, plan=plan)


def config(**kw) -> agent.RunConfig:
    return agent.RunConfig(env="toygen", levels=(), budget=kw.pop("budget", Budget(iterations=2)),
                           limits=sandbox.Limits(timeout_s=120, memory_bytes=4 * 2**30), **kw)


def api_message(content, n) -> dict:
    return model.response(content, USAGE, id=f"msg_{n}")


def writes(code: str, n: int) -> dict:
    return api_message([model.text_block("Writing the module."),
                        model.tool_use("write_file", {"path": "src/toy_gen/core.py", "content": code},
                                       f"toolu_{n}")], n)


def done(n: int) -> dict:
    return api_message([model.text_block("Done.")], n)


def mock_api(replies: list):
    """An httpx2 transport playing ``replies`` (a dict = 200 JSON, or (status, headers, body))."""
    seen = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        reply = replies[len(seen) - 1]
        if isinstance(reply, tuple):
            status, headers, body = reply
            return httpx2.Response(status, headers=headers, json=body)
        return httpx2.Response(200, json=reply)

    return httpx2.Client(transport=httpx2.MockTransport(handler)), seen


def all_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def test_real_sdk_request_and_cost_log(port, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    overloaded = (529, {}, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    limited = (429, {"retry-after": "7"}, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    first_reply = writes(GOOD, 1)
    first_reply["content"][0]["citations"] = []  # response-only field: must not be sent back
    http, seen = mock_api([overloaded, first_reply, limited, done(2)])
    slept = []
    live = model.AnthropicModel(http_client=http, sleep=slept.append, backoff_s=0.5)
    summary = agent.generate(port, live, config(), out=tmp_path / "reports")

    assert summary["status"] == "passed", summary
    assert summary["iterations"] == 1 and summary["retries"] == 2
    assert len(slept) == 2 and slept[1] >= 7  # retry-after is honoured
    first = json.loads(seen[0].content)
    assert seen[0].url.path == "/v1/messages" and seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert first["model"] == "claude-sonnet-4-6" and first["max_tokens"] == model.MAX_TOKENS
    assert first["tools"] == tools.TOOLS
    assert {t["name"] for t in first["tools"]} == {"read_file", "write_file", "list_files",
                                                   "run_tests", "run_verification"}
    for t in first["tools"]:
        assert t["input_schema"]["type"] == "object" and t["description"]
    assert first["system"].startswith("You are porting a reference")
    assert first["messages"][0]["role"] == "user"
    assert "Translate module `core` of toygen" in first["messages"][0]["content"]
    assert SOURCE.strip() in first["messages"][0]["content"]
    # the second call carries the tool result of the write
    second = json.loads(seen[3].content)
    result = second["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert "wrote src/toy_gen/core.py" in result["content"] and not result["is_error"]
    # the assistant turn goes back with only the fields an input block accepts
    assert second["messages"][1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Writing the module."},
        {"type": "tool_use", "id": "toolu_1", "name": "write_file",
         "input": {"path": "src/toy_gen/core.py", "content": GOOD}}]}

    # usage read back into the cost log
    run = Path(summary["run_dir"])
    calls = [json.loads(line) for line in (run / "calls.jsonl").read_text().splitlines()]
    assert [c["input_tokens"] for c in calls] == [1000, 1000]
    assert [c["retries"] for c in calls] == [1, 1]
    assert calls[0]["usd"] == pytest.approx(USD_PER_CALL)
    assert summary["tokens"] == 2400 and summary["usd"] == pytest.approx(2 * USD_PER_CALL)
    # the key is in no record, and generated code never saw it (the toy's second test)
    assert KEY not in all_text(tmp_path / "reports")
    assert "2 passed" in (run / "iterations/core-1/tests.txt").read_text()


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(model.MissingApiKeyError, match="ANTHROPIC_API_KEY is not set"):
        model.AnthropicModel()


def test_non_retryable_error_is_raised_and_recorded(port, tmp_path, monkeypatch):
    import anthropic

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    bad = (401, {}, {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}})
    http, seen = mock_api([bad])
    with pytest.raises(anthropic.AuthenticationError):
        agent.generate(port, model.AnthropicModel(http_client=http, sleep=lambda s: None),
                       config(), out=tmp_path, run_id="r1")
    assert len(seen) == 1
    summary = json.loads((tmp_path / "toygen/generate/r1/generate.json").read_text())
    assert summary["status"] == "error" and "AuthenticationError" in summary["needs_human"]


def test_repair_then_replay_identical(port, tmp_path):
    def repair(request):  # the second iteration starts from a repair prompt with the failure
        text = request.messages[0]["content"]
        assert "L1 tests failed" in text and "assert -1 == 5" in text
        return writes(GOOD, 3)

    script = model.ScriptedModel([writes(BAD, 1), done(2), repair, done(4)])
    out = tmp_path / "reports"
    first = agent.generate(port, script, config(), out=out, run_id="first")
    assert first["status"] == "passed" and first["iterations"] == 2
    assert [it["verdict"] for it in first["iteration_log"]] == ["failed", "passed"]
    # the translation stopped at L1 (its first iteration there); the repair passed L1 and the
    # compose check (the toy verifies no level: those are its phases)
    assert first["phases"] == ["L1", "compose"]
    assert [(it["kind"], it["phase"], it["phase_iteration"], it["checks"])
            for it in first["iteration_log"]] == [
        ("translate", "L1", 1, {"L1": "failed"}),
        ("repair", "compose", 1, {"L1": "passed", "compose": "passed"})]
    assert first["iterations_per_phase"] == {"core": {"L1": 1, "compose": 1}}
    assert first["usd"] == pytest.approx(4 * USD_PER_CALL)
    run = out / "toygen/generate/first"
    assert sorted(p.name for p in (run / "prompts").iterdir()) == [
        "001-translate-core-it1.md", "002-repair-core-it2.md"]
    repair_prompt = (run / "prompts/002-repair-core-it2.md").read_text()
    assert "L1 tests failed (phase L1" in repair_prompt
    assert "iteration 2 of at most 2 for phase L1" in repair_prompt
    assert json.loads((run / "iterations/core-2/verify/compose.json").read_text())["passed"]
    assert (run / "final.diff").read_text() == ""  # the fixed module equals the original
    md = (run / "generate.md").read_text()
    assert "iterations: 2" in md and "| core | 1 | 1 | 2 |" in md

    again = agent.replay(port, "first", out)
    assert again["replay_of"] == "first"
    volatile = {"run_id", "replay_of", "wall_s", "run_dir"}
    assert {k: v for k, v in again.items() if k not in volatile} == \
           {k: v for k, v in first.items() if k not in volatile}
    listed = records.list_runs(out, "toygen")
    assert [r["run_id"] for r in listed] == ["first", again["run_id"]]


WITH_SUB = GOOD + "\n\ndef sub(a, b):\n    return a - b\n"


def test_phases_each_have_their_own_budget(port, tmp_path):
    """L1, then compose: a second module of the plan (already there) imports a name the
    translated one lacks, which its own tests never notice. T = 2 per phase: three iterations
    (one at L1, two at compose) and the module passes."""
    pkg = port.plan.package_dir
    (pkg / "src/toy_gen/extra.py").write_text("from toy_gen.core import add, sub  # noqa\n")
    plan = TranslationPlan(pkg, "jax", [*port.plan.modules, ModulePlan(
        "extra", "src/toy_gen/extra.py", dict, "`sub`", depends_on=["core"])])
    two = EnvPort(name="toygen", reference="add.c", candidate="toy_gen",
                  install_reference=lambda: None, check_reference=lambda: None, plan=plan)
    prompts_seen = []

    def step(code, n):
        def reply(request):
            prompts_seen.append(request.messages[0]["content"])
            return writes(code, n)
        return reply

    script = model.ScriptedModel([writes(BAD, 1), done(2), step(GOOD, 3), done(4),
                                  step(WITH_SUB, 5), done(6)])
    s = agent.generate(two, script, config(modules=("core",)), tmp_path / "reports")
    assert s["status"] == "passed" and s["iterations"] == 3, s["needs_human"]
    assert [(it["kind"], it["phase"], it["phase_iteration"], it["verdict"])
            for it in s["iteration_log"]] == [
        ("translate", "L1", 1, "failed"), ("repair", "compose", 1, "failed"),
        ("repair", "compose", 2, "passed")]
    assert s["iteration_log"][1]["checks"] == {"L1": "passed", "compose": "failed"}
    assert s["iterations_per_phase"] == {"core": {"L1": 1, "compose": 2}}
    assert "L1 tests failed (phase L1" in prompts_seen[0]
    assert "compose failed (phase compose" in prompts_seen[1]
    assert "import toy_gen.extra failed" in prompts_seen[1]
    assert "cannot import name 'sub'" in prompts_seen[1]
    assert "iteration 2 of at most 2 for phase compose" in prompts_seen[1]


def test_replay_that_diverges_is_an_error(port, tmp_path):
    out = tmp_path / "reports"
    agent.generate(port, model.ScriptedModel([writes(GOOD, 1), done(2)]), config(), out, "one")
    (port.plan.package_dir / "tests/test_core.py").write_text(TESTS + "\ndef test_more():\n    assert False\n")
    with pytest.raises(EnvportError, match="replay"):
        agent.replay(port, "one", out)


def test_budget_exhausted_needs_a_human(port, tmp_path):
    out = tmp_path / "reports"
    # always the wrong code: T = 2 iterations, then a human
    script = model.ScriptedModel([writes(BAD, 1), done(2), writes(BAD, 3), done(4)])
    s = agent.generate(port, script, config(), out)
    assert s["status"] == "needs_human" and "'core' still fails after 2 iterations" in s["needs_human"]
    assert "of phase L1 (L1 tests:" in s["needs_human"]
    assert s["needs_human_at"] == {"module": "core", "phase": "L1", "iterations": 2}
    assert "Needs a human:** module 'core' still fails after 2 iterations of phase L1" in \
        (Path(s["run_dir"]) / "generate.md").read_text()
    # dollars: the second call would exceed $0.005
    script = model.ScriptedModel([writes(BAD, 1), done(2)])
    s = agent.generate(port, script, config(budget=Budget(iterations=3, usd=0.005)), out)
    assert s["status"] == "budget_exhausted" and "dollar budget" in s["needs_human"]
    assert s["usd"] == pytest.approx(USD_PER_CALL)
    assert "Needs a human" in (Path(s["run_dir"]) / "generate.md").read_text()
    assert "-    return a + b\n+    return a - b" in (Path(s["run_dir"]) / "final.diff").read_text()


def _interrupt(request):
    raise KeyboardInterrupt


def _repair_fix(request):
    assert "L1 tests failed" in request.messages[0]["content"]
    return writes(GOOD, 3)


def full_script() -> list:
    return [writes(BAD, 1), done(2), _repair_fix, done(4)]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def uninterrupted(port, tmp_path):
    out = tmp_path / "whole"
    return out, agent.generate(port, model.ScriptedModel(full_script()), config(), out, "whole")


@pytest.mark.parametrize("k", [2, 3])  # mid-conversation (after a tool ran) / between iterations
def test_resume_an_interrupted_run_in_place(port, tmp_path, uninterrupted, k, capsys):
    whole_out, whole = uninterrupted
    out = tmp_path / "reports"
    script = full_script()
    with pytest.raises(KeyboardInterrupt):
        agent.generate(port, model.ScriptedModel([*script[:k - 1], _interrupt]), config(), out,
                       "cut")
    run = out / "toygen/generate/cut"
    assert records.list_runs(out)[0]["status"] == "error"
    assert not (run / "lock").exists()
    with open(run / "calls.jsonl", "a") as f:
        f.write(f'{{"call": {k}, "half a li')  # killed while writing: the intact calls count
    live = model.ScriptedModel(script[k - 1:])  # the rest of the script
    s = agent.resume(port, "cut", live, out)
    assert len(live.requests) == len(script) - k + 1

    # the same run, continued in its own directory
    assert s["run_id"] == "cut" and s["run_dir"] == str(run) and s["resumes"] == 1
    assert [r["run_id"] for r in records.list_runs(out)] == ["cut"]
    assert records.list_runs(out)[0]["status"] == "passed"
    assert records.list_runs(out)[0]["resumes"] == 1
    [entry] = json.loads((run / "run.json").read_text())["resumes"]
    assert entry["after_calls"] == k - 1 and entry["previous_status"] == "error"
    assert not (run / "work.before-resume").exists() and not (run / "lock").exists()
    assert cli.main(["runs", "--out", str(out)]) == 0
    assert "cut  passed  iterations=2" in capsys.readouterr().out.replace("toygen  ", "")
    # ... that ends as the uninterrupted run: iterations, tokens, dollars, final levels, all
    volatile = {"run_id", "wall_s", "run_dir", "resumes"}
    assert {k2: v for k2, v in s.items() if k2 not in volatile} == \
           {k2: v for k2, v in whole.items() if k2 not in volatile}
    assert s["iterations"] == 2 and s["tokens"] == whole["tokens"] == 4 * 1200
    assert s["usd"] == pytest.approx(4 * USD_PER_CALL)
    # its logs continue where they ended: nothing twice, nothing torn, the same requests
    calls = _lines(run / "calls.jsonl")
    assert [c["call"] for c in calls] == [1, 2, 3, 4]
    whole_run = whole_out / "toygen/generate/whole"
    assert [c["request_sha256"] for c in calls] == \
           [c["request_sha256"] for c in _lines(whole_run / "calls.jsonl")]
    assert [(it["module"], it["iteration"], it["phase"]) for it in _lines(run / "iterations.jsonl")] \
        == [("core", 1, "L1"), ("core", 2, "compose")]
    assert [t["tool_use_id"] for t in _lines(run / "tools.jsonl")] == ["toolu_1", "toolu_3"]
    assert sorted(p.name for p in (run / "responses").iterdir()) == [
        "0001.json", "0002.json", "0003.json", "0004.json"]
    assert (run / "work/src/toy_gen/core.py").read_text() == GOOD
    assert "resumed 1x in place" in (run / "generate.md").read_text()


def test_resume_raises_a_spent_budget(port, tmp_path):
    out = tmp_path / "reports"
    stuck = agent.generate(port, model.ScriptedModel([writes(BAD, 1), done(2), writes(BAD, 3),
                                                      done(4)]), config(), out, "stuck")
    assert stuck["status"] == "needs_human"
    # the recorded calls replay under the recorded budget (T = 2), then T = 3 applies
    live = model.ScriptedModel([writes(GOOD, 5), done(6)])
    s = agent.resume(port, "stuck", live, out, budget=Budget(iterations=3))
    assert s["status"] == "passed" and s["iterations"] == 3 and s["budget"]["iterations"] == 3
    assert [it["phase_iteration"] for it in s["iteration_log"]] == [1, 2, 1]
    assert "iteration 3 of at most 3 for phase L1" in live.requests[0].messages[0]["content"]
    with pytest.raises(EnvportError, match="passed: there is nothing to resume"):
        agent.resume(port, "stuck", model.ScriptedModel([]), out)


def test_cli_resume_keeps_the_runs_budget_unless_raised(port, tmp_path, monkeypatch, capsys):
    out = tmp_path / "reports"
    stuck = model.ScriptedModel([writes(BAD, 1), done(2), writes(BAD, 3), done(4)])
    assert agent.generate(port, stuck, config(), out, "stuck")["status"] == "needs_human"
    live = model.ScriptedModel([writes(GOOD, 5), done(6)])
    monkeypatch.setattr(cli.registry, "get", lambda name: port)
    monkeypatch.setattr(model, "AnthropicModel", lambda: live)
    argv = ["generate", "toygen", "--out", str(out), "--resume", "stuck"]
    assert cli.main(argv) == 1  # the run's own T = 2 is spent: still stuck, no call made
    assert "still fails after 2 iterations of phase L1" in capsys.readouterr().out
    assert not live.requests
    assert cli.main([*argv, "--iterations", "3"]) == 0
    assert "toygen: PASSED after 3 iteration(s)" in capsys.readouterr().out
    info = json.loads((out / "toygen/generate/stuck/run.json").read_text())
    assert [r["budget"] and r["budget"]["iterations"] for r in info["resumes"]] == [None, 3]
    assert info["resumes"][1]["previous_status"] == "needs_human"
    assert info["config"]["budget"]["iterations"] == 2  # what the recorded calls ran under


def test_resume_refuses_a_run_that_is_still_running(port, tmp_path):
    import subprocess
    import sys

    out = tmp_path / "reports"
    script = model.ScriptedModel([writes(BAD, 1), _interrupt])
    with pytest.raises(KeyboardInterrupt):
        agent.generate(port, script, config(), out, "busy")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lock = {"pid": other.pid, "host": __import__("socket").gethostname()}
        (out / "toygen/generate/busy/lock").write_text(json.dumps(lock))
        with pytest.raises(EnvportError, match=f"still running \\(pid {other.pid}\\)"):
            agent.resume(port, "busy", model.ScriptedModel([]), out)
    finally:
        other.kill()
        other.wait()
    # the process is gone (killed without cleaning up): the run can be resumed
    s = agent.resume(port, "busy", model.ScriptedModel([done(2), _repair_fix, done(4)]), out)
    assert s["status"] == "passed"


def test_workspace_confines_paths(tmp_path):
    ws = tools.Workspace(tmp_path, "toygen", sandbox.Limits())
    res = tools.execute(ws, "read_file", {"path": "../../etc/passwd"}, lambda: tmp_path)
    assert res.is_error and "outside the work directory" in res.content
    assert tools.execute(ws, "write_file", {"path": "a/b.py"}, lambda: tmp_path).is_error
    assert tools.execute(ws, "nope", {}, lambda: tmp_path).content.startswith("unknown tool")
    assert not tools.execute(ws, "write_file", {"path": "a/b.py", "content": "x"}, lambda: tmp_path).is_error
    assert tools.execute(ws, "list_files", {}, lambda: tmp_path).content == "a/b.py"


def test_workspace_refuses_symlinks_out(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.txt").write_text("s3cret")
    (work / "ok.py").write_text("x = 1\n")
    (work / "leak.txt").symlink_to(outside / "secret.txt")
    (work / "dir").symlink_to(outside)
    (work / "alias.py").symlink_to(work / "ok.py")  # a link that stays inside is fine
    ws = tools.Workspace(work, "toygen", sandbox.Limits())
    run = lambda name, args: tools.execute(ws, name, args, lambda: tmp_path)  # noqa: E731
    for name, args in [("read_file", {"path": "leak.txt"}), ("read_file", {"path": "dir/secret.txt"}),
                       ("write_file", {"path": "leak.txt", "content": "overwritten"}),
                       ("write_file", {"path": "dir/new.txt", "content": "x"}),
                       ("list_files", {"path": "dir"}), ("read_file", {"path": "/etc/hostname"})]:
        res = run(name, args)
        assert res.is_error and "outside the work directory" in res.content, (name, args)
    assert (outside / "secret.txt").read_text() == "s3cret" and not (outside / "new.txt").exists()
    assert run("list_files", {}).content == "alias.py\nok.py"
    assert run("read_file", {"path": "alias.py"}).content == "x = 1\n"
    # nor does the final diff follow a link out
    assert "s3cret" not in records.final_diff(tmp_path / "empty", work)


OUTSIDE_WRITES = """\
import os, shutil, sys
target = sys.argv[1]
what = sys.argv[2]
if what == "open":
    open(target, "w").write("escaped")
elif what == "remove":
    os.remove(target)
elif what == "rename":
    os.rename("inside.txt", target)
elif what == "rmtree":
    shutil.rmtree(target)
elif what == "symlink":
    os.symlink(os.path.dirname(target), "out")
    open(os.path.join("out", os.path.basename(target)), "w").write("escaped")
"""


@pytest.mark.parametrize("what", ["open", "remove", "rename", "rmtree", "symlink"])
def test_sandbox_jail_refuses_writes_outside(tmp_path, what):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "inside.txt").write_text("mine")
    (work / "w.py").write_text(OUTSIDE_WRITES)
    keep = outside / "keep"
    keep.mkdir()
    (keep / "k.txt").write_text("keep")
    target = {"open": outside / "x.txt", "remove": keep / "k.txt", "rename": outside / "moved.txt",
              "rmtree": keep, "symlink": outside / "x.txt"}[what]
    res = sandbox.run_python(["w.py", str(target), what], work, sandbox.Limits(timeout_s=60))
    assert res.returncode != 0
    assert "PermissionError" in res.output
    assert "envport sandbox: generated code may not" in res.output
    assert "outside its writable folders" in res.output and str(work) in res.output
    assert sorted(p.name for p in outside.iterdir()) == ["keep"]
    assert (keep / "k.txt").read_text() == "keep" and (work / "inside.txt").read_text() == "mine"


def test_sandbox_jail_lets_the_work_dir_and_tmp_be_written(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    code = ("import os, shutil, tempfile\n"
            "os.makedirs('a/b'); open('a/b/c.txt', 'w').write('x'); shutil.rmtree('a')\n"
            "with tempfile.TemporaryDirectory() as d: open(os.path.join(d, 't'), 'w').write('x')\n"
            "open(os.devnull, 'w').write('x')\n"
            "print(open('/etc/hostname').read() != '', os.environ['TMPDIR'])\n"
            "import numpy\n")
    res = sandbox.run_python(["-c", code], work, sandbox.Limits(timeout_s=60))
    assert res.returncode == 0, res.output
    assert res.output.startswith("True $TMPDIR")  # the private temp dir, named the same each run
    # ../outside.txt from a generated test, through the real tool: the test fails with the message
    (work / "tests").mkdir()
    (work / "tests/test_escape.py").write_text(
        "def test_escape():\n    open('../outside.txt', 'w').write('x')\n")
    run = tools.Workspace(work, "toygen", sandbox.Limits(timeout_s=60)).run_tests(["tests"])
    assert not run.passed and "envport sandbox: generated code may not write to" in run.output
    assert not (tmp_path / "outside.txt").exists()
    # the jail can be turned off (a reference that must write to its own cache)
    free = sandbox.run_python(["-c", "open('../outside.txt', 'w').write('x')"], work,
                              sandbox.Limits(timeout_s=60, jail=False))
    assert free.returncode == 0 and (tmp_path / "outside.txt").exists()


def test_sandbox_timeout_memory_and_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    slow = sandbox.run_python(["-c", "import time; time.sleep(30)"], tmp_path, sandbox.Limits(timeout_s=1))
    assert slow.timed_out and slow.wall_s < 10
    hog = sandbox.run_python(["-c", "b = bytearray(2 * 2**30)"], tmp_path,
                             sandbox.Limits(memory_bytes=512 * 2**20))
    assert hog.returncode != 0 and "MemoryError" in hog.output
    env = sandbox.run_python(["-c", "import os; print(sorted(os.environ))"], tmp_path, sandbox.Limits())
    assert "ANTHROPIC_API_KEY" not in env.output and KEY not in env.output


def test_costs():
    u = Usage.from_response({"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100})
    assert u.total == 115
    assert u.usd("claude-sonnet-4-5-20250929") == pytest.approx((10 * 3 + 5 * 15 + 100 * 0.3) / 1e6)
    with pytest.raises(EnvportError, match="no price for model 'gpt-x'"):
        u.usd("gpt-x")


FASTER = "def add(a, b):\n    return b + a  # one fewer attribute lookup, honest\n"


def test_optimise_keeps_verified_changes_and_reverts_the_rest(port, tmp_path):
    out = tmp_path / "reports"
    optimise = [writes(FASTER, 3), done(4),   # kept: the tests still pass
                writes(BAD, 5), done(6)]      # reverted: it breaks them
    script = model.ScriptedModel([writes(GOOD, 1), done(2), *optimise])
    s = agent.generate(port, script, config(optimise=True), out, run_id="opt")
    assert s["status"] == "passed"
    assert [(it["kind"], it["phase"], it["verdict"]) for it in s["iteration_log"]] == [
        ("translate", "compose", "passed"), ("optimise", "optimise", "kept"),
        ("optimise", "optimise", "reverted")]
    # the toy is not a registered env, so there is no bench: the prompt says so
    assert "no benchmark yet" in script.requests[2].messages[0]["content"]
    assert "Optimise toygen" in script.requests[2].messages[0]["content"]
    work = Path(s["run_dir"]) / "work/src/toy_gen/core.py"
    assert work.read_text() == FASTER  # the last verified version, not the broken one
    again = agent.replay(port, "opt", out)
    assert again["iteration_log"] == s["iteration_log"]
    # interrupted in the optimise phase (its second change), resumed in place: the same end
    full = [writes(GOOD, 1), done(2), *optimise]
    with pytest.raises(KeyboardInterrupt):
        agent.generate(port, model.ScriptedModel([*full[:4], _interrupt]), config(optimise=True),
                       out, run_id="opt-cut")
    assert len(records.load_benches(out / "toygen/generate/opt-cut")) == 2  # baseline, kept
    resumed = agent.resume(port, "opt-cut", model.ScriptedModel(full[4:]), out)
    assert resumed["iteration_log"] == s["iteration_log"] and resumed["benches"] == s["benches"]
    assert resumed["usd"] == pytest.approx(s["usd"])
    assert (Path(resumed["run_dir"]) / "work/src/toy_gen/core.py").read_text() == FASTER
    assert not (Path(resumed["run_dir"]) / "verified").exists()
