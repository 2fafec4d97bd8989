"""The verification engine: the levels run over a set of suites, one result object.

:func:`run_suites` is what both front doors use: :func:`envport.compare` (two backends, suites
built from its arguments) and :func:`envport.verify.run` (an env package's declared suites,
reports always written). It writes nothing unless asked (:meth:`Comparison.write`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from envport.errors import EnvportError
from envport.registry import ChaosSuite, L1BackendTarget, L1Target, L2Suite, L3Suite, L4Suite
from envport.verify.diff import Tolerance, ToleranceSpec, as_tolerance
from envport.verify.l2 import L2Result, run_l2, suite_tolerance
from envport.verify.l3 import Divergence, L3Result, run_l3
from envport.verify.l4 import L4Result, run_l4
from envport.verify.workers import ShardPlan, check_workers, default_workers, make_executor

LEVELS = ("L1", "L2", "L3", "L4")


@dataclass
class Comparison:
    """What a verification found. ``report`` is the content of ``verify.json`` (schema in
    DESIGN.md); the raw per-suite results are kept beside it."""

    report: dict
    l1: list[dict] = field(default_factory=list)
    l2: list[L2Result] = field(default_factory=list)
    l3: list[L3Result] = field(default_factory=list)
    l4: list[L4Result] = field(default_factory=list)

    @property
    def equivalent(self) -> bool:
        return bool(self.report["equivalent"])

    @property
    def levels(self) -> dict:
        return self.report["levels"]

    @property
    def first_divergence(self) -> dict | None:
        return self.report["first_divergence"]

    @property
    def divergences(self) -> list[Divergence]:
        return [d for r in self.l3 for d in r.divergences]

    @property
    def shortest_prefix(self):
        """The shortest diverging action prefix of the first L3 divergence (None if none)."""
        import numpy as np

        divs = self.divergences
        return None if not divs or divs[0].prefix is None else np.asarray(divs[0].prefix)

    def to_json(self) -> dict:
        return self.report

    def write(self, out_dir: Path | str) -> tuple[Path, Path]:
        """``<out_dir>/<name>/verify.json`` and ``verify.md``."""
        from envport.verify.report import write_reports

        return write_reports(self.report, Path(out_dir))

    def summary(self) -> str:
        verdict = "EQUIVALENT" if self.equivalent else "NOT EQUIVALENT"
        parts = [f"{self.report['env']}: {verdict}"]
        for level, v in self.levels.items():
            parts.append(f"{level} {_level_text(level, v)}")
        if self.first_divergence:
            parts.append("first divergence: " + _divergence_text(self.first_divergence))
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"Comparison({self.summary()})"


def _level_text(level: str, v: dict) -> str:
    if level == "L1":
        return f"{v['passed']} passed, {v['failed']} failed"
    if level == "L2":
        return f"{v['cases']} cases, {v['mismatches']} mismatches"
    if level == "L3":
        text = f"{v['episodes']} episodes, {v['steps']} env-steps, {v['mismatches']} mismatches"
        if "chaos" in v:
            c = v["chaos"]
            text += f"; chaos horizon {c['passed']}/{c['suites']} suites passed"
        return text
    return f"{v.get('suites', 0)} suite(s), equivalent={v.get('equivalent')}"


def _divergence_text(fd: dict) -> str:
    return fd.get("summary") or f"{fd.get('level')} {fd.get('suite')}: {fd.get('fields')}"


def tolerance_json(tol: ToleranceSpec):
    """The tolerance as it goes into verify.json: a number, {atol, rtol} or per field."""
    if isinstance(tol, Tolerance):
        return {"atol": tol.atol, "rtol": tol.rtol}
    if isinstance(tol, dict):
        return {k: tolerance_json(as_tolerance(v)) for k, v in tol.items()}
    return as_tolerance(tol).atol


def check_tolerance(tol: ToleranceSpec) -> ToleranceSpec:
    """Validate the numbers now (unknown field names are checked on the first states)."""
    if isinstance(tol, dict):
        for v in tol.values():
            as_tolerance(v)
        return tol
    as_tolerance(tol)
    return tol


def _bar(total: int, desc: str, unit: str, enabled: bool):
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr,
                dynamic_ncols=True, leave=False)


def _note(suite) -> str:
    return suite.note() if callable(suite.note) else suite.note


def run_suites(
    name: str, reference: str, candidate: str, *,
    l1: Sequence[L1Target | L1BackendTarget] = (), l2: Sequence[L2Suite] = (),
    l3: Sequence[L3Suite] = (), l4: Sequence[L4Suite] = (),
    chaos: Sequence[ChaosSuite] = (), tolerance: ToleranceSpec = 0.0, levels: Sequence[str] | None = None,
    required: set[str] | None = None, scale: float = 1.0, workers: int | None = 1,
    ray: str | bool | None = None, progress: bool = False,
    regressions_dir: Path | None = None, stop_after: int = 1,
) -> Comparison:
    """Run ``levels`` (default: all) over the suites and return a :class:`Comparison`.

    ``scale`` multiplies the L2 case, L3 episode (chaos suites' too) and L4 episode budgets
    (>= 1 case or episode for L2/L3, >= 2 episodes per backend for L4). ``chaos`` suites run
    with L3, in this process, and L3 passes only if each passes. L2 batches and L3 seeds run on ``workers``
    worker processes (or Ray actors with ``ray``; None: one per core); the report is the same
    for any number.
    Equivalence is claimed only when every level of ``required`` (default: L1, L2, L3, and L4
    if there are L4 suites) ran and every level that ran passed.
    """
    levels = LEVELS if levels is None else tuple(levels)
    unknown = set(levels) - set(LEVELS)
    if unknown:
        raise EnvportError(f"level(s) {sorted(unknown)} not implemented; choose from {LEVELS}")
    if not (isinstance(scale, int | float) and math.isfinite(scale) and scale > 0):
        raise EnvportError(f"scale must be a number > 0, got {scale!r}")
    workers = default_workers() if workers is None else check_workers(workers)
    check_tolerance(tolerance)
    for suite in l2:
        if suite.tolerance is not None:
            check_tolerance(suite.tolerance)
    required = ({"L1", "L2", "L3"} | ({"L4"} if l4 else set())) if required is None else required
    t0 = time.time()
    report: dict = {"env": name, "reference": reference, "candidate": candidate,
                    "tolerance": tolerance_json(tolerance), "levels": {}, "details": {},
                    "equivalent": False, "first_divergence": None, "scale": scale}
    out = Comparison(report)
    ok = True
    if "L1" in levels:
        ok &= _level1(l1, out, progress)
    if ("L2" in levels and l2) or ("L3" in levels and l3):
        plan = ShardPlan(l2=list(l2), l3=list(l3), tolerance=tolerance)
        executor = make_executor(plan, workers, ray)
        try:
            if "L2" in levels:
                ok &= _level2(plan, executor, out, scale, progress)
            if "L3" in levels:
                ok &= _level3(plan, executor, out, scale, progress, regressions_dir, stop_after)
        finally:
            executor.close()
        report["execution"] = {"workers": executor.workers, "executor": executor.kind}
    else:
        for level in ("L2", "L3"):
            if level in levels:
                ok &= _empty(level, out)
    if "L3" in levels and chaos:
        ok &= _chaos(chaos, out, scale, progress)
    if "L4" in levels:
        ok &= _level4(l4, out, scale, progress)
    report["levels_passed"] = bool(ok)  # every level that ran passed
    report["equivalent"] = bool(ok and required <= set(report["levels"]))
    report["required_levels"] = sorted(required)
    report["wall_s"] = round(time.time() - t0, 2)
    return out


def _empty(level: str, out: Comparison) -> bool:
    if level == "L2":
        out.report["levels"]["L2"] = {"cases": 0, "mismatches": 0}
    else:
        out.report["levels"]["L3"] = {"episodes": 0, "steps": 0, "mismatches": 0,
                                      "max_abs_err": 0.0}
    out.report["details"][level] = []
    return False  # a level with nothing to run shows nothing


def _level1(targets, out: Comparison, progress: bool) -> bool:
    from envport.verify.backend_checks import run_backend_checks
    from envport.verify.checks import run_checks

    details, passed, failed = [], 0, 0
    with _bar(len(targets), "L1 checks", "target", progress) as bar:
        for target in targets:
            if isinstance(target, L1BackendTarget):
                results = run_backend_checks(target.make_backend, target.sample_actions,
                                             steps=target.steps)
                kind = "backend"
            else:
                results = run_checks(target.make_env(), target.sample_action,
                                     tolerance=target.tolerance,
                                     paired_steps=target.paired_steps)
                kind = "env"
            details.append({"target": target.name, "kind": kind,
                            "checks": [vars(r) for r in results]})
            passed += sum(r.passed for r in results)
            failed += sum(not r.passed for r in results)
            bar.update(1)
    out.report["levels"]["L1"] = {"passed": passed, "failed": failed}
    out.report["details"]["L1"] = details
    out.l1 = details
    return failed == 0 and passed > 0


def _level2(plan: ShardPlan, executor, out: Comparison, scale: float, progress: bool) -> bool:
    report = out.report
    total_cases = total_bad = 0
    details = []
    for i, suite in enumerate(plan.l2):
        cases = max(1, int(suite.cases * scale))
        with _bar(cases, f"L2 {suite.name}", "case", progress) as bar:
            res = run_l2(suite, plan.tolerance, cases=cases, progress=bar.update,
                         executor=executor, index=i)
        out.l2.append(res)
        total_cases += res.cases
        total_bad += res.mismatches
        details.append({"suite": suite.name, "cases": res.cases, "mismatches": res.mismatches,
                        "note": _note(suite), "examples": res.examples,
                        "tolerance": tolerance_json(suite_tolerance(suite, plan)),
                        "max_abs_err": res.max_abs_err})
        if res.examples and report["first_divergence"] is None:
            report["first_divergence"] = {"level": "L2", "suite": suite.name, **res.examples[0]}
    report["levels"]["L2"] = {"cases": total_cases, "mismatches": total_bad}
    report["details"]["L2"] = details
    return total_bad == 0 and total_cases > 0


def _level3(plan: ShardPlan, executor, out: Comparison, scale: float, progress: bool,
            regressions: Path | None, stop_after: int) -> bool:
    from envport.verify.l3 import worst_err

    report = out.report
    agg = {"episodes": 0, "steps": 0, "mismatches": 0, "max_abs_err": 0.0}
    details = []
    complete = True  # every suite reached its episode budget without a mismatch
    for i, suite in enumerate(plan.l3):
        episodes = max(1, int(suite.episodes * scale))
        with _bar(episodes, f"L3 {suite.name}", "episode", progress) as bar:
            def tick(_steps, eps, bar=bar):
                bar.update(max(0, min(eps, bar.total) - bar.n))

            res = run_l3(suite, plan.tolerance, episodes=episodes, progress=tick,
                         regressions_dir=regressions, stop_after=stop_after,
                         executor=executor, index=i)
        out.l3.append(res)
        complete &= res.mismatches == 0 and res.episodes >= episodes
        agg["episodes"] += res.episodes
        agg["steps"] += res.steps
        agg["mismatches"] += res.mismatches
        agg["max_abs_err"] = worst_err(agg["max_abs_err"], res.max_abs_err)
        details.append({"suite": suite.name, "episodes": res.episodes, "env_steps": res.steps,
                        "seeds": res.seeds, "mismatches": res.mismatches,
                        "max_abs_err": res.max_abs_err, "note": _note(suite),
                        "divergences": [d.to_json() for d in res.divergences]})
        if res.divergences and report["first_divergence"] is None:
            d = res.divergences[0]
            report["first_divergence"] = {"level": "L3", "summary": d.summary(), **d.to_json()}
    report["levels"]["L3"] = agg
    report["details"]["L3"] = details
    return complete and agg["mismatches"] == 0 and agg["episodes"] > 0


def _chaos(suites: Sequence[ChaosSuite], out: Comparison, scale: float, progress: bool) -> bool:
    from envport.verify.chaos import run_chaos

    details = []
    for suite in suites:
        episodes = max(1, int(suite.episodes * scale))
        with _bar(episodes, f"L3 chaos {suite.name}", "episode", progress) as bar:
            res = run_chaos(suite, episodes, progress=bar.update)
        details.append(res.to_json() | {"note": _note(suite)})
    level = out.report["levels"].setdefault("L3", {"episodes": 0, "steps": 0, "mismatches": 0,
                                                   "max_abs_err": 0.0})
    level["chaos"] = {"suites": len(details), "passed": sum(d["passed"] for d in details),
                      "episodes": sum(d["episodes"] for d in details)}
    out.report["details"]["L3 chaos"] = details
    return all(d["passed"] for d in details)


def _level4(suites: Sequence[L4Suite], out: Comparison, scale: float, progress: bool) -> bool:
    details = []
    for suite in suites:
        episodes = max(2, int(suite.episodes * scale))
        with _bar(2 * episodes, f"L4 {suite.name}", "episode", progress) as bar:
            res = run_l4(suite, episodes, progress=bar.update)
        out.l4.append(res)
        if progress:  # each suite's verdict as it lands: a long L4 level reports as it goes
            t = res.test
            tqdm.write(f"L4 {suite.name}: {'equivalent' if t.equivalent else 'NOT equivalent'}"
                       f" (reference {t.reference_mean:.6g}, candidate {t.candidate_mean:.6g}, "
                       f"difference {t.difference:+.4g}, {100 * (1 - 2 * suite.alpha):g}% CI "
                       f"[{t.ci[0]:+.4g}, {t.ci[1]:+.4g}], margin {suite.margin:g}, "
                       f"p {t.p_value:.2g})", file=sys.stderr)
        test = asdict(res.test) | {"ci": list(res.test.ci)}  # a list, as in verify.json
        details.append({"suite": suite.name, **test, "margin": suite.margin,
                        "alpha": suite.alpha, "seed": suite.seed, "metric": suite.metric,
                        "note": _note(suite),
                        "policy": suite.info() if callable(suite.info) else suite.info})
    # with no suite declared nothing was tested: null margin, p-value and verdict
    out.report["levels"]["L4"] = {
        "suites": len(details),
        "margin": max((d["margin"] for d in details), default=None),
        "p_value": max((d["p_value"] for d in details), default=None),
        "equivalent": all(d["equivalent"] for d in details) if details else None,
        "episodes": sum(d["n_reference"] for d in details),
    }
    out.report["details"]["L4"] = details
    return all(d["equivalent"] for d in details)
