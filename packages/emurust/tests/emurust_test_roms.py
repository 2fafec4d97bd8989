"""Small ROMs made in Python for emurust's tests (no toolchain needed). A module of its own,
named for this package: every test folder's ``conftest`` shares one module name, so tests
cannot import from theirs."""

from __future__ import annotations


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
