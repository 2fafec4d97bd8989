"""``envport generate pong`` end to end with a scripted model (a test double for the LLM only:
the files, the tests, the sandbox and the verifier against the C reference are real).

Run 1 writes the engine with a planted bug (paddles one unit too fast); the verifier finds it;
the repair prompt carries the shortest failing case; the scripted fix is verified equivalent:
2 iterations and exactly the costs the script declared. Run 2 never fixes it and runs out of
iterations (needs a human). Run 3 replays run 1 from its records: identical results.
"""

import dataclasses
import json
from pathlib import Path

import pytest

from envport import cli
from envport.generate import agent, model, sandbox
from envport.generate.costs import Budget
from pong_port.plan import PACKAGE_DIR
from pong_port.port import PORT

ENGINE = (PACKAGE_DIR / "src/pong_port/engine.py").read_text()
HONEST_SPEED = 'self.paddle_speed = c.f32("paddle_speed")'
BUGGY = ENGINE.replace(HONEST_SPEED, HONEST_SPEED + " + np.float32(1)")
L1_TESTS = """\
import jax.numpy as jnp
import numpy as np

from pong_port.config import PongConfig
from pong_port.engine import PongEngine


def test_fresh_state_observation():
    engine = PongEngine(PongConfig())
    s = engine.fresh(jnp.uint32(12345))
    obs = np.asarray(engine.observe(s))
    assert obs.shape == (8,) and obs.dtype == np.float32
    assert np.all((0 <= obs) & (obs <= 1))
"""
# what the script declares per response, and what it must cost at claude-sonnet-4-6's $3/$15
USAGE = {"input_tokens": 20_000, "output_tokens": 4_000, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0}
USD_PER_CALL = (20_000 * 3 + 4_000 * 15) / 1e6
LEVELS = ("L2", "L3")  # L1's generic checks compile for minutes; L2 and L3 catch the bug
SCALE = 0.001          # 10 L2 cases per suite, 1 L3 episode per suite


def reply(n, *blocks):
    return model.response(list(blocks), USAGE, id=f"msg_{n}")


def write_engine(code, n):
    return reply(n, model.text_block("Translating c_step."),
                 model.tool_use("write_file", {"path": "src/pong_port/engine.py", "content": code}, f"toolu_{n}a"),
                 model.tool_use("write_file", {"path": "tests/test_l1_engine.py", "content": L1_TESTS}, f"toolu_{n}b"))


def finished(n):
    return reply(n, model.text_block("The engine is written and its L1 tests pass."))


@pytest.fixture(scope="module")
def runs(reference_built, tmp_path_factory):
    """The three runs, once for the module (each verification compiles pong's JAX code)."""
    out = tmp_path_factory.mktemp("reports")
    # the engine's own declared tests replay regression prefixes against the reference and would
    # catch this bug before the verifier does; here the verifier is what is under test
    plan = dataclasses.replace(PORT.plan, modules=[
        dataclasses.replace(m, tests=()) if m.name == "engine" else m for m in PORT.plan.modules])
    port = dataclasses.replace(PORT, plan=plan)
    config = agent.RunConfig(env="pong", modules=("engine",), levels=LEVELS, scale=SCALE,
                             budget=Budget(iterations=2),
                             limits=sandbox.Limits(timeout_s=600, memory_bytes=8 * 2**30))
    repair_prompts = []
    # the runs' sandboxed verifiers share compiled XLA executables (the replay recompiles nothing)
    mp = pytest.MonkeyPatch()
    mp.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path_factory.mktemp("jax-cache")))
    mp.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")

    def fix(request):
        repair_prompts.append(request.messages[0]["content"])
        return write_engine(ENGINE, 3)

    try:
        first = agent.generate(port, model.ScriptedModel(
            [write_engine(BUGGY, 1), finished(2), fix, finished(4)]), config, out, run_id="first")
        stuck = agent.generate(port, model.ScriptedModel([write_engine(BUGGY, 1), finished(2)]),
                               dataclasses.replace(config, budget=Budget(iterations=1)), out,
                               run_id="stuck")
        replayed = agent.replay(port, "first", out)
    finally:
        mp.undo()
    return {"out": out, "first": first, "stuck": stuck, "replayed": replayed,
            "repair_prompts": repair_prompts}


def test_verifier_finds_the_planted_bug_and_the_fix_is_equivalent(runs):
    first = runs["first"]
    log = first["iteration_log"]
    assert first["status"] == "passed" and first["iterations"] == 2, first
    # iteration 1 (the translation) passes L1 and compose and is L2's first; iteration 2 (the
    # repair) passes every phase through L3
    assert [(it["kind"], it["phase"], it["phase_iteration"]) for it in log] == [
        ("translate", "L2", 1), ("repair", "L3", 1)]
    assert log[0]["checks"] == {"L1": "passed", "compose": "passed", "L2": "failed"}
    assert log[1]["checks"] == {"L1": "passed", "compose": "passed", "L2": "passed", "L3": "passed"}
    assert first["iterations_per_phase"] == {"engine": {"L1": 0, "compose": 0, "L2": 1, "L3": 1}}
    # iteration 1: the L1 tests pass, the verifier (not the tests) finds the bug
    assert log[0]["tests"]["passed"] and not log[0]["verification"]["passed"]
    assert log[0]["verification"]["levels"]["L2"]["mismatches"] > 0
    assert log[0]["failure"]["level"] == "L2"
    # iteration 2: equivalent on every level it ran
    levels = log[1]["verification"]["levels"]
    assert log[1]["verification"]["passed"]
    assert levels["L2"]["mismatches"] == 0 and levels["L2"]["cases"] > 0
    assert levels["L3"]["mismatches"] == 0 and levels["L3"]["episodes"] > 0
    assert first["final_levels"] == levels
    assert first["tests_written"] == ["tests/test_l1_engine.py"]


def test_repair_prompt_contains_the_shortest_failing_case(runs):
    [prompt] = runs["repair_prompts"]
    run = Path(runs["first"]["run_dir"])
    assert prompt == (run / "prompts/002-repair-engine-it2.md").read_text()
    assert "Repair `engine` of pong: L2 failed (phase L2" in prompt
    assert "iteration 2 of at most 2 for phase L2" in prompt
    assert "state loaded into both backends" in prompt and "- action:" in prompt
    # the field diff names what the bug changes (both paddles move at paddle_speed)
    assert "| paddle_yl |" in prompt or "| paddle_yr |" in prompt
    # and the L3 rollout's shrunk action prefix
    assert "shortest action prefix" in prompt and "seed: 0" in prompt
    report = json.loads((run / "iterations/engine-1/verify/pong/verify.json").read_text())
    fd = report["first_divergence"]
    assert json.dumps(fd["action"]) in prompt


def test_costs_are_the_scripts(runs):
    first = runs["first"]
    assert first["cost"]["calls"] == 4 and first["tokens"] == 4 * 24_000
    assert first["usd"] == pytest.approx(4 * USD_PER_CALL)
    md = (Path(first["run_dir"]) / "generate.md").read_text()
    assert "iterations: 2" in md and f"${4 * USD_PER_CALL:.4f}" in md
    assert "-    return a" not in (Path(first["run_dir"]) / "final.diff").read_text()


def test_exhausted_budget_needs_a_human(runs):
    stuck = runs["stuck"]
    assert stuck["status"] == "needs_human" and stuck["iterations"] == 1
    assert "'engine' still fails after 1 iterations of phase L2" in stuck["needs_human"]
    assert stuck["needs_human_at"] == {"module": "engine", "phase": "L2", "iterations": 1}
    diff = (Path(stuck["run_dir"]) / "final.diff").read_text()
    assert "+        self.paddle_speed = c.f32(\"paddle_speed\") + np.float32(1)" in diff


def test_replay_is_identical(runs):
    first, again = runs["first"], runs["replayed"]
    volatile = {"run_id", "replay_of", "wall_s", "run_dir"}
    assert again["replay_of"] == "first"
    assert {k: v for k, v in again.items() if k not in volatile} == \
           {k: v for k, v in first.items() if k not in volatile}


def test_runs_lists_all_three(runs, capsys):
    assert cli.main(["runs", "pong", "--out", str(runs["out"])]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[2] for line in out] == ["passed", "needs_human", "passed"]
    assert "replay of first" in out[2]


@pytest.mark.slow
def test_optimise_phase_benches_and_reverifies(reference_built, tmp_path):
    """After the engine passes: the real bench in the sandbox feeds the optimise prompt; a change
    that stays equivalent is kept and benched again."""
    tweaked = ENGINE.replace('"""One Pong env', '"""(optimised) One Pong env', 1)
    script = model.ScriptedModel([write_engine(ENGINE, 1), finished(2),
                                  write_engine(tweaked, 3), finished(4)])
    config = agent.RunConfig(env="pong", modules=("engine",), levels=LEVELS, scale=SCALE,
                             budget=Budget(iterations=1), optimise=True, bench_batch_sizes=(1,),
                             bench_min_seconds=0.2)
    plan = dataclasses.replace(PORT.plan, modules=[
        dataclasses.replace(m, tests=()) if m.name == "engine" else m for m in PORT.plan.modules])
    s = agent.generate(dataclasses.replace(PORT, plan=plan), script, config, tmp_path)
    assert s["status"] == "passed", s
    assert [(it["kind"], it["phase"], it["verdict"]) for it in s["iteration_log"]] == [
        ("translate", "L3", "passed"), ("optimise", "optimise", "kept")]
    prompt = script.requests[2].messages[0]["content"]
    assert "Optimise pong" in prompt and "| frameskip=1 | 1 |" in prompt
    assert len(s["benches"]) == 2 and s["iteration_log"][1]["bench"]["targets"]["frameskip=8"]
