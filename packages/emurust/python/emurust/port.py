"""emurust's translation spec for the envport core (entry point ``envport.envs: emurust``).

Reference: real PyBoy 2.8.1 from PyPI (``install_reference`` pip-installs it). Candidate: emurust.
Both run emurust's own test ROMs (sources in ``emurust/roms``, shipped with the package; built
into a user cache folder by ``emurust.tools.build_roms``) from power-on in the reference configuration (null window, DMG, sound
off). See ``emurust.verify`` for the action encoding and the compared fields.

* L2, per ROM: states sampled from a PyBoy run with random button events; each case loads PyBoy's
  save-state bytes into a fresh PyBoy and a fresh emurust, sends one random action, runs one
  frame and compares everything, including the new save-state bytes.
* L3, per ROM: both from power-on with the same seeded random events, every frame compared;
  an episode is ``episode_frames`` frames, its last frame also compares the save-state bytes.
* L1: the core's backend checks (``envport.testing.check_backend``) on the emurust backend that
  L2/L3 drive, game.gb, every frame's state with its save-state bytes: spec, shapes and dtypes,
  determinism from power-on, terminal flags, no NaN, wrong-shape actions refused, and
  ``load(state())`` round trips (save-state bytes into a fresh emulator, stepped on).
* Bench: N PyBoy instances stepped in a Python loop vs ``emurust.vec.VecEnv`` (N emulators on
  Rust threads, GIL released), both rendering every frame, game.gb.
* Generation: ``emurust.plan.PLAN``, the crate's modules in dependency order, each with the
  PyBoy 2.8.1 sources it translates (read from the installed ``pyboy``), its contract and tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from emurust import __version__, build_info
from emurust.verify import (
    PYBOY_VERSION,
    REFERENCE_INSTALL_HINT,
    RomCase,
    StateSampler,
    make_backend,
    make_emurust,
    make_pyboy,
    sample_actions,
)


def rom_names() -> list[str]:
    """Every test ROM whose source ships with the package (``emurust/roms/*.s``)."""
    from emurust.tools.build_roms import sources

    return sorted(sources())


def rom_dir() -> Path:
    """Where the built ROMs are: ``$EMURUST_ROMS``, else a user cache folder named by the
    sources' digest (``emurust.tools.build_roms.default_out``)."""
    from emurust.tools.build_roms import default_out

    return default_out()


def build_roms(out_dir: Path | None = None) -> dict[str, Path]:
    """Build (or find up to date) every test ROM from the package's sources (binutils-z80)."""
    from emurust.tools.build_roms import build_all

    return build_all(out_dir or rom_dir())


def rom_path(name: str) -> Path:
    path = rom_dir() / f"{name}.gb"
    if not path.is_file():
        build_roms()
    if not path.is_file():
        raise FileNotFoundError(f"ROM {path} missing after building the ROMs")
    return path


def rom_case(name: str, episode_frames: int = 512) -> RomCase:
    return RomCase(name, rom_path(name), episode_frames)


# -- reference ----------------------------------------------------------------------------------

def install_reference() -> None:
    """pip-install PyBoy 2.8.1 into this interpreter (uv's pip when there is no pip)."""
    try:
        check_reference()
        return
    except Exception:
        pass
    spec = f"pyboy=={PYBOY_VERSION}"
    try:
        import pip  # noqa: F401

        cmd = [sys.executable, "-m", "pip", "install", spec]
    except ImportError:
        cmd = ["uv", "pip", "install", "--python", sys.executable, spec]
    subprocess.run(cmd, check=True)


def check_reference() -> None:
    try:
        import pyboy
    except ImportError as e:
        raise RuntimeError(f"PyBoy is not installed: {REFERENCE_INSTALL_HINT}") from e
    from importlib.metadata import version

    got = version("pyboy")
    if got != PYBOY_VERSION:
        raise RuntimeError(f"PyBoy {got} installed, emurust is verified against {PYBOY_VERSION}: "
                           f"{REFERENCE_INSTALL_HINT}")
    del pyboy


# -- suites ------------------------------------------------------------------------------------

# issue 4's bar: every test ROM runs >= 10,000 frames in both, compared every frame, with the
# save states compared at the end (``--scale`` shrinks the episode count, not this length)
L3_FRAMES = 10_000


def _l3(name: str, episodes: int = 1, episode_frames: int = L3_FRAMES):
    from envport.registry import L3Suite

    case = lambda: rom_case(name, episode_frames)  # noqa: E731 - resolved when the suite runs
    return L3Suite(
        name=f"{name}.gb, power-on, {episode_frames} frames/episode",
        make_reference=lambda: make_backend(case(), 1, make_pyboy, "pyboy"),
        make_candidate=lambda: make_backend(case(), 1, make_emurust, "emurust"),
        sample_actions=lambda rng, n: sample_actions(rng, n),
        episodes=episodes,
        max_steps_per_seed=episode_frames,
        neutral_action=lambda n: np.zeros(n, np.int32),
        note="every frame: registers+cycles, FF00-FFFF, OAM, WRAM, VRAM, screen; save-state "
             "bytes at each episode's last frame (RTC carts: rtc_lock_experimental(True) on both "
             "sides, the RTC's two host-time doubles zeroed)",
    )


def _l2(name: str, cases: int = 200, batch: int = 20):
    from envport.registry import L2Suite

    sampler = {}

    def make_cases(rng, n):
        if "s" not in sampler:
            sampler["s"] = StateSampler(rom_case(name))
        return sampler["s"](rng, n)

    return L2Suite(
        name=f"{name}.gb, PyBoy save states -> one frame",
        make_reference=lambda n: make_backend(rom_case(name), n, make_pyboy, "pyboy"),
        make_candidate=lambda n: make_backend(rom_case(name), n, make_emurust, "emurust"),
        make_cases=make_cases, cases=cases, batch=batch,
        note="PyBoy's save_state bytes loaded into a fresh PyBoy and a fresh emurust; one random "
             "button action and one frame; all fields compared, including the new save state",
    )


# -- bench ---------------------------------------------------------------------------------------

def _reference_stepper(num_envs: int):
    envs = [make_pyboy(rom_path("game")) for _ in range(num_envs)]
    held = np.zeros(num_envs, np.int64)
    from emurust.utils import BUTTONS

    def step(actions):
        for i, (pb, a) in enumerate(zip(envs, np.asarray(actions), strict=True)):
            a = int(a)
            changed = a ^ int(held[i])
            for b, name in enumerate(BUTTONS):
                if changed >> b & 1:
                    (pb.button_press if a >> b & 1 else pb.button_release)(name)
            held[i] = a
            pb.tick(1, True)

    def close():
        for pb in envs:
            pb.stop(save=False)

    return step, close


def _candidate_rollout(num_envs: int):
    from emurust.vec import VecEnv

    env = VecEnv(rom_path("game"), num_envs, obs="rgba", game="game")
    cache = [np.random.default_rng(i).integers(0, 256, num_envs).astype(np.uint8) for i in range(64)]
    t0 = time.perf_counter()
    env.reset()
    compile_s = time.perf_counter() - t0

    def run(steps: int) -> None:
        for k in range(steps):
            env.step(cache[k % 64])

    return run, compile_s


def _bench():
    from envport.registry import BenchTarget

    return BenchTarget(
        name="game.gb, frameskip 1, rendering every frame",
        reference_stepper=_reference_stepper,
        candidate_rollout=_candidate_rollout,
        sample_actions=lambda rng, n: rng.integers(0, 256, n).astype(np.uint8),
        how_actions=(
            "Actions are held-button bitmasks (64 cached random batches). Reference: N PyBoy "
            "2.8.1 instances (compiled, null window, sound off, unlimited speed) in one Python "
            "loop, press/release per changed button then tick(1, render=True). Candidate: "
            "emurust.vec.VecEnv, the N emulators stepped on Rust threads with the GIL released, "
            "screen written into a preallocated numpy buffer."),
    )


def _l1():
    from envport.registry import L1BackendTarget

    def make():
        return make_backend(rom_case("game"), 2, make_emurust, "emurust", full_state=True)

    return L1BackendTarget("game.gb, 2 emulators, save-state bytes every frame", make_backend=make,
                           sample_actions=lambda rng, n: sample_actions(rng, n, 0.1), steps=40)


# -- stage hooks (envport prepare / session-commands, the nox sessions) -------------------------

# the bench's reference is one PyBoy object per env: thousands would only measure memory pressure
BENCH_BATCH_SIZES = (1, 2, 8, 32, 64)


def _log(msg: str) -> None:
    print(f"[emurust] {msg}", flush=True)


def _in_checkout() -> bool:
    from emurust.tools import NoCrateError, crate_dir

    try:
        crate_dir()
    except NoCrateError:
        return False
    return True


def prepare(stage: str) -> None:
    """Before a stage: the test ROMs (every stage that runs the emulators); in a checkout, the
    PyBoy vectors and ``cargo test`` (tests, verify: issue 4's L1 is cargo test per module) and
    the profile-guided build (verify, bench, train: the build the benchmark measures;
    ``EMURUST_PGO=0`` keeps the plain one). From an installed wheel only the ROMs are built."""
    if stage == "generate":
        return
    built = build_roms()
    _log(f"{len(built)} test ROMs in {rom_dir()}")
    if not _in_checkout():
        _log("installed without the crate's sources: no native tests, no PGO build")
        return
    if stage in ("tests", "verify"):
        subprocess.run([sys.executable, "-m", "emurust.tools.native_tests"], check=True)
    if stage in ("verify", "bench", "train"):
        if os.environ.get("EMURUST_PGO", "1") == "0":
            _log("EMURUST_PGO=0: keeping the plain build")
        else:
            subprocess.run([sys.executable, "-m", "emurust.tools.pgo"], check=True)


def session_commands(stage: str, args: list[str]) -> list[list[str]]:
    """``train``: PPO on game.gb through emurust's VecEnv and through PyBoy 2.8.1 (one process
    per core) for the same budget (the session's arguments go to both), then ``python -m
    emurust.train compare`` (SPS of each, their ratio, final scores, a random policy's score).
    Every other stage: ``envport <stage> emurust *args``."""
    if stage == "tests":
        return []
    if stage != "train":
        return [["envport", stage, "emurust", *args]]
    from envport.sessions import out_dir

    stamp = time.strftime("%Y%m%d-%H%M%S")
    runs = [["envport", "train", "emurust", "--target", target, "--run-id", f"{stamp}-{tag}",
             *args] for target, tag in (("game.gb", "vecenv"), ("game.gb on PyBoy", "pyboy"))]
    return [*runs, ["python", "-m", "emurust.train", "compare", "--vecenv", f"{stamp}-vecenv",
                    "--pyboy", f"{stamp}-pyboy", "--out", out_dir(args)]]


def _single_instance_bench(out: Path, progress: bool):
    from emurust import bench

    return bench.run(out, progress=progress, command="envport bench emurust")


def make_port():
    from emurust.plan import PLAN  # cheap: PyBoy's sources are read only when a prompt needs them
    from emurust.train import TARGETS, TRANSFER  # cheap too: no ROM built, no emulator started
    from envport.registry import EnvPort, ExtraBench, SystemRequirement

    names = rom_names()
    return EnvPort(
        name="emurust",
        reference=f"PyBoy {PYBOY_VERSION} (PyPI, compiled; null window, DMG, sound off)",
        candidate=f"emurust {__version__} (Rust, PyO3; {build_info()} build)",
        install_reference=install_reference,
        check_reference=check_reference,
        tolerance=0.0,
        l1=[_l1()],
        l2=[_l2(n) for n in names],
        l3=[_l3(n) for n in names],
        bench=[_bench()],
        train=TARGETS,
        transfer=[TRANSFER],
        notes={"license": "LGPL-3.0-only (a translation of PyBoy 2.8.1)"},
        plan=PLAN,
        prepare=prepare,
        system_requirements=[SystemRequirement(
            "z80-unknown-coff-as", "binutils-z80",
            "emurust's test ROMs are assembled from their sources")],
        bench_batch_sizes=BENCH_BATCH_SIZES,
        extra_benches=[ExtraBench(
            "single instance and PyBoy in N processes", _single_instance_bench,
            outputs="bench_single.json, bench_single.md, bench_single.png")],
        session_commands=session_commands,
    )


# registry.get() calls it: building the spec is cheap (no ROMs built, no PyBoy imported)
PORT = make_port
