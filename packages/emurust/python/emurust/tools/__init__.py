"""emurust's own tools, each a module run as ``python -m emurust.tools.<name>``:

- ``build_roms``: assemble the test ROMs (``emurust/roms/*.s``, shipped with the package) into a
  user cache folder (binutils-z80); what ``envport verify emurust`` and the tests run.
- ``native_tests``: the PyBoy vectors (``vectors``, ``lcd_vectors``, ``cpu_vectors``) and
  ``cargo test`` of the crate.
- ``pgo``: a profile-guided build of the extension, installed into a venv.
- ``gen_opcodes``, ``sound_template``, ``bootrom``: the generated crate files, from PyBoy 2.8.1.

Those that work on the Rust crate (everything but ``build_roms``) need its sources: an emurust
checkout or unpacked sdist (``Cargo.toml`` beside ``python/``); :func:`crate_dir` finds it.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # the emurust Python package


class NoCrateError(RuntimeError):
    """A tool that needs the Rust crate's sources ran from an installed wheel."""


def crate_dir() -> Path:
    """The crate this package was built from (``Cargo.toml`` two levels above the package, as in
    a checkout or an unpacked sdist with ``python/emurust``); a clear error from a wheel."""
    root = PACKAGE.parents[1]
    if not (root / "Cargo.toml").is_file() or not (root / "src" / "lib.rs").is_file():
        raise NoCrateError(
            f"this tool works on emurust's Rust sources, and {PACKAGE} is an installed package "
            "without them: run it from an emurust checkout or an unpacked sdist "
            "(pip download --no-binary emurust emurust)")
    return root


def vectors_dir() -> Path:
    """Where the crate's Rust tests read the PyBoy vectors (git-ignored)."""
    return crate_dir() / "target" / "vectors"
