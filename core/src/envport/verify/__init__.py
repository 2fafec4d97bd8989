"""The verification hierarchy: L1 property, L2 interaction, L3 rollout, L4 transfer.

:func:`run` executes every level an :class:`~envport.registry.EnvPort` declares and writes
``reports/<env>/verify.json`` and ``verify.md``. L4 asks whether there is a sim-to-sim gap for
learning: a fixed policy (trained on one backend, or built in) is evaluated on both backends and
a TOST equivalence test with the suite's declared margin compares the mean episode scores.
"""

from __future__ import annotations

from pathlib import Path

from envport.errors import EnvportError
from envport.registry import EnvPort
from envport.verify.checks import CheckResult, run_checks
from envport.verify.engine import LEVELS, Comparison, run_suites
from envport.verify.l2 import L2Result, run_l2
from envport.verify.l3 import L3Result, run_l3
from envport.verify.l4 import L4Result, TostResult, run_l4, tost
from envport.verify.report import write_reports

__all__ = ["run", "run_suites", "run_checks", "run_l2", "run_l3", "run_l4", "tost", "CheckResult",
           "Comparison", "L2Result", "L3Result", "L4Result", "TostResult", "LEVELS"]


def select(items, patterns):
    """The suites (or L1 targets) whose name contains one of ``patterns`` (case-insensitive);
    all of them when ``patterns`` is None."""
    if patterns is None:
        return list(items)
    wanted = [p.lower() for p in patterns]
    return [s for s in items if any(p in s.name.lower() for p in wanted)]


def run(port: EnvPort, out_dir: Path = Path("reports"), scale: float = 1.0,
        levels: tuple[str, ...] | list[str] | None = None, progress: bool = True,
        workers: int | None = 1, ray: str | bool | None = None,
        suites: tuple[str, ...] | list[str] | None = None) -> dict:
    """Verify ``port`` (its declared suites, :func:`~envport.verify.engine.run_suites`) and
    write ``<out_dir>/<env>/verify.json`` and ``verify.md``; return the report.

    ``scale`` multiplies the L2 case, L3 episode and L4 episode budgets; ``workers`` worker
    processes (None: one per core; or Ray actors with ``ray``: True for a local Ray, or a
    cluster address) share
    the L2 batches and L3 seeds, each with its own reference process; the report does not
    depend on how many. Equivalence is only claimed when L1, L2 and L3 ran and passed, and, if
    the port declares any L4 suite, L4 ran and every suite was equivalent. ``suites`` runs only
    the suites of each level whose name contains one of its strings (case-insensitive), e.g.
    one env's, and then claims no equivalence (the report lists the filter). The port's
    ``transfer`` declarations add one L4 suite per trained policy (stored under
    ``<out_dir>/<env>/train/``, trained there first when missing).
    """
    l4 = list(port.l4)
    if port.transfer and (levels is None or "L4" in levels):
        # trained policies: needs envport[train] (its import says so when missing)
        from envport.train.transfer import transfer_suites

        l4 += transfer_suites(port, Path(out_dir), progress=progress)
    declared = {"l1": port.l1, "l2": port.l2, "l3": port.l3, "l4": l4, "chaos": port.chaos}
    chosen = {level: select(items, suites) for level, items in declared.items()}
    if suites is not None:  # only the levels with a chosen suite run
        levels = [lv for lv in (LEVELS if levels is None else levels)
                  if chosen[lv.lower()] or (lv == "L3" and chosen["chaos"])]
        if not levels:
            names = sorted({s.name for items in declared.values() for s in items})
            raise EnvportError(f"{port.name}: no suite of the levels asked for has a name "
                               f"containing any of {list(suites)}; the suites are: "
                               f"{'; '.join(names)}")
    result = run_suites(
        port.name, port.reference, port.candidate, **chosen, tolerance=port.tolerance,
        levels=levels, scale=scale, workers=workers, ray=ray, progress=progress,
        regressions_dir=Path(out_dir) / port.name / "regressions")
    report = result.report
    if suites is not None:  # some suites ran: whether they passed, but no claim for the port
        report["suites_filter"] = list(suites)
        report["selected_passed"] = report["levels_passed"]
        report["equivalent"] = False
    report["report_paths"] = [str(p) for p in write_reports(report, Path(out_dir))]
    return report
