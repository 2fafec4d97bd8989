"""emurust's Rust unit tests (``cargo test --locked``, debug profile), including the differential
ones, which replay vectors that PyBoy 2.8.1 computes: first the vectors, then cargo.

Each generator (``vectors``, ``lcd_vectors``, ``cpu_vectors --system``) reruns only when its stamp
changed or an output is missing: the stamp covers the generator's source, its arguments, the
PyBoy and Python versions and, for ``--system``, the built test ROMs. It works on the crate's
sources (a checkout or an unpacked sdist) and needs pyboy==2.8.1 in this interpreter
(``envport install-reference emurust``).

Usage: ``python -m emurust.tools.native_tests [--vectors-only]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from emurust.tools import PACKAGE, crate_dir, vectors_dir

# module (under emurust.tools), its arguments, what it writes into the vectors folder
GENERATORS = [
    ("vectors", [], ["timer.json", "serial.json", "interaction.json", "rtc.json",
                     "cartridge.json"]),
    ("lcd_vectors", [], [f"lcd_{s}_{n}.json" for s in ("frames", "midframe", "random")
                         for n in (1, 2)]),
    # --system: PyBoy save states of every test ROM (built by emurust.tools.build_roms)
    ("cpu_vectors", ["--system"], ["cpu.json", "system"]),
]


def log(msg: str) -> None:
    print(f"[emurust native tests] {msg}", flush=True)


def _stamp_key(module: str, args: list[str], roms: list[Path]) -> str:
    try:
        pyboy = metadata.version("pyboy")
    except metadata.PackageNotFoundError:
        pyboy = "missing"
    key = hashlib.sha256()
    for part in (module, *args, pyboy, str(sys.version_info[:2])):
        key.update(part.encode() + b"\0")
    key.update((PACKAGE / "tools" / f"{module}.py").read_bytes())
    if "--system" in args:
        for rom in roms:
            key.update(rom.name.encode() + b"\0" + rom.read_bytes())
    return key.hexdigest()


def make_vectors(out: Path | None = None) -> Path:
    """Bring every generator's vectors up to date in ``out`` (default: the crate's)."""
    from emurust.tools.build_roms import build_all

    out = Path(out) if out is not None else vectors_dir()
    out.mkdir(parents=True, exist_ok=True)
    roms = sorted(build_all().values())
    for module, args, outputs in GENERATORS:
        key = _stamp_key(module, args, roms)
        stamp = out / f".stamp-{module}"
        fresh = (all((out / o).exists() for o in outputs) and stamp.exists()
                 and stamp.read_text() == key)
        if fresh:
            log(f"{module}: vectors up to date")
            continue
        stamp.unlink(missing_ok=True)
        log(f"{module}: generating")
        subprocess.run([sys.executable, "-m", f"emurust.tools.{module}", *args, "--out",
                        str(out / "cpu.json" if module == "cpu_vectors" else out)], check=True)
        stamp.write_text(key)
    return out


def cargo_test() -> None:
    """``cargo test --locked`` of the crate, reading the vectors of its target/vectors (the
    variables that point the tests elsewhere are dropped)."""
    if shutil.which("cargo") is None:
        raise SystemExit("cargo not found: emurust's Rust tests need a Rust toolchain "
                         "(https://rustup.rs)")
    crate = crate_dir()
    env = {k: v for k, v in os.environ.items() if k not in ("EMURUST_VECTORS",
                                                            "EMURUST_VECTORS_DIR")}
    subprocess.run(["cargo", "test", "--locked", "--manifest-path", str(crate / "Cargo.toml")],
                   check=True, env=env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vectors-only", action="store_true", help="make the vectors, no cargo test")
    args = ap.parse_args(argv)
    make_vectors()
    if not args.vectors_only:
        cargo_test()
    return 0


if __name__ == "__main__":
    sys.exit(main())
