"""Bad input never crashes emurust: broken ROMs, foreign or truncated save states, bad addresses
and random bytes all end in a Python exception of PyBoy's classes. Where PyBoy itself refuses
the input, the test checks that it does (so the expectation is PyBoy's, not ours)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from emurust_test_roms import fix_header, make_rom

from emurust import PyBoy
from emurust.utils import PyBoyException, PyBoyOutOfBoundsException
from emurust.verify import save_state_bytes


def _bad_roms():
    good = make_rom()
    bad_checksum = bytearray(good)
    bad_checksum[0x14D] ^= 0xFF
    unknown_type = fix_header(bytearray(good), cart=0x42)
    return {
        "empty": b"",
        "truncated": good[:0x3FFF],
        "not a multiple of 16 KiB": good + b"\0" * 100,
        "header checksum": bytes(bad_checksum),
        "unsupported cartridge type": bytes(unknown_type),
    }


@pytest.mark.parametrize("name", list(_bad_roms()))
def test_bad_roms_raise_pyboyexception_like_pyboy(name, pyboy_ref, tmp_path):
    data = _bad_roms()[name]
    path = tmp_path / "bad.gb"
    path.write_bytes(data)
    with pytest.raises(Exception) as ref:
        pyboy_ref(path)
    assert type(ref.value).__name__ == "PyBoyException", ref.value  # what PyBoy does
    with pytest.raises(PyBoyException):
        PyBoy(path)
    with pytest.raises(PyBoyException):
        PyBoy(io.BytesIO(data))


def test_foreign_and_truncated_states_raise(tiny_rom, battery_rom):
    a, b = PyBoy(tiny_rom), PyBoy(battery_rom)
    a.tick(5)
    b.tick(5)
    state_a, state_b = save_state_bytes(a), save_state_bytes(b)
    cases = {
        "empty": b"",
        "newer version": bytes([30]) + state_a[1:],
        "cgb flag": state_a[:5] + b"\x01" + state_a[6:],
        "truncated": state_a[: len(state_a) // 2],
        "one byte short": state_a[:-1],
        "trailing garbage": state_a + b"\0",
        "other cartridge (battery RAM banks)": state_b,
    }
    for name, data in cases.items():
        fresh = PyBoy(tiny_rom)
        with pytest.raises(PyBoyException):
            fresh.load_state(io.BytesIO(data))
        del name
    # after a refused load the emulator is still usable with a good state
    fresh = PyBoy(tiny_rom)
    with pytest.raises(PyBoyException):
        fresh.load_state(io.BytesIO(state_a[:100]))
    fresh.load_state(io.BytesIO(state_a))
    assert save_state_bytes(fresh) == state_a


@pytest.mark.parametrize("index", [(0, 0xE000), (0, slice(0xC000, 0xC000 + 0x1001)),
                                   slice(0x0, 0x10001), (5, 0x0100), (-1, 0x0100 + 0x100)])
def test_out_of_range_memory_raises(tiny_rom, index):
    pb = PyBoy(tiny_rom)
    with pytest.raises(PyBoyException):
        pb.memory[index]


def test_wram_bank_slice_bounds_are_pyboys(tiny_rom):
    pb = PyBoy(tiny_rom)
    with pytest.raises(PyBoyOutOfBoundsException):
        pb.memory[0, 0xC000:0xD000]  # PyBoy: stop must be < 0x1000 when reading
    assert len(pb.memory[0, 0xC000:0xCFFF]) == 0xFFF


def test_fuzz_random_roms_and_states(tiny_rom):
    """Random ROM bytes (half with a valid header checksum, some with a valid cartridge type)
    run for a few frames and random/corrupted save states are loaded: every failure is a
    PyBoyException (EmurustIllegalOpcodeException for the opcodes PyBoy would hang on)."""
    rng = np.random.default_rng(1234)
    ran = refused = 0
    for i in range(40):
        size = int(rng.choice([0x4000, 0x8000, 0x10000]))
        rom = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
        if i % 2:
            rom[0x147] = int(rng.choice([0x00, 0x01, 0x03, 0x05, 0x0F, 0x13, 0x19, 0x1B]))
            rom[0x148] = {0x4000: 0, 0x8000: 0, 0x10000: 1}[size]
            rom[0x149] = int(rng.integers(0, 6))
            fix_header(rom, title=bytes(rom[0x134:0x144]), cart=rom[0x147], rom_code=rom[0x148],
                       ram_code=rom[0x149])
            rom[0x143] &= 0x7F
        try:
            pb = PyBoy(io.BytesIO(bytes(rom)), cgb=False)
            for _ in range(3):
                pb.tick(int(rng.integers(1, 30)), bool(rng.integers(2)))
            ran += 1
        except PyBoyException as e:
            assert "internal error" not in str(e), e  # a Rust panic: a bug, not bad input
            refused += 1
    assert ran + refused == 40 and ran > 0

    good = PyBoy(tiny_rom)
    good.tick(3)
    state = bytearray(save_state_bytes(good))
    for _ in range(60):
        data = bytearray(state)
        kind = rng.integers(4)
        if kind == 0:
            data = data[: int(rng.integers(0, len(data)))]
        elif kind == 1:
            for p in rng.integers(0, len(data), 20):
                data[p] = int(rng.integers(0, 256))
        elif kind == 2:
            data = bytearray(rng.integers(0, 256, int(rng.integers(0, 2000)), dtype=np.uint8).tobytes())
        else:
            data[0] = 29
            data[5] = 0
            for p in rng.integers(6, 200, 10):  # CPU/DMA/LCD registers: any values
                data[p] = int(rng.integers(0, 256))
        pb = PyBoy(tiny_rom)
        try:
            pb.load_state(io.BytesIO(bytes(data)))
            pb.tick(2)
            pb.memory[0x0000:0x10000]
        except PyBoyException as e:
            assert "internal error" not in str(e), e
