"""The tools the model may call, and their execution against the run's work directory.

File tools are confined to the work dir: a path is resolved (``..``, absolute paths and symlinks
included) and one that lands outside is an error returned to the model, not an exception;
``list_files`` leaves out links that point outside. Tests, the compose check and verification
run the work dir's code only through :mod:`envport.generate.sandbox`, whose jail lets that code
write only in the work dir, the call's output folder and a private temporary folder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from envport.generate import compose_check, sandbox
from envport.generate.failures import Failure, from_test_output, from_verify_report

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
class TestRun:
    paths: list[str]
    returncode: int
    output: str

    @property
    def passed(self) -> bool:
        # 5: no tests collected, which is not a failure of the module
        return self.returncode in (0, 5)


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
        return re.sub(r" in \d+(\.\d+)?s( \([0-9:]+\))?", "", text)

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
        if not paths:
            raise ToolError("run_tests needs at least one path")
        for rel in paths:
            if not self.path(rel).exists():
                raise ToolError(f"no test file or folder {rel!r}")
        res = sandbox.run_python(
            ["-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider", *paths],
            self.root, self.limits, self.extra_env, self.writable)
        return TestRun(list(paths), res.returncode, self.scrub(res.output))

    def run_verification(self, out_dir: Path) -> Verification:
        """The compose check (every module of the plan imports; with verification levels, the
        env builds), then the verification at ``levels``, in one sandboxed subprocess."""
        out_dir.mkdir(parents=True, exist_ok=True)
        for stale in (out_dir / "compose.json", out_dir / self.env / "verify.json"):
            stale.unlink(missing_ok=True)  # a resumed run checks again in the same folder
        if self.levels:
            args = ["-m", "envport.generate.verify_worker", self.env, "--out", str(out_dir),
                    "--levels", ",".join(self.levels), "--scale", repr(self.scale),
                    "--compose", ",".join(self.compose_modules), "--build"]
        else:  # the run gates on the L1 tests and the compose check alone: no envport import
            args = [str(Path(compose_check.__file__)), str(out_dir / "compose.json"),
                    *self.compose_modules]
        res = sandbox.run_python(args, self.root, self.limits, self.extra_env,
                                 (out_dir, *self.writable))
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
        res = sandbox.run_python(
            ["-m", "envport", "bench", self.env, "--out", str(out_dir), "--no-progress",
             "--batch-sizes", ",".join(map(str, self.bench_batch_sizes)),
             "--min-seconds", repr(self.bench_min_seconds)],
            self.root, self.limits, self.extra_env, (out_dir, *self.writable))
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


def module_names(targets) -> tuple[str, ...]:
    """``src/pkg/mod.py`` -> ``pkg.mod``: the plan's Python modules the compose check imports
    (targets in another language are built and checked by their own tests)."""
    names = []
    for t in targets:
        parts = Path(t).with_suffix("").parts
        if Path(t).suffix == ".py" and len(parts) > 1 and parts[0] == "src":
            names.append(".".join(parts[1:-1] if parts[-1] == "__init__" else parts[1:]))
    return tuple(names)


def levels_ran(report: dict, levels) -> bool:
    """Every requested level produced results (an empty suite list proves nothing)."""
    got = report.get("levels", {})
    counts = {"L1": "passed", "L2": "cases", "L3": "episodes", "L4": "suites"}
    return all(level in got and got[level].get(counts[level]) for level in levels)


def failure_of_tests(run: TestRun) -> Failure:
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
