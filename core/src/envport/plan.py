"""A translation plan: which modules of an env package are written from which reference sources,
in what order, under what contract, checked by which tests.

It is part of an env package's translation spec (``EnvPort.plan``); the prompt templates and the
generation loop read it, so the core itself stays free of any one env's knowledge.

A package that is not pure Python declares how its work dir is built and checked
(``python_roots``, ``build``, ``native_tests``, ``copy_ignore``, ``builds_as_whole``). Their command lines may name
these placeholders, replaced when a run starts (:func:`expand`):

- ``{python}``: the interpreter running ``envport generate``;
- ``{work}``: the run's work dir (also the commands' working directory);
- ``{package}``: the package the work dir was copied from (``package_dir``);
- ``{repo}``: the repository that holds ``package_dir`` (the nearest parent with ``.git``; the
  package's parent when there is none);
- ``{cache}``: a build cache of the env shared by all its runs (``$ENVPORT_CACHE/generate/<env>``,
  writable for the sandboxed commands), e.g. a ``cargo --target-dir``, so a run neither copies
  nor rebuilds the whole dependency tree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from envport.errors import EnvportError

# one command line (argv, no shell), e.g. ("cargo", "test", "--locked")
Command = Sequence[str]
PLACEHOLDERS = ("python", "work", "package", "repo", "cache")

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
    # folders of the package (relative) that hold its Python packages: first on the sandbox's
    # PYTHONPATH, so the work dir's code shadows the installed one; the compose check imports
    # every ``.py`` target under one of them
    python_roots: Sequence[str] = ("src",)
    # run in the work dir, in order, before its tests, the compose check, the verification and
    # the bench (compile an extension and put it where ``python_roots`` finds it); a failure is
    # an L1 failure whose case is the command's output
    build: Sequence[Command] = ()
    # run after ``build`` and before pytest in the L1 phase (and by the ``run_tests`` tool): the
    # tests of the modules in another language, e.g. ``cargo test --locked``
    native_tests: Sequence[Command] = ()
    # more names (glob patterns) the work dir's copy of the package leaves out, e.g. "target"
    copy_ignore: Sequence[str] = ()
    # the package builds only with every module's file present (a Rust crate, whose modules may
    # even depend on each other in cycles): while a run still lacks some, a module's L1 phase is
    # deferred; the module that completes the package runs the L1 checks of all the deferred
    # ones together (build, native tests, their tests) and repairs them as a whole
    builds_as_whole: bool = False

    def __post_init__(self) -> None:
        for root in self.python_roots:
            if Path(root).is_absolute() or ".." in Path(root).parts:
                raise EnvportError(f"translation plan: python root {root!r} must be a folder "
                                   f"inside the package")
        for kind, commands in (("build", self.build), ("native_tests", self.native_tests)):
            for cmd in commands:
                if isinstance(cmd, str) or not cmd or not all(isinstance(a, str) for a in cmd):
                    raise EnvportError(f"translation plan: each {kind} command is a non-empty "
                                       f"list of strings (argv, no shell), not {cmd!r}")
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


def repo_root(package_dir: Path) -> Path:
    """The repository that holds ``package_dir``: its nearest parent (itself included) with a
    ``.git``; the package's parent when there is none (an unpacked sdist)."""
    package_dir = Path(package_dir).resolve()
    for d in (package_dir, *package_dir.parents):
        if (d / ".git").exists():
            return d
    return package_dir.parent


def expand(command: Command, values: Mapping[str, str]) -> list[str]:
    """``command`` with each ``{name}`` of :data:`PLACEHOLDERS` replaced by ``values[name]``
    (other braces are left alone: a ``python -c`` script may use them)."""
    out = []
    for arg in command:
        for name in PLACEHOLDERS:
            if name in values:
                arg = arg.replace("{" + name + "}", str(values[name]))
        out.append(arg)
    return out


def read_sources(paths: Mapping[str, Path]) -> dict[str, str]:
    """``{display path: file}`` -> ``{display path: text}``, naming the first missing file."""
    out = {}
    for shown, path in paths.items():
        if not Path(path).is_file():
            raise EnvportError(f"reference source {shown} not found at {path}; install the "
                               f"reference first (envport install-reference <env>)")
        out[shown] = Path(path).read_text()
    return out
