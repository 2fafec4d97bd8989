//! Translated from PyBoy 2.8.1 pyboy/pyboy.py (LGPL-3.0): the PyO3 module `emurust._emurust`.
//!
//! It exposes one low-level class, `Emulator` (a `frame::Emulator`), and the vectorised env
//! (`vec::VecEmulator`). The PyBoy-compatible API (`emurust.PyBoy`, `memory[...]` with PyBoy's
//! bounds checks, `register_file`, `screen`) is written in Python on top of it
//! (python/emurust/pyboy.py), because most of it is argument checking that reads best next to
//! PyBoy's own Python. Every entry point runs the Rust core under `catch_unwind`: a bug's panic
//! becomes `PyBoyException` (never PyO3's `PanicException`, a BaseException that `except
//! Exception` would not catch) and the emulator is marked broken, since its state may be half
//! updated. Errors map onto PyBoy's exception classes from `emurust.utils`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use numpy::ndarray::ArrayView3;
use numpy::PyArray3;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyInt, PyType};

use crate::error::EmuError;
use crate::frame::{self, Emulator, Region};

pub const SCREEN_H: usize = 144;
pub const SCREEN_W: usize = 160;

/// The exception classes of `emurust.utils` (PyBoy's names), imported once.
fn exc_class(py: Python<'_>, name: &str) -> PyResult<Py<PyType>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let m = MODULE.get_or_try_init(py, || py.import("emurust.utils").map(|m| m.unbind()))?;
    Ok(m.bind(py).getattr(name)?.cast_into::<PyType>()?.unbind())
}

pub fn raise(py: Python<'_>, name: &str, msg: String) -> PyErr {
    match exc_class(py, name) {
        Ok(cls) => PyErr::from_type(cls.into_bound(py), msg),
        // emurust.utils not importable (only if the package is broken): still raise something
        Err(_) => PyException::new_err(msg),
    }
}

pub fn to_pyerr(py: Python<'_>, e: EmuError) -> PyErr {
    let name = match &e {
        EmuError::Rom(_) | EmuError::State(_) => "PyBoyException",
        EmuError::OutOfBounds(_) => "PyBoyOutOfBoundsException",
        EmuError::InvalidInput(_) => "PyBoyInvalidInputException",
        EmuError::IllegalOpcode { .. } => "EmurustIllegalOpcodeException",
    };
    raise(py, name, e.to_string())
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Run `f` on the emulator, turning a panic into PyBoyException and marking the emulator broken.
pub fn guarded<T>(
    py: Python<'_>,
    broken: &mut bool,
    f: impl FnOnce() -> Result<T, EmuError>,
) -> PyResult<T> {
    if *broken {
        return Err(raise(
            py,
            "PyBoyException",
            "the emulator hit an internal error earlier and its state is undefined; create a new one"
                .into(),
        ));
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_pyerr(py, e)),
        Err(p) => {
            *broken = true;
            Err(raise(py, "PyBoyException", format!("emurust internal error: {}", panic_message(p))))
        }
    }
}

/// Makes a `Send` type usable as a pyclass field (PyO3 requires pyclasses to be `Sync`).
/// `Emulator` is `Send` but not `Sync`: the RTC keeps PyBoy's `timezero` in a `Cell`, which
/// `save_state(&self)` updates as PyBoy does.
pub struct GilOnly<T>(pub T);

// SAFETY: the extension is built for the abi3 stable API, which free-threaded CPython cannot
// load, so every `&T` PyO3 hands out (through a PyRef) is used with the GIL held, one thread at
// a time; none of the `&self` methods here release the GIL. The code that runs without the GIL
// (`tick`, `VecEmulator.step` inside `py.detach`) holds a PyRefMut, i.e. `&mut T`, which PyO3's
// borrow flag makes exclusive. So no two threads ever touch the inner value at once.
unsafe impl<T: Send> Sync for GilOnly<T> {}

impl<T> std::ops::Deref for GilOnly<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for GilOnly<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// One emulator (PyBoy's `PyBoy` object without windows/plugins). Used by `emurust.PyBoy`.
#[pyclass(module = "emurust._emurust", name = "Emulator")]
pub struct PyEmulator {
    pub emu: GilOnly<Box<Emulator>>,
    pub broken: bool,
    /// `PyBoy.stop()` ran (`mark_stopped`): `pyboy_tick` raises, as PyBoy's `tick` does.
    pub stopped: bool,
}

impl PyEmulator {
    fn run<T>(&mut self, py: Python<'_>, f: impl FnOnce(&mut Emulator) -> Result<T, EmuError>) -> PyResult<T> {
        let emu: &mut Emulator = &mut self.emu;
        guarded(py, &mut self.broken, || f(emu))
    }
}

#[pymethods]
impl PyEmulator {
    #[new]
    #[pyo3(signature = (rom, ram_file=None, rtc_file=None))]
    fn new(py: Python<'_>, rom: &[u8], ram_file: Option<&[u8]>, rtc_file: Option<&[u8]>) -> PyResult<Self> {
        let mut broken = false;
        let emu = guarded(py, &mut broken, || Emulator::new(rom, ram_file, rtc_file))?;
        Ok(PyEmulator { emu: GilOnly(Box::new(emu)), broken, stopped: false })
    }

    /// `PyBoy.tick(count, render, sound)` with the GIL released while the frames run.
    #[pyo3(signature = (count=1, render=true, sound=true))]
    fn tick(&mut self, py: Python<'_>, count: u64, render: bool, sound: bool) -> PyResult<bool> {
        if self.broken {
            return self.run(py, |_| Ok(false));
        }
        let emu: &mut Emulator = &mut self.emu;
        let res = py.detach(|| catch_unwind(AssertUnwindSafe(|| emu.tick(count, render, sound))));
        match res {
            Ok(r) => r.map_err(|e| to_pyerr(py, e)),
            Err(p) => {
                self.broken = true;
                Err(raise(py, "PyBoyException", format!("emurust internal error: {}", panic_message(p))))
            }
        }
    }

    /// `emurust.PyBoy.tick(count=1, render=True, sound=True)` itself, which `PyBoy.__init__`
    /// binds as the instance's `tick`: its per-frame cost counts (RL code calls `tick(1)` once
    /// a frame), and a Python wrapper added about 0.2 µs to each call. The same
    /// checks as PyBoy's `cpdef tick(self, int count, bint render, bint sound)`: a plain `int`
    /// in 0..2^31 takes the fast path, any other `count` goes through
    /// `emurust.pyboy._tick_count` (Cython's int conversion, PyBoy's errors); `render` and
    /// `sound` by truth value.
    #[pyo3(signature = (count=None, render=None, sound=None))]
    fn pyboy_tick(
        &mut self,
        py: Python<'_>,
        count: Option<&Bound<'_, PyAny>>,
        render: Option<&Bound<'_, PyAny>>,
        sound: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if self.stopped {
            return Err(raise(py, "PyBoyInvalidOperationException", "Emulator is stopped".into()));
        }
        let count = match count {
            None => 1,
            Some(c) => match c.cast_exact::<PyInt>().ok().and_then(|i| i.extract::<u32>().ok()) {
                Some(n) if n <= 0x7FFF_FFFF => n as u64,
                _ => {
                    static TICK_COUNT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
                    let convert = TICK_COUNT.import(py, "emurust.pyboy", "_tick_count")?;
                    convert.call1((c,))?.extract::<u64>()?
                }
            },
        };
        let truth = |b: Option<&Bound<'_, PyAny>>| b.map_or(Ok(true), |b| b.is_truthy());
        let (render, sound) = (truth(render)?, truth(sound)?);
        self.tick(py, count, render, sound)
    }

    /// `PyBoy.stop()` ran: later `pyboy_tick` calls raise.
    fn mark_stopped(&mut self) {
        self.stopped = true;
    }

    /// `PyBoy.send_input(event, delay)` for the 16 button events (1..=16).
    #[pyo3(signature = (event, delay=0))]
    fn send_input(&mut self, py: Python<'_>, event: u8, delay: u64) -> PyResult<()> {
        if !(frame::PRESS_ARROW_UP..=frame::RELEASE_ARROW_UP + 7).contains(&event) {
            return Err(raise(py, "PyBoyInvalidInputException", format!("unsupported event {event}")));
        }
        self.run(py, |e| {
            e.send_input(event, delay);
            Ok(())
        })
    }

    #[getter]
    fn frame_count(&self) -> u64 {
        self.emu.frame_count
    }

    #[getter]
    fn cycles(&self) -> u64 {
        self.emu.cycles()
    }

    /// (A, F, B, C, D, E, HL, SP, PC)
    fn registers(&mut self, py: Python<'_>) -> PyResult<[u16; 9]> {
        self.run(py, |e| Ok(e.registers()))
    }

    fn set_register(&mut self, py: Python<'_>, name: &str, value: u64) -> PyResult<()> {
        self.run(py, |e| e.set_register(name, value))
    }

    fn getitem(&mut self, py: Python<'_>, addr: u16) -> PyResult<u8> {
        self.run(py, |e| Ok(e.getitem(addr)))
    }

    fn setitem(&mut self, py: Python<'_>, addr: u16, value: u8) -> PyResult<()> {
        self.run(py, |e| {
            e.setitem(addr, value);
            Ok(())
        })
    }

    /// `[mb.getitem(x) for x in range(start, stop, step)]` as bytes, reads in order (they have
    /// side effects).
    fn read_range<'py>(&mut self, py: Python<'py>, start: u32, stop: u32, step: u32) -> PyResult<Bound<'py, PyBytes>> {
        let out = self.run(py, |e| {
            check_range(start, stop, step, 0x10000)?;
            Ok((start..stop).step_by(step as usize).map(|x| e.getitem(x as u16)).collect::<Vec<u8>>())
        })?;
        Ok(PyBytes::new(py, &out))
    }

    /// `mb.setitem(x, v)` for x in range(start, stop, step), values in order.
    fn write_range(&mut self, py: Python<'_>, start: u32, stop: u32, step: u32, values: &[u8]) -> PyResult<()> {
        self.run(py, |e| {
            check_range(start, stop, step, 0x10000)?;
            let addrs = (start..stop).step_by(step as usize);
            if addrs.len() != values.len() {
                return Err(EmuError::InvalidInput("slice does not match length of data".into()));
            }
            for (x, v) in addrs.zip(values) {
                e.setitem(x as u16, *v);
            }
            Ok(())
        })
    }

    /// Direct reads of a bank (`memory[bank, a:b:s]`); region: 0 boot ROM, 1 ROM, 2 VRAM,
    /// 3 cartridge RAM, 4 WRAM; offsets inside the region's array.
    fn bank_read<'py>(
        &mut self,
        py: Python<'py>,
        region: u8,
        bank: i64,
        start: u32,
        stop: u32,
        step: u32,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let out = self.run(py, |e| {
            let r = Region::from_code(region)?;
            check_range(start, stop, step, 0x4000)?;
            (start..stop).step_by(step as usize).map(|x| e.bank_get(r, bank, x as usize)).collect::<Result<Vec<u8>, _>>()
        })?;
        Ok(PyBytes::new(py, &out))
    }

    #[allow(clippy::too_many_arguments)]
    fn bank_write(
        &mut self,
        py: Python<'_>,
        region: u8,
        bank: i64,
        start: u32,
        stop: u32,
        step: u32,
        values: &[u8],
    ) -> PyResult<()> {
        self.run(py, |e| {
            let r = Region::from_code(region)?;
            check_range(start, stop, step, 0x4000)?;
            let addrs = (start..stop).step_by(step as usize);
            if addrs.len() != values.len() {
                return Err(EmuError::InvalidInput("slice does not match length of data".into()));
            }
            for (x, v) in addrs.zip(values) {
                e.bank_set(r, bank, x as usize, *v)?;
            }
            Ok(())
        })
    }

    #[getter]
    fn external_rom_count(&self) -> usize {
        self.emu.external_rom_count()
    }

    #[getter]
    fn external_ram_count(&self) -> usize {
        self.emu.external_ram_count()
    }

    #[getter]
    fn rtc_enabled(&self) -> bool {
        self.emu.rtc_enabled()
    }

    #[getter]
    fn battery(&self) -> bool {
        self.emu.battery()
    }

    fn rtc_lock(&mut self, py: Python<'_>, enable: bool) -> PyResult<()> {
        self.run(py, |e| e.rtc_lock(enable))
    }

    /// The bytes PyBoy's `stop(save=True)` writes to the .ram file (empty if no battery).
    fn save_ram<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let out = self.run(py, |e| Ok(e.save_ram()))?;
        Ok(PyBytes::new(py, &out))
    }

    /// The bytes PyBoy's `stop(save=True)` writes to the .rtc file (empty without RTC).
    fn save_rtc<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let out = self.run(py, |e| Ok(e.save_rtc()))?;
        Ok(PyBytes::new(py, &out))
    }

    fn save_state<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let out = self.run(py, |e| Ok(e.save_state()))?;
        Ok(PyBytes::new(py, &out))
    }

    fn load_state(&mut self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        self.run(py, |e| e.load_state(data))
    }

    /// `screen.ndarray`: a (144, 160, 4) uint8 RGBA array over the renderer's own buffer (no
    /// copy), updated in place by every rendered frame; it keeps this object alive.
    fn screen_ndarray<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyArray3<u8>>> {
        let py = slf.py();
        let view = {
            let this = slf.borrow();
            let bytes = this.emu.screen();
            // a raw view: the borrow guard ends here, but the bytes stay where they are
            let ptr = bytes.as_ptr();
            if bytes.len() != SCREEN_H * SCREEN_W * 4 {
                return Err(raise(py, "PyBoyException", "screen buffer has the wrong size".into()));
            }
            ptr
        };
        // SAFETY: `view` points at SCREEN_H*SCREEN_W*4 bytes of the renderer's fixed-size
        // screen buffer, which lives inside the boxed Emulator owned by this Python object and
        // is never reallocated (the renderer writes into it in place; load_state copies into
        // it). The array's base object is this object, so the buffer outlives the array.
        unsafe {
            let arr = ArrayView3::from_shape_ptr((SCREEN_H, SCREEN_W, 4), view);
            Ok(PyArray3::borrow_from_array(&arr, slf.into_any()))
        }
    }
}

/// `range(start, stop, step)` must stay inside `0..limit` and step be positive (the Python side
/// reports PyBoy's own messages first; this only keeps Rust from indexing out of range).
fn check_range(start: u32, stop: u32, step: u32, limit: u32) -> Result<(), EmuError> {
    if step == 0 {
        return Err(EmuError::InvalidInput("Slice step must be a positive integer".into()));
    }
    if start > stop || stop > limit {
        return Err(EmuError::OutOfBounds(format!("range {start:#x}..{stop:#x} outside 0..{limit:#x}")));
    }
    Ok(())
}

#[pymodule]
fn _emurust(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEmulator>()?;
    m.add_class::<crate::vec::VecEmulator>()?;
    m.add("STATE_VERSION", crate::utils::STATE_VERSION)?;
    m.add("BUILD", crate::BUILD)?;
    Ok(())
}
