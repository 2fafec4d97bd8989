"""Fixtures for emurust's tests: small ROMs made here in Python (no toolchain needed), the
package's test ROMs (built with emurust.tools.build_roms; needs binutils-z80), and the
reference PyBoy 2.8.1 in the configuration emurust mirrors."""

from __future__ import annotations

from pathlib import Path

import pytest
from emurust_test_roms import make_rom


@pytest.fixture(scope="session")
def tiny_rom(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("roms") / "tiny.gb"
    path.write_bytes(make_rom())
    return path


@pytest.fixture(scope="session")
def battery_rom(tmp_path_factory) -> Path:
    """MBC1+RAM+BATTERY (0x03), 64 KiB ROM, 32 KiB RAM (4 banks)."""
    path = tmp_path_factory.mktemp("roms") / "battery.gb"
    path.write_bytes(make_rom(title=b"BATTERY", cart=0x03, rom_code=1, ram_code=3))
    return path


@pytest.fixture(scope="session")
def built_roms() -> dict[str, Path]:
    """The package's test ROMs (emurust/roms/*.s), built once (cached by content)."""
    from emurust import port

    try:
        return {n: Path(p) for n, p in port.build_roms().items()}
    except Exception as e:  # no binutils-z80: say how to get it
        pytest.skip(f"cannot build emurust's test ROMs ({e}); apt-get install -y binutils-z80")


@pytest.fixture(scope="session")
def pyboy_ref():
    """Real PyBoy 2.8.1 (the reference); missing -> the test fails with the install command."""
    from emurust.verify import REFERENCE_INSTALL_HINT, make_pyboy

    try:
        from importlib.metadata import version

        import pyboy  # noqa: F401
    except ImportError:
        pytest.fail(f"PyBoy 2.8.1 is not installed: {REFERENCE_INSTALL_HINT}")
    assert version("pyboy") == "2.8.1", REFERENCE_INSTALL_HINT
    return make_pyboy
