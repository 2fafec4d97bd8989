"""Write ``reports/<env>/verify.json`` (schema in DESIGN.md) and a human-readable ``verify.md``."""

from __future__ import annotations

import json
from pathlib import Path


def write_reports(report: dict, out_dir: Path) -> tuple[Path, Path]:
    env_dir = Path(out_dir) / report["env"]
    env_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = env_dir / "verify.json", env_dir / "verify.md"
    json_path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    md_path.write_text(render_markdown(report))
    return json_path, md_path


def _yes(flag: bool) -> str:
    return "**yes**" if flag else "**NO**"


def render_markdown(r: dict) -> str:
    lv = r["levels"]
    lines = [
        f"# Verification: {r['env']}",
        "",
        f"- reference: {r['reference']}",
        f"- candidate: {r['candidate']}",
        f"- tolerance: {r.get('tolerance', 0)} ({'bit-exact' if not r.get('tolerance') else 'L∞'})",
        f"- equivalent: {_yes(r['equivalent'])}",
        f"- wall time: {r.get('wall_s', 0):.1f} s",
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
    if "L4" in lv:
        lines.append(f"| L4 transfer | {lv['L4']} |")
    lines.append("")
    for level in ("L1", "L2", "L3"):
        details = r.get("details", {}).get(level)
        if not details:
            continue
        lines += [f"## {level}", ""]
        if level == "L1":
            for target in details:
                lines.append(f"### {target['target']}")
                lines += [f"- [{'x' if c['passed'] else ' '}] {c['name']}"
                          + (f" — {c['detail']}" if c["detail"] else "") for c in target["checks"]]
                lines.append("")
        else:
            lines.append("| suite | " + " | ".join(k for k in details[0] if k not in ("suite", "examples", "divergences", "note")) + " |")
            lines.append("|---" * (len([k for k in details[0] if k not in ("suite", "examples", "divergences", "note")]) + 1) + "|")
            for s in details:
                keys = [k for k in s if k not in ("suite", "examples", "divergences", "note")]
                lines.append(f"| {s['suite']} | " + " | ".join(str(s[k]) for k in keys) + " |")
            lines.append("")
            notes: dict[str, list[str]] = {}
            for s in details:
                if s.get("note"):
                    notes.setdefault(s["note"], []).append(s["suite"])
            for note, suites in notes.items():
                lines += [f"*{', '.join(suites)}*: {note}", ""]
    fd = r.get("first_divergence")
    if fd:
        lines += ["## First divergence", "", "```", json.dumps(fd, indent=1, default=str)[:4000], "```", ""]
    return "\n".join(lines)
