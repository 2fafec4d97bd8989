"""Everything a run leaves in ``reports/<env>/generate/<run-id>/``.

::

    run.json            the configuration (model, budgets, modules, levels, template versions);
                        ``resumes``: one entry per time the run was resumed
    system.md           the system prompt
    prompts/NNN-*.md    each rendered prompt (translate / repair / optimise), in order
    calls.jsonl         one line per model call: context, request digest, usage, cost, retries
    responses/NNNN.json each response verbatim (what --replay and --resume play back)
    tools.jsonl         one line per tool call: name, input, result (truncated)
    iterations.jsonl    one line per iteration: module, prompt kind, phase, checks, verdict
    benches.jsonl       optimise: one line per bench (what --replay and --resume play back)
    iterations/<module>-<n>/  that iteration's test output, compose.json and verify.json/verify.md
    final.diff          the work dir against the package it was copied from
    generate.json, generate.md   the summary
    work/               the work dir (the generated package)
    lock                while a process runs the run (its pid)

A resumed run continues in its own directory: the :class:`Recorder` of a resume knows how many
calls and log lines the interrupted session left, trims a torn last line, and while the loop
catches up (replaying those calls) skips what is already on disk, so every log reads as if the
run had never stopped.

Every write goes through :meth:`Recorder.redact`: the API key's value, should it ever reach a
string we write, is replaced before it touches the disk.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import secrets
import time
from pathlib import Path

from envport.errors import EnvportError
from envport.generate.model import API_KEY_ENV, Request

REDACTED = "[redacted]"


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def generate_dir(out: Path, env: str) -> Path:
    return Path(out) / env / "generate"


def run_dir(out: Path, env: str, run_id: str) -> Path:
    path = generate_dir(out, env) / run_id
    if not path.is_dir():
        known = ", ".join(r["run_id"] for r in list_runs(out, env)) or "none"
        raise EnvportError(f"no run {run_id!r} of {env} under {generate_dir(out, env)} (runs: {known})")
    return path


class Recorder:
    def __init__(self, root: Path, resume: bool = False):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.seq = {"prompt": 0, "call": 0}
        # a resumed run: what the interrupted session recorded, skipped while catching up
        self.recorded_calls = 0
        self.skip: dict[str, int] = {}
        if resume:
            self.recorded_calls = len(load_calls(self.root))
            _trim_jsonl(self.root / "calls.jsonl", keep=self.recorded_calls)
            for rel in ("tools.jsonl", "iterations.jsonl"):
                self.skip[rel] = _trim_jsonl(self.root / rel)
            _trim_jsonl(self.root / "benches.jsonl")  # read back, not written again

    @staticmethod
    def redact(text: str) -> str:
        key = os.environ.get(API_KEY_ENV, "")
        return text.replace(key, REDACTED) if len(key) >= 8 else text

    def write_text(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.redact(text))
        return path

    def write_json(self, rel: str, obj) -> Path:
        return self.write_text(rel, json.dumps(obj, indent=2, default=str) + "\n")

    def append_jsonl(self, rel: str, obj) -> None:
        if self.skip.get(rel):
            self.skip[rel] -= 1  # the interrupted session wrote this line already
            return
        path = self.root / rel
        with open(path, "a") as f:
            f.write(self.redact(json.dumps(obj, default=str)) + "\n")

    def prompt(self, kind: str, module: str, iteration: int, text: str) -> str:
        self.seq["prompt"] += 1
        rel = f"prompts/{self.seq['prompt']:03d}-{kind}-{module}-it{iteration}.md"
        self.write_text(rel, text)
        return rel

    def call(self, entry: dict, response: dict) -> int:
        self.seq["call"] += 1
        n = self.seq["call"]
        if n <= self.recorded_calls:
            return n  # a resumed run replaying a call the interrupted session recorded
        self.write_json(f"responses/{n:04d}.json", response)
        self.append_jsonl("calls.jsonl", {"call": n, **entry})
        return n


def request_digest(request: Request) -> str:
    """What a faithful replay must reproduce: model, system prompt, tools and every message,
    except the text of tool results (test output and timings vary between machines); whether
    each tool call failed is kept."""
    messages = []
    for m in request.messages:
        content = m["content"]
        if isinstance(content, list):
            content = [{"type": b["type"], "tool_use_id": b["tool_use_id"],
                        "is_error": b.get("is_error", False)} if b.get("type") == "tool_result" else b
                       for b in content]
        messages.append({"role": m["role"], "content": content})
    body = json.dumps({"model": request.model, "system": request.system, "tools": request.tools,
                       "messages": messages}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def load_calls(root: Path) -> list[dict]:
    """The recorded model calls of a run, in order, with their responses."""
    path = Path(root) / "calls.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
            response = Path(root) / f"responses/{entry['call']:04d}.json"
            entry["response"] = json.loads(response.read_text())
        except (json.JSONDecodeError, FileNotFoundError):
            break  # a run killed mid-write: everything before this call is intact
        out.append(entry)
    return out


def load_benches(root: Path) -> list[dict]:
    """The benches an optimise phase measured, in order, failed ones included (what a replay or
    a resume plays back instead of measuring again)."""
    path = Path(root) / "benches.jsonl"
    if path.exists():
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    summary = Path(root) / "generate.json"  # a run recorded before benches.jsonl existed
    return list(json.loads(summary.read_text()).get("benches", [])) if summary.exists() else []


def _trim_jsonl(path: Path, keep: int | None = None) -> int:
    """Keep the leading lines of ``path`` that parse (at most ``keep``): a session killed while
    writing leaves a torn last line. Returns how many lines remain."""
    if not path.exists():
        return 0
    lines = []
    for line in path.read_text().splitlines():
        try:
            json.loads(line)
        except json.JSONDecodeError:
            break
        lines.append(line)
    lines = lines if keep is None else lines[:keep]
    path.write_text("".join(line + "\n" for line in lines))
    return len(lines)


def run_status(root: Path) -> str:
    """A run's status from its summary; "interrupted" when the process died before writing one."""
    summary = Path(root) / "generate.json"
    return json.loads(summary.read_text()).get("status", "?") if summary.exists() else "interrupted"


def list_runs(out: Path, env: str | None = None) -> list[dict]:
    """Every run under ``out`` (all envs, or one), oldest first."""
    runs = []
    for gen in sorted(Path(out).glob(f"{env or '*'}/generate")):
        for d in (p for p in gen.iterdir() if (p / "run.json").is_file()):
            config = json.loads((d / "run.json").read_text())
            summary = d / "generate.json"
            # no summary: the process died before it could write one
            info = json.loads(summary.read_text()) if summary.exists() else {**config, "status": "interrupted"}
            runs.append({"run_id": d.name, "env": gen.parent.name, "path": str(d),
                         "started": config.get("started_unix", 0.0),
                         "resumes": len(config.get("resumes", [])), **{
                             k: info.get(k) for k in ("status", "model", "iterations", "tokens",
                                                      "usd", "replay_of", "resumed_from")}})
    return sorted(runs, key=lambda r: (r["started"], r["run_id"]))


SKIP_PARTS = {"__pycache__", ".pytest_cache", ".hypothesis"}


def _text_files(root: Path, ignore=None) -> dict[str, list[str]]:
    """``{relative path: lines}`` of every text file under ``root``; ``ignore`` (a
    ``shutil.copytree`` ignore callable) prunes what a copy of the package leaves out."""
    out = {}
    real = root.resolve()
    for d, dirs, files in os.walk(root):  # does not descend into links
        left_out = set(ignore(d, [*dirs, *files])) if ignore else set()
        dirs[:] = [n for n in dirs if n not in left_out and n not in SKIP_PARTS]
        for name in files:
            p = Path(d) / name
            # a link that generated code left pointing outside the work dir is not followed
            if name in left_out or not p.is_file() or (
                    p.is_symlink() and real not in p.resolve().parents):
                continue
            try:
                out[str(p.relative_to(root))] = p.read_text().splitlines(keepends=True)
            except UnicodeDecodeError:
                continue
    return out


def final_diff(original: Path, work: Path, ignore=None) -> str:
    """Unified diff of every text file, original package -> generated work dir (``ignore``:
    what the work dir's copy left out, e.g. build outputs, on both sides)."""
    a, b = _text_files(Path(original), ignore), _text_files(Path(work), ignore)
    chunks = []
    for rel in sorted(set(a) | set(b)):
        if a.get(rel) != b.get(rel):
            chunks += difflib.unified_diff(a.get(rel, []), b.get(rel, []),
                                           f"a/{rel}" if rel in a else "/dev/null",
                                           f"b/{rel}" if rel in b else "/dev/null")
    return "".join(chunks)


def render_markdown(s: dict) -> str:
    lineage = (f" (replay of {s['replay_of']})" if s.get("replay_of") else "") \
        + (f" (resumed from {s['resumed_from']})" if s.get("resumed_from") else "") \
        + (f" (resumed {s['resumes']}x in place)" if s.get("resumes") else "")
    lines = [f"# envport generate: {s['env']} — {s['status']}", "",
             f"- run: {s['run_id']}{lineage}",
             f"- model: {s['model']}; templates: {', '.join(s['templates'])}",
             f"- iterations: {s['iterations']} (at most {s['budget']['iterations']} per phase "
             f"of each module; phases: {', '.join(s.get('phases', []))})",
             f"- tokens: {s['tokens']} ({s['cost']['input_tokens']} in, {s['cost']['output_tokens']} out) "
             f"in {s['cost']['calls']} model calls; cost: ${s['usd']:.4f}",
             f"- wall time: {s['wall_s']:.1f} s", f"- tests written: {', '.join(s['tests_written']) or 'none'}",
             f"- final levels: {json.dumps(s['final_levels'])}", ""]
    if s.get("deferred"):
        lines[-1:-1] = [f"- deferred: {s['deferred']} L1 phase(s) waited for the whole package "
                        f"(it builds only with every module present)"]
    if s.get("needs_human"):
        lines += [f"**Needs a human:** {s['needs_human']}", ""]
    per_phase = s.get("iterations_per_phase") or {}
    if per_phase:
        phases = s.get("phases") or sorted({p for counts in per_phase.values() for p in counts})
        lines += ["## Iterations per module and phase", "",
                  "| module | " + " | ".join(phases) + " | total |",
                  "|---|" + "---|" * (len(phases) + 1)]
        for module, counts in per_phase.items():
            lines.append(f"| {module} | " + " | ".join(str(counts.get(p, 0)) for p in phases)
                         + f" | {sum(counts.values())} |")
        lines.append("")
    lines += ["## Iterations", "",
              "| # | module | prompt | phase (k of T) | checks | tests | verification | verdict |",
              "|---|---|---|---|---|---|---|---|"]
    for i, it in enumerate(s["iteration_log"], 1):
        tests = "—" if it["tests"] is None else ("pass" if it["tests"]["passed"] else "FAIL")
        ver = "—" if it["verification"] is None else ("pass" if it["verification"]["passed"] else "FAIL")
        checks = ", ".join(f"{p} {'ok' if r == 'passed' else r.upper()}"
                           for p, r in (it.get("checks") or {}).items()) or "—"
        phase = f"{it['phase']} ({it['phase_iteration'] or '—'})" if it.get("phase") else "—"
        lines.append(f"| {i} | {it['module']} | {it.get('kind', '')} | {phase} | {checks} | "
                     f"{tests} | {ver} | {it['verdict']} |")
    lines.append("")
    if s.get("benches"):
        lines += ["## Optimise: candidate/reference steps per second", "",
                  "| after | target | num_envs | ratio |", "|---|---|---|---|"]
        for b in s["benches"]:
            for name, t in b["targets"].items():
                for r in t.get("rows", []):
                    ratio = "—" if r.get("ratio") is None else f"{r['ratio']:.2f}x"
                    lines.append(f"| {b['after']} | {name} | {r.get('num_envs')} | {ratio} |")
        lines.append("")
    for it in s["iteration_log"]:
        if it.get("failure"):
            f = it["failure"]
            where = f" (phase {it['phase']})" if it.get("phase") else ""
            lines += [f"## {it['module']} iteration {it['iteration']}: {f['level']} failed{where}",
                      "", f["summary"], "", f["case"], ""]
    return "\n".join(lines)
