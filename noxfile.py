"""The one entry point for humans and CI (run through ``./dev <session>``).

Sessions: ``tests`` (the default suite, live references on a sample, and the index test),
``tests-slow``, ``lint``; per env ``verify-<env>``, ``bench-<env>``, ``train-<env>``,
``generate-<env>``; per package ``build-<package>`` and ``publish-<package>``, and
``build-all``/``publish-all`` (envport first).

The sessions name no env: each env package says what its stages need through its ``EnvPort``
hooks (``envport prepare <env> --stage S``: system programs, ROMs, vectors, native tests, a
PGO build; ``envport session-commands <env> S``: the stage's command lines). A new env package
joins with one ``ENVS`` line (see README, "Adding an env").
Every session installs the workspace from ``uv.lock`` into its own venv.
"""

from __future__ import annotations

import glob
import json
import os
import tomllib

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "tests"]

PYTHON = None  # the interpreter that runs nox (python3 >= 3.11); uv cannot download one offline
# env name -> package folder (its pyproject names the distribution, its EnvPort the rest)
ENVS = {
    "pong": "packages/pong-port",
    "pokejax": "packages/pokejax",
    "emurust": "packages/emurust",
    "tcgjax": "packages/tcgjax",
    "mjx": "packages/mjx-port",
}
CORE = "core"
# every package's tests, registered for the env stages (ENVS) or not yet
TEST_PATHS = [f"{CORE}/tests", *sorted(glob.glob("packages/*/tests")), "tools/tests"]


def _distribution(folder: str) -> str:
    with open(os.path.join(folder, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]["name"]


# distribution name -> folder of every package in the workspace, in publishing order (envport
# first: every env depends on it); a package is publishable from the moment it joins, as the
# index test checks, before its ENVS line
PACKAGES = {_distribution(f): f for f in (CORE, *sorted(glob.glob("packages/*")))
            if os.path.isfile(os.path.join(f, "pyproject.toml"))}


def sync(session: nox.Session) -> None:
    """Install the locked workspace (core + every env package + dev tools) into the venv."""
    session.run_install(
        "uv", "sync", "--locked", "--all-packages", "--inexact",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
        external=True,
    )


def sync_release_tools(session: nox.Session) -> None:
    """Only the release tools (the ``publish`` dependency group: maturin, ziglang, twine,
    auditwheel, hatchling, pypiserver), not the workspace."""
    session.run_install(
        "uv", "sync", "--locked", "--only-group", "publish", "--inexact",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
        external=True,
    )


def _jax_cache() -> dict:
    cache = os.environ.get("JAX_COMPILATION_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "envport", "jax")
    return {"JAX_COMPILATION_CACHE_DIR": cache}


def prepare(session: nox.Session, name: str, stage: str) -> None:
    """The env's pinned reference, then what its stage needs (``EnvPort.prepare``); missing
    system programs are apt-installed when this runs as root (CI), else named."""
    session.run("envport", "install-reference", name)
    session.run("envport", "prepare", name, "--stage", stage, "--install-system")


def run_stage(session: nox.Session, name: str, stage: str, env: dict) -> None:
    """The command lines the env's stage runs (``envport session-commands``), one by one."""
    out = session.run("envport", "session-commands", name, stage, "--", *session.posargs,
                      silent=True, log=False)
    # the JSON is the last line (a library may warn on stderr before it)
    commands = json.loads(out.strip().splitlines()[-1])
    for command in commands:
        session.run(*command, env=env)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Fast suite: core + every env package (each live reference on a sample, each env's
    native tests run by its prepare hook) + the release tools' tests, among them the index
    test (every package published to a local index, installed from it and smoke-tested)."""
    sync(session)
    for name in ENVS:
        prepare(session, name, "tests")
    if session.posargs:  # a chosen subset: one pytest, as asked
        session.run("pytest", *TEST_PATHS, *session.posargs, env=_jax_cache())
        return
    # one pytest process per package: a single process over every suite held every package's
    # compiled XLA programs at once (9.9 GB peak) and aborted (SIGABRT) in tcgjax's training
    # smoke, which passes on its own; a process per package bounds memory and isolates a crash
    for path in TEST_PATHS:
        session.run("pytest", path, env=_jax_cache())


@nox.session(name="tests-slow", python=PYTHON)
def tests_slow(session: nox.Session) -> None:
    """Long verification and fuzz tests (marked ``slow``)."""
    sync(session)
    for name in ENVS:
        prepare(session, name, "tests")
    session.run("pytest", *TEST_PATHS, "-m", "slow", *session.posargs, env=_jax_cache())


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    sync(session)
    session.run("ruff", "check", "core", "packages", "tools", "noxfile.py")
    # the release workflow (zizmor: GitHub Actions' syntax and security rules, offline)
    session.run("zizmor", "--offline", "--min-severity", "medium", ".github/workflows")


def _env_sessions(name: str) -> None:
    @nox.session(name=f"verify-{name}", python=PYTHON)
    def verify(session: nox.Session) -> None:
        """Install the reference, run L1-L3, write reports/<env>/verify.{json,md}."""
        sync(session)
        prepare(session, name, "verify")
        run_stage(session, name, "verify", _jax_cache())

    @nox.session(name=f"bench-{name}", python=PYTHON)
    def bench(session: nox.Session) -> None:
        """Candidate vs reference steps/s, side by side (reports/<env>/bench.{json,md,png}),
        then the env's own extra benches."""
        sync(session)
        prepare(session, name, "bench")
        # one XLA:CPU device per core: a sharded candidate steps each shard on its own core
        # (the report's host line shows the device count)
        xla = os.environ.get("XLA_FLAGS") or f"--xla_force_host_platform_device_count={os.cpu_count()}"
        run_stage(session, name, "bench", {**_jax_cache(), "XLA_FLAGS": xla})

    @nox.session(name=f"train-{name}", python=PYTHON)
    def train(session: nox.Session) -> None:
        """PPO on the env (envport train; reports/<env>/train/<run-id>/ per seed) and what the
        env adds to it (``EnvPort.session_commands``), e.g. a comparison with another trainer."""
        sync(session)
        prepare(session, name, "train")
        run_stage(session, name, "train", _jax_cache())

    @nox.session(name=f"generate-{name}", python=PYTHON)
    def generate(session: nox.Session) -> None:
        """Translate the env with a model (Anthropic API), verify and repair in a loop;
        records in reports/<env>/generate/<run-id>/. Needs ANTHROPIC_API_KEY (except --replay)."""
        if not os.environ.get("ANTHROPIC_API_KEY", "").strip() and "--replay" not in session.posargs:
            # before installing anything: without a key there is nothing this session can do
            session.error(
                "ANTHROPIC_API_KEY is not set: generate-" + name + " calls the Anthropic API. "
                "Export ANTHROPIC_API_KEY=... and run again (or pass -- --replay <run-id>)")
        sync(session)
        prepare(session, name, "generate")
        run_stage(session, name, "generate", _jax_cache())


for _name in ENVS:
    _env_sessions(_name)


# -- release: build-<package>, publish-<package> (tools/release) -------------------------------

def _release(session: nox.Session, command: str, names: list[str]) -> None:
    sync_release_tools(session)
    folders = [PACKAGES[n] for n in names]
    session.run("python", "-m", "tools.release", command, *folders, *session.posargs)


def _package_sessions(dist: str) -> None:
    @nox.session(name=f"build-{dist}", python=PYTHON)
    def build(session: nox.Session) -> None:
        """sdist, then the wheel built offline from the unpacked sdist (manylinux for a Rust
        extension), checked (twine --strict, metadata, auditwheel) -> dist/."""
        _release(session, "build", [dist])

    @nox.session(name=f"publish-{dist}", python=PYTHON)
    def publish(session: nox.Session) -> None:
        """build-<package>, then upload with uv publish: -- --index-url URL (default PyPI);
        credentials from UV_PUBLISH_TOKEN (or _USERNAME/_PASSWORD) or --trusted-publishing."""
        _release(session, "publish", [dist])


for _dist in PACKAGES:
    _package_sessions(_dist)


@nox.session(name="build-all", python=PYTHON)
def build_all(session: nox.Session) -> None:
    """Every package's sdist and wheel -> dist/."""
    _release(session, "build", list(PACKAGES))


@nox.session(name="upload-dist", python=PYTHON)
def upload_dist(session: nox.Session) -> None:
    """Check and upload what dist/ holds, envport first (the release workflow's publish job,
    after build-all): -- [--index-url URL] [--trusted-publishing]."""
    _release(session, "upload", list(PACKAGES))


@nox.session(name="publish-all", python=PYTHON)
def publish_all(session: nox.Session) -> None:
    """Every package, envport first (the env packages depend on it); all are built and checked
    before the first upload, and a package already on the index stops the run before it."""
    _release(session, "publish", list(PACKAGES))
