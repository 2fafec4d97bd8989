#!/usr/bin/env python3
"""Record per-instruction test vectors for emurust's CPU from PyBoy 2.8.1's own Python sources.

Run with an interpreter that has pyboy 2.8.1 installed (its wheel ships the ``.py`` sources,
read from that installed package)::

    python -m emurust.tools.cpu_vectors [--system]

``pyboy/core/opcodes.py`` and ``pyboy/core/cpu.py`` are loaded from source (the compiled
classes hide their ``cdef`` methods) with a fake motherboard: a flat 64 KiB memory whose
``getitem/setitem/getitem_io_ports/setitem_io_ports`` log every access with ``cpu.cycles`` and
``cpu.memory_access_offset`` at that moment (PyBoy's catch-up timing depends on both), and with
``bootrom_enabled = True`` so that instructions are fetched through ``getitem`` as PyBoy does
outside the ROM fast path. The opcodes read ``cpu.mb.*``, as in PyBoy.

Cases (seeded, so the file is reproducible):

* ``step``: every opcode 0x00-0xFF and every CB opcode, from random register/flag/memory states
  biased to edges (0x00/0xFF/0xFFFF/0x7F...), one ``CPU.fetch_and_execute()``;
* ``tick``: random interrupt/HALT/EI states and random code, one ``CPU.tick(target)``.

Illegal opcodes (PyBoy's ``no_opcode`` and ``BRK``) are patched to raise, which stops the Python
CPU exactly where emurust returns ``EmuError::IllegalOpcode``.

With ``--system``, also runs ROMs (one written here, plus the package's test ROMs
when built: ``python -m emurust.tools.build_roms`` puts them in the user cache folder) from power-on in the compiled PyBoy (``window="null", cgb=False,
sound_emulated=False``) and stores its save states after a few frame counts in
``target/vectors/system/`` for the Motherboard test in ``src/mb.rs``.

Output: ``packages/emurust/target/vectors/cpu.json`` (git-ignored), a JSON array with one flat
integer array per case (layout in ``encode``), read by the ``vectors`` test in ``src/cpu.rs``.
Registers are recorded as the Python objects hold them (unbounded ints); emurust's u8/u16 fields
only match if PyBoy never leaves an unmasked value behind, which these vectors therefore check.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import types
from pathlib import Path

from emurust.tools.pyboy_source import pyboy_package_dir

REGS = [
    "A", "F", "B", "C", "D", "E", "HL", "SP", "PC",
    "interrupt_master_enable", "interrupts_enabled_register", "interrupts_flag_register",
    "interrupt_enable_delay", "interrupt_queued", "halted", "halted_during_ei", "stopped",
    "cycles", "memory_access_offset", "bail",
]  # fmt: skip
MODE_STEP, MODE_TICK = 0, 1
EDGE8 = [0x00, 0x01, 0x0F, 0x10, 0x7F, 0x80, 0x99, 0x9A, 0xF0, 0xFE, 0xFF]
EDGE16 = [0x0000, 0x0001, 0x00FF, 0x0100, 0x0FFF, 0x1000, 0x7FFF, 0x8000, 0xFF7F, 0xFFFE, 0xFFFF]


class IllegalOpcode(Exception):
    pass




def find_core() -> Path:
    return pyboy_package_dir() / "core"


def load_reference(core: Path):
    """opcodes.py and cpu.py from source, as a package of their own (so `from . import opcodes`
    in cpu.py gets the source module, not PyBoy's compiled one)."""
    pkg = types.ModuleType("emurust_ref")
    pkg.__path__ = []
    sys.modules["emurust_ref"] = pkg
    mods = {}
    for name in ("opcodes", "cpu"):
        spec = importlib.util.spec_from_file_location(f"emurust_ref.{name}", core / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        setattr(pkg, name, mod)
        mods[name] = mod

    def illegal(cpu):
        raise IllegalOpcode()

    mods["opcodes"].no_opcode = illegal
    mods["opcodes"].BRK = illegal
    return mods["opcodes"], mods["cpu"]


class FakeMB:
    """Flat memory with an access log; C argument types truncate like Cython's cdef calls."""

    def __init__(self, mem: bytearray):
        self.mem = mem
        self.log: list[tuple[int, int, int, int, int]] = []
        self.bootrom_enabled = True
        self.cgb = False
        self.cpu = None

    def _read(self, i):
        i &= 0xFFFF
        v = self.mem[i]
        self.log.append((0, i, v, self.cpu.cycles, self.cpu.memory_access_offset))
        return v

    def _write(self, i, v):
        i &= 0xFFFF
        v &= 0xFF
        self.mem[i] = v
        self.log.append((1, i, v, self.cpu.cycles, self.cpu.memory_access_offset))

    getitem = getitem_io_ports = _read
    setitem = setitem_io_ports = _write


def rnd8(r: random.Random) -> int:
    return r.choice(EDGE8) if r.random() < 0.3 else r.randrange(256)


def rnd16(r: random.Random) -> int:
    return r.choice(EDGE16) if r.random() < 0.3 else r.randrange(65536)


def random_cpu(cpu_mod, r: random.Random, mb: FakeMB, tick: bool):
    cpu = cpu_mod.CPU(mb)
    mb.cpu = cpu
    for n in "ABCDE":
        setattr(cpu, n, rnd8(r))
    cpu.F = rnd8(r) & 0xF0
    cpu.HL, cpu.SP, cpu.PC = rnd16(r), rnd16(r), rnd16(r)
    cpu.interrupt_master_enable = r.random() < 0.5
    cpu.interrupts_enabled_register = rnd8(r)
    cpu.interrupts_flag_register = rnd8(r) & 0x1F
    cpu.interrupt_enable_delay = r.choice([0, 0, 0, 1, 2])
    cpu.cycles = r.randrange(1 << 40)
    cpu.memory_access_offset = 0
    cpu.bail = False
    if tick:
        cpu.halted = r.random() < 0.4
        cpu.halted_during_ei = r.random() < 0.3
        cpu.interrupt_queued = r.random() < 0.2
    return cpu


BOOLS = {"interrupt_master_enable", "interrupt_queued", "halted", "halted_during_ei", "stopped"}
BOOLS |= {"bail"}


def snapshot(cpu) -> list[int]:
    # bint fields: Cython stores truthiness (RETI/EI leave an int in the Python attribute).
    return [int(bool(getattr(cpu, n))) if n in BOOLS else int(getattr(cpu, n)) for n in REGS]


def encode(mode, arg, illegal, regs_in, init, regs_out, log) -> list[int]:
    """[mode, arg, illegal, *regs_in(20), n_init, (addr, value)*, *regs_out(20), n_log,
    (kind, addr, value, cycles, memory_access_offset)*]"""
    out = [mode, arg, int(illegal), *regs_in, len(init)]
    for a, v in init:
        out += [a, v]
    out += regs_out
    out.append(len(log))
    for e in log:
        out += list(e)
    return out


def run_case(cpu_mod, r: random.Random, mode: int, opcode: int | None) -> list[int]:
    mem = bytearray(r.randbytes(65536))
    mb = FakeMB(mem)
    cpu = random_cpu(cpu_mod, r, mb, tick=(mode == MODE_TICK))
    arg = 0
    if mode == MODE_STEP:
        pc = cpu.PC
        if opcode >= 0x100:
            mem[pc] = 0xCB
            mem[(pc + 1) & 0xFFFF] = opcode & 0xFF
        else:
            mem[pc] = opcode
            if r.random() < 0.3:
                mem[(pc + 1) & 0xFFFF] = rnd8(r)
                mem[(pc + 2) & 0xFFFF] = rnd8(r)
    else:
        arg = r.choice([4, 8, 12, 20, 24, 40, 64, 100])
    orig = bytes(mem)
    regs_in = snapshot(cpu)
    illegal = False
    try:
        if mode == MODE_STEP:
            cpu.fetch_and_execute()
        else:
            cpu.tick(arg)
    except IllegalOpcode:
        illegal = True
    addrs = sorted({e[1] for e in mb.log})
    init = [(a, orig[a]) for a in addrs]
    return encode(mode, arg, illegal, regs_in, init, snapshot(cpu), mb.log)


# A ROM written here (no toolchain): boot, select the d-pad, copy FF00 to C001, count in C000.
LOOP_PROGRAM = bytes(
    [0x3E, 0x20, 0xE0, 0x00, 0xF0, 0x00, 0xEA, 0x01, 0xC0, 0x21, 0x00, 0xC0, 0x34, 0x18, 0xF1]
)
SYSTEM_FRAMES = (1, 2, 63, 64, 65, 100)


def events_for_frame(f: int) -> list[int]:
    """Joypad WindowEvents sent before the f-th tick (1-based); the same rule is in src/mb.rs.
    From frame 66 (after the boot ROM): every 5 frames press one of the 8 buttons (codes 1-8,
    PyBoy's WindowEvent.PRESS_*), release it (9-16) 2 frames later."""
    if f < 66:
        return []
    k = (f // 5) % 8
    if f % 5 == 0:
        return [1 + k]
    if f % 5 == 2:
        return [9 + k]
    return []


def loop_rom() -> bytes:
    rom = bytearray(0x8000)
    rom[0x100:0x104] = bytes([0x00, 0xC3, 0x50, 0x01])  # nop; jp 0x150
    rom[0x150 : 0x150 + len(LOOP_PROGRAM)] = LOOP_PROGRAM
    rom[0x134:0x138] = b"LOOP"
    x = 0
    for b in rom[0x134:0x14D]:
        x = (x - b - 1) & 0xFF
    rom[0x14D] = x
    return bytes(rom)


def render_sound_for_frame(f: int) -> tuple[bool, bool]:
    """`tick(1, render, sound)` arguments of the f-th tick (same rule in src/mb.rs): frames with
    rendering off (PyBoy then skips the scanline renderer, window line counter included) and
    with `sound.disable_sampling` set (saved in the state) are mixed in."""
    return f % 3 != 0, f % 4 != 0


def fix_header(rom: bytearray, title: bytes) -> bytes:
    rom[0x134 : 0x134 + len(title)] = title
    x = 0
    for b in rom[0x134:0x14D]:
        x = (x - b - 1) & 0xFF
    rom[0x14D] = x
    return bytes(rom)


def fastpath_rom() -> bytes:
    """MBC1, 4 banks, bank 2 selected, then code at 0x3FFE-0x3FFF: PyBoy's fetch fast path reads
    `rombanks[rombank_selected, PC - 0x4000]` there (PC + 2 >= 0x4000) without bounds checks,
    i.e. the last bytes of bank 1 (file 0x7FFE), not bank 0's. Bank 0 has `ld a,0x11` there,
    bank 1 `ld a,0x22`; bank 2 at 0x4000 stores A to C000 and loops. PyBoy stores 0x22."""
    rom = bytearray(0x10000)
    rom[0x147], rom[0x148] = 0x01, 0x01  # MBC1, 64 KiB
    rom[0x100:0x104] = bytes([0x00, 0xC3, 0x50, 0x01])  # nop; jp 0x150
    # ld a,2; ld (0x2000),a; jp 0x3FFE
    rom[0x150:0x158] = bytes([0x3E, 0x02, 0xEA, 0x00, 0x20, 0xC3, 0xFE, 0x3F])
    rom[0x3FFE:0x4000] = bytes([0x3E, 0x11])  # bank 0: ld a,0x11
    rom[0x7FFE:0x8000] = bytes([0x3E, 0x22])  # bank 1: ld a,0x22
    # bank 2 at 0x4000: ld (0xC000),a; jr -2 (loop on itself)
    rom[0x8000:0x8005] = bytes([0xEA, 0x00, 0xC0, 0x18, 0xFE])
    return fix_header(rom, b"FASTPATH")


def system_vectors(outdir: Path, frames: tuple[int, ...] = SYSTEM_FRAMES) -> int:
    """Whole-system: PyBoy (compiled, the reference configuration) from power-on with the inputs
    of events_for_frame and the render/sound flags of render_sound_for_frame; its save state after each frame count N in `frames` as
    <rom>.fN.state, and as <rom>.fN.load1 the state of a fresh PyBoy that loaded it and ran one
    more frame (with frame N+1's inputs), for the Motherboard test in src/mb.rs."""
    import io

    from pyboy import PyBoy

    outdir.mkdir(parents=True, exist_ok=True)
    for old in outdir.glob("*"):
        old.unlink()
    roms = {"loop": loop_rom(), "fastpath": fastpath_rom()}
    from emurust.tools.build_roms import build_all

    for name, p in sorted(build_all().items()):
        roms[name] = p.read_bytes()
    for name, data in roms.items():
        path = outdir / f"{name}.gb"
        path.write_bytes(data)
        pb = PyBoy(str(path), window="null", cgb=False, sound_emulated=False)
        pb.set_emulation_speed(0)
        for frame in range(1, max(frames) + 1):
            for e in events_for_frame(frame):
                pb.send_input(e)
            pb.tick(1, *render_sound_for_frame(frame))
            if frame in frames:
                buf = io.BytesIO()
                pb.save_state(buf)
                state = buf.getvalue()
                (outdir / f"{name}.f{frame}.state").write_bytes(state)
                # L2-style: that state loaded into a fresh PyBoy, then one more frame.
                other = PyBoy(str(path), window="null", cgb=False, sound_emulated=False)
                other.set_emulation_speed(0)
                other.load_state(io.BytesIO(state))
                for e in events_for_frame(frame + 1):
                    other.send_input(e)
                other.tick(1, *render_sound_for_frame(frame + 1))
                buf = io.BytesIO()
                other.save_state(buf)
                (outdir / f"{name}.f{frame}.load1").write_bytes(buf.getvalue())
                other.stop(save=False)
        pb.stop(save=False)
    print(f"wrote {len(roms)} ROMs x {len(frames)} states to {outdir}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None,
                    help="default: the crate's target/vectors/cpu.json")
    ap.add_argument(
        "--system",
        action="store_true",
        help="also write whole-system vectors (ROMs + PyBoy save states) next to --out",
    )
    ap.add_argument(
        "--frames",
        default=",".join(map(str, SYSTEM_FRAMES)),
        help="frame counts at which --system stores states (comma-separated)",
    )
    ap.add_argument("--per-opcode", type=int, default=24)
    ap.add_argument("--ticks", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20261130)
    args = ap.parse_args(argv)
    if args.out is None:
        from emurust.tools import vectors_dir

        args.out = vectors_dir() / "cpu.json"

    _, cpu_mod = load_reference(find_core())
    r = random.Random(args.seed)
    cases = []
    for opcode in range(512):
        for _ in range(args.per_opcode):
            cases.append(run_case(cpu_mod, r, MODE_STEP, opcode))
    for _ in range(args.ticks):
        cases.append(run_case(cpu_mod, r, MODE_TICK, None))

    args.out.parent.mkdir(parents=True, exist_ok=True)
    lines = ["[" + ",".join(str(x) for x in c) + "]" for c in cases]
    args.out.write_text("[\n" + ",\n".join(lines) + "\n]\n")
    print(f"wrote {len(cases)} cases to {args.out}", file=sys.stderr)
    if args.system:
        frames = tuple(sorted({int(x) for x in args.frames.split(",")}))
        return system_vectors(args.out.parent / "system", frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
