"""Side-by-side harness: real PyBoy 2.8.1 (the reference) and emurust driven identically.

Both sides are wrapped as envport :class:`~envport.backend.Backend` objects (``EmuBackend``) so
``envport verify emurust`` runs them through its L2/L3 machinery, and the package's own tests use
the same helpers for their short live samples.

Action encoding (one ``int32`` per env and frame): bits 0-7 press, bits 8-15 release the buttons
``up, down, right, left, a, b, select, start`` (``emurust.utils.BUTTONS`` order); presses are
sent before releases, all through ``button_press``/``button_release``, i.e. PyBoy's event queue
applied at the start of the next frame; then one ``tick()``. 0 = no event.

Canonical state per frame (what L2/L3 diff, in this order, so the first differing field is the
most telling one): ``registers`` (A F B C D E HL SP PC and the CPU cycle counter), ``io``
(FF00-FF7F through ``memory[...]``), ``hram`` (FF80-FFFF), ``oam`` (FE00-FE9F), ``wram``
(C000-DFFF), ``vram`` (``memory[0, 0x8000..0x9FFF]``, bank access: no mode-3 blocking), ``screen``
(RGBA), ``frame_count`` (frames since power-on: a loaded state carries it on, as PyBoy's save
states do not), ``terminated`` (an episode's last frame), ``truncated`` (always False), and
``save_state`` (the complete save-state bytes; in L3 only at an episode's last frame, zeros
elsewhere, because PyBoy needs ~50 ms to write one; every frame with ``full_state``).
RTC carts run with ``rtc_lock_experimental(True)`` on both sides and their two host-time doubles
are zeroed before comparing (see ``mask_host_time``).
Reads go through each side's ``memory`` in the same order: they have side effects (catching up
the timer/LCD, STAT's mode override), which are then the same on both sides.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from emurust.utils import BUTTONS

PYBOY_VERSION = "2.8.1"
REFERENCE_INSTALL_HINT = "envport install-reference emurust   (or: pip install pyboy==2.8.1)"

# fields in diff order; sizes per env
FIELDS = ("registers", "io", "hram", "oam", "wram", "vram", "screen", "frame_count",
          "terminated", "truncated", "save_state")


def make_pyboy(rom: str | Path):
    """The reference configuration (docs/emurust.md): null window, DMG, sound off, unlimited speed,
    no .ram/.rtc files picked up from next to the ROM (they are read only when present)."""
    try:
        from pyboy import PyBoy
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(f"PyBoy {PYBOY_VERSION} is not installed: {REFERENCE_INSTALL_HINT}") from e
    logging.getLogger("pyboy").setLevel(logging.ERROR)
    pb = PyBoy(str(rom), window="null", cgb=False, sound_emulated=False, log_level="ERROR")
    pb.set_emulation_speed(0)
    return pb


def make_emurust(rom: str | Path):
    from emurust import PyBoy

    pb = PyBoy(str(rom), window="null", cgb=False, sound_emulated=False)
    pb.set_emulation_speed(0)
    return pb


def apply_action(pb, action: int) -> None:
    action = int(action)
    for i, name in enumerate(BUTTONS):
        if action >> i & 1:
            pb.button_press(name)
    for i, name in enumerate(BUTTONS):
        if action >> (8 + i) & 1:
            pb.button_release(name)


def save_state_bytes(pb) -> bytes:
    f = io.BytesIO()
    pb.save_state(f)
    return f.getvalue()


def load_state_bytes(pb, data: bytes) -> None:
    pb.load_state(io.BytesIO(bytes(data)))


def snapshot(pb, with_state: bool, state_size: int, terminated: bool = False,
             rtc_offset: int | None = None, frame_offset: int = 0) -> dict:
    """One frame's canonical state (see the module docstring); reads in a fixed order."""
    r = pb.register_file
    regs = np.array([r.A, r.F, r.B, r.C, r.D, r.E, r.HL, r.SP, r.PC, pb._cycles()], np.uint64)
    mem = pb.memory
    out = {
        "registers": regs,
        "io": np.array(mem[0xFF00:0xFF80], np.uint8),
        "hram": np.array(mem[0xFF80:0x10000], np.uint8),
        "oam": np.array(mem[0xFE00:0xFEA0], np.uint8),
        "wram": np.array(mem[0xC000:0xE000], np.uint8),
        # PyBoy's bank reads require stop < 0x2000, so the last byte comes separately
        "vram": np.array(mem[0, 0x8000:0x9FFF] + [mem[0, 0x9FFF]], np.uint8),
        "screen": np.array(pb.screen.ndarray, np.uint8),
        "frame_count": np.array(pb.frame_count + frame_offset, np.int64),
        "terminated": np.array(terminated),
        "truncated": np.array(False),
    }
    if with_state:
        data = mask_host_time(np.frombuffer(save_state_bytes(pb), np.uint8), rtc_offset)
        if data.size != state_size:  # a size mismatch is itself a difference: keep the shape
            fixed = np.zeros(state_size, np.uint8)
            fixed[: min(state_size, data.size)] = data[:state_size]
            fixed[-1] ^= 0xFF  # make sure it differs even if the prefix is equal
            data = fixed
        out["save_state"] = data
    else:
        out["save_state"] = np.zeros(state_size, np.uint8)
    return out


# -- save-state layout (v29, DMG), for naming the first differing byte ---------------------
_SECTIONS_FIXED = [("header", 6), ("cpu", 27), ("oam_dma", 12), ("lcd", 9116), ("sound", 2032),
                   ("renderer", 115201), ("ram", 8491), ("wram_select", 1), ("timer", 25)]
_TAIL = [("joypad", 2), ("serial", 36), ("sgb", 10379)]
_CPU = ["A", "F", "B", "C", "D", "E", "HL", "HL", "SP", "SP", "PC", "PC", "IME",
        "interrupt_enable_delay", "halted", "stopped", "IE", "interrupt_queued", "IF"] + ["cycles"] * 8
_LCD_NAMED = {8352: "LCDC", 8353: "BGP", 8354: "OBP0", 8355: "OBP1", 8356: "STAT", 8357: "LY",
              8358: "LYC", 8359: "SCY", 8360: "SCX", 8361: "WY", 8362: "WX",
              8363: "object_priority_mode", 9084: "cgb", 9085: "downgraded_to_dmg",
              9086: "speed_shift", 9087: "frame_done", 9088: "first_frame", 9089: "reset",
              9114: "next_stat_mode", 9115: "stat_transition"}
_TIMER = ["DIV", "TIMA", "DIV_counter", "DIV_counter", "TIMA_counter", "TIMA_counter", "TMA",
          "TAC", "tima_reload_state"] + ["last_cycles"] * 8 + ["_cycles_to_interrupt"] * 8


def describe_offset(offset: int, total: int) -> str:
    """Name the save-state field at ``offset`` (a file of ``total`` bytes; the cartridge block
    is what is left between the timer and the joypad)."""
    pos = 0
    for name, size in _SECTIONS_FIXED:
        if offset < pos + size:
            rel = offset - pos
            if name == "cpu":
                return f"cpu.{_CPU[rel]} (+{rel})"
            if name == "timer":
                return f"timer.{_TIMER[rel]} (+{rel})"
            if name == "lcd":
                if rel < 8192:
                    return f"lcd.VRAM[0x{rel:04X}]"
                if rel < 8352:
                    return f"lcd.OAM[{rel - 8192}]"
                if 8364 <= rel < 9084:
                    line, k = divmod(rel - 8364, 5)
                    return f"lcd.scanlineparameters[{line}][{k}]"
                if 9090 <= rel < 9114:
                    return "lcd." + ("last_cycles", "clock", "clock_target")[(rel - 9090) // 8]
                return f"lcd.{_LCD_NAMED.get(rel, '?')} (+{rel})"
            if name == "renderer":
                if rel == 115200:
                    return "renderer.wy_activated_frame"
                pix, k = divmod(rel, 5)
                y, x = divmod(pix, 160)
                return f"renderer.screen[y={y}, x={x}]" + (" attribute" if k == 4 else f" byte {k}")
            return f"{name} (+{rel})"
        pos += size
    tail = sum(s for _, s in _TAIL)
    cart_end = total - tail
    if offset < cart_end:
        return f"cartridge (+{offset - pos})"
    pos = cart_end
    for name, size in _TAIL:
        if offset < pos + size:
            return f"{name} (+{offset - pos})"
        pos += size
    return f"past the end (+{offset - total})"


def first_difference(ref: dict, cand: dict) -> str | None:
    """A one-line description of the first differing field (in ``FIELDS`` order)."""
    for name in FIELDS:
        a, b = np.asarray(ref[name]), np.asarray(cand[name])
        if a.shape != b.shape:
            return f"{name}: shape {a.shape} != {b.shape}"
        if np.any(a != b):
            idx = np.unravel_index(int(np.flatnonzero(a != b)[0]), a.shape) if a.ndim else ()
            where = "" if not idx else "[" + ", ".join(str(int(i)) for i in idx) + "]"
            extra = ""
            if name == "registers":
                extra = " (" + ("A F B C D E HL SP PC cycles".split()[int(idx[0])]) + ")"
            elif name == "save_state":
                extra = " (" + describe_offset(int(idx[0]), a.size) + ")"
            elif name in ("io", "hram", "oam", "wram", "vram"):
                base = {"io": 0xFF00, "hram": 0xFF80, "oam": 0xFE00, "wram": 0xC000, "vram": 0x8000}
                extra = f" (address 0x{base[name] + int(idx[0]):04X})"
            return f"{name}{where}{extra}: reference {a[idx]!r} != emurust {b[idx]!r}"
    return None


# -- envport backends ------------------------------------------------------------------------

@dataclass(frozen=True)
class RomCase:
    """One ROM of the suites: its path, frames per L3 episode, whether its save states are
    compared at all."""

    name: str
    path: Path
    episode_frames: int = 512
    compare_state: bool = True


# -- RTC carts ----------------------------------------------------------------------------------
# MBC3+TIMER carts (0x0F, 0x10) read the host clock. Both sides run them with
# rtc_lock_experimental(True) (the RTC then only advances with emulated cycles, and load_state
# adds no wall-clock time), and the two host-time doubles of the RTC block (`timezero`, `now`)
# are zeroed before save states are compared.
RTC_CART_TYPES = (0x0F, 0x10)
_EXTERNAL_RAM_TABLE = {0: 1, 1: 1, 2: 1, 3: 4, 4: 16, 5: 8}
_CART_OFFSET = 134911  # the cartridge block in a DMG v29 state (docs/emurust.md §1)


def rtc_block_offset(rom: bytes) -> int | None:
    """Offset of the RTC block in this ROM's save states, None without an RTC."""
    if len(rom) < 0x150 or rom[0x147] not in RTC_CART_TYPES:
        return None
    return _CART_OFFSET + 4 + _EXTERNAL_RAM_TABLE.get(rom[0x149], 1) * 8192


def mask_host_time(state: np.ndarray, rtc_offset: int | None) -> np.ndarray:
    if rtc_offset is not None and state.size >= rtc_offset + 33:
        state = state.copy()
        state[rtc_offset:rtc_offset + 8] = 0        # timezero
        state[rtc_offset + 25:rtc_offset + 33] = 0  # now
    return state


def _prepared(factory: Callable, path) -> object:
    pb = factory(path)
    if rtc_block_offset(Path(path).read_bytes()[:0x150]) is not None:
        pb.rtc_lock_experimental(True)
    return pb


def _backend_base():
    from envport.backend import Backend

    return Backend


def _spec(name: str):
    from envport.types import Box, Discrete, EnvSpec

    return EnvSpec(id=f"emurust/{name}", version=PYBOY_VERSION,
                   observation_space=Box(0, 255, (144, 160, 4), np.uint8),
                   action_space=Discrete(1 << 16, np.int32))


def make_backend(rom: RomCase, num_envs: int, factory: Callable, name: str,
                 full_state: bool = False):
    """An envport Backend over ``num_envs`` emulators made by ``factory(path)``; with
    ``full_state`` every frame's state carries the save-state bytes (L1's round trip)."""
    Backend = _backend_base()
    from envport.actions import validate_actions
    from envport.backend import StepResult

    class EmuBackend(Backend):
        supports_load = True

        def __init__(self):
            self.name, self.num_envs, self.spec = name, num_envs, _spec(rom.name)
            self.rtc = rtc_block_offset(Path(rom.path).read_bytes()[:0x150])
            self.envs = [_prepared(factory, rom.path) for _ in range(num_envs)]
            self.steps = np.zeros(num_envs, np.int64)
            self.frame_offset = np.zeros(num_envs, np.int64)  # frames before a loaded state
            self.state_size = len(save_state_bytes(self.envs[0]))
            self._last: list[dict] | None = []
            self._full_state = full_state  # L2 and L1: every step carries the save-state bytes

        def _snapshot(self, i: int, with_state: bool, done: bool = False) -> dict:
            return snapshot(self.envs[i], with_state, self.state_size, done, self.rtc,
                            int(self.frame_offset[i]))

        def reset(self, seed: int) -> np.ndarray:
            # power-on is deterministic: the seed only selects the action sequence (L3)
            for e in self.envs:
                e.stop(save=False)
            self.envs = [_prepared(factory, rom.path) for _ in range(self.num_envs)]
            self.steps[:] = 0
            self.frame_offset[:] = 0
            self._last = [self._snapshot(i, self._full_state) for i in range(self.num_envs)]
            return np.stack([s["screen"] for s in self._last])

        def step(self, actions) -> StepResult:
            actions = validate_actions(self.spec.action_space, actions, self.num_envs)
            self._last = []
            for i, (e, a) in enumerate(zip(self.envs, actions, strict=True)):
                apply_action(e, int(a))
                e.tick()
                self.steps[i] += 1
                done = bool(self.steps[i] >= rom.episode_frames)
                with_state = self._full_state or (done and rom.compare_state)
                self._last.append(self._snapshot(i, with_state, done))
                if done:  # next episode from power-on
                    e.stop(save=False)
                    self.envs[i] = _prepared(factory, rom.path)
                    self.steps[i] = 0
                    self.frame_offset[i] = 0
            obs = np.stack([s["screen"] for s in self._last])
            term = np.array([bool(s["terminated"]) for s in self._last])
            return StepResult(obs, np.zeros(self.num_envs, np.float32), term, np.zeros_like(term))

        def state(self) -> dict:
            if self._last is None:  # just loaded: read the loaded emulators now
                self._last = [self._snapshot(i, True) for i in range(self.num_envs)]
            return {k: np.stack([s[k] for s in self._last]) for k in FIELDS}

        def load(self, state: dict) -> None:
            """L2: a fresh emulator per env, loaded with PyBoy's save-state bytes (and the
            frames before it, when the state says)."""
            self._full_state = True
            data = np.asarray(state["save_state"], np.uint8)
            for e in self.envs:
                e.stop(save=False)
            self.envs = []
            for i in range(self.num_envs):
                e = _prepared(factory, rom.path)
                load_state_bytes(e, data[i].tobytes())
                self.envs.append(e)
            self.steps[:] = 0
            self.frame_offset[:] = np.asarray(state.get("frame_count", np.zeros(self.num_envs)),
                                              np.int64).reshape(self.num_envs)
            self._last = None  # read lazily: L2 reads only after its step

        def close(self) -> None:
            for e in self.envs:
                e.stop(save=False)

    return EmuBackend()


class StateSampler:
    """L2 cases: a PyBoy run from power-on with sparse random button events, sampled every few
    frames (its save-state bytes), plus one random action per case.

    Each call starts its own run, which first plays a random number of frames (up to four
    episodes' worth) before it samples: a batch depends on its generator alone, so batches
    drawn by different worker processes are the ones one process would draw, and they still
    cover the ROM's first ``4 * episode_frames`` frames."""

    def __init__(self, rom: RomCase, max_gap: int = 12, event_p: float = 0.08):
        self.rom, self.max_gap, self.event_p = rom, max_gap, event_p

    def _advance(self, pb, rng: np.random.Generator, frames: int) -> None:
        for _ in range(frames):
            apply_action(pb, sample_action(rng, self.event_p))
            pb.tick()

    def __call__(self, rng: np.random.Generator, batch: int):
        pb = _prepared(make_pyboy, self.rom.path)
        try:
            self._advance(pb, rng, int(rng.integers(0, 4 * self.rom.episode_frames)))
            states = []
            for _ in range(batch):
                self._advance(pb, rng, int(rng.integers(1, self.max_gap + 1)))
                states.append(np.frombuffer(save_state_bytes(pb), np.uint8))
        finally:
            pb.stop(save=False)
        actions = np.array([sample_action(rng, 0.25) for _ in range(batch)], np.int32)
        return {"save_state": np.stack(states)}, actions


def sample_action(rng: np.random.Generator, p: float = 0.05) -> int:
    """Each of the 16 event bits set with probability ``p`` (sparse: buttons stay held a while)."""
    bits = rng.random(16) < p
    return int(np.dot(bits, 1 << np.arange(16)))


def sample_actions(rng: np.random.Generator, n: int, p: float = 0.05) -> np.ndarray:
    return np.array([sample_action(rng, p) for _ in range(n)], np.int32)


def run_side_by_side(rom: RomCase, frames: int, seed: int = 0, p: float = 0.05,
                     state_every: int = 0) -> tuple[int, str | None]:
    """Power-on on both sides, the same random actions, every frame compared. Returns
    ``(frames_compared, first_difference or None)``; the save states are compared every
    ``state_every`` frames (0: at the end only, unless the cart has an RTC)."""
    rng = np.random.default_rng(seed)
    ref, cand = _prepared(make_pyboy, rom.path), _prepared(make_emurust, rom.path)
    size = len(save_state_bytes(ref))
    rtc = rtc_block_offset(Path(rom.path).read_bytes()[:0x150])
    try:
        for t in range(frames):
            a = sample_action(rng, p)
            apply_action(ref, a)
            apply_action(cand, a)
            ref.tick()
            cand.tick()
            last = t == frames - 1
            with_state = rom.compare_state and (last or (state_every and t % state_every == 0))
            diff = first_difference(snapshot(ref, with_state, size, rtc_offset=rtc),
                                    snapshot(cand, with_state, size, rtc_offset=rtc))
            if diff is not None:
                return t, f"{rom.name}, seed {seed}, frame {t}: {diff}"
        return frames, None
    finally:
        ref.stop(save=False)
        cand.stop(save=False)
