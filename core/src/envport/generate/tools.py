"""The tools the model may call, and their execution against the run's work directory.

File tools are confined to the work dir: a path is resolved (``..``, absolute paths and symlinks
included) and one that lands outside is an error returned to the model, not an exception;
``list_files`` leaves out links that point outside. Tests, the compose check and verification
run the work dir's code only through :mod:`envport.generate.sandbox`, whose jail lets that code
write only in the work dir, the call's output folder and a private temporary folder.

A package that is not pure Python declares build and native test commands in its plan
(``TranslationPlan.build``/``native_tests``): ``run_tests`` (and the L1 phase) builds, runs the
native tests, then pytest, stopping at the first that fails; the compose check, the
verification and the bench build first too, so they never see a stale extension.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from envport.generate import compose_check, sandbox
from envport.generate.failures import (
    Failure,
    from_command_output,
    from_test_output,
    from_verify_report,
    trim_command_output,
)
from envport.plan import Command, expand

MAX_READ_CHARS = 100_000
MAX_OUTPUT_CHARS = 8_000

TOOLS: list[dict] = [
    {"name": "list_files",
     "description": "List the files under a folder of the work directory (recursively).",
     "input_schema": {"type": "object", "properties": {
         "path": {"type": "string", "description": "folder relative to the work dir; default '.'"}},
         "required": []}},
    {"name": "read_file",
     "description": "Read a text file of the work directory.",
     "input_schema": {"type": "object", "properties": {
         "path": {"type": "string", "description": "file relative to the work dir"}},
         "required": ["path"]}},
    {"name": "write_file",
     "description": "Create or replace a whole text file in the work directory.",
     "input_schema": {"type": "object", "properties": {
         "path": {"type": "string", "description": "file relative to the work dir"},
         "content": {"type": "string", "description": "the complete new content"}},
         "required": ["path", "content"]}},
    {"name": "run_tests",
     "description": "Run pytest on test files of the work directory in a sandboxed subprocess "
                    "(timeout, memory limit); returns the exit code and the output's tail.",
     "input_schema": {"type": "object", "properties": {
         "paths": {"type": "array", "items": {"type": "string"},
                   "description": "test files or folders relative to the work dir"}},
         "required": ["paths"]}},
    {"name": "run_verification",
     "description": "Run the verification hierarchy (L1 generic checks, L2 single transitions, "
                    "L3 rollouts) on the work directory's port against the reference; returns "
                    "the per-level results and the shortest failing case if any.",
     "input_schema": {"type": "object", "properties": {}, "required": []}},
]
TOOL_NAMES = tuple(t["name"] for t in TOOLS)


def tools_for(build: Sequence[Command] = (), native_tests: Sequence[Command] = ()) -> list[dict]:
    """The tools of a package: :data:`TOOLS` itself for a pure-Python one; with build or native
    test commands, ``run_tests`` and ``run_verification`` say that they build first."""
    if not build and not native_tests:
        return TOOLS
    out = copy.deepcopy(TOOLS)
    steps = []
    if build:
        steps.append("builds the package (" + "; ".join(f"`{show(c)}`" for c in build) + ")")
    if native_tests:
        steps.append("runs its native tests ("
                     + "; ".join(f"`{show(c)}`" for c in native_tests) + ")")
    for t in out:
        if t["name"] == "run_tests":
            t["description"] = (
                "In the work directory, in sandboxed subprocesses (timeout, memory limit): "
                + ", then ".join(steps) + ", then runs pytest on the given test files; stops at "
                "the first that fails and returns its exit code and the output's tail.")
            t["input_schema"]["properties"]["paths"]["description"] = (
                "test files or folders relative to the work dir (may be empty: then only the "
                "build and the native tests)")
        elif t["name"] == "run_verification" and build:
            t["description"] = ("Build the package, then r" + t["description"][1:])
    return out


def show(command: Command) -> str:
    """A command as the model and the records see it: placeholders unexpanded (the same on
    every machine), an inline script shortened."""
    return " ".join(a if re.fullmatch(r"[\w@%+=:,./{}-]+", a)
                    else f"<{len(a)}-char script>" if len(a) > 80 or "\n" in a
                    else shlex.quote(a) for a in command)


class ToolError(Exception):
    """A bad tool call; its message goes back to the model as an error result."""


@dataclass
class Verification:
    passed: bool
    report: dict
    failure: Failure | None
    output: str = ""
    composed: bool = True   # every module of the plan imported (and the env built)

    def summary(self) -> str:
        levels = json.dumps(self.report.get("levels", {}), sort_keys=True)
        head = "PASSED" if self.passed else "FAILED"
        text = f"verification {head}; levels: {levels}"
        if not self.composed and self.failure:
            text = (f"verification FAILED: the package does not compose (import/build with "
                    f"every module present): {self.failure.summary}\n\n{self.failure.case}")
        elif self.failure:
            text += (f"\n\nfirst failure ({self.failure.level}): {self.failure.summary}\n\n"
                     f"{self.failure.case}")
        elif not self.report:
            text += "\n\nthe verifier did not produce a report:\n" + self.output[-MAX_OUTPUT_CHARS:]
        return text


@dataclass
class StepRun:
    """One build or native test command of the package."""

    kind: str        # "build" or "native tests"
    command: str     # as shown (:func:`show`)
    returncode: int
    output: str
    timed_out: bool = False

    @property
    def passed(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def to_json(self) -> dict:
        return {"kind": self.kind, "command": self.command, "returncode": self.returncode,
                "passed": self.passed}

    def header(self) -> str:
        why = "ok" if self.passed else ("timed out" if self.timed_out
                                        else f"exited {self.returncode}")
        return f"$ {self.command}: {why}\n"


@dataclass
class TestRun:
    paths: list[str]
    returncode: int
    output: str      # what the model sees: a failed step's output trimmed, pytest's in full
    steps: list[StepRun] = field(default_factory=list)  # build, native tests (in order)
    log: str = ""    # every step's output untrimmed, then pytest's (the run's tests.txt)

    def __post_init__(self) -> None:
        self.log = self.log or self.output

    @property
    def failed_step(self) -> StepRun | None:
        return next((s for s in self.steps if not s.passed), None)

    @property
    def passed(self) -> bool:
        # 5: no tests collected, which is not a failure of the module
        return self.failed_step is None and self.returncode in (0, 5)

    def to_json(self) -> dict:
        d = {"paths": self.paths, "returncode": self.returncode, "passed": self.passed}
        if self.steps:
            d["steps"] = [s.to_json() for s in self.steps]
        return d


@dataclass
class Workspace:
    """The run's copy of the package, and how to run its tests and its verification."""

    root: Path
    env: str
    limits: sandbox.Limits
    levels: tuple[str, ...] = ("L1", "L2", "L3")
    scale: float = 0.01
    extra_env: dict[str, str] = field(default_factory=dict)  # e.g. the JAX compilation cache
    on_verification: Callable[[Verification], None] | None = None
    bench_batch_sizes: tuple[int, ...] = (1, 128, 2048)
    bench_min_seconds: float = 1.0
    compose_modules: tuple[str, ...] = ()  # the plan's modules (dotted) the compose check imports
    writable: tuple[Path, ...] = ()        # more folders the sandboxed code may write to
    python_roots: tuple[str, ...] = ("src",)  # first on the sandbox's PYTHONPATH
    build: tuple[Command, ...] = ()        # the plan's build commands (placeholders unexpanded)
    native_tests: tuple[Command, ...] = ()  # the plan's native test commands
    placeholders: dict[str, str] = field(default_factory=dict)  # package, repo, cache (plan.py)

    def path(self, rel: str) -> Path:
        root = self.root.resolve()
        p = (root / (rel or ".")).resolve()  # resolves symlinks too
        if not _inside(p, root):
            raise ToolError(f"path {rel!r} is outside the work directory")
        return p

    def scrub(self, text: str) -> str:
        """Make output independent of where the run lives and how long it took, so a replay
        feeds the model the same text."""
        text = text.replace(str(self.root.resolve()), ".").replace(str(self.root), ".")
        if self.placeholders.get("cache"):  # a build cache: where it lives is not the point
            text = text.replace(self.placeholders["cache"], "{cache}")
        text = re.sub(r" in \d+m \d+s\b", "", text)  # cargo's "Finished ... in 1m 02s"
        return re.sub(r" in \d+(\.\d+)?s( \([0-9:]+\))?", "", text)

    # -- the package's own build and native tests ------------------------------------------------
    def has_steps(self) -> bool:
        return bool(self.build or self.native_tests)

    def _env(self) -> dict[str, str]:
        return {**self.extra_env, "PYTHONPATH": sandbox.python_path(self.root, self.python_roots)}

    def run_steps(self, kind: str, commands: Sequence[Command]) -> list[StepRun]:
        """Each command in the work dir (sandboxed, placeholders expanded), in order, stopping
        at the first that fails."""
        values = {"python": sys.executable, "work": str(self.root), **self.placeholders}
        runs: list[StepRun] = []
        for command in commands:
            res = sandbox.run(expand(command, values), self.root, self.limits, self._env(),
                              self.writable)
            runs.append(StepRun(kind, show(command), res.returncode, self.scrub(res.output),
                                res.timed_out))
            if not runs[-1].passed:
                break
        return runs

    def build_package(self) -> StepRun | None:
        """The plan's build commands; the one that failed, or None."""
        return next((s for s in self.run_steps("build", self.build) if not s.passed), None)

    def run_l1(self, paths: list[str]) -> TestRun:
        """The L1 checks of the work dir: build, native tests, then pytest on ``paths`` (none:
        pytest does not run); stops at the first that fails."""
        steps = self.run_steps("build", self.build)
        if all(s.passed for s in steps):
            steps += self.run_steps("native tests", self.native_tests)
        shown = "".join(s.header() for s in steps)
        log = "".join(s.header() + s.output + ("" if s.output.endswith("\n") else "\n")
                      for s in steps)
        failed = next((s for s in steps if not s.passed), None)
        if failed is not None:
            shown += trim_command_output(failed.output) + "\n"
            return TestRun(list(paths), failed.returncode, shown, steps, log)
        if not paths:
            return TestRun([], 0, shown, steps, log)
        res = sandbox.run_python(
            ["-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider", *paths],
            self.root, self.limits, self.extra_env, self.writable, self.python_roots)
        output = self.scrub(res.output)
        return TestRun(list(paths), res.returncode, shown + output, steps, log + output)

    # -- the tools ------------------------------------------------------------------------
    def list_files(self, path: str = ".") -> str:
        base = self.path(path)
        if not base.is_dir():
            raise ToolError(f"{path!r} is not a folder")
        root = self.root.resolve()
        files = sorted(str(p.relative_to(root)) for p in base.rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts
                       and ".pytest_cache" not in p.parts and _inside(p.resolve(), root))
        return "\n".join(files) or "(empty)"

    def read_file(self, path: str) -> str:
        p = self.path(path)
        if not p.is_file():
            raise ToolError(f"no file {path!r}")
        text = p.read_text(errors="replace")
        if len(text) > MAX_READ_CHARS:
            return text[:MAX_READ_CHARS] + f"\n[truncated: {len(text)} chars]"
        return text

    def write_file(self, path: str, content: str) -> str:
        p = self.path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
        return f"wrote {path} ({len(content.splitlines())} lines)"

    def run_tests(self, paths: list[str]) -> TestRun:
        if not paths and not self.has_steps():
            raise ToolError("run_tests needs at least one path")
        for rel in paths:
            if not self.path(rel).exists():
                raise ToolError(f"no test file or folder {rel!r}")
        return self.run_l1(paths)

    def run_verification(self, out_dir: Path) -> Verification:
        """The compose check (every module of the plan imports; with verification levels, the
        env builds), then the verification at ``levels``, in one sandboxed subprocess."""
        out_dir.mkdir(parents=True, exist_ok=True)
        for stale in (out_dir / "compose.json", out_dir / self.env / "verify.json"):
            stale.unlink(missing_ok=True)  # a resumed run checks again in the same folder
        broken = self.build_package()
        if broken is not None:  # nothing to import: it does not compose
            failure = from_command_output("build", broken.command, broken.returncode,
                                          broken.output, broken.timed_out)
            return self._seen(Verification(False, {}, failure, broken.output, composed=False))
        if self.levels:
            args = ["-m", "envport.generate.verify_worker", self.env, "--out", str(out_dir),
                    "--levels", ",".join(self.levels), "--scale", repr(self.scale),
                    "--compose", ",".join(self.compose_modules), "--build"]
        else:  # the run gates on the L1 tests and the compose check alone: no envport import
            args = [str(Path(compose_check.__file__)), str(out_dir / "compose.json"),
                    *self.compose_modules]
        res = sandbox.run_python(args, self.root, self.limits, self.extra_env,
                                 (out_dir, *self.writable), self.python_roots)
        output = self.scrub(res.output)
        compose = _load(out_dir / "compose.json")
        if compose is None or not compose.get("passed"):
            why = (compose or {}).get("error") or (
                f"the compose check exited {res.returncode}"
                + (" (timeout)" if res.timed_out else "") + f":\n{output[-MAX_OUTPUT_CHARS:]}")
            failure = Failure(
                "compose", "the package does not import/build with every module present",
                f"```\n{self.scrub(why)[-MAX_OUTPUT_CHARS:]}\n```")
            return self._seen(Verification(False, {}, failure, output, composed=False))
        if not self.levels:
            return self._seen(Verification(True, {"levels": {}}, None, output))
        report = _load(out_dir / self.env / "verify.json") if res.returncode in (0, 1) else None
        report = report or {}
        failure = from_verify_report(report) if report else Failure(
            "verification", f"the verifier exited {res.returncode}"
            + (" (timeout)" if res.timed_out else ""),
            f"```\n{output[-MAX_OUTPUT_CHARS:]}\n```")
        if failure is None and not levels_ran(report, self.levels):
            level = next(lv for lv in self.levels if not levels_ran(report, [lv]))
            failure = Failure(level, f"{level} produced no results",
                              f"the verifier ran no {level} case: the port declares no {level} "
                              f"suite, or the scale leaves none (levels: "
                              f"{json.dumps(report.get('levels', {}), sort_keys=True)})")
        return self._seen(Verification(failure is None, report, failure, output))

    def _seen(self, v: Verification) -> Verification:
        if self.on_verification:
            self.on_verification(v)
        return v

    def run_bench(self, out_dir: Path) -> dict | None:
        """``envport bench`` on the work dir's port (sandboxed); its bench.json, or None."""
        out_dir.mkdir(parents=True, exist_ok=True)
        broken = self.build_package()
        if broken is not None:
            (out_dir / "bench.log").write_text(broken.header() + broken.output)
            return None
        res = sandbox.run_python(
            ["-m", "envport", "bench", self.env, "--out", str(out_dir), "--no-progress",
             "--batch-sizes", ",".join(map(str, self.bench_batch_sizes)),
             "--min-seconds", repr(self.bench_min_seconds)],
            self.root, self.limits, self.extra_env, (out_dir, *self.writable), self.python_roots)
        path = out_dir / self.env / "bench.json"
        if res.returncode != 0 or not path.exists():
            (out_dir / "bench.log").write_text(self.scrub(res.output))
            return None
        return json.loads(path.read_text())


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def module_names(targets, roots: Sequence[str] = ("src",)) -> tuple[str, ...]:
    """``src/pkg/mod.py`` -> ``pkg.mod`` (``roots``: the plan's ``python_roots``, e.g.
    ``python/pkg/mod.py`` with ``("python",)``): the plan's Python modules the compose check
    imports (targets in another language are built and checked by their own tests)."""
    names = []
    for t in targets:
        if Path(t).suffix != ".py":
            continue
        parts = Path(t).with_suffix("").parts
        for root in roots:
            prefix = Path(root).parts
            rest = parts[len(prefix):]
            if parts[:len(prefix)] == prefix and rest:
                rest = rest[:-1] if rest[-1] == "__init__" else rest
                if rest:
                    names.append(".".join(rest))
                break
    return tuple(names)


def levels_ran(report: dict, levels) -> bool:
    """Every requested level produced results (an empty suite list proves nothing)."""
    got = report.get("levels", {})
    counts = {"L1": "passed", "L2": "cases", "L3": "episodes", "L4": "suites"}
    return all(level in got and got[level].get(counts[level]) for level in levels)


def failure_of_tests(run: TestRun) -> Failure:
    step = run.failed_step
    if step is not None:  # a build or native test failure: the compiler's/test's own output
        return from_command_output(step.kind, step.command, step.returncode, step.output,
                                   step.timed_out)
    return from_test_output(run.paths, run.returncode, run.output)


@dataclass
class ToolResult:
    content: str
    is_error: bool = False


def execute(ws: Workspace, name: str, args: dict, verify_dir: Callable[[], Path]) -> ToolResult:
    """Run one tool call; every failure becomes an error result the model can read."""
    try:
        if name == "list_files":
            return ToolResult(ws.list_files(args.get("path", ".")))
        if name == "read_file":
            return ToolResult(ws.read_file(_arg(args, "path")))
        if name == "write_file":
            return ToolResult(ws.write_file(_arg(args, "path"), _arg(args, "content")))
        if name == "run_tests":
            paths = args.get("paths")
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                raise ToolError("run_tests: 'paths' must be a list of strings")
            run = ws.run_tests(paths)
            return ToolResult(f"exit code {run.returncode}\n{run.output[-MAX_OUTPUT_CHARS:]}",
                              is_error=not run.passed)
        if name == "run_verification":
            v = ws.run_verification(verify_dir())
            return ToolResult(v.summary(), is_error=not v.passed)
        raise ToolError(f"unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}")
    except ToolError as exc:
        return ToolResult(str(exc), is_error=True)
    except (OSError, UnicodeError) as exc:
        return ToolResult(f"{type(exc).__name__}: {exc}", is_error=True)


def _arg(args: dict, key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise ToolError(f"argument {key!r} (a string) is required")
    return value
