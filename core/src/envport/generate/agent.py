"""The closed loop (the paper's Algorithm 1, per module of the translation plan):

    for each module m, in dependency order:
        generate: prompt = translate(m); the model works with the tools until it stops
        for each phase p of L1, compose, L2, L3 in order:
            L1       the package's build and native tests (a plan that declares them, e.g.
                     cargo build + cargo test), m's declared tests and the L1 tests the model
                     wrote; the generic L1 checks of the env (when the run verifies L1) once it
                     composes
            compose  every module of the plan imports (and the env builds) with all present
            L2, L3   the verifier against the reference (one sandboxed run for all levels)
            passed -> next phase; failed -> prompt = repair(p, the shortest failing case)
                      and the model works again; every check runs again from L1, since a fix
                      must not break an earlier phase
            p failed T times (budget.iterations) -> m needs a human at phase p; the run stops
        (compose, L2 and L3 need every module of the plan: a module before the plan's last
        passes on L1, and the module that completes the package is checked through L3)
        a plan that builds as a whole (``builds_as_whole``, a Rust crate), while files of the
        plan are missing: m's L1 phase is deferred (its iteration's verdict), no check runs and
        the loop goes on; the module that completes the package runs L1 on all the deferred
        modules and itself together (build, native tests, all their tests), its repairs naming
        every one of their files, then compose, L2, L3 as above

    optionally (``optimise``), once everything passed, for k in 1..T:
        bench the work dir; prompt = optimise(bench table, checklist)
        the model works; every declared test, the compose check and the verification must
        still pass: kept (and benched again) if they do, reverted to the last verified files
        if not

An *iteration* is one model conversation and the checks after it. It belongs to the phase
where its checks stopped (the first that failed, or the last one when all passed) and counts
against that phase's T: a translation that passes L1 and compose and fails L2 is L2's first
iteration. Budgets on tokens and dollars are checked before every model call.

A run can be replayed (``replay``: a new run directory, the recorded responses, no model) and an
interrupted or stopped run resumed (``resume``: the same run directory; its recorded responses
bring the work dir back to where it stopped, the tools running again, then a live model takes
over and the logs continue).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from envport.cache import cache_root
from envport.errors import EnvportError
from envport.generate import prompts, records, sandbox, tools
from envport.generate.costs import Budget, BudgetExhausted, CostLog, Usage
from envport.generate.failures import Failure, phase_of, phases_for
from envport.generate.model import DEFAULT_MODEL, MAX_TOKENS, Model, RecordedModel, Request
from envport.plan import ModulePlan, TranslationPlan, repo_root
from envport.registry import EnvPort

IGNORED = ("__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info", "build", "dist", ".venv",
           "*.so")
COPY_IGNORE = shutil.ignore_patterns(*IGNORED)
# what sandboxed code learns of where the package came from (a test that needs the repository's
# tools/ when the work dir is only a copy of the package)
REPO_ENV, PACKAGE_ENV = "ENVPORT_REPO_ROOT", "ENVPORT_PACKAGE_DIR"


def copy_ignore(plan: TranslationPlan):
    """What a copy of the package (the work dir, the optimise phase's verified copy) leaves out:
    caches, build outputs, compiled extensions and the plan's ``copy_ignore``."""
    if not plan.copy_ignore:
        return COPY_IGNORE
    return shutil.ignore_patterns(*IGNORED, *plan.copy_ignore)


def copy_tree(src: Path, dst: Path, ignore=None, symlinks: bool = False) -> None:
    """``shutil.copytree`` that gives every copied file a new modification time: a build tool
    that decides by mtimes (cargo) must see a reverted or re-copied file as changed, not as
    older than what it built from the file's last version."""
    shutil.copytree(src, dst, symlinks=symlinks, ignore=ignore, copy_function=shutil.copy)


def build_cache(env: str) -> Path:
    """The ``{cache}`` of a plan's commands: one per env, shared by its runs."""
    return cache_root() / "generate" / env


@dataclass(frozen=True)
class RunConfig:
    env: str
    model: str = DEFAULT_MODEL
    modules: tuple[str, ...] | None = None   # None: the whole plan
    budget: Budget = field(default_factory=Budget)
    levels: tuple[str, ...] = ("L1", "L2", "L3")
    scale: float = 0.01                      # of the port's declared verification budget
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    max_tokens: int = MAX_TOKENS             # per response
    optimise: bool = False                   # the optimise phase after every module passed
    bench_batch_sizes: tuple[int, ...] = (1, 128, 2048)
    bench_min_seconds: float = 1.0

    def to_json(self) -> dict:
        d = asdict(self)
        d["modules"] = None if self.modules is None else list(self.modules)
        d["levels"] = list(self.levels)
        d["bench_batch_sizes"] = list(self.bench_batch_sizes)
        return d

    @classmethod
    def from_json(cls, d: dict) -> RunConfig:
        return cls(env=d["env"], model=d["model"],
                   modules=None if d["modules"] is None else tuple(d["modules"]),
                   budget=Budget(**d["budget"]), levels=tuple(d["levels"]), scale=d["scale"],
                   limits=sandbox.Limits(**d["limits"]), max_tokens=d["max_tokens"],
                   optimise=d.get("optimise", False),
                   bench_batch_sizes=tuple(d.get("bench_batch_sizes", (1, 128, 2048))),
                   bench_min_seconds=d.get("bench_min_seconds", 1.0))


@dataclass
class Iteration:
    module: str
    kind: str           # the prompt it started from: "translate", "repair" or "optimise"
    iteration: int      # 1.. within the module: names its prompt and iterations/<module>-<n>/
    prompt: str         # the recorded prompt file
    phase: str = ""     # where its checks stopped (L1, compose, L2, L3): the first that failed,
                        # or the last one when all passed; "optimise" in the optimise phase
    phase_iteration: int = 0  # its number within that phase of the module (at most T)
    checks: dict = field(default_factory=dict)  # phase -> "passed" / "failed", in check order
    tests: dict | None = None
    verification: dict | None = None
    failure: dict | None = None
    verdict: str = ""   # "passed", "failed", "budget exhausted", "deferred" (phase L1 of a plan
                        # that builds as a whole, while files of the plan are missing: unchecked,
                        # phase_iteration 0); optimise: "kept", "reverted"
    bench: dict | None = None  # optimise: the bench after a kept change


class Generation:
    def __init__(self, port: EnvPort, model: Model, config: RunConfig, out: Path,
                 run_id: str | None = None, prices=None, *, resume: bool = False,
                 resume_budget: Budget | None = None, **lineage):
        self.port, self.model, self.config = port, model, config
        self.plan = prompts.require_plan(port)
        self.modules = self.plan.select(config.modules)
        self.phases = phases_for(config.levels)
        self.run_id = run_id or records.new_run_id()
        self.root = records.generate_dir(out, port.name) / self.run_id
        self.resuming = resume
        if resume:
            if not (self.root / "run.json").is_file():
                raise EnvportError(f"no run {self.run_id!r} to resume under {self.root.parent}")
            _check_not_running(self.root)
        elif self.root.exists():
            raise EnvportError(f"run directory {self.root} exists already")
        self.rec = records.Recorder(self.root, resume=resume)
        self.work = self.root / "work"
        self.cost = CostLog(config.model, prices)
        self.lineage = {k: v for k, v in lineage.items() if v}  # replay_of
        self.resume_budget = resume_budget  # in force once the recorded calls are played
        self.log: list[Iteration] = []
        self.written: list[str] = []
        self.verifications = 0
        self.last_levels: dict = {}
        self.verified = False  # a verification produced a report (the package composed)
        self.needs_human_at: dict | None = None
        self.waiting: list[ModulePlan] = []   # builds_as_whole: modules whose L1 was deferred
        self.together: list[ModulePlan] = []  # the modules the current L1 phase checks
        self.benches: list[dict] = []  # optimise: the baseline, then one per kept change
        self.recorded_benches: list[dict] | None = None  # set by replay and resume
        self.tool_verifies: dict[tuple[str, int], int] = {}
        self.previous_wall_s = 0.0   # a resumed run: what its earlier sessions took
        self.resumes = 0
        self.ignore = copy_ignore(self.plan)
        self.ws = self._workspace()
        self.tools = tools.tools_for(self.plan.build, self.plan.native_tests)
        self.system = prompts.system_prompt(port)

    def _workspace(self) -> tools.Workspace:
        plan, config = self.plan, self.config
        repo = repo_root(plan.package_dir)
        placeholders = {"package": str(Path(plan.package_dir).resolve()), "repo": str(repo)}
        writable: tuple[Path, ...] = ()
        if plan.build or plan.native_tests:
            cache = build_cache(self.port.name)
            cache.mkdir(parents=True, exist_ok=True)
            placeholders["cache"] = str(cache)
            writable = (cache,)
        return tools.Workspace(
            self.work, self.port.name, config.limits, config.levels, config.scale,
            extra_env={REPO_ENV: str(repo), PACKAGE_ENV: placeholders["package"]},
            on_verification=self._saw_verification,
            bench_batch_sizes=config.bench_batch_sizes,
            bench_min_seconds=config.bench_min_seconds,
            compose_modules=tools.module_names((m.target for m in plan.modules),
                                               plan.python_roots),
            writable=writable, python_roots=tuple(plan.python_roots),
            build=tuple(tuple(c) for c in plan.build),
            native_tests=tuple(tuple(c) for c in plan.native_tests), placeholders=placeholders)

    def budget(self) -> Budget:
        """The run's budget; a resume's new one once the recorded calls are caught up with."""
        if self.resume_budget is not None and not getattr(self.model, "replaying", False):
            return self.resume_budget
        return self.config.budget

    # -- set-up -----------------------------------------------------------------------------
    def _fresh_work(self) -> None:
        copy_tree(self.plan.package_dir, self.work, self.ignore)
        for m in self.modules:  # the model writes these from the reference
            for rel in (m.target, prompts.l1_test_file(m)):
                (self.work / rel).unlink(missing_ok=True)

    def _prepare(self) -> None:
        self._fresh_work()
        self.rec.write_json("run.json", {
            "env": self.port.name, "run_id": self.run_id, **self.lineage,
            "config": self.config.to_json(), "reference": self.port.reference,
            "package": str(self.plan.package_dir), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "started_unix": time.time(), "templates": self._templates(), "model": self.config.model,
            "resumes": []})
        self.rec.write_text("system.md", self.system.text)

    def _prepare_resume(self) -> None:
        """Start the work dir again from the package: the recorded responses, replayed, bring it
        back to where the run stopped. The work dir as it was waits in ``work.before-resume``
        until that catch-up has succeeded."""
        info = json.loads((self.root / "run.json").read_text())
        summary = self.root / "generate.json"
        previous = json.loads(summary.read_text()) if summary.exists() else {}
        self.previous_wall_s = float(previous.get("wall_s") or 0.0)
        self.recorded_benches = records.load_benches(self.root)
        backup = self.root / "work.before-resume"
        if backup.exists():  # an earlier resume failed to catch up: that copy is the original
            shutil.rmtree(self.work, ignore_errors=True)
        elif self.work.exists():
            self.work.rename(backup)
        shutil.rmtree(self.root / "verified", ignore_errors=True)  # an optimise phase's copy
        self._fresh_work()
        info.setdefault("resumes", []).append({
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "after_calls": self.rec.recorded_calls,
            "previous_status": previous.get("status", "interrupted"),
            "budget": None if self.resume_budget is None else asdict(self.resume_budget)})
        self.resumes = len(info["resumes"])
        self.rec.write_json("run.json", info)

    def _templates(self) -> list[str]:
        kinds = ("system", *prompts.KINDS, *((prompts.WHOLE,) if self.plan.builds_as_whole
                                             else ()))
        return [prompts.template_name(k).removesuffix(".md") for k in kinds]

    # -- one conversation ---------------------------------------------------------------------
    def _converse(self, text: str, it: Iteration) -> None:
        messages: list[dict] = [{"role": "user", "content": text}]
        turn = 0
        while turn < self.budget().tool_turns:
            turn += 1
            self.cost.check(self.budget())
            request = Request(self.config.model, self.system.text, list(messages), self.tools,
                              self.config.max_tokens)
            retries_before = getattr(self.model, "retries", 0)
            response = self.model.create(request)
            usage = Usage.from_response(response.get("usage"))
            entry = self.cost.add(usage, module=it.module, kind=it.kind,
                                  iteration=it.iteration, turn=turn)
            self.rec.call({**entry, "request_sha256": records.request_digest(request),
                           "messages": len(request.messages), "model": response.get("model"),
                           "stop_reason": response.get("stop_reason"),
                           "retries": getattr(self.model, "retries", 0) - retries_before},
                          response)
            messages.append({"role": "assistant",
                             "content": [_as_input(b) for b in response["content"]]})
            uses = [b for b in response["content"] if b.get("type") == "tool_use"]
            if not uses:
                return
            results = [self._tool(b, it) for b in uses]
            messages.append({"role": "user", "content": results})
        self.rec.append_jsonl("tools.jsonl", {"module": it.module, "iteration": it.iteration,
                                              "note": "tool-turn cap reached"})

    def _tool(self, block: dict, it: Iteration) -> dict:
        name, args = block["name"], block.get("input") or {}

        def verify_dir() -> Path:
            key = (it.module, it.iteration)
            self.tool_verifies[key] = self.tool_verifies.get(key, 0) + 1
            return self._iter_dir(it) / f"tool-verify-{self.tool_verifies[key]}"

        result = tools.execute(self.ws, name, args, verify_dir)
        if name == "write_file" and not result.is_error:
            path = args["path"]
            if path.startswith("tests/") and path not in self.written:
                self.written.append(path)
        shown = {k: (v if k != "content" else f"<{len(v)} chars>") for k, v in args.items()}
        self.rec.append_jsonl("tools.jsonl", {
            "module": it.module, "iteration": it.iteration, "tool_use_id": block["id"],
            "name": name, "input": shown, "is_error": result.is_error,
            "result": result.content[:4000]})
        return {"type": "tool_result", "tool_use_id": block["id"], "content": result.content,
                "is_error": result.is_error}

    def _saw_verification(self, v: tools.Verification) -> None:
        self.verifications += 1
        if v.report:
            self.verified = True
            self.last_levels = v.report.get("levels", {})

    def _iter_dir(self, it: Iteration) -> Path:
        return self.root / "iterations" / f"{it.module}-{it.iteration}"

    # -- checks after a model turn ------------------------------------------------------------------
    def _complete(self) -> bool:
        return all((self.work / m.target).exists() for m in self.plan.modules)

    def _defer(self) -> bool:
        """A plan that builds as a whole cannot build (so check L1) while files are missing."""
        return self.plan.builds_as_whole and not self._complete()

    def _check_paths(self, tests: list[str], it: Iteration) -> Failure | None:
        """The L1 tests: the package's build and native tests (if it declares them), then
        pytest on those of ``tests`` that exist."""
        paths = [t for t in tests if (self.work / t).exists()]
        if paths or self.ws.has_steps():
            run = self.ws.run_l1(paths)
            self.rec.write_text(str(self._iter_dir(it).relative_to(self.root) / "tests.txt"), run.log)
            it.tests = run.to_json()
            if not run.passed:
                return tools.failure_of_tests(run)
        return None

    def _check(self, tests: list[str], it: Iteration) -> tuple[str, Failure | None]:
        """Run the phases in order, stopping at the first that fails: the tests (L1), then, once
        every module of the plan exists, the compose check and the verification (generic L1,
        L2, L3) in one sandboxed run. Returns the phase it stopped at and the failure."""
        failure = self._check_paths(tests, it)
        it.checks["L1"] = "passed" if failure is None else "failed"
        if failure is not None or not self._complete():
            return "L1", failure  # composed and verified once the plan's last module exists
        v = self.ws.run_verification(self._iter_dir(it) / "verify")
        it.verification = {"passed": v.passed, "composed": v.composed,
                           "levels": v.report.get("levels", {})}
        it.checks["compose"] = "passed" if v.composed else "failed"
        if not v.composed:
            return "compose", v.failure
        if v.failure is None:
            it.checks.update(dict.fromkeys(self.phases[2:], "passed"))
            return self.phases[-1], None
        phase = phase_of(v.failure.level, self.config.levels)
        if phase == "L1":
            it.checks["L1"] = "failed"  # the generic checks of the composed env
        else:
            it.checks.update(dict.fromkeys(self.phases[2:self.phases.index(phase)], "passed"))
            it.checks[phase] = "failed"
        return phase, v.failure

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> dict:
        t0 = time.time()
        self._lock()
        if self.resuming:
            self._prepare_resume()
        else:
            self._prepare()
        status, needs_human = "passed", None
        try:
            for module in self.modules:
                stuck = self._module(module)
                if stuck is not None:
                    phase, n, failure = stuck
                    status = "needs_human"
                    self.needs_human_at = {"module": module.name, "phase": phase, "iterations": n}
                    needs_human = (f"module {module.name!r} still fails after {n} iterations of "
                                   f"phase {phase} ({failure.level}: {failure.summary})")
                    if phase == "L1" and len(self.together) > 1:
                        names = [m.name for m in self.together]
                        self.needs_human_at["together"] = names
                        needs_human += (f"; the package builds as a whole: L1 checked modules "
                                        f"{', '.join(names)} together")
                    break
            if status == "passed" and self.waiting:
                status = "incomplete"
                needs_human = (f"the L1 checks of modules "
                               f"{', '.join(m.name for m in self.waiting)} never ran: the "
                               f"package builds as a whole and files of the plan are missing")
            if status == "passed" and self.config.optimise and self.verified:
                self._optimise()
        except BudgetExhausted as exc:
            status, needs_human = "budget_exhausted", f"{exc} (module {self.log[-1].module!r})"
            self.log[-1].verdict = "budget exhausted"
            self._log(self.log[-1])
        except BaseException as exc:  # the API failed for good, a replay diverged, Ctrl-C:
            # record what happened, then let it propagate (--resume picks the run up again)
            self._finish("error", f"{type(exc).__name__}: {exc}", t0)
            raise
        if status == "passed" and not self.verified:
            status, needs_human = "incomplete", "the package was never verified (a module is missing)"
        return self._finish(status, needs_human, t0)

    def _lock(self) -> None:
        self.rec.write_json("lock", {"pid": os.getpid(), "host": socket.gethostname()})

    def _finish(self, status: str, needs_human: str | None, t0: float) -> dict:
        backup = self.root / "work.before-resume"
        if backup.exists():
            if getattr(self.model, "replaying", False):  # stopped before it caught up
                needs_human = (f"{needs_human}; the work dir as the interrupted run left it is "
                               f"in {backup.name}")
            else:
                shutil.rmtree(backup)
        summary = self._summary(status, needs_human, self.previous_wall_s + time.time() - t0)
        self.rec.write_text("final.diff", records.final_diff(self.plan.package_dir, self.work,
                                                             self.ignore))
        self.rec.write_json("generate.json", summary)
        self.rec.write_text("generate.md", records.render_markdown(summary))
        (self.root / "lock").unlink(missing_ok=True)
        return summary

    def _module(self, module: ModulePlan) -> tuple[str, int, Failure] | None:
        """None once the module passed every phase; else (phase, iterations, failure) for the
        phase that failed T times."""
        used = dict.fromkeys(self.phases, 0)
        tests = [*module.tests, prompts.l1_test_file(module)]
        prompt, kind, n = prompts.translate_prompt(self.port, module), "translate", 0
        while True:
            n += 1
            it = Iteration(module.name, kind, n, self.rec.prompt(kind, module.name, n, prompt.text))
            self.log.append(it)
            self._converse(prompt.text, it)
            if self._defer():  # nothing can be checked before the package builds
                it.phase, it.checks, it.verdict = "L1", {"L1": "deferred"}, "deferred"
                self._log(it)
                self.waiting.append(module)
                return None
            if self.waiting:  # this module completed the package: L1 on all of them at once
                self.together, self.waiting = [*self.waiting, module], []
                tests = list(dict.fromkeys(t for m in self.together
                                           for t in (*m.tests, prompts.l1_test_file(m))))
            elif kind == "translate":
                self.together = [module]
            phase, failure = self._check(tests, it)
            used[phase] += 1
            it.phase, it.phase_iteration = phase, used[phase]
            it.verdict = "passed" if failure is None else "failed"
            it.failure = None if failure is None else failure.to_json()
            self._log(it)
            if failure is None:
                return None
            budget = self.budget()
            if used[phase] >= budget.iterations:
                return phase, used[phase], failure
            left = (f"iteration {used[phase] + 1} of at most {budget.iterations} for phase "
                    f"{phase}; ${max(0.0, budget.usd - self.cost.usd):.2f}, "
                    f"{max(0, budget.tokens - self.cost.tokens)} tokens")
            if phase == "L1" and len(self.together) > 1:
                prompt = prompts.repair_whole_prompt(self.port, self.together, failure,
                                                     iteration=n + 1, phase=phase,
                                                     budget_left=left)
            else:
                prompt = prompts.repair_prompt(self.port, module, failure, iteration=n + 1,
                                               phase=phase, budget_left=left)
            kind = "repair"

    # -- optimise ---------------------------------------------------------------------------
    def _bench(self, name: str) -> dict | None:
        if self.recorded_benches:
            # a replay, or a resume catching up, reuses the recorded measurements: timings are
            # not reproducible, and the optimise prompt that shows them must be the recorded one
            entry = self.recorded_benches.pop(0)
            if entry.get("failed"):
                return None
            self.benches.append(entry)
            return entry
        if self.recorded_benches is not None and getattr(self.model, "live", None) is None:
            return None  # a replay asked for more benches than the run made
        bench = self.ws.run_bench(self.root / "iterations" / name / "bench")
        entry = ({"after": name, "failed": True} if bench is None
                 else {"after": name, "targets": bench.get("targets", {})})
        self.rec.append_jsonl("benches.jsonl", entry)
        if bench is not None:
            self.benches.append(entry)
        return bench

    def _optimise(self) -> None:
        """Each change must keep every test, the compose check and the verification passing,
        else it is undone: the work dir always ends verified."""
        verified = self.root / "verified"
        copy_tree(self.work, verified, self.ignore, symlinks=True)
        bench = self._bench("optimise-0")
        everything = list(dict.fromkeys(
            t for m in self.plan.modules for t in (*m.tests, prompts.l1_test_file(m))))
        k = 0
        while k < self.budget().iterations:
            k += 1
            prompt = prompts.optimise_prompt(self.port, bench)
            it = Iteration("optimise", "optimise", k,
                           self.rec.prompt("optimise", "all", k, prompt.text),
                           phase="optimise", phase_iteration=k)
            self.log.append(it)
            self._converse(prompt.text, it)
            _, failure = self._check(everything, it)
            it.failure = None if failure is None else failure.to_json()
            if failure is None:
                it.verdict = "kept"
                shutil.rmtree(verified)
                copy_tree(self.work, verified, self.ignore, symlinks=True)
                bench = self._bench(f"optimise-{k}") or bench
                it.bench = None if bench is None else {"targets": bench.get("targets", {})}
            else:
                it.verdict = "reverted"
                shutil.rmtree(self.work)
                copy_tree(verified, self.work, symlinks=True)
            self._log(it)
        shutil.rmtree(verified)

    def _log(self, it: Iteration) -> None:
        self.rec.append_jsonl("iterations.jsonl", asdict(it))

    def _summary(self, status: str, needs_human: str | None, wall_s: float) -> dict:
        totals = self.cost.totals()
        return {
            "env": self.port.name, "run_id": self.run_id, **self.lineage, "status": status,
            "needs_human": needs_human, "needs_human_at": self.needs_human_at,
            "model": self.config.model,
            "modules": [m.name for m in self.modules], "phases": list(self.phases),
            "iterations": len(self.log),
            "iterations_per_module": {m.name: sum(1 for it in self.log if it.module == m.name)
                                      for m in self.modules},
            "iterations_per_phase": {
                m.name: {p: sum(1 for it in self.log if it.module == m.name and it.phase == p)
                         for p in self.phases} for m in self.modules},
            "deferred": sum(1 for it in self.log if it.verdict == "deferred"),
            "verifications": self.verifications, "tests_written": self.written,
            "tokens": totals["tokens"], "usd": totals["usd"], "cost": totals,
            "retries": getattr(self.model, "retries", 0), "wall_s": round(wall_s, 2),
            "final_levels": self.last_levels, "templates": self._templates(),
            "benches": self.benches,
            "budget": asdict(self.budget()), "iteration_log": [asdict(i) for i in self.log],
            "resumes": self.resumes, "run_dir": str(self.root),
        }


def _check_not_running(root: Path) -> None:
    """A run whose lock names a live process on this machine is still running."""
    try:
        lock = json.loads((root / "lock").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return
    if lock.get("host") != socket.gethostname():
        raise EnvportError(f"run {root.name} is locked by a process on {lock.get('host')}; if it "
                           f"is not running any more, delete {root / 'lock'}")
    try:
        os.kill(int(lock["pid"]), 0)
    except (ProcessLookupError, KeyError, ValueError):
        return  # died without cleaning up (killed)
    except PermissionError:
        pass
    if int(lock["pid"]) != os.getpid():
        raise EnvportError(f"run {root.name} is still running (pid {lock['pid']}); stop it "
                           f"before resuming it")


# the fields the Messages API accepts back in an assistant turn, per content block type; a
# response block may carry more (citations, server-side metadata) that an input would reject
INPUT_FIELDS = {"text": ("type", "text"), "tool_use": ("type", "id", "name", "input"),
                "thinking": ("type", "thinking", "signature"), "redacted_thinking": ("type", "data")}


def _as_input(block: dict) -> dict:
    keep = INPUT_FIELDS.get(block.get("type"))
    return block if keep is None else {k: block[k] for k in keep if k in block}


def generate(port: EnvPort, model: Model, config: RunConfig, out: Path = Path("reports"),
             run_id: str | None = None, prices=None) -> dict:
    return Generation(port, model, config, Path(out), run_id, prices).run()


def _recorded(port: EnvPort, out: Path, run_id: str) -> tuple[dict, RunConfig, list[dict]]:
    root = records.run_dir(out, port.name, run_id)
    info = json.loads((root / "run.json").read_text())
    calls = [{"request_sha256": c["request_sha256"], "response": c["response"],
              "retries": c.get("retries", 0)} for c in records.load_calls(root)]
    return info, RunConfig.from_json(info["config"]), calls


def replay(port: EnvPort, run_id: str, out: Path = Path("reports"), prices=None) -> dict:
    """Re-run a recorded run from its recorded responses, in a new run directory: no model is
    called; the files, tests and verification run again for real."""
    _, config, calls = _recorded(port, Path(out), run_id)
    gen = Generation(port, RecordedModel(calls), config, Path(out), prices=prices, replay_of=run_id)
    gen.recorded_benches = records.load_benches(records.run_dir(Path(out), port.name, run_id))
    return gen.run()


def resume(port: EnvPort, run_id: str, live: Model, out: Path = Path("reports"),
           prices=None, budget: Budget | None = None) -> dict:
    """Continue an interrupted (or stopped) run in its own directory, under its own run id.

    The work dir starts again from the package and the recorded responses are played back in
    order (the tools run again, each request checked against the recorded digest), which brings
    the run to where it stopped; then ``live`` takes over. The logs continue where they ended,
    ``run.json`` gains an entry in ``resumes`` and ``generate.json``/``generate.md`` are
    rewritten at the end. ``budget`` (optional) replaces the recorded one from then on: more
    iterations, tokens or dollars for a run that ran out of them."""
    out = Path(out)
    info, config, calls = _recorded(port, out, run_id)
    root = records.run_dir(out, port.name, run_id)
    if records.run_status(root) == "passed":
        raise EnvportError(f"run {run_id!r} of {port.name} passed: there is nothing to resume")
    lineage = {k: info[k] for k in ("replay_of",) if info.get(k)}
    return Generation(port, RecordedModel(calls, live), config, out, run_id=run_id,
                      prices=prices, resume=True, resume_budget=budget, **lineage).run()


def recorded_budget(port: EnvPort, run_id: str, out: Path = Path("reports")) -> Budget:
    """The budget a recorded run was started with."""
    return _recorded(port, Path(out), run_id)[1].budget
