"""Write ``reports/<env>/verify.json`` (schema in DESIGN.md) and a human-readable ``verify.md``."""

from __future__ import annotations

import json
import math
from pathlib import Path


def strict_json(x):
    """``x`` with every non-finite float as the string "nan", "inf" or "-inf": verify.json is
    strict JSON (a NaN max_abs_err must survive any parser, not only Python's)."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: strict_json(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [strict_json(v) for v in x]
    return x


def write_reports(report: dict, out_dir: Path) -> tuple[Path, Path]:
    env_dir = Path(out_dir) / report["env"]
    env_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = env_dir / "verify.json", env_dir / "verify.md"
    text = json.dumps(strict_json(json.loads(json.dumps(report, default=str))), indent=2,
                      allow_nan=False)
    json_path.write_text(text + "\n")
    _chaos_plots(report, env_dir)
    md_path.write_text(render_markdown(report))
    return json_path, md_path


def _tolerance_text(tol) -> str:
    if not tol:
        return "0 (bit-exact: floats compared by their bits)"
    if isinstance(tol, dict) and set(tol) <= {"atol", "rtol"}:
        return f"atol {tol.get('atol', 0)}, rtol {tol.get('rtol', 0)} (floats; other fields exact)"
    if isinstance(tol, dict):
        per = "; ".join(f"{k}: {_tolerance_text(v)}" for k, v in tol.items())
        return f"per field ({per}); other fields bit-exact"
    return f"atol {tol} (floats; other fields exact)"


def _execution_text(ex) -> str:
    return f" (L2/L3 on {ex['workers']} worker(s), {ex['executor']})" if ex else ""


def _yes(flag: bool) -> str:
    return "**yes**" if flag else "**NO**"


def render_markdown(r: dict) -> str:
    lv = r["levels"]
    lines = [
        f"# Verification: {r['env']}",
        "",
        f"- reference: {r['reference']}",
        f"- candidate: {r['candidate']}",
        f"- tolerance: {_tolerance_text(r.get('tolerance', 0))}",
        f"- equivalent: {_yes(r['equivalent'])}"
        + (f" (requires {', '.join(r['required_levels'])})" if r.get("required_levels") else ""),
        f"- wall time: {r.get('wall_s', 0):.1f} s" + _execution_text(r.get("execution")),
        *([f"- suites: only those whose name contains {', '.join(r['suites_filter'])}: "
           f"{'all passed' if r['selected_passed'] else 'NOT all passed'} (a filtered run "
           "claims no equivalence)"] if r.get("suites_filter") else []),
        "",
        "| level | result |",
        "|---|---|",
    ]
    if "L1" in lv:
        lines.append(f"| L1 property | {lv['L1']['passed']} passed, {lv['L1']['failed']} failed |")
    if "L2" in lv:
        lines.append(f"| L2 interaction | {lv['L2']['cases']} cases, {lv['L2']['mismatches']} mismatches |")
    if "L3" in lv:
        l3 = lv["L3"]
        lines.append(f"| L3 rollout | {l3['episodes']} episodes, {l3['steps']} env-steps, "
                     f"{l3['mismatches']} mismatches, max abs err {l3['max_abs_err']} |")
        if "chaos" in l3:
            c = l3["chaos"]
            lines.append(f"| L3 chaos horizon | {c['passed']}/{c['suites']} suites passed, "
                         f"{c['episodes']} episodes |")
    if "L4" in lv:
        lines.append(f"| L4 transfer | {_l4_summary(lv['L4'], r.get('details', {}).get('L4') or [])} |")
    lines.append("")
    for level in ("L1", "L2", "L3"):
        details = r.get("details", {}).get(level)
        if not details:
            continue
        lines += [f"## {level}", ""]
        if level == "L1":
            for target in details:
                kind = f" ({target['kind']} checks)" if target.get("kind") else ""
                lines.append(f"### {target['target']}{kind}")
                lines += [f"- [{'x' if c['passed'] else ' '}] {c['name']}"
                          + (f" — {c['detail']}" if c["detail"] else "") for c in target["checks"]]
                lines.append("")
        else:
            lines.append("| suite | " + " | ".join(k for k in details[0] if k not in ("suite", "examples", "divergences", "note")) + " |")
            lines.append("|---" * (len([k for k in details[0] if k not in ("suite", "examples", "divergences", "note")]) + 1) + "|")
            for s in details:
                keys = [k for k in s if k not in ("suite", "examples", "divergences", "note")]
                lines.append(f"| {s['suite']} | " + " | ".join(_cell(s[k]) for k in keys) + " |")
            lines.append("")
            notes: dict[str, list[str]] = {}
            for s in details:
                if s.get("note"):
                    notes.setdefault(s["note"], []).append(s["suite"])
            for note, suites in notes.items():
                lines += [f"*{', '.join(suites)}*: {note}", ""]
    if r.get("details", {}).get("L3 chaos"):
        lines += _chaos_section(r["details"]["L3 chaos"])
    if r.get("details", {}).get("L4"):
        lines += _l4_section(r["details"]["L4"])
    fd = r.get("first_divergence")
    if fd:
        lines += ["## First divergence", "", "```", json.dumps(fd, indent=1, default=str)[:4000], "```", ""]
    return "\n".join(lines)


def _g(x: float) -> str:
    return f"{x:.3g}"


def _cell(value) -> str:
    """A table cell: a per-field dict (tolerances, largest errors) as ``field value`` pairs."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_g(v) if isinstance(v, float) else _cell(v)}"
                         for k, v in value.items()) or "-"
    return str(value)


def _ci_text(d: dict) -> str:
    return f"{100 * (1 - 2 * d['alpha']):g}% CI [{_g(d['ci'][0])}, {_g(d['ci'][1])}]"


def _l4_summary(level: dict, details: list[dict]) -> str:
    """One table cell: the verdict, with the numbers of the least equivalent suite."""
    if not level.get("suites") or not details:
        return "no suite declared (not required for equivalence)"
    worst = max(details, key=lambda d: d["p_value"])
    n = len(details)
    head = f"{n} suite{'s' if n != 1 else ''}, {level['episodes']} episodes per backend"
    if n > 1:
        head += f"; highest p: {worst['suite']}"
    verdict = "equivalent" if level["equivalent"] else "NOT equivalent"
    cmp = "<" if worst["equivalent"] else "≥"
    return (f"{head}, difference {worst['difference']:+.3g} ({_ci_text(worst)}), "
            f"p = {worst['p_value']:.2g} {cmp} {worst['alpha']} at margin {worst['margin']}: "
            f"{verdict}")


L4_COLUMNS = ("n_reference", "n_candidate", "reference_mean", "candidate_mean", "difference",
              "se", "ci", "p_lower", "p_upper", "p_value", "margin", "alpha", "equivalent")


def _l4_cell(key: str, d: dict) -> str:
    v = d[key]
    if key == "ci":
        return f"[{_g(v[0])}, {_g(v[1])}]"
    if key == "equivalent":
        return _yes(v)
    if key.startswith("p_"):
        return f"{v:.2g}"
    if isinstance(v, float):
        return _g(v)
    return str(v)


def _l4_section(details: list[dict]) -> list[str]:
    lines = ["## L4", "",
             "A fixed policy evaluated on both backends; two one-sided tests (TOST, normal "
             "approximation of Welch's test) of |candidate mean - reference mean| < margin. "
             "Equivalent when p = max(p_lower, p_upper) < alpha; the CI is the 1 - 2·alpha "
             "interval of the difference (candidate - reference).", "",
             "| suite | " + " | ".join(L4_COLUMNS) + " |",
             "|---" * (len(L4_COLUMNS) + 1) + "|"]
    for d in details:
        lines.append(f"| {d['suite']} | " + " | ".join(_l4_cell(k, d) for k in L4_COLUMNS) + " |")
    lines.append("")
    for d in details:
        lines += [f"*{d['suite']}* (seeds {d['seed']} reference, {d['seed'] + 1} candidate): "
                  f"score per episode = {d['metric']}", ""]
        if d.get("note"):
            lines += [f"*{d['suite']}*: {d['note']}", ""]
        if d.get("policy"):
            lines += [f"*{d['suite']}* policy: "
                      + ", ".join(f"{k} {v}" for k, v in d["policy"].items()), ""]
    return lines


def _chaos_plot_name(suite: str) -> str:
    return "chaos/" + "".join(c if c.isalnum() or c in "-." else "_" for c in suite) + ".png"


def _chaos_plots(report: dict, env_dir: Path) -> None:
    details = report.get("details", {}).get("L3 chaos") or []
    if not details:
        return
    from envport.verify.chaos import plot

    (env_dir / "chaos").mkdir(exist_ok=True)
    for d in details:
        plot(d, env_dir / _chaos_plot_name(d["suite"]))


def _chaos_section(details: list[dict]) -> list[str]:
    lines = ["## L3 chaos horizon", "",
             "Per episode: the first step where the candidate leaves the reference by more than "
             "the threshold, against the first step where the reference leaves itself started "
             "`eps` away (its own chaos horizon). Passes when the candidate is never earlier "
             "on the required share of episodes.", "",
             "| suite | episodes | not before the reference's horizon | required | threshold "
             "| eps | median step: candidate / reference | passed | plot |",
             "|---|---|---|---|---|---|---|---|---|"]
    for d in details:
        medians = f"{d['candidate_median_step']} / {d['reference_median_step']}"
        lines.append(f"| {d['suite']} | {d['episodes']} | {d['share_not_before_reference']:.1%} "
                     f"| {d['share_required']:.0%} | {d['threshold']:g} | {d['eps']:g} "
                     f"| {medians} | {_yes(d['passed'])} | {_chaos_plot_name(d['suite'])} |")
    lines.append("")
    for d in details:
        if d.get("note"):
            lines += [f"*{d['suite']}*: {d['note']}", ""]
    return lines
