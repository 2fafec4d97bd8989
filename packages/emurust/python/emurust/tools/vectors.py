"""Differential test vectors for emurust's components, computed by PyBoy 2.8.1 itself.

* timer.json, serial.json: PyBoy's pure-Python `core/timer.py` / `core/serial.py`, loaded from the
  installed sources with importlib (the compiled classes hide their cdef methods), driven through
  seeded random sequences of catch-up ticks and register reads/writes; every step records the
  return value and all fields.
* interaction.json: PyBoy's `core/interaction.py` (source) under random WindowEvent sequences,
  with `pull` of every select combination after each event.
* rtc.json: PyBoy's `core/cartridge/rtc.py` loaded the same way, its `time.time()` replaced by a
  fake clock, driven through ticks, latch commands, register reads/writes, clock jumps, state
  saves/loads and the timelock flag.
* cartridge.json: a real `PyBoy(window="null", cgb=False, sound_emulated=False)` per cartridge
  configuration (generated ROMs whose banks carry their own number at offset 0x2000), driven
  through `pyboy.memory[addr] = v` (MBC commands, cartridge RAM writes) and `pyboy.memory[addr]`
  reads; every step records the read value, the first 4 bytes of the cartridge's save-state
  block and an FNV-1a-64 hash of the whole block (minus the RTC's wall-clock block).

The cargo tests in packages/emurust (timer.rs, serial.rs, interaction.rs, cartridge/mod.rs,
cartridge/rtc.rs) replay these files and fail, naming this script, when they are missing. Output
goes to packages/emurust/target/vectors/ (git-ignored), under 1 MB in all.

    python -m emurust.tools.vectors [--out DIR] [--pyboy-dir DIR]   # needs pyboy==2.8.1

The sources come from the installed pyboy package (``--pyboy-dir`` overrides the folder).
``./dev tests`` and ``./dev verify-emurust`` run it (``envport prepare emurust``: the native-tests step).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import random
import struct
import sys
import tempfile
from pathlib import Path

from emurust.tools.pyboy_source import pyboy_package_dir

# Cartridge save-state block offset in a DMG state (everything before it has a fixed size) and
# the fixed-size tail after it: joypad 2 + serial 36 + SGB 10379 (docs/emurust.md section 1).
CART_OFFSET = 134911
TAIL_AFTER_CART = 2 + 36 + 10379
RTC_SIZE = 33
RAM_BANKS = {0x00: 1, 0x01: 1, 0x02: 1, 0x03: 4, 0x04: 16, 0x05: 8}


def load_source(pyboy_dir: Path, rel: str, name: str):
    spec = importlib.util.spec_from_file_location(name, pyboy_dir / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


# ---------------------------------------------------------------- timer


def timer_fields(t) -> list[int]:
    return [
        t.DIV,
        t.TIMA,
        t.DIV_counter,
        t.TIMA_counter,
        t.TMA,
        t.TAC,
        t.tima_reload_state,
        t.last_cycles,
        t._cycles_to_interrupt,
    ]


def random_delta(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.45:
        return rng.randint(1, 12)
    if r < 0.75:
        return rng.randint(1, 300)
    if r < 0.95:
        return rng.randint(1, 5000)
    return rng.randint(1, 80000)


def timer_vectors(timer_mod, seeds: int, steps: int) -> list[dict]:
    """Each step: [op, arg, result, *fields]; op 0 tick(arg) (result: interrupt 0/1), 1 DIV write
    (reset), 2 TIMA write, 3 TMA write, 4 TAC write (result 0), 5 TIMA read (result: value)."""
    out = []
    for seed in range(seeds):
        rng = random.Random(1000 + seed)
        t = timer_mod.Timer()
        cycles = 0
        seq = []
        for _ in range(steps):
            op = rng.choices(range(6), weights=[10, 1, 1, 1, 2, 2])[0]
            arg = 0
            res = 0
            if op == 0:
                cycles += random_delta(rng)
                arg = cycles
                res = int(bool(t.tick(cycles)))
            elif op == 1:
                t.reset()
            elif op == 2:
                arg = rng.choice([0, 0xFF, 0xFE, 0xF0, rng.randrange(256)])
                t.write_tima(arg)
            elif op == 3:
                arg = rng.choice([0, 0xFF, 0xFE, 0xF0, rng.randrange(256)])
                t.write_tma(arg)
            elif op == 4:
                arg = rng.choice([rng.randrange(8) | 4, rng.randrange(8), rng.randrange(256)])
                t.write_tac(arg)
            else:
                res = t.read_tima()
            seq.append([op, arg, res, *timer_fields(t)])
        out.append({"seed": 1000 + seed, "steps": seq})
    return out


# ---------------------------------------------------------------- serial


def serial_fields(s) -> list[int]:
    return [
        s.SB,
        s.SC,
        # raw values: Cython bint fields keep SC & 0x80 (= 0x80) and save it as is
        s.transfer_enabled,
        s.internal_clock,
        s.last_cycles,
        s._cycles_to_interrupt,
        s.clock,
        s.clock_target,
    ]


def serial_vectors(serial_mod, seeds: int, steps: int) -> list[dict]:
    """Each step: [op, arg, result, *fields]; op 0 tick(arg), 1 set_SB(arg), 2 set_SC(arg)."""
    out = []
    for seed in range(seeds):
        rng = random.Random(2000 + seed)
        s = serial_mod.Serial(False)
        cycles = 0
        seq = []
        for _ in range(steps):
            op = rng.choices(range(3), weights=[8, 1, 2])[0]
            res = 0
            if op == 0:
                cycles += random_delta(rng)
                arg = cycles
                res = int(bool(s.tick(cycles)))
            elif op == 1:
                arg = rng.randrange(256)
                s.set_SB(arg)
            else:
                arg = rng.choice([0x81, 0x80, 0x01, 0x00, rng.randrange(256)])
                s.set_SC(arg)
            seq.append([op, arg, res, *serial_fields(s)])
        out.append({"seed": 2000 + seed, "steps": seq})
    return out


# ---------------------------------------------------------------- joypad


def interaction_vectors(inter_mod, seeds: int, steps: int) -> list[dict]:
    """Each step: [event, interrupt, directional, standard, pull(0x00), pull(0x10), pull(0x20),
    pull(0x30), pull(v), v] with PyBoy's WindowEvent numbers 0..20 (1-16 are the buttons)."""
    out = []
    for seed in range(seeds):
        rng = random.Random(5000 + seed)
        j = inter_mod.Interaction()
        seq = []
        for _ in range(steps):
            event = rng.randint(0, 20)
            irq = int(bool(j.key_event(event)))
            v = rng.randrange(256)
            pulls = [j.pull(x) for x in (0x00, 0x10, 0x20, 0x30, v)]
            seq.append([event, irq, j.directional, j.standard, *pulls, v])
        out.append({"seed": 5000 + seed, "steps": seq})
    return out


# ---------------------------------------------------------------- RTC


def f64hex(x: float) -> str:
    return struct.pack("<d", x).hex()


def rtc_fields(r) -> list:
    return [
        r.seconds,
        r.minutes,
        r.hours,
        r.day_low,
        r.day_high,
        r.day_carry,
        r.halt,
        r.rtc_cycles,
        r.last_cycles,
        int(bool(r.latch_enabled)),
        r.sec_latch,
        r.min_latch,
        r.hour_latch,
        r.day_latch_low,
        r.day_latch_high,
        f64hex(r.timezero),
    ]


def rtc_vectors(rtc_mod, utils_mod, seeds: int, steps: int) -> list[dict]:
    """PyBoy's rtc.py with `time.time()` replaced by a fake clock. Each step: [op, a, b, result,
    *fields]; op 0 tick(a), 1 writecommand(a), 2 setregister(a, b), 3 getregister(a) (result),
    4 fake clock += a / 1000 s, 5 save_state (result: hex bytes), 6 load_state(last saved),
    7 timelock = a."""
    import types

    clock = [1.7e9]
    rtc_mod.time = types.SimpleNamespace(time=lambda: clock[0])
    # the source module's %-style logger calls do not fit PyBoy's compiled Logger
    quiet = types.SimpleNamespace(debug=lambda *a: None, info=lambda *a: None)
    rtc_mod.logger = quiet
    cps = rtc_mod.RTC_CYCLES_PER_SECOND
    out = []
    for seed in range(seeds):
        rng = random.Random(4000 + seed)
        clock[0] = 1.7e9 + seed * 1234.5
        start = clock[0]
        r = rtc_mod.RTC(None)
        cycles = 0
        saved = None
        seq = []
        for _ in range(steps):
            op = rng.choices(range(8), weights=[10, 3, 4, 4, 3, 1, 1, 1])[0]
            a = b = 0
            res = 0
            if op == 0:
                if rng.random() < 0.2:
                    a = cycles  # same cycle count: host-time fallback
                else:
                    cycles += rng.choice(
                        [rng.randint(1, 5000), rng.randint(1, 3 * cps), rng.randint(1, 9000 * cps)]
                    )
                    a = cycles
                r.tick(a)
            elif op == 1:
                a = rng.choice([0, 1, 1, 2])
                r.writecommand(a)
            elif op == 2:
                a = rng.randint(0x08, 0x0C)
                b = rng.choice(
                    [rng.randrange(256), 59, 0x3B, 0x3F, 23, 0x17, 0x1F, 0xFF, 0x40, 0x01]
                )
                r.setregister(a, b)
            elif op == 3:
                a = rng.randint(0x08, 0x0C)
                res = r.getregister(a)
            elif op == 4:
                a = rng.choice([0, 250, 1000, 61_500, 3_600_000, 90_000_000])
                clock[0] += a / 1000
            elif op == 5:
                buf = io.BytesIO()
                r.save_state(utils_mod.IntIOWrapper(buf))
                saved = buf.getvalue()
                res = saved.hex()
            elif op == 6 and saved is not None:
                r.load_state(utils_mod.IntIOWrapper(io.BytesIO(saved)), utils_mod.STATE_VERSION)
            elif op == 7:
                a = rng.choice([0, 0, 1])
                r.timelock = bool(a)
            seq.append([op, a, b, res, *rtc_fields(r)])
        out.append({"seed": 4000 + seed, "start": f64hex(start), "steps": seq})
    return out


# ---------------------------------------------------------------- cartridge

# name, type 0x147, ROM banks, RAM code 0x149, distinct logo bytes per bank
CART_CONFIGS = [
    ("rom_only", 0x00, 2, 0x00, True),
    ("rom_only_ram", 0x09, 2, 0x02, True),
    ("mbc1_128", 0x03, 128, 0x03, True),
    ("mbc1_64_plain", 0x01, 64, 0x00, True),
    ("mbc1_multicart", 0x02, 64, 0x02, False),
    ("mbc1_20", 0x03, 20, 0x02, True),
    ("mbc2", 0x06, 16, 0x00, True),
    ("mbc3_128", 0x13, 128, 0x03, True),
    ("mbc3_rtc", 0x10, 64, 0x03, True),
    ("mbc30", 0x13, 256, 0x05, True),
    ("mbc5_512", 0x1B, 512, 0x04, True),
    ("mbc5_rumble", 0x1E, 48, 0x03, True),
    ("mbc5_rumble_noram", 0x1C, 8, 0x00, True),
]


def make_rom(carttype: int, banks: int, ramcode: int, distinct_logo: bool) -> bytes:
    """Bank b holds b at 0x2000 (low byte) and 0x2001 (high byte); with distinct_logo also at
    0x0104 (so only the multicart config repeats the logo area in every bank)."""
    rom = bytearray(banks * 0x4000)
    for b in range(banks):
        base = b * 0x4000
        rom[base + 0x2000] = b & 0xFF
        rom[base + 0x2001] = b >> 8
        if distinct_logo:
            rom[base + 0x0104] = b & 0xFF
    rom[0x134:0x13C] = b"EMURUSTC"
    rom[0x147] = carttype
    rom[0x149] = ramcode
    x = 0
    for v in rom[0x134:0x14D]:
        x = (x - v - 1) & 0xFF
    rom[0x14D] = x
    return bytes(rom)


def cart_block(pyboy, ram_count: int, rtc: bool) -> bytes:
    buf = io.BytesIO()
    pyboy.save_state(buf)
    state = buf.getvalue()
    block = state[CART_OFFSET : len(state) - TAIL_AFTER_CART]
    if rtc:
        cut = 4 + ram_count * 8192
        block = block[:cut] + block[cut + RTC_SIZE :]
    return block


def random_cart_op(rng: random.Random) -> tuple[int, int, int]:
    """(op, addr, value): op 0 write, 1 read."""
    r = rng.random()
    if r < 0.45:  # MBC command
        region = rng.choice([0x0000, 0x2000, 0x3000, 0x4000, 0x6000, 0x0100, 0x2100])
        addr = region + rng.choice([0, 0xFF, rng.randrange(0x1000)])
        value = rng.choice([0, 1, 0x0A, 0x0B, 0x1A, 0x08, 0x0C, 0x0D, 0x03, 0x20, 0x80, 0xFF])
        if rng.random() < 0.4:
            value = rng.randrange(256)
        return 0, addr & 0x7FFF, value
    if r < 0.65:  # cartridge RAM write
        return (
            0,
            0xA000 + rng.choice([0, 1, 0x1FF, 0x200, 0x1FFF, rng.randrange(0x2000)]),
            rng.randrange(256),
        )
    if r < 0.85:  # cartridge RAM read
        return 1, 0xA000 + rng.choice([0, 1, 0x1FF, 0x200, 0x1FFF, rng.randrange(0x2000)]), 0
    return 1, rng.choice([0x2000, 0x2001, 0x6000, 0x6001, 0x2104 - 0x2000, 0x4104]), 0


def cartridge_vectors(steps: int) -> list[dict]:
    from pyboy import PyBoy

    out = []
    with tempfile.TemporaryDirectory() as d:
        for i, (name, carttype, banks, ramcode, distinct) in enumerate(CART_CONFIGS):
            rng = random.Random(3000 + i)
            path = os.path.join(d, f"{name}.gb")
            with open(path, "wb") as fh:
                fh.write(make_rom(carttype, banks, ramcode, distinct))
            rtc = carttype in (0x0F, 0x10)
            pyboy = PyBoy(path, window="null", cgb=False, sound_emulated=False)
            try:
                if rtc:
                    pyboy.rtc_lock_experimental(True)
                seq = []
                for _ in range(steps):
                    op, addr, value = random_cart_op(rng)
                    if op == 0:
                        pyboy.memory[addr] = value
                        res = 0
                    else:
                        res = pyboy.memory[addr]
                    block = cart_block(pyboy, RAM_BANKS[ramcode], rtc)
                    seq.append([op, addr, value, res, *block[:4], f"{fnv1a64(block):016x}"])
            finally:
                pyboy.stop(save=False)
            out.append(
                {
                    "name": name,
                    "carttype": carttype,
                    "banks": banks,
                    "ramcode": ramcode,
                    "distinct_logo": distinct,
                    "steps": seq,
                }
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None,
                    help="default: the crate's target/vectors")
    ap.add_argument(
        "--pyboy-dir", type=Path, help="pyboy package folder (default: the installed pyboy's)"
    )
    ap.add_argument("--cart-steps", type=int, default=120)
    args = ap.parse_args(argv)
    if args.out is None:
        from emurust.tools import vectors_dir

        args.out = vectors_dir()
    if args.pyboy_dir is None:
        args.pyboy_dir = pyboy_package_dir()
    args.out.mkdir(parents=True, exist_ok=True)
    timer_mod = load_source(args.pyboy_dir, "core/timer.py", "emurust_oracle_timer")
    serial_mod = load_source(args.pyboy_dir, "core/serial.py", "emurust_oracle_serial")
    inter_mod = load_source(args.pyboy_dir, "core/interaction.py", "emurust_oracle_joypad")
    rtc_mod = load_source(args.pyboy_dir, "core/cartridge/rtc.py", "emurust_oracle_rtc")
    import pyboy.utils as utils_mod

    files = {
        "timer.json": timer_vectors(timer_mod, seeds=40, steps=150),
        "serial.json": serial_vectors(serial_mod, seeds=20, steps=120),
        "interaction.json": interaction_vectors(inter_mod, seeds=10, steps=100),
        "rtc.json": rtc_vectors(rtc_mod, utils_mod, seeds=20, steps=150),
        "cartridge.json": cartridge_vectors(args.cart_steps),
    }
    for fname, data in files.items():
        p = args.out / fname
        p.write_text(json.dumps(data, separators=(",", ":")))
        print(f"wrote {p} ({p.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
