#!/usr/bin/env python3
"""Build emurust's extension with profile-guided optimisation (PGO) and install it into a venv.

An interpreter's speed depends on how the compiler lays out its dispatch and its rarely taken
branches; rustc does that best with a profile of real runs. This script:

1. builds and installs the extension instrumented (``-Cprofile-generate``) into ``--python``'s
   environment (``uv pip install -e``, the way ``uv sync`` installs it; its own cargo target
   dir ``target/pgo/gen``);
2. runs it on every test ROM (``emurust.tools.build_roms``) through the PyBoy API (``--frames`` frames without
   rendering, then a quarter of that with rendering, with a held-button sequence) and merges
   the raw profiles with the toolchain's ``llvm-profdata`` into ``target/pgo/<key>.profdata``;
3. rebuilds and reinstalls the extension with ``-Cprofile-use`` (target dir
   ``target/pgo/ext``, so the plain build's cache stays valid). The build records
   ``EMURUST_BUILD=pgo <key>``, which ``emurust.build_info()`` reports (benchmarks print it).

The profile is taken from the same crate build (same features) as the one it optimises: a
profile of another binary (the Rust ``profile`` example, built without the ``python`` feature)
names the functions differently and would not be used.

The profile only moves code around: every emulated value is the same (``./dev verify-emurust``
checks the PGO build against PyBoy). ``<key>`` hashes the Rust sources, the ROMs and
``rustc -vV``; a profile with the same key is reused, and an installed build with the same key
is left alone.

``llvm-profdata`` comes from rustup's ``llvm-tools`` component (its LLVM matches rustc's); when
it is missing the script runs ``rustup component add llvm-tools`` once. When that fails too it
keeps the plain build and says so (exit 0), unless ``--require`` is given (exit 1).

It works on the crate's sources (a checkout or an unpacked sdist), never on an installed wheel.

Usage: ``python -m emurust.tools.pgo [--python PY] [--frames N] [--require] [--force]``
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from emurust.tools import NoCrateError, crate_dir


def _crate() -> Path:
    try:
        return crate_dir()
    except NoCrateError as exc:
        raise SystemExit(f"[emurust pgo] {exc}") from None


def log(msg: str) -> None:
    print(f"[emurust pgo] {msg}", flush=True)


def rustc_version() -> str:
    return subprocess.run(["rustc", "-vV"], check=True, capture_output=True, text=True).stdout


def llvm_profdata(allow_install: bool = True) -> Path | None:
    """The ``llvm-profdata`` of the active toolchain (rustup's llvm-tools), or None."""
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], check=True, capture_output=True,
                             text=True).stdout.strip()
    host = next(line.split(": ", 1)[1] for line in rustc_version().splitlines()
                if line.startswith("host: "))
    tool = Path(sysroot) / "lib" / "rustlib" / host / "bin" / "llvm-profdata"
    if tool.exists():
        return tool
    if allow_install and shutil.which("rustup"):
        log("llvm-profdata not found: rustup component add llvm-tools")
        if subprocess.run(["rustup", "component", "add", "llvm-tools"]).returncode == 0:
            return llvm_profdata(allow_install=False)
    return None


def profile_key(roms: list[Path]) -> str:
    """What the profile depends on: the crate's sources, the training ROMs and the compiler."""
    crate = _crate()
    h = hashlib.sha256(rustc_version().encode())
    files = sorted([*crate.glob("src/**/*.rs"), *crate.glob("src/*.bin"), crate / "Cargo.toml",
                    crate / "Cargo.lock", *crate.glob("python/emurust/*.py"), Path(__file__),
                    *roms])
    for f in files:
        # ROMs by name: they live in a cache folder outside the crate
        name = os.path.relpath(f, crate) if f.is_relative_to(crate) else f.name
        h.update(name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


TRAINING = """
import sys
from emurust import PyBoy
frames = int(sys.argv[1])
for rom in sys.argv[2:]:
    pb = PyBoy(rom, window="null", cgb=False, sound_emulated=False)
    for n, render in ((frames, False), (max(1, frames // 4), True)):
        for f in range(n):
            if f % 16 == 0:
                pb.button_press("a" if f % 32 else "right")
            elif f % 16 == 8:
                pb.button_release("a" if f % 32 else "right")
            pb.tick(1, render)
    pb.stop(save=False)
"""


def train(python: str, roms: list[Path], frames: int, profdata_tool: Path, out: Path) -> None:
    pgo_dir = _crate() / "target" / "pgo"
    raw = pgo_dir / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    raw.mkdir(parents=True)
    install(python, f"-Cprofile-generate={raw}", pgo_dir / "gen", "pgo-training")
    env = {**os.environ, "LLVM_PROFILE_FILE": str(raw / "emurust-%m-%p.profraw")}
    subprocess.run([python, "-c", TRAINING, str(frames), *map(str, roms)], check=True, env=env,
                   cwd=_crate())
    log(f"trained on {len(roms)} ROMs ({frames} frames each without rendering, "
        f"{max(1, frames // 4)} with)")
    subprocess.run([str(profdata_tool), "merge", "-o", str(out), str(raw)], check=True)
    shutil.rmtree(raw, ignore_errors=True)


def installed_build(python: str) -> str | None:
    r = subprocess.run([python, "-c", "import emurust; print(emurust.build_info())"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def install(python: str, rustflags: str, target_dir: Path, build: str) -> None:
    uv = shutil.which("uv")
    if uv is None:
        raise SystemExit("uv not found: install uv, or run this through the repository's ./dev "
                         "(it puts .tools/bin on PATH)")
    env = dict(os.environ)
    # these flags replace any RUSTFLAGS from outside, which would change the code
    env["RUSTFLAGS"] = rustflags
    env["CARGO_TARGET_DIR"] = str(target_dir)
    env["EMURUST_BUILD"] = build
    log(f"building and installing the extension ({build})")
    subprocess.run([uv, "pip", "install", "--python", python, "--no-deps", "--reinstall-package",
                    "emurust", "--refresh-package", "emurust", "-e", str(_crate())],
                   check=True, env=env, cwd=_crate())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter whose environment gets the build (default: this one)")
    ap.add_argument("--frames", type=int, default=400,
                    help="training frames per ROM without rendering (default 400)")
    ap.add_argument("--require", action="store_true",
                    help="fail when PGO is unavailable instead of keeping the plain build")
    ap.add_argument("--force", action="store_true", help="retrain and reinstall")
    args = ap.parse_args(argv)

    from emurust.tools.build_roms import build_all

    pgo_dir = _crate() / "target" / "pgo"
    roms = sorted(build_all().values())
    tool = llvm_profdata()
    if tool is None:
        msg = ("PGO unavailable: no llvm-profdata in the Rust toolchain (rustup component add "
               "llvm-tools failed); the plain build stays installed")
        if args.require:
            log(msg)
            return 1
        log(msg)
        return 0
    key = profile_key(roms)
    if not args.force and installed_build(args.python) == f"pgo {key}":
        log(f"the installed extension is the PGO build {key}: nothing to do")
        return 0
    profdata = pgo_dir / f"{key}.profdata"
    if args.force or not profdata.exists():
        pgo_dir.mkdir(parents=True, exist_ok=True)
        for old in pgo_dir.glob("*.profdata"):
            old.unlink()
        train(args.python, roms, args.frames, tool, profdata)
    else:
        log(f"reusing the profile {profdata}")
    # No indirect-call promotion: a decoded block's ops tail-call each other's steps through
    # pointers (packages/emurust/src/blocks.rs), and promoting those calls to guarded inlined
    # copies of the hot successors made rustc run for over 15 minutes (3-4 GB) on this crate.
    install(args.python, f"-Cprofile-use={profdata} -Cllvm-args=-disable-icp", pgo_dir / "ext",
            f"pgo {key}")
    got = installed_build(args.python)
    if got != f"pgo {key}":
        log(f"the installed extension reports {got!r}, not 'pgo {key}'")
        return 1
    log(f"installed the PGO build {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
