"""The installed PyBoy that emurust's vector tools load sources from (shared by
``emurust.tools.vectors``, ``lcd_vectors`` and ``cpu_vectors``)."""

from __future__ import annotations

import sys
from pathlib import Path

PYBOY_VERSION = "2.8.1"


def pyboy_package_dir() -> Path:
    """The installed pyboy package folder: its wheel ships the ``.py`` sources loaded here."""
    try:
        import pyboy
    except ImportError as e:
        raise SystemExit(
            f"pyboy is not installed in {sys.executable}: pip install pyboy=={PYBOY_VERSION} "
            "(nox sessions get it from `envport install-reference emurust`)"
        ) from e
    from importlib.metadata import version

    got = version("pyboy")
    if got != PYBOY_VERSION:
        raise SystemExit(
            f"pyboy {got} is installed in {sys.executable}, the vectors need {PYBOY_VERSION}: "
            f"pip install pyboy=={PYBOY_VERSION}"
        )
    return Path(pyboy.__file__).resolve().parent
