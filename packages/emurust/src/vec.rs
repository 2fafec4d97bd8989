//! Vectorised env over `frame::Emulator` (new code, no PyBoy counterpart; LGPL-3.0 as the crate).
//!
//! `VecEmulator` steps N emulators on Rust threads (its own persistent `SpinPool`, one chunk of
//! envs per thread) with the GIL released. Actions come in as one button bitmask per env (bit
//! i = button `frame::BUTTONS[i]`: up, down, right, left, a, b, select, start; a set bit holds the button).
//! A step turns the change of mask into PyBoy's press/release events (exactly what
//! `PyBoy.button_press`/`button_release` queue, applied at the start of the next frame), runs
//! `frameskip` frames rendering only the last (as `PyBoy.tick(frameskip)`), then writes the
//! observation, reward and done flags into preallocated buffers that Python sees as numpy arrays
//! without copies. Reward is the increase of a score read from WRAM, done a WRAM flag byte
//! (addresses given by the caller; the test ROM `game.gb` documents its own in roms/README.md).
//! So N=1 equals a single `emurust.PyBoy` driven the same way, bit for bit.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use numpy::ndarray::{ArrayView1, ArrayView2};
use numpy::{PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::error::EmuError;
use crate::frame::{Emulator, PRESS_ARROW_UP, RELEASE_ARROW_UP};
use crate::python::{raise, to_pyerr, GilOnly};
use crate::spin_pool::SpinPool;

pub const SCREEN_H: usize = 144;
pub const SCREEN_W: usize = 160;

/// What a step writes as the observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObsKind {
    /// The screen, 144*160*4 RGBA bytes.
    Rgba,
    /// 72*80 greyscale: the mean luminance of each 2x2 block.
    Grey2,
    /// WRAM 0xC000-0xDFFF (8192 bytes), read directly (no memory-map side effects).
    Ram,
}

impl ObsKind {
    pub fn parse(s: &str) -> Result<ObsKind, EmuError> {
        match s {
            "rgba" | "screen" => Ok(ObsKind::Rgba),
            "grey2" | "gray2" | "grey" => Ok(ObsKind::Grey2),
            "ram" | "wram" => Ok(ObsKind::Ram),
            _ => Err(EmuError::InvalidInput(format!(
                "observation {s:?}: choose 'rgba', 'grey2' or 'ram'"
            ))),
        }
    }

    pub fn size(self) -> usize {
        match self {
            ObsKind::Rgba => SCREEN_H * SCREEN_W * 4,
            ObsKind::Grey2 => (SCREEN_H / 2) * (SCREEN_W / 2),
            ObsKind::Ram => 0x2000,
        }
    }

    /// Whether the observation needs the last frame rendered.
    pub fn needs_render(self) -> bool {
        !matches!(self, ObsKind::Ram)
    }
}

/// Where the game keeps its score and done flag (WRAM addresses, read directly).
#[derive(Debug, Clone, Copy, Default)]
pub struct RewardSpec {
    /// Score address and width in bytes (1..=4, little-endian); reward = score increase.
    pub score: Option<(u16, u8)>,
    /// Done when this byte is non-zero.
    pub done: Option<u16>,
    /// Truncate after this many steps (0: never).
    pub max_steps: u64,
}

/// One env of the vector: the emulator plus what the step logic remembers.
pub struct Slot {
    pub emu: Emulator,
    /// Buttons currently held (bitmask as in the actions).
    pub held: u8,
    pub score: u64,
    pub steps: u64,
}

fn wram_byte(emu: &Emulator, addr: u16) -> u8 {
    // C000-DFFF is internal_ram0 on DMG; other addresses would need the memory map (and its
    // side effects), which a reward read must not have.
    match addr {
        0xC000..=0xDFFF => emu.mb.ram.internal_ram0[(addr - 0xC000) as usize],
        _ => 0,
    }
}

fn read_score(emu: &Emulator, spec: &RewardSpec) -> u64 {
    match spec.score {
        Some((addr, width)) => (0..width.min(4) as u16)
            .map(|i| (wram_byte(emu, addr.wrapping_add(i)) as u64) << (8 * i))
            .sum(),
        None => 0,
    }
}

impl Slot {
    pub fn new(rom: &[u8], start_state: Option<&[u8]>) -> Result<Slot, EmuError> {
        let mut emu = Emulator::new(rom, None, None)?;
        if let Some(s) = start_state {
            emu.load_state(s)?;
        }
        Ok(Slot { emu, held: 0, score: 0, steps: 0 })
    }

    /// Queue the press/release events that turn `held` into `mask`, in button order (what a
    /// caller of `button_press`/`button_release` per changed button does).
    pub fn apply_action(&mut self, mask: u8) {
        for i in 0..8u8 {
            let bit = 1u8 << i;
            if mask & bit != 0 && self.held & bit == 0 {
                self.emu.send_input(PRESS_ARROW_UP + i, 0);
            } else if mask & bit == 0 && self.held & bit != 0 {
                self.emu.send_input(RELEASE_ARROW_UP + i, 0);
            }
        }
        self.held = mask;
    }

    pub fn write_obs(&self, kind: ObsKind, out: &mut [u8]) {
        match kind {
            ObsKind::Rgba => out.copy_from_slice(self.emu.screen()),
            ObsKind::Grey2 => {
                let s = self.emu.screen();
                let lum = |y: usize, x: usize| {
                    let p = (y * SCREEN_W + x) * 4;
                    // integer BT.601 luma; the DMG palettes are grey, so this is R for them
                    (77 * s[p] as u32 + 150 * s[p + 1] as u32 + 29 * s[p + 2] as u32) >> 8
                };
                for y in 0..SCREEN_H / 2 {
                    for x in 0..SCREEN_W / 2 {
                        let sum = lum(2 * y, 2 * x)
                            + lum(2 * y, 2 * x + 1)
                            + lum(2 * y + 1, 2 * x)
                            + lum(2 * y + 1, 2 * x + 1);
                        out[y * (SCREEN_W / 2) + x] = (sum / 4) as u8;
                    }
                }
            }
            ObsKind::Ram => out.copy_from_slice(&self.emu.mb.ram.internal_ram0[..0x2000]),
        }
    }
}

/// Everything one env's step writes besides the observation.
#[derive(Debug, Clone, Copy, Default)]
pub struct StepOut {
    pub reward: f32,
    pub terminal: bool,
    pub truncated: bool,
}

/// Step one env: action, `frameskip` frames, observation, reward/done; reset (power-on or the
/// start state) when done and `auto_reset`, the observation then being the new episode's first.
#[allow(clippy::too_many_arguments)]
pub fn step_slot(
    slot: &mut Slot,
    mask: u8,
    frameskip: u64,
    kind: ObsKind,
    spec: &RewardSpec,
    rom: &[u8],
    start_state: Option<&[u8]>,
    auto_reset: bool,
    obs: &mut [u8],
) -> Result<StepOut, EmuError> {
    slot.apply_action(mask);
    slot.emu.tick(frameskip, kind.needs_render(), false)?;
    slot.steps += 1;
    let score = read_score(&slot.emu, spec);
    let reward = score.wrapping_sub(slot.score) as i64 as f32;
    slot.score = score;
    let terminal = spec.done.is_some_and(|a| wram_byte(&slot.emu, a) != 0);
    let truncated = !terminal && spec.max_steps != 0 && slot.steps >= spec.max_steps;
    if (terminal || truncated) && auto_reset {
        *slot = Slot::new(rom, start_state)?;
        // the new episode's first observation: a fresh emulator has not run a frame yet, so
        // its screen is the renderer's power-on buffer (or the start state's screen)
        slot.score = read_score(&slot.emu, spec);
    }
    slot.write_obs(kind, obs);
    Ok(StepOut { reward, terminal, truncated })
}

/// One chunk of envs and its slices of the output buffers, as the zipped `chunks_mut` yield
/// them: ((((slots, observations), rewards), terminals), truncations).
type ChunkBufs<'a> =
    ((((&'a mut [Slot], &'a mut [u8]), &'a mut [f32]), &'a mut [bool]), &'a mut [bool]);

/// One pool index's chunk and its actions, taken out by the thread that steps it.
type ChunkSlot<'a> = Mutex<Option<(ChunkBufs<'a>, &'a [u8])>>;

/// N emulators stepped in parallel (see the module comment).
#[pyclass(module = "emurust._emurust")]
pub struct VecEmulator {
    /// Each slot's emulator is Send, not Sync (see `python::GilOnly`).
    pub slots: GilOnly<Vec<Slot>>,
    pub rom: Vec<u8>,
    pub start_state: Option<Vec<u8>>,
    pub kind: ObsKind,
    pub frameskip: u64,
    pub spec: RewardSpec,
    pub auto_reset: bool,
    pub threads: usize,
    /// `threads - 1` workers that live as long as the env (None: one thread, steps run inline).
    pub pool: Option<SpinPool>,
    pub obs: Box<[u8]>,
    pub rewards: Box<[f32]>,
    pub terminals: Box<[bool]>,
    pub truncations: Box<[bool]>,
    pub broken: bool,
}

impl VecEmulator {
    fn step_all(&mut self, masks: &[u8]) -> Result<(), EmuError> {
        let n = self.slots.len();
        let size = self.kind.size();
        let chunk = n.div_ceil(self.threads.max(1)).max(1);
        let (kind, frameskip, spec, auto_reset) = (self.kind, self.frameskip, self.spec, self.auto_reset);
        let rom = &self.rom[..];
        let start = self.start_state.as_deref();
        let work = |((((slots, obs), rew), term), trunc): ChunkBufs<'_>,
                    acts: &[u8]|
         -> Result<(), EmuError> {
            for (i, slot) in slots.iter_mut().enumerate() {
                let o = step_slot(
                    slot,
                    acts[i],
                    frameskip,
                    kind,
                    &spec,
                    rom,
                    start,
                    auto_reset,
                    &mut obs[i * size..(i + 1) * size],
                )?;
                rew[i] = o.reward;
                term[i] = o.terminal;
                trunc[i] = o.truncated;
            }
            Ok(())
        };
        let slots: &mut [Slot] = &mut self.slots;
        let mut chunks = slots
            .chunks_mut(chunk)
            .zip(self.obs.chunks_mut(chunk * size))
            .zip(self.rewards.chunks_mut(chunk))
            .zip(self.terminals.chunks_mut(chunk))
            .zip(self.truncations.chunks_mut(chunk))
            .zip(masks.chunks(chunk));
        let Some(pool) = self.pool.as_ref() else {
            // one thread: every chunk here, in order
            return chunks.try_for_each(|(bufs, acts)| work(bufs, acts));
        };
        // Pool index i steps chunk i (the calling thread is index 0, the pool's threads - 1
        // workers the others), taking it out of its own slot.
        let parts: Vec<ChunkSlot<'_>> = chunks.map(|c| Mutex::new(Some(c))).collect();
        let results: Vec<Mutex<Result<(), EmuError>>> =
            parts.iter().map(|_| Mutex::new(Ok(()))).collect();
        pool.run(&|i| {
            let (Some(part), Some(out)) = (parts.get(i), results.get(i)) else {
                return; // more workers than chunks
            };
            let taken = part.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some((bufs, acts)) = taken {
                let r = catch_unwind(AssertUnwindSafe(|| work(bufs, acts))).unwrap_or_else(|p| {
                    Err(EmuError::InvalidInput(format!(
                        "internal error in a worker: {}",
                        p.downcast_ref::<&str>().copied().unwrap_or("panic")
                    )))
                });
                *out.lock().unwrap_or_else(|e| e.into_inner()) = r;
            }
        });
        results.into_iter().try_for_each(|r| r.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    fn reset_all(&mut self) -> Result<(), EmuError> {
        let size = self.kind.size();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            *slot = Slot::new(&self.rom, self.start_state.as_deref())?;
            slot.score = read_score(&slot.emu, &self.spec);
            slot.write_obs(self.kind, &mut self.obs[i * size..(i + 1) * size]);
        }
        self.rewards.fill(0.0);
        self.terminals.fill(false);
        self.truncations.fill(false);
        Ok(())
    }
}

#[pymethods]
impl VecEmulator {
    #[new]
    #[pyo3(signature = (rom, num_envs, frameskip=1, obs="rgba", score_addr=None, score_bytes=1,
                        done_addr=None, max_steps=0, start_state=None, auto_reset=true, threads=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        rom: &[u8],
        num_envs: usize,
        frameskip: u64,
        obs: &str,
        score_addr: Option<u16>,
        score_bytes: u8,
        done_addr: Option<u16>,
        max_steps: u64,
        start_state: Option<&[u8]>,
        auto_reset: bool,
        threads: usize,
    ) -> PyResult<Self> {
        let bad = |m: &str| raise(py, "PyBoyInvalidInputException", m.to_string());
        if num_envs == 0 {
            return Err(bad("num_envs must be at least 1"));
        }
        if frameskip == 0 {
            return Err(bad("frameskip must be at least 1"));
        }
        if !(1..=4).contains(&score_bytes) {
            return Err(bad("score_bytes must be 1..4"));
        }
        let kind = ObsKind::parse(obs).map_err(|e| to_pyerr(py, e))?;
        let threads = if threads == 0 {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        } else {
            threads
        };
        let spec = RewardSpec { score: score_addr.map(|a| (a, score_bytes)), done: done_addr, max_steps };
        let mut slots = Vec::with_capacity(num_envs);
        for _ in 0..num_envs {
            let r = catch_unwind(AssertUnwindSafe(|| Slot::new(rom, start_state)));
            match r {
                Ok(Ok(s)) => slots.push(s),
                Ok(Err(e)) => return Err(to_pyerr(py, e)),
                Err(_) => return Err(raise(py, "PyBoyException", "emurust internal error".into())),
            }
        }
        let mut v = VecEmulator {
            slots: GilOnly(slots),
            rom: rom.to_vec(),
            start_state: start_state.map(|s| s.to_vec()),
            kind,
            frameskip,
            spec,
            auto_reset,
            threads,
            pool: if threads > 1 && num_envs > 1 {
                // the caller steps one chunk itself, the pool the others
                let pool = SpinPool::new(threads.min(num_envs) - 1, "emurust-vec")
                    .map_err(|e| raise(py, "PyBoyException", format!("worker threads: {e}")))?;
                Some(pool)
            } else {
                None
            },
            obs: vec![0u8; num_envs * kind.size()].into_boxed_slice(),
            rewards: vec![0f32; num_envs].into_boxed_slice(),
            terminals: vec![false; num_envs].into_boxed_slice(),
            truncations: vec![false; num_envs].into_boxed_slice(),
            broken: false,
        };
        v.reset_all().map_err(|e| to_pyerr(py, e))?;
        Ok(v)
    }

    #[getter]
    fn num_envs(&self) -> usize {
        self.slots.len()
    }

    #[getter]
    fn obs_size(&self) -> usize {
        self.kind.size()
    }

    /// Power-on (or the start state) for every env.
    fn reset(&mut self, py: Python<'_>) -> PyResult<()> {
        let mut broken = self.broken;
        let r = crate::python::guarded(py, &mut broken, || self.reset_all());
        self.broken = broken;
        r
    }

    /// One step for every env with the GIL released; results land in the buffers.
    fn step(&mut self, py: Python<'_>, actions: PyReadonlyArray1<'_, u8>) -> PyResult<()> {
        if self.broken {
            return Err(raise(py, "PyBoyException", "the vector env hit an internal error earlier".into()));
        }
        let masks: Vec<u8> = actions.as_slice().map(|s| s.to_vec()).unwrap_or_else(|_| actions.as_array().to_vec());
        if masks.len() != self.slots.len() {
            return Err(raise(
                py,
                "PyBoyInvalidInputException",
                format!("expected {} actions, got {}", self.slots.len(), masks.len()),
            ));
        }
        let res = py.detach(|| catch_unwind(AssertUnwindSafe(|| self.step_all(&masks))));
        match res {
            Ok(r) => r.map_err(|e| to_pyerr(py, e)),
            Err(_) => {
                self.broken = true;
                Err(raise(py, "PyBoyException", "emurust internal error while stepping".into()))
            }
        }
    }

    /// Save state of env i (PyBoy's bytes).
    fn save_state<'py>(&mut self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        if i >= self.slots.len() {
            return Err(raise(py, "PyBoyOutOfBoundsException", format!("no env {i}")));
        }
        let mut broken = self.broken;
        let slots = &self.slots;
        let r = crate::python::guarded(py, &mut broken, || Ok(slots[i].emu.save_state()));
        self.broken = broken;
        Ok(pyo3::types::PyBytes::new(py, &r?))
    }

    /// Frame count of env i (frames since its last reset).
    fn frame_count(&self, py: Python<'_>, i: usize) -> PyResult<u64> {
        let slot = self.slots.get(i).ok_or_else(|| raise(py, "PyBoyOutOfBoundsException", format!("no env {i}")))?;
        Ok(slot.emu.frame_count)
    }

    /// The observation buffer, (num_envs, obs_size) uint8, a view over Rust memory.
    #[getter]
    fn observations<'py>(slf: Bound<'py, Self>) -> Bound<'py, PyArray2<u8>> {
        let (ptr, n, size) = {
            let this = slf.borrow();
            (this.obs.as_ptr(), this.slots.len(), this.kind.size())
        };
        // SAFETY: `obs` is a boxed slice of n*size bytes allocated once in `new` and never
        // reallocated; the array's base object is this object, which owns it.
        unsafe {
            let view = ArrayView2::from_shape_ptr((n, size), ptr);
            PyArray2::borrow_from_array(&view, slf.into_any())
        }
    }

    #[getter]
    fn rewards<'py>(slf: Bound<'py, Self>) -> Bound<'py, PyArray1<f32>> {
        let (ptr, n) = {
            let this = slf.borrow();
            (this.rewards.as_ptr(), this.slots.len())
        };
        // SAFETY: as for `observations` (a boxed slice of n f32 owned by this object).
        unsafe { PyArray1::borrow_from_array(&ArrayView1::from_shape_ptr(n, ptr), slf.into_any()) }
    }

    #[getter]
    fn terminals<'py>(slf: Bound<'py, Self>) -> Bound<'py, PyArray1<bool>> {
        let (ptr, n) = {
            let this = slf.borrow();
            (this.terminals.as_ptr(), this.slots.len())
        };
        // SAFETY: as for `observations` (a boxed slice of n bools owned by this object).
        unsafe { PyArray1::borrow_from_array(&ArrayView1::from_shape_ptr(n, ptr), slf.into_any()) }
    }

    #[getter]
    fn truncations<'py>(slf: Bound<'py, Self>) -> Bound<'py, PyArray1<bool>> {
        let (ptr, n) = {
            let this = slf.borrow();
            (this.truncations.as_ptr(), this.slots.len())
        };
        // SAFETY: as for `observations` (a boxed slice of n bools owned by this object).
        unsafe { PyArray1::borrow_from_array(&ArrayView1::from_shape_ptr(n, ptr), slf.into_any()) }
    }
}
