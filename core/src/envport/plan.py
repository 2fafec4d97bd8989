"""A translation plan: which modules of an env package are written from which reference sources,
in what order, under what contract, checked by which tests.

It is part of an env package's translation spec (``EnvPort.plan``); the prompt templates and the
generation loop read it, so the core itself stays free of any one env's knowledge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from envport.errors import EnvportError

# () -> {display path: verbatim source}; a callable because references are installed at run
# time (an sdist in the cache, an npm tree) and may be missing, which it reports itself
SourceReader = Callable[[], Mapping[str, str]]


@dataclass(frozen=True)
class ModulePlan:
    """One module of the port, translated in one phase of ``envport generate``."""

    name: str                      # short id used on the command line, e.g. "engine"
    target: str                    # file the module lives in, relative to the package root
    reference_sources: SourceReader
    contract: str                  # the interface the rest of the package relies on
    tests: Sequence[str] = ()      # test files (package-relative) that must pass for this module
    depends_on: Sequence[str] = ()  # modules that come before it


@dataclass(frozen=True)
class TranslationPlan:
    package_dir: Path              # the package root that a run copies into its work dir
    language: str                  # target, names the checklists: "jax" or "rust"
    modules: Sequence[ModulePlan]
    constraints: str = ""          # env-specific additions to the language's constraints

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for m in self.modules:
            if m.name in seen:
                raise EnvportError(f"translation plan: module {m.name!r} is declared twice")
            missing = [d for d in m.depends_on if d not in seen]
            if missing:
                raise EnvportError(
                    f"translation plan: module {m.name!r} depends on {missing}, which must come "
                    f"before it (modules are listed in dependency order)")
            seen.add(m.name)

    def module(self, name: str) -> ModulePlan:
        for m in self.modules:
            if m.name == name:
                return m
        known = ", ".join(m.name for m in self.modules)
        raise EnvportError(f"unknown module {name!r}; the plan has: {known}")

    def select(self, names: Sequence[str] | None) -> list[ModulePlan]:
        """The named modules (all when ``names`` is None), always in dependency order."""
        if names is None:
            return list(self.modules)
        wanted = {self.module(n).name for n in names}
        return [m for m in self.modules if m.name in wanted]


def read_sources(paths: Mapping[str, Path]) -> dict[str, str]:
    """``{display path: file}`` -> ``{display path: text}``, naming the first missing file."""
    out = {}
    for shown, path in paths.items():
        if not Path(path).is_file():
            raise EnvportError(f"reference source {shown} not found at {path}; install the "
                               f"reference first (envport install-reference <env>)")
        out[shown] = Path(path).read_text()
    return out
