"""Differential test vectors for emurust's LCD (packages/emurust/src/lcd.rs).

Loads PyBoy 2.8.1's pure-Python ``pyboy/core/lcd.py`` from source (the compiled module hides its
``cdef`` methods), drives it alone with random operation sequences (LCDC/STAT/LYC/scroll/palette
writes as ``Motherboard.setitem_io_ports`` does them, VRAM writes with and without tile-cache
invalidation, OAM writes, STAT reads as ``Motherboard.getitem`` does them, ``tick`` to increasing
absolute cycle counts, render on/off, save_state and load_state) and records after every
operation its return value, the LCD's timing fields and a CRC-32 of the screen and attribute
buffers. ``cargo test`` in packages/emurust (``lcd::tests::pyboy_vectors``) replays them.

Usage (needs a Python with pyboy==2.8.1 installed; the sources come from that package)::

    python -m emurust.tools.lcd_vectors [--out DIR] [--ops N]

Writes DIR/lcd_<scenario>_<seed>.json (default DIR: packages/emurust/target/vectors, git-ignored).
The pure-Python run has unbounded ints where Cython has fixed widths; the sequences only use
increasing cycle counts and byte-sized values, where both agree.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import zlib
from pathlib import Path

from emurust.tools.pyboy_source import pyboy_package_dir

GREY = (0xFFFFFF, 0x999999, 0x555555, 0x000000)
SNAPSHOT_FIELDS = [
    "LY",
    "LYC",
    "STAT.value",
    "STAT._mode",
    "STAT._irq_line",
    "clock",
    "clock_target",
    "last_cycles",
    "next_stat_mode",
    "stat_transition",
    "_cycles_to_interrupt",
    "_cycles_to_frame",
    "frame_done",
    "first_frame",
    "reset",
    "mode3_adjustment",
    "stat_mode_override",
    "lyc_changed_while_disabled",
    "renderer.wy_activated_frame",
    "renderer.ly_window",
    "LCDC.value",
    "SCX",
    "SCY",
    "WX",
    "WY",
    "BGP",
    "OBP0",
    "OBP1",
    "cycles_to_mode0()",
    "_is_startup_mode2_delay()",
]


def load_lcd_module():
    path = pyboy_package_dir() / "core" / "lcd.py"
    spec = importlib.util.spec_from_file_location("pyboy_lcd_source", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Writer:
    """PyBoy's IntIOInterface write side (little-endian, one byte per write)."""

    def __init__(self):
        self.buf = bytearray()

    def write(self, v):
        v = int(v)
        assert 0 <= v <= 0xFF, v
        self.buf.append(v)

    def write_16bit(self, v):
        self.buf += int(v).to_bytes(2, "little")

    def write_32bit(self, v):
        self.buf += int(v).to_bytes(4, "little")

    def write_64bit(self, v):
        self.buf += int(v).to_bytes(8, "little")


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def _take(self, n):
        assert self.pos + n <= len(self.data), "truncated"
        v = int.from_bytes(self.data[self.pos : self.pos + n], "little")
        self.pos += n
        return v

    def read(self):
        return self._take(1)

    def read_16bit(self):
        return self._take(2)

    def read_32bit(self):
        return self._take(4)

    def read_64bit(self):
        return self._take(8)


def snapshot(lcd):
    r = lcd.renderer
    vals = [
        lcd.LY,
        lcd.LYC,
        lcd._STAT.value,
        lcd._STAT._mode,
        bool(lcd._STAT._irq_line),
        lcd.clock,
        lcd.clock_target,
        lcd.last_cycles,
        lcd.next_stat_mode,
        lcd.stat_transition,
        lcd._cycles_to_interrupt,
        lcd._cycles_to_frame,
        bool(lcd.frame_done),
        bool(lcd.first_frame),
        bool(lcd.reset),
        lcd.mode3_adjustment,
        bool(lcd.stat_mode_override),
        bool(lcd.lyc_changed_while_disabled),
        bool(r.wy_activated_frame),
        r.ly_window,
        lcd._LCDC.value,
        lcd.SCX,
        lcd.SCY,
        lcd.WX,
        lcd.WY,
        lcd.BGP.value,
        lcd.OBP0.value,
        lcd.OBP1.value,
        lcd.cycles_to_mode0(),
        bool(lcd._is_startup_mode2_delay()),
    ]
    return [int(v) for v in vals]


def screen_crc(lcd):
    r = lcd.renderer
    crc = zlib.crc32(bytes(r._screenbuffer_raw))
    return zlib.crc32(bytes(r._screenbuffer_attributes_raw), crc)


class Driver:
    """Applies one operation to the source-loaded LCD the way mb.py/pyboy.py would."""

    def __init__(self, mod):
        self.mod = mod
        self.lcd = mod.LCD(False, False, GREY, None)
        self.saved = []

    def apply(self, op):
        lcd = self.lcd
        name, args = op[0], op[1:]
        if name == "tick":
            return lcd.tick(args[0])
        if name == "lcdc":
            return lcd.set_lcdc(args[0])
        if name == "stat":
            return lcd._STAT.set(args[0])
        if name == "lyc":  # mb.setitem_io_ports(0xFF45)
            lcd.LYC = args[0]
            if lcd._LCDC.lcd_enable:
                return lcd._STAT.update_LYC(lcd.LYC, lcd.LY)
            lcd.lyc_changed_while_disabled = True
            return 0
        if name == "read_stat":  # mb.getitem(0xFF41)
            value = lcd._STAT.value
            if lcd.stat_mode_override:
                lcd.stat_mode_override = False
                value &= 0b1111_1100
            return value
        if name in ("scx", "scy", "wx", "wy"):
            setattr(lcd, name.upper(), args[0])
            return 0
        if name in ("bgp", "obp0", "obp1"):
            return int(getattr(lcd, name.upper()).set(args[0]))
        if name == "vram":  # mb.setitem(0x8000 + addr) store path: invalidates tile data
            i = args[0]
            lcd.VRAM0[i] = args[1]
            if i < 0x1800:
                lcd.renderer.invalidate_tile((i & 0xFFF0) // 16, 0)
            return 0
        if name == "vram_block":
            for i, v in enumerate(args):
                self.apply(["vram", i, v])
            return 0
        if name == "oam_block":
            for i, v in enumerate(args):
                lcd.OAM[i] = v
            return 0
        if name == "vram_raw":  # pyboy.memory[0, addr] = v: no invalidation (stale cache)
            lcd.VRAM0[args[0]] = args[1]
            return 0
        if name == "oam":
            lcd.OAM[args[0]] = args[1]
            return 0
        if name == "frame_start":  # PyBoy._tick: frame_done = False, disable_renderer = not render
            lcd.frame_done = False
            lcd.disable_renderer = not args[0]
            return 0
        if name == "penalty":
            return [lcd._mode3_timing_adjustment(ly) for ly in range(154)] + [
                lcd._mode3_sprite_penalty(ly) for ly in range(154)
            ]
        if name == "save":
            w = Writer()
            lcd.save_state(w)
            n_lcd = len(w.buf)
            lcd.renderer.save_state(w)
            self.saved.append(bytes(w.buf))
            tail = list(w.buf[8192 + 160 : n_lcd])
            return [
                n_lcd,
                zlib.crc32(w.buf[:n_lcd]),
                len(w.buf) - n_lcd,
                zlib.crc32(w.buf[n_lcd:]),
            ] + tail
        if name == "load":
            data = self.saved[args[0]]
            rd = Reader(data)
            lcd.load_state(rd, 29)
            lcd.renderer.load_state(rd, 29)
            lcd.renderer.clear_cache()  # mb.load_state does it too
            assert rd.pos == len(data)
            return 0
        raise ValueError(name)


# scenario: (mb-like tick targets, probability of a tick per operation, of an LCDC write
# switching the LCD off)
SCENARIOS = {
    "frames": (True, 0.93, 0.03),
    "midframe": (True, 0.7, 0.05),
    "random": (False, 0.75, 0.1),
}


def setup_ops(rng):
    """The start of every sequence: random tile data and maps, 40 sprites, palettes, LCD on."""
    ops = []
    # Setup: random tile data, maps and sprites mostly on screen.
    ops.append(
        ("vram_block", *[rng.getrandbits(8) if rng.random() < 0.9 else 0 for _ in range(0x2000)])
    )
    oam = []
    for _ in range(40):
        oam += [
            rng.randrange(0, 176),
            rng.randrange(0, 176),
            rng.getrandbits(8),
            rng.getrandbits(8),
        ]
    ops.append(("oam_block", *oam))
    ops.append(("bgp", 0xE4))
    ops.append(("obp0", 0xD2))
    ops.append(("obp1", 0x1B))
    ops.append(("wy", rng.randrange(0, 100)))
    ops.append(("wx", rng.randrange(0, 120)))
    ops.append(("penalty",))
    ops.append(("frame_start", True))
    ops.append(("lcdc", rng.choice([0x91, 0xB3, 0xF7, 0x83, 0xE3, 0x97])))
    return ops


def run_scenario(mod, scenario, seed, n_ops):
    rng = random.Random(f"{scenario}-{seed}")
    d = Driver(mod)
    steps = []

    def do(op):
        ret = d.apply(list(op))
        if isinstance(ret, bool):
            ret = int(ret)
        steps.append([op[0], list(op[1:]), ret, snapshot(d.lcd), screen_crc(d.lcd)])

    for op in setup_ops(rng):
        do(op)

    cycles = 0
    render = True
    while len(steps) < n_ops:
        lcd = d.lcd
        if lcd.frame_done:
            if rng.random() < 0.15:
                render = not render
            do(("frame_start", render))
        r = rng.random()
        mb_like, p_tick, p_lcd_off = SCENARIOS[scenario]
        if r < p_tick:
            if mb_like:
                # Motherboard.tick-like catch-up: to the next LCD event, plus instruction overshoot.
                step = max(4, min(lcd._cycles_to_interrupt, lcd._cycles_to_frame))
                step += rng.choice([0, 0, 0, 4, 8, 12, 20])
            else:
                u = rng.random()
                if u < 0.5:
                    step = 4 * rng.randrange(1, 10)
                elif u < 0.85:
                    step = rng.randrange(1, 500)
                elif u < 0.98:
                    step = rng.randrange(500, 6000)
                else:
                    step = rng.randrange(70000, 150000)
            cycles += step
            do(("tick", cycles))
            continue
        # Register/memory traffic.
        w = rng.random()
        if w < 0.12:
            do(("scx", rng.getrandbits(8)))
        elif w < 0.2:
            do(("scy", rng.getrandbits(8)))
        elif w < 0.27:
            do(("wx", rng.randrange(0, 175)))
        elif w < 0.33:
            do(("wy", rng.randrange(0, 150)))
        elif w < 0.4:
            do(("bgp", rng.getrandbits(8)))
        elif w < 0.43:
            do(("obp0", rng.getrandbits(8)))
        elif w < 0.46:
            do(("obp1", rng.getrandbits(8)))
        elif w < 0.53:
            do(("stat", rng.getrandbits(8)))
        elif w < 0.61:
            ly = d.lcd.LY
            do(("lyc", rng.choice([ly, (ly + 1) & 0xFF, rng.randrange(0, 154), 0])))
        elif w < 0.66:
            do(("read_stat",))
        elif w < 0.72:
            en = 0 if rng.random() < p_lcd_off else 0x80
            do(("lcdc", en | rng.getrandbits(7)))
        elif w < 0.82:
            do(("vram", rng.randrange(0, 0x2000), rng.getrandbits(8)))
        elif w < 0.84:
            do(("vram_raw", rng.randrange(0, 0x1800), rng.getrandbits(8)))
        elif w < 0.92:
            do(("oam", rng.randrange(0, 0xA0), rng.getrandbits(8)))
        elif w < 0.94:
            do(("penalty",))
        elif w < 0.97:
            do(("save",))
        elif d.saved:
            do(("load", rng.randrange(len(d.saved))))
            cycles = max(cycles, d.lcd.last_cycles)
    do(("save",))
    return {
        "scenario": scenario,
        "seed": seed,
        "snapshot_fields": SNAPSHOT_FIELDS,
        "steps": steps,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None,
                    help="default: the crate's target/vectors")
    ap.add_argument("--ops", type=int, default=6000, help="operations per scenario (incl. setup)")
    args = ap.parse_args(argv)
    if args.out is None:
        from emurust.tools import vectors_dir

        args.out = vectors_dir()
    mod = load_lcd_module()
    args.out.mkdir(parents=True, exist_ok=True)
    runs = [
        ("frames", 1),
        ("frames", 2),
        ("midframe", 1),
        ("midframe", 2),
        ("random", 1),
        ("random", 2),
    ]
    for scenario, seed in runs:
        data = run_scenario(mod, scenario, seed, args.ops)
        path = args.out / f"lcd_{scenario}_{seed}.json"
        path.write_text(json.dumps(data, separators=(",", ":")))
        print(f"{path}: {len(data['steps'])} steps")


if __name__ == "__main__":
    main()
