"""The one entry point for humans and CI (run through ``./dev <session>``).

Sessions: ``tests`` (the default suite, live references on a sample), ``tests-slow``,
``lint``, and per env ``verify-<env>``, ``bench-<env>``, ``train-<env>``, ``generate-<env>``,
``build-<env>``.
Every session installs the workspace from ``uv.lock`` into its own venv.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import time

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "tests"]

PYTHON = None  # the interpreter that runs nox (python3 >= 3.11); uv cannot download one offline
# env name -> (package folder, import name)
ENVS = {
    "pong": ("packages/pong-port", "pong_port"),
    "pokejax": ("packages/pokejax", "pokejax"),
    "emurust": ("packages/emurust", "emurust"),
}
TEST_PATHS = ["core/tests", *(f"{folder}/tests" for folder, _ in ENVS.values())]


def sync(session: nox.Session) -> None:
    """Install the locked workspace (core + every env package + dev tools) into the venv."""
    session.run_install(
        "uv", "sync", "--locked", "--all-packages", "--inexact",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
        external=True,
    )


Z80_AS = "z80-unknown-coff-as"
BINUTILS_Z80 = ["apt-get", "install", "-y", "binutils-z80"]


def build_emurust_roms(session: nox.Session) -> None:
    """emurust's tests and verification run the repository's own Game Boy ROMs, assembled from
    packages/emurust/roms/*.s with binutils-z80 (cached by content: a no-op when up to date)."""
    if shutil.which(Z80_AS) is None:
        if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
            session.run("apt-get", "update", external=True)
            session.run(*BINUTILS_Z80, external=True)
        else:
            session.error(f"{Z80_AS} not found: emurust's test ROMs need binutils-z80. "
                          f"Install it with: sudo {' '.join(BINUTILS_Z80)}")
    session.run("python", "tools/build_emurust_roms.py")


EMURUST = "packages/emurust"
EMURUST_VECTORS = f"{EMURUST}/target/vectors"  # git-ignored; the Rust tests read it
# generator, its arguments, what it writes under EMURUST_VECTORS
EMURUST_VECTOR_TOOLS = [
    ("tools/emurust_vectors.py", [],
     ["timer.json", "serial.json", "interaction.json", "rtc.json", "cartridge.json"]),
    ("tools/emurust_lcd_vectors.py", [],
     [f"lcd_{s}_{n}.json" for s in ("frames", "midframe", "random") for n in (1, 2)]),
    # --system: PyBoy save states of every ROM in roms/build/ (built by build_emurust_roms)
    ("tools/emurust_cpu_vectors.py", ["--system"], ["cpu.json", "system"]),
]


def emurust_cargo_tests(session: nox.Session) -> None:
    """emurust's Rust unit tests (`cargo test --locked`, debug profile) including the
    differential ones, which replay vectors that PyBoy 2.8.1 (installed in this venv by
    `envport install-reference emurust`) computes. Each generator reruns only when its stamp
    (the script, its arguments, the PyBoy and Python versions and, for --system, the built ROMs)
    changed or an output is missing. Call after install_references and build_emurust_roms."""
    if shutil.which("cargo") is None:
        session.error("cargo not found: emurust's Rust tests need a Rust toolchain "
                      "(https://rustup.rs)")
    versions = session.run(
        "python", "-c",
        "import importlib.metadata as m, sys\n"
        "try: v = m.version('pyboy')\n"
        "except m.PackageNotFoundError: v = 'missing'\n"
        "print(v, sys.version_info[:2])",
        silent=True, log=False)
    roms = sorted(glob.glob(f"{EMURUST}/roms/build/*.gb"))
    os.makedirs(EMURUST_VECTORS, exist_ok=True)
    for script, args, outputs in EMURUST_VECTOR_TOOLS:
        key = hashlib.sha256()
        for part in (script, *args, str(versions)):
            key.update(part.encode() + b"\0")
        with open(script, "rb") as f:
            key.update(f.read())
        if "--system" in args:
            for rom in roms:
                with open(rom, "rb") as f:
                    key.update(os.path.basename(rom).encode() + b"\0" + f.read())
        stamp = os.path.join(EMURUST_VECTORS, f".stamp-{os.path.basename(script)}")
        fresh = all(os.path.exists(os.path.join(EMURUST_VECTORS, o)) for o in outputs)
        if fresh and os.path.exists(stamp):
            with open(stamp) as f:
                fresh = f.read() == key.hexdigest()
        else:
            fresh = False
        if fresh:
            session.log(f"{script}: vectors up to date")
            continue
        if os.path.exists(stamp):
            os.remove(stamp)
        session.run("python", script, *args)
        with open(stamp, "w") as f:
            f.write(key.hexdigest())
    # the tests read target/vectors unless these point elsewhere: use the vectors made here
    session.run("cargo", "test", "--locked", "--manifest-path", f"{EMURUST}/Cargo.toml",
                external=True, env={"EMURUST_VECTORS": None, "EMURUST_VECTORS_DIR": None})


def emurust_pgo(session: nox.Session) -> None:
    """Replace the session's emurust extension by a profile-guided build (trained on the test
    ROMs; tools/build_emurust_pgo.py, a no-op when the installed build is current). Without
    rustup's llvm-tools the plain build stays, and the reports say which one ran
    (``emurust.build_info()``). EMURUST_PGO=0 keeps the plain build."""
    if os.environ.get("EMURUST_PGO", "1") == "0":
        session.log("EMURUST_PGO=0: keeping the plain emurust build")
        return
    session.run("python", "tools/build_emurust_pgo.py")


def emurust_train(session: nox.Session) -> None:
    """emurust's PPO on game.gb (issue 20): the default target (emurust's VecEnv) and "game.gb
    on PyBoy" (PyBoy 2.8.1 in one process per core) for the same budget (the session's
    arguments go to both ``envport train`` runs, e.g. ``-- --steps 500000``), then
    ``python -m emurust.train compare``: SPS of each and their ratio, final scores, a random
    policy's score -> reports/emurust/train/comparison.{json,md,png}."""
    install_references(session, {"emurust": None})
    build_emurust_roms(session)
    emurust_pgo(session)  # the build the benchmark measures
    args, env = list(session.posargs), _jax_cache(session)
    out = next((a.split("=", 1)[1] if "=" in a else args[i + 1]
                for i, a in enumerate(args) if a.split("=", 1)[0] == "--out"), "reports")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for target, tag in (("game.gb", "vecenv"), ("game.gb on PyBoy", "pyboy")):
        session.run("envport", "train", "emurust", "--target", target, "--run-id",
                    f"{stamp}-{tag}", *args, env=env)
    session.run("python", "-m", "emurust.train", "compare", "--vecenv", f"{stamp}-vecenv",
                "--pyboy", f"{stamp}-pyboy", "--out", out, env=env)


def install_references(session: nox.Session, envs=ENVS) -> None:
    for name in envs:
        session.run("envport", "install-reference", name)


def _jax_cache(session: nox.Session) -> dict:
    cache = os.environ.get("JAX_COMPILATION_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "envport", "jax")
    return {"JAX_COMPILATION_CACHE_DIR": cache}


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Fast suite: core + every env package, each live reference run on a sample; emurust's
    Rust unit tests (cargo test, with the PyBoy vectors) first."""
    sync(session)
    install_references(session)
    build_emurust_roms(session)
    emurust_cargo_tests(session)
    session.run("pytest", *TEST_PATHS, *session.posargs, env=_jax_cache(session))


@nox.session(name="tests-slow", python=PYTHON)
def tests_slow(session: nox.Session) -> None:
    """Long verification and fuzz tests (marked ``slow``)."""
    sync(session)
    install_references(session)
    build_emurust_roms(session)
    session.run("pytest", *TEST_PATHS, "-m", "slow", *session.posargs, env=_jax_cache(session))


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    sync(session)
    session.run("ruff", "check", "core", "packages", "tools", "noxfile.py")


def _env_sessions(name: str, folder: str, module: str) -> None:
    @nox.session(name=f"verify-{name}", python=PYTHON)
    def verify(session: nox.Session) -> None:
        """Install the reference, run L1-L3, write reports/<env>/verify.{json,md}."""
        sync(session)
        install_references(session, {name: None})
        if name == "emurust":
            build_emurust_roms(session)
            emurust_cargo_tests(session)  # issue 4's L1: cargo test per module
            emurust_pgo(session)  # verify the build the benchmark measures
        session.run("envport", "verify", name, *session.posargs, env=_jax_cache(session))

    @nox.session(name=f"bench-{name}", python=PYTHON)
    def bench(session: nox.Session) -> None:
        """Candidate vs reference steps/s, side by side; reports/<env>/bench.{json,md,png}."""
        sync(session)
        install_references(session, {name: None})
        # one XLA:CPU device per core: a sharded candidate steps each shard on its own core
        # (the report's host line shows the device count)
        xla = os.environ.get("XLA_FLAGS") or f"--xla_force_host_platform_device_count={os.cpu_count()}"
        env = {**_jax_cache(session), "XLA_FLAGS": xla}
        args = list(session.posargs)
        if name == "emurust":
            build_emurust_roms(session)
            emurust_pgo(session)
            # the reference is one PyBoy object per env: thousands of them would only measure
            # memory pressure, so emurust's default sizes stop at 64
            if not any(a.startswith("--batch-sizes") for a in args):
                args += ["--batch-sizes", "1,2,8,32,64"]
        session.run("envport", "bench", name, *args, env=env)
        if name == "emurust":
            # issue 4's figures: one instance (render on/off, per ROM) and PyBoy in N processes
            # vs VecEnv; reports/emurust/bench_single.{json,md,png}
            out = next((a.split("=", 1)[1] if "=" in a else args[i + 1]
                        for i, a in enumerate(args) if a.split("=", 1)[0] == "--out"), "reports")
            session.run("python", "-m", "emurust.bench", "--out", out, env=env)
        # an env package may ship ``<module>.profile``: where the candidate's step time goes
        if os.path.exists(os.path.join(folder, "src", module, "profile.py")):
            session.run("python", "-m", f"{module}.profile", env=env)

    @nox.session(name=f"train-{name}", python=PYTHON)
    def train(session: nox.Session) -> None:
        """PPO on the env (envport train); reports/<env>/train/<run-id>/ per seed. Pong, without
        arguments: then the side by side with PufferLib's own trainer (PuffeRL, its venv built
        first when missing: torch is downloaded once), reports/pong/train/side-by-side.{json,md}."""
        sync(session)
        if name == "emurust":  # both targets, then their comparison
            emurust_train(session)
            return
        args = list(session.posargs) or ["--seeds", "0,1,2"]
        session.run("envport", "train", name, *args, env=_jax_cache(session))
        if name == "pong" and not session.posargs:
            session.run("python", "-m", "pong_port.pufferl", "build")
            session.run("python", "-m", "pong_port.side_by_side", "--seeds", "0,1,2",
                        env=_jax_cache(session))

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
        install_references(session, {name: None})
        session.run("envport", "generate", name, *session.posargs, env=_jax_cache(session))

    @nox.session(name=f"build-{name}", python=PYTHON)
    def build(session: nox.Session) -> None:
        """sdist + wheel of the env package into dist/."""
        session.run("uv", "build", folder, "--out-dir", "dist", external=True)


for _name, (_folder, _module) in ENVS.items():
    _env_sessions(_name, _folder, _module)


@nox.session(name="build-envport", python=PYTHON)
def build_envport(session: nox.Session) -> None:
    session.run("uv", "build", "core", "--out-dir", "dist", external=True)
