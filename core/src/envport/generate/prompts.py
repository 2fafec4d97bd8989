"""Render the versioned prompt templates (``templates/<kind>.<version>.md``) for an env's plan.

Templates are plain files with ``$field`` placeholders (``string.Template``): a missing field is
an error, not an empty hole in a prompt. Every rendered prompt carries its template's name,
version and content hash, so a recorded run says exactly which text produced it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from string import Template

from envport.errors import EnvportError
from envport.generate.failures import Failure, phase_of
from envport.plan import ModulePlan, TranslationPlan
from envport.registry import EnvPort

TEMPLATE_VERSION = "v1"  # the version of a kind not listed in TEMPLATE_VERSIONS
# each kind's current template; older versions stay in templates/ for the runs that used them
TEMPLATE_VERSIONS = {"system": "v1", "translate": "v1", "repair": "v2", "optimise": "v1",
                     "repair_whole": "v1"}
KINDS = ("translate", "repair", "optimise")
# a plan that builds as a whole (``TranslationPlan.builds_as_whole``) repairs the L1 phase of the
# modules checked together with this one (its prompt's kind is still "repair")
WHOLE = "repair_whole"
LANGUAGES = ("jax", "rust")


@dataclass(frozen=True)
class Prompt:
    kind: str       # "system", "translate", "repair", "optimise"
    template: str   # file name, e.g. "translate.v1.md"
    sha256: str     # of the template file
    text: str

    def meta(self) -> dict:
        return {"kind": self.kind, "template": self.template, "template_sha256": self.sha256}


def template_text(name: str) -> str:
    path = resources.files("envport.generate").joinpath("templates", *name.split("/"))
    if not path.is_file():
        raise EnvportError(f"prompt template {name!r} not found in envport/generate/templates")
    return path.read_text()


def template_name(kind: str, version: str | None = None) -> str:
    return f"{kind}.{version or TEMPLATE_VERSIONS.get(kind, TEMPLATE_VERSION)}.md"


def render(kind: str, fields: dict[str, object], version: str | None = None) -> Prompt:
    name = template_name(kind, version)
    text = template_text(name)
    try:
        rendered = Template(text).substitute({k: str(v) for k, v in fields.items()})
    except KeyError as exc:
        raise EnvportError(f"template {name} needs field {exc.args[0]!r}") from None
    return Prompt(kind, name, hashlib.sha256(text.encode()).hexdigest()[:16], rendered)


def require_plan(port: EnvPort) -> TranslationPlan:
    if port.plan is None:
        raise EnvportError(f"env {port.name!r} declares no translation plan (EnvPort.plan), so "
                           f"it cannot be generated")
    if port.plan.language not in LANGUAGES:
        raise EnvportError(f"env {port.name!r}: unknown target language {port.plan.language!r}; "
                           f"templates exist for {', '.join(LANGUAGES)}")
    return port.plan


def _checklist(plan: TranslationPlan, which: str) -> str:
    text = template_text(f"languages/{plan.language}.{which}.md").rstrip()
    if which == "constraints" and plan.builds_as_whole:
        text += "\n" + BUILDS_AS_WHOLE
    if which == "constraints" and plan.constraints:
        text += "\n" + plan.constraints.rstrip()
    return text


BUILDS_AS_WHOLE = """\
- The package builds only as a whole, with every module's file present. While files of the plan
  are still missing, `run_tests` cannot build and a module's L1 checks wait: once the last
  missing file is written they run (build, native tests, every waiting module's tests) on all of
  the modules written so far together."""


def l1_test_file(module: ModulePlan) -> str:
    """Where the model writes its L1 tests for ``module`` (in the work dir's tests folder)."""
    return f"tests/test_l1_{module.name}.py"


def _tests(port: EnvPort, module: ModulePlan | None, everything: bool = False) -> str:
    """The module's tests (translate), every module's declared tests plus the module's own L1
    tests (repair: a fix must not break a neighbour), or every declared test (optimise)."""
    plan = require_plan(port)
    mods = list(plan.modules) if everything else [module]
    files = [t for m in mods for t in m.tests]
    if module is not None:
        files.append(l1_test_file(module) + " (yours)")
    return "\n".join(f"- {f}" for f in dict.fromkeys(files)) or "- (none declared)"


def system_prompt(port: EnvPort) -> Prompt:
    plan = require_plan(port)
    return render("system", {"env": port.name, "reference": port.reference,
                             "language": _language(plan),
                             "tolerance": port.tolerance})


def _language(plan: TranslationPlan) -> str:
    return {"jax": "JAX", "rust": "Rust"}[plan.language]


def translate_prompt(port: EnvPort, module: ModulePlan) -> Prompt:
    plan = require_plan(port)
    sources = dict(module.reference_sources())
    counts = {name: len(text.splitlines()) for name, text in sources.items()}
    deps = [plan.module(d) for d in module.depends_on]
    return render("translate", {
        "env": port.name, "module": module.name, "target": module.target,
        "language": _language(plan),
        "source_list": "\n".join(f"- `{n}`: {c} lines" for n, c in counts.items()) or "- (none)",
        "line_count": sum(counts.values()),
        "constraints": _checklist(plan, "constraints"),
        "contract": module.contract.strip(),
        "dependencies": "\n".join(f"- `{d.name}`: {d.target}" for d in deps) or "- (none)",
        "tests": _tests(port, module), "l1_test_file": l1_test_file(module),
        "sources": "\n\n".join(f"### {n}\n```\n{t.rstrip()}\n```" for n, t in sources.items()),
    })


def repair_prompt(port: EnvPort, module: ModulePlan, failure: Failure, iteration: int = 1,
                  budget_left: str = "unknown", phase: str | None = None) -> Prompt:
    """``phase``: the module's phase that failed (default: the one ``failure.level`` belongs to)."""
    require_plan(port)
    return render("repair", {
        "env": port.name, "module": module.name, "target": module.target,
        "level": failure.level, "phase": phase or phase_of(failure.level),
        "summary": failure.summary, "case": failure.case,
        "tests": _tests(port, module, everything=True), "l1_test_file": l1_test_file(module),
        "iteration": iteration, "budget_left": budget_left,
    })


def repair_whole_prompt(port: EnvPort, modules: list[ModulePlan], failure: Failure,
                        iteration: int = 1, budget_left: str = "unknown",
                        phase: str | None = None) -> Prompt:
    """The repair of an L1 phase run on ``modules`` together (a plan that builds as a whole): the
    last of them completed the package; the prompt names every one's file and tests."""
    require_plan(port)
    files = [t for m in modules for t in (*m.tests, l1_test_file(m))]
    return render(WHOLE, {
        "env": port.name, "module": modules[-1].name,
        "modules": "\n".join(f"- `{m.name}`: {m.target}" for m in modules),
        "level": failure.level, "phase": phase or phase_of(failure.level),
        "summary": failure.summary, "case": failure.case,
        "tests": "\n".join(f"- {f}" for f in dict.fromkeys(files)),
        "iteration": iteration, "budget_left": budget_left,
    })


def bench_table(bench: dict | None) -> str:
    """``bench.json`` as a markdown table (or a note saying there is none yet)."""
    if not bench:
        return "(no benchmark yet: run `envport bench <env>` and render this prompt again)"
    lines = ["| target | num_envs | reference steps/s | candidate steps/s | ratio |",
             "|---|---|---|---|---|"]
    for name, target in bench.get("targets", {}).items():
        for r in target.get("rows", []):
            ratio = "skipped" if r.get("ratio") is None else f"{r['ratio']:.2f}x"
            lines.append(f"| {name} | {r.get('num_envs')} | {_sps(r.get('reference_sps'))} | "
                         f"{_sps(r.get('candidate_sps'))} | {ratio} |")
    return "\n".join(lines)


def _sps(x) -> str:
    return "—" if x is None else f"{x:,.0f}"


def optimise_prompt(port: EnvPort, bench: dict | None) -> Prompt:
    plan = require_plan(port)
    return render("optimise", {
        "env": port.name, "language": _language(plan), "bench_table": bench_table(bench),
        "checklist": _checklist(plan, "optimise"), "tests": _tests(port, None, everything=True),
    })


def load_json(path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
