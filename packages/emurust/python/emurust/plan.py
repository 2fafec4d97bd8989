"""emurust's translation plan: the modules ``envport generate emurust`` writes, in dependency
order, each from the PyBoy 2.8.1 sources it translates (docs/emurust.md §5).

The reference sources are the ``.py``/``.pxd`` files of the *installed* ``pyboy`` package (its
wheel ships them next to the compiled modules; the ``.pxd`` files give Cython's integer widths),
located at run time and never vendored into this repository. Importing this module imports
neither PyBoy nor anything heavy.

Given, not in the plan: ``Cargo.toml``, ``src/lib.rs`` (the module tree), the generated
``src/sound_template.rs`` (``emurust.tools.sound_template``) and ``src/bootrom_dmg.bin``
(``emurust.tools.bootrom``), and the harness (``port.py``, ``verify.py``,
``bench.py``, ``puffer.py``), which is envport's side of the port, not a translation.

The crate compiles only as a whole, and some of its modules depend on each other in cycles
(cartridge <-> mbc1/2/3/5, opcodes <-> cpu <-> mb), so the plan sets ``builds_as_whole``: a run of
the whole plan (or of several modules) starts without their files, defers each module's L1 phase
while files are missing, and once the last one is written runs the build, ``cargo test`` and every
written module's pytest files on all of them together, repairing the crate as a whole. A run of
one module (``--modules timer``, the others present) builds and checks it right away.
"""

from __future__ import annotations

import sys
from pathlib import Path

from emurust.verify import PYBOY_VERSION, REFERENCE_INSTALL_HINT
from envport.errors import EnvportError
from envport.plan import ModulePlan, TranslationPlan, read_sources

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # packages/emurust (python/emurust/plan.py)


def pyboy_dir() -> Path:
    """The installed ``pyboy`` package folder, which must be PyBoy 2.8.1; found without importing
    it (importing PyBoy loads SDL2)."""
    import importlib.util
    from importlib.metadata import PackageNotFoundError, version

    try:
        spec = importlib.util.find_spec("pyboy")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        raise EnvportError(f"emurust's reference sources are PyBoy {PYBOY_VERSION}'s, and pyboy is "
                           f"not installed in {sys.executable}: {REFERENCE_INSTALL_HINT}")
    try:
        got = version("pyboy")
    except PackageNotFoundError:
        got = "unknown"
    if got != PYBOY_VERSION:
        raise EnvportError(f"pyboy {got} is installed in {sys.executable}, emurust translates "
                           f"PyBoy {PYBOY_VERSION}: {REFERENCE_INSTALL_HINT}")
    return Path(spec.origin).resolve().parent


def _pyboy(*members: str):
    """A reader of PyBoy files (paths inside the ``pyboy`` package), at generation time."""
    def read():
        root = pyboy_dir()
        return read_sources({f"pyboy/{m}": root / m for m in members})
    return read


def _py_pxd(*stems: str) -> tuple[str, ...]:
    """``core/timer`` -> ``core/timer.py``, ``core/timer.pxd``."""
    return tuple(f"{s}{ext}" for s in stems for ext in (".py", ".pxd"))


def _no_sources():
    return {}


# the pytest files that drive the whole emulator against live PyBoy (every Rust module is
# observed through them); each module's own unit and differential tests are `cargo test`
EQUIVALENCE = "tests/test_emurust_equivalence.py"
ERRORS = "tests/test_emurust_errors.py"
API = "tests/test_emurust_api.py"
VEC = "tests/test_emurust_vec.py"
PUFFER = "tests/test_emurust_puffer.py"

CONSTRAINTS = """\
- Bit-exact (tolerance 0) with PyBoy 2.8.1 as verified: `PyBoy(rom, window="null", cgb=False,
  sound_emulated=False)`, DMG only, PyBoy's own DMG boot ROM. After every frame the registers,
  the CPU cycle counter, every memory byte, the screen and the save-state bytes (version 29)
  equal PyBoy's. CGB, SGB and sound-on paths are dropped (mark each dropped branch with a
  comment); state blocks PyBoy still writes for them are kept byte for byte.
- PyBoy's integer semantics are Cython's, not Python's: the widths of the `.pxd` files (uint8
  registers wrap, uint64 counters, int64 `_cycles_to_*` that may go negative, C `/` and `%`,
  `bint` fields that store and save whatever byte was assigned). Use `wrapping_*` where the C
  type wraps; never assume Python's unbounded ints.
- Catch-up scheduling as in PyBoy: components are advanced lazily to the CPU's absolute cycle
  count. `Motherboard::tick` runs the CPU to the nearest `_cycles_to_interrupt`/`cycles_to_frame`
  (at least 4), then syncs OAM DMA and catches up sound, serial, timer and LCD in that order;
  register reads/writes catch a component up first. Keep PyBoy's order of memory accesses and
  cycle increments inside an opcode (`memory_access_offset`): the timing depends on it.
  Deferring a catch-up is allowed only where it is unobservable (see mb.rs `timer_sync`).
- No panic may cross into Python: every failure a user can cause (bad ROM, bad or truncated
  save state, out-of-range address or bank, bad argument, illegal opcode) is an `EmuError`,
  mapped onto PyBoy's exception classes of `emurust.utils`; every PyO3 entry point runs under
  `catch_unwind`. Where PyBoy's unchecked C would index past a buffer, reads give 0xFF and writes
  are dropped; an illegal opcode raises `EmurustIllegalOpcodeException` (PyBoy spins forever).
- Deterministic: no host time except the RTC's, which PyBoy reads too (`Rtc::fake_time`,
  `rtc_lock_experimental` make it reproducible); no hash-map order.
- A translation of PyBoy, so LGPL-3.0-only: every file starts with `//! Translated from PyBoy
  2.8.1 <path> (LGPL-3.0).` (new code says it has no PyBoy counterpart); PyBoy's sources are read
  from the installed package, never copied into the repository.
- Checks: `cargo test` in packages/emurust (unit tests, and differential vectors recorded from
  PyBoy by emurust.tools.vectors, lcd_vectors and cpu_vectors into
  target/vectors); then the pytest files, against the extension built by maturin (`uv sync`).
  In `envport generate`, run_tests builds the release extension into python/emurust, runs
  `cargo test --locked`, then the pytest files: a compiler error or a failing Rust test is an L1
  failure. The crate compiles as a whole: every module of src/lib.rs must exist."""

# -- envport generate: how a work dir (a copy of this package without target/) is built and checked
# The release extension (what maturin builds) goes to the env's build cache, shared by all runs so
# that only the crate itself recompiles, then where python/ imports it from; the Rust tests read
# the PyBoy vectors from target/vectors, linked to this checkout's (`./dev tests` makes them).
# PYO3_PYTHON: PyO3 configures itself for the interpreter that will import the extension (as
# maturin does), not for whichever python3 comes first on PATH.
TARGET_DIR = "{cache}/target"
EXTENSION = "python/emurust/_emurust.abi3.so"
COPY_EXTENSION = "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])"
LINK_VECTORS = """\
import os, sys
src, dst = sys.argv[1], sys.argv[2]
if not os.path.isdir(src):
    sys.exit(f"no PyBoy vectors at {src}: emurust's cargo tests replay them. Make them in the "
             f"checkout first: ./dev tests (or python -m emurust.tools.native_tests "
             f"--vectors-only, with pyboy==2.8.1)")
if not os.path.lexists(dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    os.symlink(src, dst)
"""
BUILD = (
    ("{python}", "-c", LINK_VECTORS, "{package}/target/vectors", "target/vectors"),
    ("env", "PYO3_PYTHON={python}", "cargo", "build", "--release", "--locked", "--features",
     "extension-module", "--manifest-path", "Cargo.toml", "--target-dir", TARGET_DIR),
    ("{python}", "-c", COPY_EXTENSION, f"{TARGET_DIR}/release/libemurust.so", EXTENSION),
)
NATIVE_TESTS = (
    ("cargo", "test", "--locked", "--manifest-path", "Cargo.toml", "--target-dir", TARGET_DIR),
)

PLAN = TranslationPlan(
    package_dir=PACKAGE_DIR,
    language="rust",
    constraints=CONSTRAINTS,
    python_roots=("python",),
    build=BUILD,
    native_tests=NATIVE_TESTS,
    copy_ignore=("target",),
    builds_as_whole=True,
    modules=[
        ModulePlan(
            name="error",
            target="src/error.rs",
            reference_sources=_pyboy("utils.py"),
            contract="""\
`EmuError` (Debug, Clone, PartialEq, Display, std::error::Error): `Rom(String)` and
`State(String)` (-> PyBoyException), `OutOfBounds(String)` (-> PyBoyOutOfBoundsException),
`InvalidInput(String)` (-> PyBoyInvalidInputException), `IllegalOpcode { opcode: u8, pc: u16 }`
(-> EmurustIllegalOpcodeException). `IllegalOpcode { opcode, pc }`: a small `Copy` struct that
`cpu::fetch_and_execute` returns, with `From<IllegalOpcode> for EmuError`.""",
            tests=[ERRORS],
        ),
        ModulePlan(
            name="utils",
            target="src/utils.rs",
            reference_sources=_pyboy(*_py_pxd("utils")),
            contract="""\
PyBoy's `IntIOInterface` and constants: `STATE_VERSION: u8 = 29`, `INTR_VBLANK/LCDC/TIMER/
SERIAL/HIGHTOLOW` (bits 0..4), `MAX_CYCLES: u64 = 1 << 31`. `StateWriter { pub buf: Vec<u8> }`
with `new`, `write(u8)`, `write_bool`, `write_16bit`, `write_32bit`, `write_64bit`, `write_f64`,
`write_bytes` (little-endian, bool as one byte, f64 as its 8 IEEE bytes). `StateReader::new(&[u8])`
with `position`, `remaining` and the matching `read*` / `read_into(&mut [u8])`, each returning
`Result<_, EmuError>`: a short read is `EmuError::State` naming the offset, never a panic.
`cargo test utils::`.""",
            tests=[ERRORS, EQUIVALENCE],
            depends_on=["error"],
        ),
        ModulePlan(
            name="timer",
            target="src/timer.rs",
            reference_sources=_pyboy(*_py_pxd("core/timer")),
            contract="""\
`Timer` (Default, `new()`), fields `div: u8`, `tima: u8`, `div_counter: u16`, `tima_counter: u64`,
`tma`, `tac`, `dividers: [u64; 4]`, `tima_reload_state: u8` (0 none, 1 overflowed, 2 reloaded),
`cycles_to_interrupt: u64`, `last_cycles: u64`. `reset()` (DIV write, falling-edge bump),
`write_tima`, `write_tma`, `write_tac` (TAC glitch), `read_tima`; `tick(cycles_now) -> bool`
catches up to the absolute cycle count (PyBoy's fast path and cycle-by-cycle slow path; true =
timer interrupt) and sets `cycles_to_interrupt` to the next overflow; `save_state`/`load_state`.
Also `#[cfg(test)] pub(crate) mod test_vectors` (`load(name) -> Json`, a dependency-free JSON
reader of target/vectors/<name>) that the cargo tests of serial, interaction, rtc and cartridge
use. `cargo test timer::` replays timer.json (emurust.tools.vectors).""",
            tests=[EQUIVALENCE],
            depends_on=["error", "utils"],
        ),
        ModulePlan(
            name="rtc",
            target="src/cartridge/rtc.rs",
            reference_sources=_pyboy(*_py_pxd("core/cartridge/rtc")),
            contract="""\
`RTC_CYCLES_PER_SECOND = 4_194_304`, `STATE_SIZE = 33` (the .rtc file = the state block). `Rtc`
with rtc.pxd's fields (`timezero: Cell<f64>`, `timelock`, `day_carry`, `halt`, `seconds`,
`minutes`, `hours`, `day_low`, `day_high`, `rtc_cycles`, `last_cycles`, `latch_enabled`, the
`*_latch` registers) plus `fake_time: Option<f64>`. `Rtc::new(rtc_file)`,
`with_clock(rtc_file, fake_time)`, `time()`, `tick(cycles)` (host-time fallback when called twice
at one cycle count), `advance_seconds`, `latch_rtc`, `writecommand`, `getregister(0x08..0x0C)`,
`setregister`, `save_state` (writes the two wall-clock doubles, updates `timezero`),
`load_state` (advances by the wall time since the save). `cargo test rtc::` replays rtc.json.""",
            tests=[API, EQUIVALENCE],
            depends_on=["error", "utils", "timer"],
        ),
        ModulePlan(
            name="cartridge",
            target="src/cartridge/mod.rs",
            reference_sources=_pyboy(*_py_pxd("core/cartridge/cartridge", "core/cartridge/base_mbc")),
            contract="""\
Declares `pub mod mbc1, mbc2, mbc3, mbc5, rtc` (re-exports `Rtc`). `ROM_BANK_SIZE`,
`RAM_BANK_SIZE`, `RAM_BANKS_ALLOCATED = 16`; `MbcKind { RomOnly, Mbc1, Mbc2, Mbc3, Mbc30, Mbc5 }`;
`cartridge_table(type)`, `external_ram_table(code)`, `validate_checksum`, `getgamename`.
`Cartridge`: one struct with every MBC class's fields (`rombanks`, `rambanks`, `rtc:
Option<Rtc>`, `rambank_enabled: u8` (raw bint), `rambank_selected`, `rombank_selected`,
`rombank_selected_low`, `bank_select_register1/2`, `memorymodel`, `multicart`, `rumble_*`, ...).
`load_cartridge(rom, ram_file, rtc_file) -> Result<Cartridge, EmuError>` validates as PyBoy does;
methods `getitem` (A000-BFFF), `setitem` (dispatch to `mbcN_setitem`/`mbcN_getitem` of the next
modules; the crate builds once they exist), `read_rom`, `rom_byte`, `ram_byte`, `set_ram_byte`
(0xFF / dropped past the data), `overrideitem`, `rtc_tick`, `save_ram`, `stop`, `save_state`,
`load_state`. `cargo test cartridge::` replays cartridge.json (live PyBoy bank tables).""",
            tests=[ERRORS, API, EQUIVALENCE],
            depends_on=["error", "utils", "timer", "rtc"],
        ),
        ModulePlan(
            name="mbc1",
            target="src/cartridge/mbc1.rs",
            reference_sources=_pyboy(*_py_pxd("core/cartridge/mbc1")),
            contract="""\
`impl Cartridge`: `pub(super) fn detect_multicart(&self) -> bool` (64 banks repeating the logo),
`mbc1_setitem(address, value)` (5-bit low bank, 0 reads as 1; 2-bit upper/RAM register; mode
bit; every write recomputes `rombank_selected` and `rombank_selected_low`, MBC1M rule),
`mbc1_getitem(address)` (cart RAM read with its side effect on `rambank_selected`).""",
            tests=[EQUIVALENCE],
            depends_on=["cartridge"],
        ),
        ModulePlan(
            name="mbc2",
            target="src/cartridge/mbc2.rs",
            reference_sources=_pyboy(*_py_pxd("core/cartridge/mbc2")),
            contract="""\
`impl Cartridge`: `pub(super) fn mbc2_setitem` (0000-3FFF, address bit 8: RAM enable or 4-bit
ROM bank) and `mbc2_getitem` (512 x 4-bit RAM mirrored over A000-BFFF, upper nibble 1s).""",
            tests=[EQUIVALENCE],
            depends_on=["cartridge"],
        ),
        ModulePlan(
            name="mbc3",
            target="src/cartridge/mbc3.rs",
            reference_sources=_pyboy(*_py_pxd("core/cartridge/mbc3")),
            contract="""\
`impl Cartridge`: `pub(super) fn mbc3_setitem` (7-bit ROM bank, 4 RAM banks, RTC register select
08-0C, latch command at 6000-7FFF through `Rtc::writecommand`) and `mbc30_setitem` (8-bit ROM
bank, 8 RAM banks); RAM/RTC writes through `Rtc::setregister`.""",
            tests=[API, EQUIVALENCE],
            depends_on=["cartridge", "rtc"],
        ),
        ModulePlan(
            name="mbc5",
            target="src/cartridge/mbc5.rs",
            reference_sources=_pyboy(*_py_pxd("core/cartridge/mbc5")),
            contract="""\
`RUMBLE_CARTRIDGE_TYPES: [u8; 3] = [0x1C, 0x1D, 0x1E]`; `impl Cartridge`: `pub(super) fn
mbc5_setitem` (9-bit ROM bank, bank 0 selectable; 4-bit RAM bank; RAM enable only by 0x0A;
rumble bit stored as `value & 0x08`).""",
            tests=[EQUIVALENCE],
            depends_on=["cartridge"],
        ),
        ModulePlan(
            name="serial",
            target="src/serial.rs",
            reference_sources=_pyboy(*_py_pxd("core/serial")),
            contract="""\
`CYCLES_8192HZ = 128`; `Serial` (Default, `new()`) with `sb`, `sc`, `transfer_enabled: u8` and
`internal_clock: u8` (raw bints: `SC & 0x80`), `cycles_to_interrupt`, `last_cycles`, `clock`,
`clock_target` (u64). No link partner: `set_sb` ignores the value (SB reads 0xFF), `set_sc`
starts a transfer, `tick(cycles_now) -> bool` completes an internal-clock transfer 8 x 128 cycles
later (clears SC bit 7; true = serial interrupt), `save_state`/`load_state`, `stop()` (no-op).
`cargo test serial::` replays serial.json.""",
            tests=[EQUIVALENCE],
            depends_on=["error", "utils", "timer"],
        ),
        ModulePlan(
            name="interaction",
            target="src/interaction.rs",
            reference_sources=_pyboy(*_py_pxd("core/interaction")),
            contract="""\
The joypad: `PRESS_*`/`RELEASE_*` WindowEvent numbers (u32, 1..=16); `Interaction` (Default,
`new()`) with `directional`, `standard` (low nibbles of P1, 1 = released); `key_event(key) ->
bool` (true when a button went from released to pressed: the caller requests the joypad
interrupt), `pull(joystickbyte) -> u8` (P1 for a value written to FF00, exactly PyBoy's),
`save_state`/`load_state`. `cargo test interaction::` replays interaction.json.""",
            tests=[API, EQUIVALENCE],
            depends_on=["error", "utils", "timer"],
        ),
        ModulePlan(
            name="ram",
            target="src/ram.rs",
            reference_sources=_pyboy(*_py_pxd("core/ram")),
            contract="""\
`INTERNAL_RAM0 = 8 KiB` (DMG WRAM), `NON_IO_INTERNAL_RAM0 = 0x60`, `IO_PORTS = 0x4C`,
`INTERNAL_RAM1 = 0x7F`, `STATE_SIZE` (their sum). `Ram` (Default, `new()`: all zero) with
`internal_ram0` (inline array), `non_io_internal_ram0`, `io_ports`, `internal_ram1` arrays;
`randomize_with(next_byte)` (PyBoy's fill order), `save_state`/`load_state`. `cargo test ram::`.""",
            tests=[EQUIVALENCE],
            depends_on=["error", "utils"],
        ),
        ModulePlan(
            name="sound",
            target="src/sound.rs",
            reference_sources=_pyboy(*_py_pxd("core/sound")),
            contract="""\
Sound off only. `include!("sound_template.rs")` inside `mod template` and `pub use
template::SOUND_TEMPLATE` (the 2,032-byte block of a fresh PyBoy, generated by
emurust.tools.sound_template: not written by hand). `SAMPLES_PER_FRAME = 804`,
`AUDIOBUFFER_LENGTH`, `STATE_SIZE = 2032`, the `OFF_*` offsets of the scalar fields in the block.
`Sound` (Default, `new()`): `emulate = false`, `cgb = false`, `block: Vec<u8>` plus the top-level
scalars (`cycles_to_interrupt` 2^31, `last_cycles`, `div_apu_counter`, `div_apu`,
`apu_poweron_after_div_write`/`poweron`/`disable_sampling` as raw bint u8, `panning`, `nr50`,
...) patched into the block on save. `get(offset) -> 0`, `set` ignored, `tick(cycles)` records
`last_cycles`, `reset_apu_div`, `clear_buffer`, `save_state`/`load_state` (a loaded block is kept
as is). `cargo test sound::`; tests/test_sound_template.py checks the template.""",
            tests=["tests/test_sound_template.py", EQUIVALENCE],
            depends_on=["error", "utils"],
        ),
        ModulePlan(
            name="bootrom",
            target="src/bootrom.rs",
            reference_sources=_pyboy(*_py_pxd("core/bootrom")),
            contract="""\
`BOOTROM_DMG: &[u8; 256] = include_bytes!("bootrom_dmg.bin")` (PyBoy's own DMG boot ROM, copied
and sha256-checked by emurust.tools.bootrom). `BootRom { pub bootrom: [u8; 256], pub cgb:
bool }` (Default, `new()`), `getitem(addr) -> u8` (0xFF past the end). `cargo test bootrom::`.""",
            tests=[EQUIVALENCE],
        ),
        ModulePlan(
            name="lcd",
            target="src/lcd.rs",
            reference_sources=_pyboy(*_py_pxd("core/lcd"), "api/constants.py"),
            contract="""\
DMG paths of lcd.py. Constants `VIDEO_RAM`, `OBJECT_ATTRIBUTE_MEMORY`, `ROWS = 144`,
`COLS = 160`, `TILES`, `FRAME_CYCLES = 70224`, `STAT_TRANSITION_*`, `COL0_FLAG`,
`BG_PRIORITY_FLAG`, `DMG_PALETTE_GREY`, `rgb_to_bgr`. `PaletteRegister`, `StatRegister`
(rising-edge STAT line), `LcdcRegister`. `Lcd` (`new(palette)`, Default = grey) with PyBoy's
fields in snake_case (`vram0`, `lcdc`, `stat`, `bgp`, `obp0`, `obp1`, `ly`, `lyc`, `scy`, `scx`,
`wy`, `wx`, `next_stat_mode`, `stat_transition`, `frame_done`, `disable_renderer`, `clock`,
`clock_target`, `last_cycles`, `cycles_to_interrupt: i64`, `cycles_to_frame: i64`,
`scanlineparameters`, `renderer: Renderer`, ...); OAM private behind `oam()`/`oam_mut()`/
`write_oam` (they invalidate the per-line sprite cache). `tick(cycles_abs) -> u8` (catch-up, at
most one mode transition, returns IF bits; `transitions` counts them), `next_transition_at()`
(the first CPU cycle at which `tick` transitions), `set_lcdc`, `read_stat`, `write_lyc`, `write_vram`,
`getwindowpos`, `getviewport`, `save_state`/`load_state` (9,116 bytes; the renderer's 115,201).
`Renderer` (scanline drawing at mode-0 entry with PyBoy's tile/sprite caches, `screen_rgba()` ->
144*160*4 RGBA bytes, `invalidate_tile`, `clear_cache`, `blank_screen`). `cargo test lcd::`
(emurust.tools.lcd_vectors).""",
            tests=[API, EQUIVALENCE],
            depends_on=["error", "utils"],
        ),
        ModulePlan(
            name="opcodes",
            target="src/opcodes.rs",
            reference_sources=_pyboy(*_py_pxd("core/opcodes")),
            contract="""\
GENERATED, not hand-written: `python -m emurust.tools.gen_opcodes` transpiles the installed
pyboy/core/opcodes.py with `ast` into this file (its header names the sources' sha256), and
tests/test_opcodes_generated.py regenerates and diffs it; fix the generator, never the output.
Shape: one `fn <PyBoy name>(mb: &mut Motherboard)` per opcode function, PyBoy's order of memory
accesses (`mb.getitem`/`setitem`/`getitem_io_ports`/`setitem_io_ports`) and `mb.cpu.cycles`
increments, i32 maths truncated where opcodes.pxd/cpu.pxd truncate; `pub static HANDLERS:
[Handler; 512]` (PyBoy's dispatch as a table of closures that build `v` and call the opcode
function) and `pub fn execute_opcode(mb, opcode: u16, pc2: u16, pc3: u16) -> bool` (one indirect
call; false for the 11 illegal opcodes and BRK), `pub const OPCODE_LENGTHS: [u8; 512]`, `pub const CPU_COMMANDS: [&str; 512]`. Uses
`cpu::Cpu` fields (A, F, ..., PC, cycles) through `mb.cpu`, so it compiles with cpu and mb.""",
            tests=["tests/test_opcodes_generated.py", EQUIVALENCE],
        ),
        ModulePlan(
            name="idle",
            target="src/idle.rs",
            reference_sources=_no_sources,  # new code: no PyBoy counterpart
            contract="""\
Exact fast-forward of polling loops (not in PyBoy; changes no observable value). `LoopWatch`
(Default; `pub tainted`, `pub skipped`, `pub disabled`, `reset()`, `note_lcd_read(addr, value)`)
lives in the motherboard as `mb.watch`: every write and every read that is not a pure function of
unwritten memory (timer, serial, sound, VRAM, OAM, cartridge RAM, reads during OAM DMA, a STAT read
clearing its mode override) taints it, LCD register reads (FF40-FF4B) are recorded.
`at_backward_jump(mb, target)`, called by `cpu::tick` when an instruction leaves PC at or below
its own address: an untainted iteration from PC back to PC with all registers unchanged and no LCD
transition (`lcd.transitions`) is a fixed point, so whole iterations are skipped (cycles only)
while every skipped instruction starts before `target` and every skipped read happens before
`lcd.next_transition_at()`; after a transition the confirmed iteration is reused when the LCD
registers it read still hold its values (`mb.lcd_register_peek`). `cargo test idle::` runs every
ROM with and without skipping and compares every frame.""",
            tests=[EQUIVALENCE],
            depends_on=["error", "utils", "lcd"],
        ),
        ModulePlan(
            name="blocks",
            target="src/blocks.rs",
            reference_sources=_no_sources,  # new code: no PyBoy counterpart
            contract="""\
Decoded straight-line runs of cartridge ROM code (not in PyBoy; changes no observable value).
`Op { opcode, pc2, pc3 }` plus its step; `BlockCache` (Clone, Default; `pub disabled`,
`clear()`, `block(rom, key, offset) -> Option<&Op>` with `key = 2 * bank + region`, the
block's first op): a block is the ops of the instructions run from one ROM byte on, up to
`MAX_BLOCK_LEN`, ending with the first one for which `ends_block(opcode)` holds (jumps, calls,
returns, RST, HALT, STOP, EI) unless `fixed_successor` gives its target (`CALL nn`, `JP nn` and
`JR e` forward) in the same 16 KiB region, where the block goes on; an instruction whose three
bytes are not all inside one 16 KiB bank of the ROM, or that is illegal (`instruction_length`
None), stays on the fetch path. Decoded on first use into an index per bank and region
(allocated when first run). `replay(mb, &Op) -> Option<&Op>` runs the block as
threaded code: each op's step (specialised per opcode from `opcodes::HANDLERS`, checking `bail`
only where `opcodes::WRITES_MEMORY` says the opcode may write) runs it and tail-calls the next
op's step until an instruction sets `bail`, reaches `mb.slice_target` or is the block's last
(whose step records `mb.block_last_pc`); it returns the op after the last one run, None after
the block's last. The motherboard lends the cache to `cpu::tick_with` for each frame; a ROM
patch (`Emulator::bank_set` on ROM) clears it. `cargo test blocks::` runs every ROM with and
without blocks and compares every frame's save state; a planted overrun past the slice's end
is caught.""",
            tests=[EQUIVALENCE],
            depends_on=["opcodes"],
        ),
        ModulePlan(
            name="cpu",
            target="src/cpu.rs",
            reference_sources=_pyboy(*_py_pxd("core/cpu")),
            contract="""\
`Cpu` (Clone, Default, `new()`): `A F B C D E: u8`, `HL SP PC: u16`,
`interrupts_flag_register` (IF, 5 bits), `interrupts_enabled_register` (IE),
`interrupt_master_enable`, `interrupt_enable_delay`, `interrupt_queued`, `halted`,
`halted_during_ei`, `stopped`, `cycles: u64` (absolute T-cycles), `memory_access_offset: u8`,
`bail`; `set_interruptflag(flag)`, `save_state`/`load_state` (27 bytes). Free functions on the
motherboard: `tick(mb, cycles_target) -> Result<(), EmuError>` (interrupt check, PyBoy's HALT
model, run `fetch_and_execute` until the target or `bail`, calling `idle::at_backward_jump`
after an instruction that leaves PC at or below its own address) and `tick_with(mb,
Option<&mut BlockCache>, cycles_target)` (the same, replaying `blocks` for ROM code while the EI
delay is 0 with `blocks::replay`, EI countdown and backward-jump check after the block's last;
after a `bail` the slice goes on when `mb.continue_after_bail()` says so),
`check_interrupts(mb) -> bool`, `handle_interrupt`, `fetch_and_execute(mb) -> Result<(),
IllegalOpcode>`. `cargo test cpu::`
replays cpu.json (emurust.tools.cpu_vectors: every opcode, memory access log included).""",
            tests=[ERRORS, EQUIVALENCE],
            depends_on=["error", "utils", "opcodes", "idle", "blocks"],
        ),
        ModulePlan(
            name="mb",
            target="src/mb.rs",
            reference_sources=_pyboy(*_py_pxd("core/mb")),
            contract="""\
`SGB_STATE_SIZE`; `Motherboard` owns `cartridge`, `bootrom`, `timer`, `interaction`, `ram`,
`cpu`, `serial`, `lcd`, `sound`, `sgb_state` (opaque), `bootrom_enabled`, `serialbuffer`,
`oam_dma_*`, and the DMG-constant CGB fields the state holds. `new(rom, ram_file, rtc_file)`,
`getitem`/`setitem` (full memory map: boot ROM, cart, VRAM/OAM blocking with LCD catch-up at
`cycles + memory_access_offset`, lazy OAM DMA, I/O, HRAM, IE) and `getitem_io_ports`/
`setitem_io_ports`, `transfer_DMA`, `sync_oam_dma`, `buttonevent(key)`, `getserial()`,
`bootrom_bytes(_mut)`, `tick()` (one frame: until `lcd.frame_done`, PyBoy's catch-up order),
`timer_sync`/`serial_sync` (apply deferred catch-ups before anything reads them), `watch`
(`idle::LoopWatch`, reset at each frame; the memory map taints it), `blocks` (`BlockCache`, moved
out for each frame's loop and passed to `cpu::tick_with` unless disabled), `slice_target` and
`block_last_pc` (set by the CPU loop and `blocks`), `slice_length()`, `continue_after_bail()`
(clears `bail` and lets the slice go on when every bail-setting write of the instruction moved no
component's event, marked by `bail_moves_events`, and the frame loop would change nothing: no
OAM DMA, serial and timer deferred, the target the LCD's next transition and at least 4 cycles
away, nothing to dispatch), `lcd_register_peek`,
`save_state() -> Vec<u8>` (version 29, PyBoy's bytes) and `load_state(&[u8])` (v29 DMG only,
rejects trailing bytes, restores the previous state on error). `cargo test mb::` compares whole
save states of every test ROM after 1/2/63/64/65/100 frames with PyBoy's.""",
            tests=[ERRORS, API, EQUIVALENCE],
            depends_on=["error", "utils", "timer", "cartridge", "mbc1", "mbc2", "mbc3", "mbc5",
                        "serial", "interaction", "ram", "sound", "bootrom", "lcd", "opcodes",
                        "idle", "blocks", "cpu"],
        ),
        ModulePlan(
            name="frame",
            target="src/frame.rs",
            reference_sources=_pyboy(*_py_pxd("pyboy")),
            contract="""\
PyBoy's `PyBoy` object minus windows/plugins. `BUTTONS` (up, down, right, left, a, b, select,
start), `PRESS_ARROW_UP = 1`, `RELEASE_ARROW_UP = 9`, `press_event(name)`. `Emulator { mb,
frame_count, events, queued_input, stopped }`: `new(rom, ram_file, rtc_file)`,
`send_input(event, delay)`, `tick_frame(render, sound)` (= `_tick`: apply queued events, one
`mb.tick()`, `frame_count += 1`, move due delayed events), `tick(count, render, sound) -> bool`
(renders only the last frame), `registers() -> [u16; 9]`, `set_register`, `cycles`,
`getitem`/`setitem`, `screen()`, `save_state`/`load_state`, cartridge queries, `rtc_lock`,
`save_ram`/`save_rtc`, `bank_get`/`bank_set` over `Region` (`from_code`). The one place the
bindings and the vec env reach into the motherboard. `cargo test frame::`.""",
            tests=[API, VEC],
            depends_on=["error", "mb"],
        ),
        ModulePlan(
            name="exceptions",
            target="python/emurust/utils.py",
            reference_sources=_pyboy("utils.py"),
            contract="""\
PyBoy's exception classes under PyBoy's names (`PyBoyException` and its subclasses
`PyBoyInternalError`, `PyBoyAssertException`, `PyBoyOutOfBoundsException`,
`PyBoyNotImplementedException`, `PyBoyInvalidInputException`, `PyBoyInvalidOperationException`,
`PyBoyDependencyError`, `PyBoyFeatureDisabledError`) plus `EmurustIllegalOpcodeException`;
`WindowEvent` (PyBoy's numbers) and `BUTTONS`. The Rust bindings raise these classes by name.""",
            tests=[API, ERRORS],
        ),
        ModulePlan(
            name="python",
            target="src/python.rs",
            reference_sources=_pyboy(*_py_pxd("pyboy")),
            contract="""\
The PyO3 module `emurust._emurust` (feature `python`): class `Emulator` over `frame::Emulator`
(`new(rom, ram_file, rtc_file)`, `tick`, `send_input`, `frame_count`, `cycles`, `registers`,
`set_register`, `getitem`, `setitem`, `read_range`/`write_range`, `bank_read`/`bank_write`,
cartridge queries, `rtc_lock`, `save_ram`, `save_rtc`, `save_state`, `load_state`,
`screen_ndarray()` -> a zero-copy (144, 160, 4) uint8 view kept alive by the object),
`VecEmulator` registered from `vec`, `STATE_VERSION`. `pub fn raise(py, class_name, msg)`,
`to_pyerr(py, EmuError)` (classes of `emurust.utils`), `guarded` (`catch_unwind`: a panic becomes
PyBoyException and marks the emulator broken), `GilOnly<T>` (pyclass field wrapper).""",
            tests=[API, ERRORS],
            depends_on=["error", "utils", "frame", "exceptions"],
        ),
        ModulePlan(
            name="spin_pool",
            target="src/spin_pool.rs",
            reference_sources=_no_sources,  # new code: no PyBoy counterpart
            contract="""\
`SpinPool::new(n, name) -> io::Result<SpinPool>` (n persistent std threads), `workers()`,
`run(&self, job: &(dyn Fn(usize) + Sync))`: runs `job(0)` on the caller and `job(1..=n)` on the
workers, returning when all have returned; both sides spin before sleeping (workers park on a
condvar after ~2 ms idle); a panic in a worker's call is caught and never hangs the caller; Drop
stops and joins the workers. The only `unsafe`: the job's lifetime is erased while `run` waits.
`cargo test spin_pool::`.""",
            tests=[VEC],
            depends_on=[],
        ),
        ModulePlan(
            name="vec",
            target="src/vec.rs",
            reference_sources=_no_sources,  # new code: no PyBoy counterpart
            contract="""\
`ObsKind { Rgba, Grey2, Ram }` (`parse`, `size`, `needs_render`); pyclass `VecEmulator(rom,
num_envs, frameskip=1, obs="rgba", score_addr=None, score_bytes=1, done_addr=None, max_steps=0,
start_state=None, auto_reset=True, threads=0)`: N `frame::Emulator`s stepped on
a `spin_pool::SpinPool` (threads - 1 workers, the caller steps the first chunk) with the GIL
released; `reset()`, `step(actions: uint8[N])`
(held-button bitmasks -> PyBoy's press/release events, `frameskip` frames rendering the last),
`save_state(i)`, `frame_count(i)`, getters `num_envs`, `obs_size`, and zero-copy numpy views
`observations` (N, obs_size) uint8, `rewards` f32, `terminals`, `truncations` bool, rewritten in
place. N = 1 equals one emurust.PyBoy driven the same way, bit for bit, for any thread count.""",
            tests=[VEC, PUFFER],
            depends_on=["error", "frame", "python", "spin_pool"],
        ),
        ModulePlan(
            name="api",
            target="python/emurust/pyboy.py",
            reference_sources=_pyboy(*_py_pxd("pyboy"), "api/screen.py"),
            contract="""\
`PyBoy(gamerom, *, ram_file, rtc_file, window="null", cgb, sound_emulated=False, ...)`: PyBoy
2.8.1's API subset (docs/emurust.md §3) with PyBoy's argument checks and messages; unsupported
settings raise `PyBoyFeatureDisabledError`, unknown keywords `KeyError`. `tick(count, render,
sound)`, `frame_count`, `button`/`button_press`/`button_release`/`send_input`, `save_state`/
`load_state` (file-like), `stop(save)`, `set_emulation_speed`, `rtc_lock_experimental`,
`cartridge_title`, `memory` (`PyBoyMemoryView`: `[addr]`, slices, `[bank, addr]` with PyBoy's
bounds rules), `register_file` (`PyBoyRegisterFile`), `screen` (`Screen`: `ndarray`,
`raw_buffer`, `image`), all over `emurust._emurust.Emulator`.""",
            tests=[API, ERRORS, EQUIVALENCE],
            depends_on=["exceptions", "python"],
        ),
        ModulePlan(
            name="vec_env",
            target="python/emurust/vec.py",
            reference_sources=_no_sources,  # new code: the vectorised env's Python face
            contract="""\
`GAMES` (score/done WRAM addresses of game.gb), `OBS_SHAPES`, `state_after(rom, frames)`,
`mask(*buttons) -> int`; `VecEnv(rom, num_envs, *, frameskip, obs, game, score_addr,
score_bytes, done_addr, max_steps, start_state, skip_frames, auto_reset, threads)` over
`VecEmulator` with `observations`/`rewards`/`terminals`/`truncations` views, `reset(seed)`,
`step(actions)` (PufferLib-style 5-tuple), `save_state(i)`, `frame_count(i)`, `close()`;
`EmurustEnv`, a gymnasium.Env over a one-env VecEnv, created lazily (no gymnasium import at
import time).""",
            tests=[VEC, PUFFER],
            depends_on=["exceptions", "vec"],
        ),
    ],
)
