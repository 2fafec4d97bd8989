"""emurust: a Game Boy (DMG) emulator in Rust, a close translation of PyBoy 2.8.1 (LGPL-3.0-only)
that is equal to it frame for frame: registers, memory, screen and save-state bytes.

``from emurust import PyBoy`` is a drop-in for the subset of PyBoy's API in docs/emurust.md §3;
``emurust.vec`` has the vectorised env (N emulators on Rust threads) and its Gymnasium adapter,
``emurust.puffer`` its PufferLib adapter (neither needs gymnasium or pufferlib to import).
"""

from importlib import metadata as _metadata

from emurust.puffer import EmurustPufferEnv, make_puffer_env
from emurust.pyboy import PyBoy, PyBoyMemoryView, PyBoyRegisterFile, Screen
from emurust.utils import (
    PyBoyException,
    PyBoyInvalidInputException,
    PyBoyInvalidOperationException,
    PyBoyOutOfBoundsException,
    WindowEvent,
)

# one source: Cargo.toml's version, which maturin writes into the package metadata (a test checks
# that the crate, the metadata and this agree)
__version__ = _metadata.version("emurust")
PYBOY_VERSION = "2.8.1"  # the version emurust translates and is verified against


def build_info() -> str:
    """How the extension was compiled: ``"plain"`` (``pip install``/``uv sync``) or
    ``"pgo <key>"`` (profile-guided, by ``python -m emurust.tools.pgo``; the key names the sources,
    ROMs and compiler of the profile). Benchmarks record it."""
    from emurust._emurust import BUILD

    return BUILD


__all__ = [
    "PyBoy", "PyBoyMemoryView", "PyBoyRegisterFile", "Screen", "PyBoyException",
    "PyBoyInvalidInputException", "PyBoyInvalidOperationException", "PyBoyOutOfBoundsException",
    "WindowEvent", "EmurustPufferEnv", "make_puffer_env", "__version__", "PYBOY_VERSION",
    "build_info",
]
