"""What failed, in the form a repair prompt shows it: the level, a one-line summary and the
smallest failing case the verifier produced (state, action prefix, field diff); and the phase
of a module's loop (:data:`PHASES`) that a failure belongs to."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

# a repair prompt is read by a model with a finite context: cap each part of a case
MAX_CASE_CHARS = 6000
MAX_TEST_OUTPUT_CHARS = 6000

# the checked phases of a module, in order (the paper's Algorithm 1 after "generate"); L4 only
# when a run asks for it
PHASES = ("L1", "compose", "L2", "L3", "L4")


def phases_for(levels) -> tuple[str, ...]:
    """The phases a run with verification ``levels`` checks: L1 (the module's tests, plus the
    generic L1 checks when requested) and compose always, then each requested level."""
    return ("L1", "compose", *(p for p in ("L2", "L3", "L4") if p in levels))


def phase_of(level: str, levels=("L1", "L2", "L3")) -> str:
    """The phase a failure at ``level`` belongs to. The module's tests and the generic L1 checks
    are L1 (the generic checks need the composed env, so they run after the compose check, but
    they are still L1); a verifier that stopped without a report failed in the first level it
    ran."""
    if level in ("L1 tests", "L1", "L1 build", "L1 native tests"):
        return "L1"
    if level in PHASES:
        return level
    return next((lv for lv in ("L1", "L2", "L3", "L4") if lv in levels), "compose")


@dataclass(frozen=True)
class Failure:
    level: str    # "L1 build", "L1 native tests", "L1 tests", "L1", "compose", "L2", "L3",
                  # "L4", "verification"
    summary: str
    case: str     # the shortest failing case, formatted for the prompt

    def to_json(self) -> dict:
        return asdict(self)


def _compact(obj) -> str:
    return json.dumps(obj, separators=(", ", ": "), default=str)


def _fields_table(fields: list[dict]) -> list[str]:
    lines = ["| field | env | index | reference | candidate | abs err |", "|---|---|---|---|---|---|"]
    for f in fields:
        lines.append(f"| {f['field']} | {f['env']} | {list(f['index'])} | {f['reference']} | "
                     f"{f['candidate']} | {f['abs_err']} |")
    return lines


def _l3_case(d: dict) -> str:
    lines = [f"- suite: {d.get('suite')}", f"- seed: {d.get('seed')} (reset both backends with it)",
             f"- shortest action prefix ({d.get('shortest_prefix_len')} steps; the last step is "
             f"the first that differs): {_compact(d.get('shortest_prefix'))}"]
    if d.get("state_before"):
        lines.append(f"- reference state before the diverging step: {_compact(d['state_before'])}")
    lines += ["- field diff after the diverging step:", "", *_fields_table(d.get("fields") or [])]
    return "\n".join(lines)


def _l2_case(d: dict) -> str:
    lines = [f"- suite: {d.get('suite')}",
             f"- state loaded into both backends: {_compact(d.get('state'))}",
             f"- action: {_compact(d.get('action'))}", "- field diff after one step:", "",
             *_fields_table(d.get("fields") or [])]
    return "\n".join(lines)


def from_verify_report(report: dict) -> Failure | None:
    """The first failing level of a ``verify.json``-shaped report, or None if all passed."""
    levels = report.get("levels", {})
    if "L1" in levels and levels["L1"]["failed"]:
        bad = [f"{t['target']}: {c['name']} — {c['detail']}"
               for t in report["details"]["L1"] for c in t["checks"] if not c["passed"]]
        return Failure("L1", f"{len(bad)} generic L1 check(s) failed", "\n".join(f"- {b}" for b in bad))
    fd = report.get("first_divergence")
    if fd and fd.get("level") in ("L2", "L3"):
        case = _l3_case(fd) if fd["level"] == "L3" else _l2_case(fd)
        summary = fd.get("summary") or _l2_summary(fd)
        l3 = _first_l3(report)
        if fd["level"] == "L2" and l3 is not None:
            # the same bug seen along a whole episode: where it first shows from a reset
            case = case[: MAX_CASE_CHARS // 2] + "\n\nIn a rollout (L3):\n" + _l3_case(l3)
        return Failure(fd["level"], summary, case[:MAX_CASE_CHARS])
    for level in ("L2", "L3"):
        if level in levels and levels[level].get("mismatches"):
            return Failure(level, f"{levels[level]['mismatches']} mismatches", "(no case recorded)")
    l4 = levels.get("L4")
    if l4 and l4.get("equivalent") is False:
        return Failure("L4", "the policy's score differs between backends beyond the margin",
                       _compact(report["details"]["L4"]))
    return None


def _first_l3(report: dict) -> dict | None:
    for suite in report.get("details", {}).get("L3") or []:
        if suite.get("divergences"):
            return suite["divergences"][0]
    return None


def _l2_summary(fd: dict) -> str:
    first = (fd.get("fields") or [{}])[0]
    return (f"[{fd.get('suite')}] one step from a loaded state: {first.get('field')} reference "
            f"{first.get('reference')} != candidate {first.get('candidate')}")


def from_test_output(tests: list[str], returncode: int, output: str) -> Failure:
    """A failing pytest run: keep the tail, where pytest prints the failures and its summary."""
    tail = output[-MAX_TEST_OUTPUT_CHARS:]
    return Failure("L1 tests", f"pytest {' '.join(tests)} exited {returncode}",
                   f"```\n{tail}\n```")


# lines of a build or test tool's output that say nothing about what failed (cargo's progress,
# the tests that passed)
_NOISE = re.compile(
    r"^\s*(Compiling|Checking|Fresh|Finished|Running|Doc-tests|Blocking|Downloaded|Downloading|"
    r"Updating|Locking|Adding|Packaging|Building|Dirty)\b"
    r"|^test \S.* \.\.\. (ok|ignored)$"
    r"|^running \d+ tests?$")


def trim_command_output(output: str, limit: int = MAX_TEST_OUTPUT_CHARS) -> str:
    """A failed build's or native test run's output, cut to what a repair needs: progress lines
    and passing tests dropped; when there are errors, the warnings too (a crate's warnings can
    push its errors out of any budget); then, if still too long, the head (where a compiler puts
    the first error, the others often follow from it) and the tail (the summary, the failing
    tests' names), with a marker between them."""
    lines = [ln for ln in output.splitlines() if not _NOISE.match(ln)]
    blocks, block = [], []
    for ln in lines:  # a compiler message is a block of lines ended by a blank one
        if ln.strip():
            block.append(ln)
        elif block:
            blocks.append(block)
            block = []
    if block:
        blocks.append(block)
    if any(b[0].lstrip().startswith("error") for b in blocks):
        blocks = [b for b in blocks if not b[0].lstrip().startswith("warning")]
    text = "\n\n".join("\n".join(b) for b in blocks)
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[-(limit // 3):]
    return f"{head}\n\n[... {len(text) - len(head) - len(tail)} characters left out ...]\n\n{tail}"


def from_command_output(kind: str, command: str, returncode: int, output: str,
                        timed_out: bool = False) -> Failure:
    """A failed build (``kind`` "build") or native test run ("native tests"): an L1 failure
    whose case is the command's output, trimmed by :func:`trim_command_output`."""
    why = "timed out" if timed_out else f"exited {returncode}"
    return Failure(f"L1 {kind}", f"`{command}` {why}",
                   f"```\n{trim_command_output(output)}\n```")
