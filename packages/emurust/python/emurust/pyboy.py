"""``emurust.PyBoy``: the subset of PyBoy 2.8.1's API in docs/emurust.md §3, over the Rust core.

Translated from PyBoy 2.8.1 pyboy/pyboy.py (LGPL-3.0): the argument checks, the button names,
``PyBoyMemoryView`` with its bank/bounds rules and messages, ``PyBoyRegisterFile`` and the
``Screen`` buffer are PyBoy's, line by line where it matters; the emulation itself runs in
``emurust._emurust.Emulator`` (Rust). Only the DMG configuration PyBoy is verified in is
supported: ``window="null"``, ``sound_emulated=False``, ``cgb=False``/None on a DMG ROM, the
built-in boot ROM; other settings raise ``PyBoyFeatureDisabledError`` (or ``KeyError`` for
keywords PyBoy does not know either, as PyBoy does).
"""

from __future__ import annotations

import logging
import operator
import os
from pathlib import Path

import numpy as np

from emurust._emurust import Emulator
from emurust.utils import (
    BUTTONS,
    PyBoyException,
    PyBoyFeatureDisabledError,
    PyBoyInvalidInputException,
    PyBoyInvalidOperationException,
    PyBoyOutOfBoundsException,
    WindowEvent,
)

logger = logging.getLogger("emurust")

# PyBoy keywords emurust accepts only at PyBoy's default (they change behaviour emurust does not
# emulate); any other keyword is unknown to PyBoy as well and raises KeyError like PyBoy.
_DEFAULT_ONLY = {
    "symbols": None, "bootrom": None, "sound_sample_rate": None, "gameshark": None,
    "serial_shared_memory": None, "serial_interrupt_based": False, "sgb_border": False,
    "color_palette": (0xFFFFFF, 0x999999, 0x555555, 0x000000), "cgb_color_palette": None,
    "randomize": False,
}
# accepted and ignored: they only affect windows, logging or the frame limiter
_IGNORED = {"scale", "no_input", "log_level", "title_status", "autopause"}

# memory[bank, ...] regions of the Rust core (Emulator.bank_read/bank_write)
_BOOTROM, _ROM, _VRAM, _CARTRAM, _WRAM = range(5)


def _read_file(f, what: str) -> bytes:
    data = f.read()
    if isinstance(data, str):
        raise PyBoyInvalidInputException(f"{what} must be opened in binary mode ('rb')")
    return bytes(data)


class PyBoy:
    def __init__(self, gamerom, *, ram_file=None, rtc_file=None, window="null", cgb=None,
                 sound_emulated=False, sound_volume=100, **kwargs):
        self.initialized = False
        self.stopped = False
        if window not in ("SDL2", "OpenGL", "GLFW", "null", "headless", "dummy"):
            raise KeyError(f'Unknown window type: {window}. Use "SDL2", "OpenGL", "GLFW", or "null"')
        if window not in ("null", "headless", "dummy"):
            raise PyBoyFeatureDisabledError(
                f'emurust has no {window} window; use window="null" (and read pyboy.screen.ndarray)')
        if sound_emulated:
            raise PyBoyFeatureDisabledError(
                "emurust emulates the sound unit switched off only (sound registers read 0, as "
                "PyBoy with sound_emulated=False); pass sound_emulated=False")
        if not (0 <= sound_volume <= 100):
            raise PyBoyInvalidInputException("Sound volume has to be between 0 and 100.")
        if cgb:
            raise PyBoyFeatureDisabledError("emurust emulates the DMG only; pass cgb=False")
        for k, v in kwargs.items():
            if k in _IGNORED:
                continue
            if k in _DEFAULT_ONLY:
                default = _DEFAULT_ONLY[k]
                if v is not None and v != default and not (k == "color_palette" and tuple(v) == default):
                    raise PyBoyFeatureDisabledError(f"emurust does not support {k}={v!r}")
                continue
            raise KeyError(f"Unknown keyword argument: {k}")

        if gamerom is None:
            raise FileNotFoundError("No game ROM provided!")
        self.gamerom = None
        if isinstance(gamerom, (str, Path)):
            self.gamerom = str(gamerom)
            try:
                with open(self.gamerom, "rb") as f:
                    rom = f.read()
            except FileNotFoundError:
                raise FileNotFoundError(f"ROM file {gamerom} was not found!") from None
            # like PyBoy: <rom>.ram / <rom>.rtc next to a ROM path are loaded when present
            if ram_file is None and os.path.isfile(self.gamerom + ".ram"):
                with open(self.gamerom + ".ram", "rb") as f:
                    ram_file = f.read()
            if rtc_file is None and os.path.isfile(self.gamerom + ".rtc"):
                with open(self.gamerom + ".rtc", "rb") as f:
                    rtc_file = f.read()
        elif hasattr(gamerom, "read"):
            rom = _read_file(gamerom, "gamerom")
        else:
            raise PyBoyInvalidInputException(
                "Provided game ROM cannot be used. Expected str, Path or file-like object")
        if ram_file is not None and not isinstance(ram_file, (bytes, bytearray)):
            ram_file = _read_file(ram_file, "ram_file")
        if rtc_file is not None and not isinstance(rtc_file, (bytes, bytearray)):
            rtc_file = _read_file(rtc_file, "rtc_file")

        if cgb is None and len(rom) > 0x143 and rom[0x143] >> 7:
            # PyBoy would pick CGB mode for this ROM (cartridge.cgb); emurust can only run DMG
            raise PyBoyFeatureDisabledError(
                "this ROM asks for Game Boy Color mode, which emurust does not emulate; "
                "pass cgb=False to run it as PyBoy(cgb=False) does")

        self._emu = Emulator(rom, None if ram_file is None else bytes(ram_file),
                             None if rtc_file is None else bytes(rtc_file))
        # base_mbc.getgamename: up to the first NUL of 0x134..0x142 (CGB flag set) or ..0x143
        end = 0x0142 if rom[0x143] >> 7 else 0x0143
        self.cartridge_title = "".join(chr(b) for b in rom[0x134:end]).split("\0")[0]
        self.target_emulationspeed = 0  # no frame limiter: the null window runs unlimited
        self.memory = PyBoyMemoryView(self._emu)
        self.register_file = PyBoyRegisterFile(self._emu)
        self.screen = Screen(self._emu)
        if type(self).tick is PyBoy.tick:
            # the Rust method itself, with this method's checks (Emulator.pyboy_tick): this
            # Python wrapper adds about 0.2 us to every tick; a subclass that overrides tick
            # keeps its own
            self.tick = self._emu.pyboy_tick
        self.initialized = True

    # -- running ---------------------------------------------------------------------------

    def tick(self, count=1, render=True, sound=True):
        """Advance ``count`` frames; render (and sample) only the last one. Returns True
        (False for ``count == 0``, as PyBoy). (An instance binds ``Emulator.pyboy_tick``, the
        same in Rust, in its place.)"""
        if self.stopped:
            raise PyBoyInvalidOperationException("Emulator is stopped")
        if type(count) is not int or not 0 <= count <= 0x7FFF_FFFF:
            count = _tick_count(count)
        return self._emu.tick(count, bool(render), bool(sound))

    @property
    def frame_count(self) -> int:
        return self._emu.frame_count

    def _cycles(self) -> int:
        return self._emu.cycles

    def set_emulation_speed(self, target_speed):
        """Accepted for compatibility: emurust never limits its speed (PyBoy's null window
        sleeps to ``target_speed`` x 60 fps; 0 means unlimited, which is all emurust does)."""
        if target_speed > 5:
            logger.warning("The emulation speed might not be accurate when speed-target is higher than 5")
        if target_speed:
            logger.info("emurust ignores set_emulation_speed(%r): it always runs unlimited", target_speed)
        self.target_emulationspeed = target_speed

    def stop(self, save=True, ram_file=None, rtc_file=None):
        """Stop; with ``save``, write battery RAM / RTC like PyBoy (to the given file-like
        objects, else to ``<rom>.ram`` / ``<rom>.rtc`` next to a ROM path)."""
        if not self.initialized or self.stopped:
            return
        if save and self._emu.battery:
            data = self._emu.save_ram()
            if ram_file is not None:
                ram_file.write(data)
            elif self.gamerom is not None:
                with open(self.gamerom + ".ram", "w+b") as f:
                    f.write(data)
        if save and self._emu.rtc_enabled:
            data = self._emu.save_rtc()
            if rtc_file is not None:
                rtc_file.write(data)
            elif self.gamerom is not None:
                with open(self.gamerom + ".rtc", "w+b") as f:
                    f.write(data)
        self.stopped = True
        self._emu.mark_stopped()

    def __enter__(self):
        return self

    def __exit__(self, type, value, traceback):
        self.stop()

    # -- input -----------------------------------------------------------------------------

    def _button_index(self, input) -> int:
        input = input.lower()
        if input not in BUTTONS:
            raise PyBoyInvalidInputException("Unrecognized input:", input)
        return BUTTONS.index(input)

    def button(self, input, delay=1):
        """Press ``input`` now (next frame) and release it ``delay`` frames later."""
        i = self._button_index(input)
        self.send_input(WindowEvent.PRESS_ARROW_UP + i)
        self.send_input(WindowEvent.RELEASE_ARROW_UP + i, delay)

    def button_press(self, input):
        event = _PRESS_EVENT.get(input) if type(input) is str else None
        if event is None:  # not an exact lower-case name: PyBoy's lookup, with its errors
            event = WindowEvent.PRESS_ARROW_UP + self._button_index(input)
        self._emu.send_input(event, 0)

    def button_release(self, input):
        event = _RELEASE_EVENT.get(input) if type(input) is str else None
        if event is None:
            event = WindowEvent.RELEASE_ARROW_UP + self._button_index(input)
        self._emu.send_input(event, 0)

    def send_input(self, event, delay=0):
        """Queue a button event (``WindowEvent.PRESS_*``/``RELEASE_*``); applied at the start of
        the frame ``delay`` frames from now (0: the next one)."""
        if delay:
            if not (delay > 0):
                raise PyBoyInvalidInputException("Only positive integers allowed")
            try:
                delay = operator.index(delay)
            except TypeError:
                # PyBoy would queue it for a frame number that never comes; refuse instead
                raise PyBoyInvalidInputException("Only positive integers allowed") from None
        try:
            event = operator.index(event)
        except TypeError:
            raise PyBoyInvalidInputException(f"Unsupported event {event!r}") from None
        if not WindowEvent.PRESS_ARROW_UP <= event <= WindowEvent.RELEASE_BUTTON_START:
            raise PyBoyInvalidInputException(
                f"emurust supports the 16 button events (1..16) only, not {event}")
        self._emu.send_input(event, delay)

    # -- state -----------------------------------------------------------------------------

    def save_state(self, file_like_object):
        if isinstance(file_like_object, str):
            raise PyBoyInvalidInputException(
                "String not allowed. Did you specify a filepath instead of a file-like object?")
        if file_like_object.__class__.__name__ == "TextIOWrapper":
            raise PyBoyInvalidInputException("Text file not allowed. Did you specify open(..., 'wb')?")
        file_like_object.write(self._emu.save_state())

    def load_state(self, file_like_object):
        if isinstance(file_like_object, str):
            raise PyBoyInvalidInputException(
                "String not allowed. Did you specify a filepath instead of a file-like object?")
        if file_like_object.__class__.__name__ == "TextIOWrapper":
            raise PyBoyInvalidInputException("Text file not allowed. Did you specify open(..., 'rb')?")
        data = file_like_object.read()
        if isinstance(data, str):
            raise PyBoyInvalidInputException("Text file not allowed. Did you specify open(..., 'rb')?")
        self._emu.load_state(bytes(data))

    def rtc_lock_experimental(self, enable):
        if self._emu.rtc_enabled:
            self._emu.rtc_lock(bool(enable))
        else:
            raise PyBoyException("There's no RTC for this cartridge type")


class PyBoyRegisterFile:
    """``PyBoy.register_file``: A F B C D E HL SP PC; setters mask to the register's width and
    ``F`` keeps its upper nibble only (``& 0xF0``), as in PyBoy."""

    _NAMES = ("A", "F", "B", "C", "D", "E", "HL", "SP", "PC")

    def __init__(self, emu):
        self._emu = emu

    def __repr__(self):
        regs = self._emu.registers()
        return "PyBoyRegisterFile(" + ", ".join(f"{n}={v:#x}" for n, v in zip(self._NAMES, regs, strict=True)) + ")"


def _register_property(i: int, name: str):
    def get(self):
        return self._emu.registers()[i]

    def set(self, value):
        self._emu.set_register(name, operator.index(value) & 0xFFFFFFFFFFFFFFFF)

    return property(get, set)


for _i, _n in enumerate(PyBoyRegisterFile._NAMES):
    setattr(PyBoyRegisterFile, _n, _register_property(_i, _n))


class Screen:
    """``PyBoy.screen``: the renderer's RGBA buffer. ``ndarray`` is one (144, 160, 4) uint8 array
    over the Rust buffer (no copy), the same object every time, updated in place."""

    raw_buffer_format = "RGBA"
    raw_buffer_dims = (144, 160)

    def __init__(self, emu):
        self._emu = emu
        self.ndarray = emu.screen_ndarray()

    @property
    def raw_buffer(self):
        return memoryview(self.ndarray).cast("B")

    @property
    def image(self):
        try:
            from PIL import Image
        except ImportError:
            return None  # PyBoy returns None when Pillow is missing
        return Image.frombuffer("RGBA", (160, 144), self.ndarray, "raw", "RGBA", 0, 1)


class PyBoyMemoryView:
    """``PyBoy.memory``: reads/writes through the memory map (``memory[addr]``,
    ``memory[a:b(:s)]``) and direct bank access (``memory[bank, addr]``), with PyBoy's checks,
    messages and quirks (translated from pyboy.py:PyBoyMemoryView, DMG only)."""

    def __init__(self, emu):
        self._emu = emu

    def _fix_slice(self, addr):
        if addr.start is None:
            return (-1, 0, 0)
        if addr.stop is None:
            return (0, -1, 0)
        start = addr.start
        stop = addr.stop
        if start > stop:
            return (-1, -1, 0)
        try:
            start = operator.index(start)
            stop = operator.index(stop)
            step = 1 if addr.step is None else operator.index(addr.step)
        except TypeError:
            raise PyBoyInvalidInputException("Slice bounds and step must be integers") from None
        if step <= 0:
            raise PyBoyInvalidInputException("Slice step must be a positive integer")
        return start, stop, step

    def __len__(self):
        raise PyBoyInvalidOperationException(
            "It's not possible to define the length of the memory space. See instead "
            "https://gbdev.io/pandocs/Memory_Map.html")

    def __iter__(self):
        raise PyBoyInvalidOperationException("It's not possible to iterate over the memory space.")

    def _parse(self, addr):
        is_bank = isinstance(addr, tuple)
        bank = 0
        if is_bank:
            bank, addr = addr
            if not isinstance(bank, int):
                raise PyBoyInvalidInputException("Bank has to be integer. Slicing is not supported.")
        is_single = isinstance(addr, int)
        if not is_single:
            if not isinstance(addr, slice):
                raise PyBoyInvalidInputException(f"Unsupported memory index {addr!r}")
            start, stop, step = self._fix_slice(addr)
            if not (start >= 0):
                raise PyBoyInvalidInputException("Start address required")
            if not (stop >= 0):
                raise PyBoyInvalidInputException("End address required")
            if not 0 <= start <= 0xFFFF:
                raise PyBoyOutOfBoundsException("Start address out of bounds")
            if not 0 <= stop <= 0x10000:
                raise PyBoyOutOfBoundsException("End address out of bounds")
            if not (start < stop):
                raise PyBoyInvalidInputException("Start address has to come before end address")
            return start, stop, step, bank, False, is_bank
        return addr, addr + 1, 1, bank, True, is_bank

    def __getitem__(self, addr):
        start, stop, step, bank, is_single, is_bank = self._parse(addr)
        if not is_bank:
            if is_single:
                return self._emu.getitem(_wrap16(start))
            # PyBoy reads every address of range(start, stop, step) but returns a list of
            # (stop - start) // step entries: one short when step does not divide the span
            return list(self._emu.read_range(start, stop, step))[: (stop - start) // step]
        region, start, stop = self._bank_region(bank, start, stop, is_single, write=False)
        data = self._emu.bank_read(region, bank, start, stop, step)
        return data[0] if is_single else list(data)[: (stop - start) // step]

    def __setitem__(self, addr, v):
        start, stop, step, bank, is_single, is_bank = self._parse(addr)
        short = False  # PyBoy runs out of values (StopIteration) when step does not divide
        if not is_single and hasattr(v, "__iter__"):
            v = list(v)
            if not ((stop - start) // step == len(v)):
                # PyBoy checks this per region after its bounds checks; same message
                values = None
            else:
                values = _bytes(v)
                n = len(range(start, stop, step))
                short = n > len(values)
        elif is_single:
            values = _bytes([v])
        else:
            values = _bytes([v] * len(range(start, stop, step)))
        if not is_bank:
            if values is None:
                raise PyBoyInvalidInputException("slice does not match length of data")
            if is_single:
                self._emu.setitem(_wrap16(start), values[0])
            else:
                if short:
                    stop = start + len(values) * step
                self._emu.write_range(start, stop, step, values)
            if short:
                raise StopIteration
            return
        region, start, stop = self._bank_region(bank, start, stop, is_single, write=True)
        if values is None:
            raise PyBoyInvalidInputException("slice does not match length of data")
        if short:
            stop = start + len(values) * step
        self._emu.bank_write(region, bank, start, stop, step, values)
        if short:
            raise StopIteration

    def _bank_region(self, bank, start, stop, is_single, write):
        """PyBoy's per-region checks for ``memory[bank, ...]``, in PyBoy's order and with its
        messages; returns (region, start, stop) as offsets into the region's array.

        PyBoy passes ``stop = 0`` for a single address, so its checks on ``stop`` never fire
        then; reads check ``stop < size``, writes ``stop <= size`` (PyBoy's own asymmetry: e.g.
        ``memory[1, 0x4000:0x8000]`` is refused for reading). Where PyBoy would index past its
        arrays (a bank equal to the bank count, a negative bank), emurust raises
        ``PyBoyOutOfBoundsException`` instead of reading undefined memory."""
        emu = self._emu

        def stop_ok(size):
            return is_single or (stop <= size if write else stop < size)

        if start < 0:  # a negative single address: PyBoy reads before its arrays
            raise PyBoyOutOfBoundsException("Start address out of bounds")

        if start < 0x8000:
            if start >= 0x4000:
                start -= 0x4000
                stop -= 0x4000
            if not stop_ok(0x4000):
                raise PyBoyOutOfBoundsException("Out of bounds for reading ROM bank")
            if write and not (bank <= emu.external_rom_count):
                raise PyBoyOutOfBoundsException("ROM Bank out of range")
            if bank == -1:
                if not (start <= 0xFF):
                    raise PyBoyOutOfBoundsException("Start address out of range for bootrom")
                if not (is_single or (stop <= 0x100 if write else stop <= 0xFF)):
                    raise PyBoyOutOfBoundsException("Start address out of range for bootrom")
                return _BOOTROM, start, stop
            if not (bank <= emu.external_rom_count) or bank < 0 or bank == emu.external_rom_count:
                raise PyBoyOutOfBoundsException("ROM Bank out of range")
            return _ROM, start, stop
        if start < 0xA000:
            start -= 0x8000
            stop -= 0x8000
            if bank != 0:  # PyBoy: `if not (self.mb.cgb or bank == 0)`, cgb is False here
                raise PyBoyInvalidInputException("Selecting bank of VRAM is only supported for CGB mode")
            if not stop_ok(0x2000):
                raise PyBoyOutOfBoundsException("Out of bounds for reading VRAM bank")
            return _VRAM, start, stop
        if start < 0xC000:
            start -= 0xA000
            stop -= 0xA000
            if not stop_ok(0x2000):
                raise PyBoyOutOfBoundsException("Out of bounds for reading cartridge RAM bank")
            # PyBoy allocates 16 RAM banks whatever the cart has, so bank == count still reads
            # (zeros); the Rust side refuses only what lies outside those 16 banks
            if not (bank <= emu.external_ram_count) or bank < 0:
                raise PyBoyOutOfBoundsException("ROM Bank out of range")
            return _CARTRAM, start, stop
        if start < 0xE000:
            start -= 0xC000
            stop -= 0xC000
            if start >= 0x1000:
                start -= 0x1000
                stop -= 0x1000
            if bank != 0:
                raise PyBoyInvalidInputException("Selecting bank of WRAM is only supported for CGB mode")
            if not stop_ok(0x1000):
                raise PyBoyOutOfBoundsException("Out of bounds for reading VRAM bank")
            return _WRAM, start, stop
        raise PyBoyInvalidInputException("Invalid memory address for bank")


# button name -> its PRESS / RELEASE event, for the exact lower-case names (the fast path)
_PRESS_EVENT = {name: WindowEvent.PRESS_ARROW_UP + i for i, name in enumerate(BUTTONS)}
_RELEASE_EVENT = {name: WindowEvent.RELEASE_ARROW_UP + i for i, name in enumerate(BUTTONS)}


def _tick_count(count) -> int:
    """``count`` as PyBoy's ``cpdef tick(self, int count, ...)`` takes it, with its errors."""
    count = _c_int(count)
    if count < 0:
        raise PyBoyInvalidInputException("count must be a non-negative integer")
    return count


def _c_int(x) -> int:
    """Cython's conversion of an argument typed ``int``: floats truncate, other non-integers
    raise TypeError, values outside int32 OverflowError."""
    if isinstance(x, float):
        x = int(x)
    else:
        try:
            x = operator.index(x)
        except TypeError:
            raise TypeError("an integer is required") from None
    if not -(1 << 31) <= x < (1 << 31):
        raise OverflowError("value too large to convert to int")
    return x


def _wrap16(addr: int) -> int:
    """PyBoy passes a single address as a C ``int`` to ``Motherboard.getitem(uint16_t)``: values
    outside int32 raise OverflowError, the rest wrap to 16 bits (``memory[0x10000]`` reads 0x0000,
    ``memory[-1]`` reads 0xFFFF)."""
    if not -(1 << 31) <= addr < (1 << 31):
        raise OverflowError("value too large to convert to int")
    return addr & 0xFFFF


def _bytes(values) -> bytes:
    try:
        return bytes(operator.index(x) for x in values)
    except ValueError:
        # Cython's uint8_t argument in PyBoy raises OverflowError for values outside 0..255
        raise OverflowError("value too large to convert to uint8_t") from None


__all__ = ["PyBoy", "PyBoyMemoryView", "PyBoyRegisterFile", "Screen", "np"]
