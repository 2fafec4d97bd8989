//! emurust: a Game Boy (DMG) emulator, a close translation of PyBoy 2.8.1 (LGPL-3.0) so that it is
//! equal to PyBoy frame for frame, including PyBoy's catch-up timing and its save-state format.
//!
//! Module map (each file names the PyBoy source it translates):
//! `utils` (state I/O, constants), `error`, `cartridge` (ROM-only, MBC1/2/3/5, RTC), `timer`,
//! `serial`, `interaction` (joypad), `ram`, `sound` (sound off: registers read 0, state block kept),
//! `lcd` (LCD state machine, STAT/LCDC/palettes, renderer), `opcodes` (generated), `cpu`,
//! `idle` (exact fast-forward of polling loops), `blocks` (decoded ROM code replayed by the CPU
//! loop), `mb` (motherboard: memory map, OAM DMA, tick
//! loop, boot ROM, save/load state), `frame` (PyBoy's `_tick` frame logic and input queue),
//! `spin_pool` (the vec env's threads), `python` + `vec` (bindings, vectorised env; feature
//! `python`).

/// How this build was compiled: "plain", or "pgo <key>" when emurust.tools.pgo built it
/// with a profile (set through the `EMURUST_BUILD` environment variable at compile time).
pub const BUILD: &str = match option_env!("EMURUST_BUILD") {
    Some(b) => b,
    None => "plain",
};

pub mod blocks;
pub mod bootrom;
pub mod cartridge;
pub mod cpu;
pub mod error;
pub mod frame;
pub mod idle;
pub mod interaction;
pub mod lcd;
pub mod mb;
pub mod opcodes;
pub mod ram;
pub mod serial;
pub mod sound;
pub mod spin_pool;
pub mod timer;
pub mod utils;

// the PyO3 module `emurust._emurust` and the vectorised env (feature `python`, built by maturin)
#[cfg(feature = "python")]
pub mod python;
#[cfg(feature = "python")]
pub mod vec;
