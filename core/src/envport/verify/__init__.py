"""The verification hierarchy: L1 property, L2 interaction, L3 rollout, L4 transfer.

:func:`run` executes every level an :class:`~envport.registry.EnvPort` declares and writes
``reports/<env>/verify.json`` and ``verify.md``. L4 asks whether there is a sim-to-sim gap for
learning: a fixed policy (trained on one backend, or built in) is evaluated on both backends and
a TOST equivalence test with the suite's declared margin compares the mean episode scores.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from pathlib import Path

from tqdm.auto import tqdm

from envport.errors import EnvportError
from envport.registry import EnvPort
from envport.verify.checks import CheckResult, run_checks
from envport.verify.l2 import L2Result, run_l2
from envport.verify.l3 import L3Result, run_l3
from envport.verify.l4 import L4Result, TostResult, run_l4, tost
from envport.verify.report import write_reports

__all__ = ["run", "run_checks", "run_l2", "run_l3", "run_l4", "tost", "CheckResult", "L2Result",
           "L3Result", "L4Result", "TostResult"]

LEVELS = ("L1", "L2", "L3", "L4")


def run(port: EnvPort, out_dir: Path = Path("reports"), scale: float = 1.0,
        levels: tuple[str, ...] | list[str] | None = None, progress: bool = True) -> dict:
    """Verify ``port``; ``scale`` multiplies the L2 case, L3 episode and L4 episode budgets
    (>= 1 case or episode for L2/L3, >= 2 episodes per backend for each L4 suite).

    ``levels`` defaults to all implemented levels. Equivalence is only claimed when L1, L2 and
    L3 ran and passed, and, if the port declares any L4 suite, L4 ran and every suite was
    equivalent (a port without L4 suites can be equivalent without L4).
    """
    levels = LEVELS if levels is None else tuple(levels)
    unknown = set(levels) - set(LEVELS)
    if unknown:
        raise EnvportError(f"level(s) {sorted(unknown)} not implemented; choose from {LEVELS}")
    t0 = time.time()
    report: dict = {"env": port.name, "reference": port.reference, "candidate": port.candidate,
                    "tolerance": port.tolerance, "levels": {}, "details": {},
                    "equivalent": False, "first_divergence": None, "scale": scale}
    ok = True
    if "L1" in levels:
        ok &= _level1(port, report, progress)
    if "L2" in levels:
        ok &= _level2(port, report, scale, progress)
    if "L3" in levels:
        ok &= _level3(port, report, scale, progress, Path(out_dir) / port.name / "regressions")
    if "L4" in levels:
        ok &= _level4(port, report, scale, progress)
    required = {"L1", "L2", "L3"} | ({"L4"} if port.l4 else set())
    report["equivalent"] = bool(ok and required <= set(levels))
    report["wall_s"] = round(time.time() - t0, 2)
    report["report_paths"] = [str(p) for p in write_reports(report, Path(out_dir))]
    return report


def _note(suite) -> str:
    return suite.note() if callable(suite.note) else suite.note


def _bar(total: int, desc: str, unit: str, enabled: bool):
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr,
                dynamic_ncols=True, leave=False)


def _level1(port: EnvPort, report: dict, progress: bool) -> bool:
    details, passed, failed = [], 0, 0
    with _bar(len(port.l1), "L1 checks", "env", progress) as bar:
        for target in port.l1:
            results = run_checks(target.make_env(), target.sample_action)
            details.append({"target": target.name, "checks": [vars(r) for r in results]})
            passed += sum(r.passed for r in results)
            failed += sum(not r.passed for r in results)
            bar.update(1)
    report["levels"]["L1"] = {"passed": passed, "failed": failed}
    report["details"]["L1"] = details
    return failed == 0 and passed > 0


def _level2(port: EnvPort, report: dict, scale: float, progress: bool) -> bool:
    total_cases = total_bad = 0
    details = []
    for suite in port.l2:
        cases = max(1, int(suite.cases * scale))
        with _bar(cases, f"L2 {suite.name}", "case", progress) as bar:
            res = run_l2(suite, port.tolerance, cases=cases, progress=bar.update)
        total_cases += res.cases
        total_bad += res.mismatches
        details.append({"suite": suite.name, "cases": res.cases, "mismatches": res.mismatches,
                        "note": _note(suite), "examples": res.examples})
        if res.examples and report["first_divergence"] is None:
            report["first_divergence"] = {"level": "L2", "suite": suite.name, **res.examples[0]}
    report["levels"]["L2"] = {"cases": total_cases, "mismatches": total_bad}
    report["details"]["L2"] = details
    return total_bad == 0 and total_cases > 0


def _level3(port: EnvPort, report: dict, scale: float, progress: bool, regressions: Path) -> bool:
    agg = {"episodes": 0, "steps": 0, "mismatches": 0, "max_abs_err": 0.0}
    details = []
    complete = True  # every suite reached its episode budget without a mismatch
    for suite in port.l3:
        episodes = max(1, int(suite.episodes * scale))
        with _bar(episodes, f"L3 {suite.name}", "episode", progress) as bar:
            def tick(_steps, eps, bar=bar):
                bar.update(max(0, min(eps, bar.total) - bar.n))

            res = run_l3(suite, port.tolerance, episodes=episodes, progress=tick,
                         regressions_dir=regressions)
        complete &= res.mismatches == 0 and res.episodes >= episodes
        agg["episodes"] += res.episodes
        agg["steps"] += res.steps
        agg["mismatches"] += res.mismatches
        agg["max_abs_err"] = max(agg["max_abs_err"], res.max_abs_err)
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


def _level4(port: EnvPort, report: dict, scale: float, progress: bool) -> bool:
    details = []
    for suite in port.l4:
        episodes = max(2, int(suite.episodes * scale))
        with _bar(2 * episodes, f"L4 {suite.name}", "episode", progress) as bar:
            res = run_l4(suite, episodes, progress=bar.update)
        test = asdict(res.test) | {"ci": list(res.test.ci)}  # a list, as in verify.json
        details.append({"suite": suite.name, **test, "margin": suite.margin,
                        "alpha": suite.alpha, "seed": suite.seed, "metric": suite.metric,
                        "note": _note(suite)})
    # with no suite declared nothing was tested: null margin, p-value and verdict
    report["levels"]["L4"] = {
        "suites": len(details),
        "margin": max((d["margin"] for d in details), default=None),
        "p_value": max((d["p_value"] for d in details), default=None),
        "equivalent": all(d["equivalent"] for d in details) if details else None,
        "episodes": sum(d["n_reference"] for d in details),
    }
    report["details"]["L4"] = details
    return all(d["equivalent"] for d in details)
