"""Fixtures for emurust's tests: small ROMs made here in Python (no toolchain needed), the
package's test ROMs (built with emurust.tools.build_roms; needs binutils-z80), and the
reference PyBoy 2.8.1 in the configuration emurust mirrors."""

from __future__ import annotations

from pathlib import Path

import pytest


def fix_header(rom: bytearray, title: bytes = b"TEST", cart: int = 0, rom_code: int = 0,
               ram_code: int = 0) -> bytearray:
    """Title, cartridge type/sizes and the header checksum PyBoy checks (0x14D), as in
    emurust.tools.build_roms."""
    rom[0x134:0x144] = title.ljust(16, b"\0")[:16]
    rom[0x147], rom[0x148], rom[0x149] = cart, rom_code, ram_code
    x = 0
    for b in rom[0x134:0x14D]:
        x = (x - b - 1) & 0xFF
    rom[0x14D] = x
    return rom


# At 0x150: select the d-pad (FF00 = 0x20), copy FF00 to C001, increment C000, loop.
LOOP_PROGRAM = bytes([
    0x3E, 0x20,        # ld a,0x20
    0xE0, 0x00,        # ldh (0x00),a
    0xF0, 0x00,        # ldh a,(0x00)
    0xEA, 0x01, 0xC0,  # ld (0xC001),a
    0x21, 0x00, 0xC0,  # ld hl,0xC000
    0x34,              # inc (hl)
    0x18, 0xF1,        # jr 0x150
])


def make_rom(program: bytes = LOOP_PROGRAM, *, title: bytes = b"TEST", cart: int = 0,
             rom_code: int = 0, ram_code: int = 0) -> bytes:
    rom = bytearray(0x8000 << rom_code)
    rom[0x100:0x104] = bytes([0x00, 0xC3, 0x50, 0x01])  # nop; jp 0x150
    rom[0x150:0x150 + len(program)] = program
    return bytes(fix_header(rom, title, cart, rom_code, ram_code))


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
