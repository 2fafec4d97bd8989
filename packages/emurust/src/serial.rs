//! Translated from PyBoy 2.8.1 pyboy/core/serial.py (LGPL-3.0).
//!
//! The serial port with no link partner (PyBoy's `Serial`, not `SerialSharedMemory`): SB always
//! reads 0xFF, an internal-clock transfer started through SC completes 8 x 128 cycles later by
//! clearing SC bit 7 and requesting the serial interrupt, an external-clock transfer never
//! completes. Caught up lazily by `tick(cycles)` like the other components. DMG only: the CGB
//! variant of the SC read-only mask (`cgb_mode`) was dropped.

use crate::error::EmuError;
use crate::utils::{StateReader, StateWriter, MAX_CYCLES};

pub const CYCLES_8192HZ: u64 = 128;

pub struct Serial {
    /// FF01. `uint64_t` in PyBoy, but only ever 0xFF or a loaded byte.
    pub sb: u8,
    /// FF02.
    pub sc: u8,
    /// Cython `bint` fields are plain C ints: PyBoy stores `SC & 0x80` (0x80, not 1) and a loaded
    /// byte as is, and writes that value back into states. They are u8 here for that reason.
    pub transfer_enabled: u8,
    pub internal_clock: u8,
    /// `_cycles_to_interrupt` (int64 in PyBoy; written as u64, never negative in practice).
    pub cycles_to_interrupt: u64,
    pub last_cycles: u64,
    pub clock: u64,
    pub clock_target: u64,
}

impl Default for Serial {
    fn default() -> Self {
        Self::new()
    }
}

impl Serial {
    pub fn new() -> Self {
        Serial {
            sb: 0xFF,
            // DMG value (the CGB one, 0b01111100, was dropped).
            sc: 0b0111_1110,
            transfer_enabled: 0,
            internal_clock: 0,
            cycles_to_interrupt: 0,
            last_cycles: 0,
            clock: 0,
            clock_target: MAX_CYCLES,
        }
    }

    /// The value is ignored: a disconnected cable always shifts in 1s.
    pub fn set_sb(&mut self, _value: u8) {
        self.sb = 0xFF;
    }

    pub fn set_sc(&mut self, value: u8) {
        self.sc = value | 0b0111_1110;
        self.transfer_enabled = self.sc & 0x80;
        self.internal_clock = self.sc & 1;
        if self.internal_clock != 0 {
            self.clock_target = self.clock.wrapping_add(8 * CYCLES_8192HZ);
            self.cycles_to_interrupt = self.clock_target.wrapping_sub(self.clock);
        } else {
            // Never completes without a partner.
            self.transfer_enabled = 0;
            self.clock_target = MAX_CYCLES;
            self.cycles_to_interrupt = MAX_CYCLES;
        }
    }

    /// Catches up to the absolute cycle count; true when the serial interrupt fires.
    pub fn tick(&mut self, cycles_now: u64) -> bool {
        let cycles = cycles_now.wrapping_sub(self.last_cycles);
        if cycles == 0 {
            return false;
        }
        self.last_cycles = cycles_now;
        self.clock = self.clock.wrapping_add(cycles);

        let mut interrupt = false;
        if self.transfer_enabled != 0 && self.clock >= self.clock_target {
            self.sc &= 0b0111_1111;
            self.transfer_enabled = 0;
            self.clock_target = MAX_CYCLES;
            interrupt = true;
        }

        if self.transfer_enabled != 0 {
            self.cycles_to_interrupt = self.clock_target.wrapping_sub(self.clock);
        } else {
            self.cycles_to_interrupt = MAX_CYCLES;
        }
        interrupt
    }

    pub fn save_state(&self, f: &mut StateWriter) {
        f.write(self.sb);
        f.write(self.sc);
        f.write(self.transfer_enabled);
        f.write(self.internal_clock);
        f.write_64bit(self.last_cycles);
        f.write_64bit(self.cycles_to_interrupt);
        f.write_64bit(self.clock);
        f.write_64bit(self.clock_target);
    }

    pub fn load_state(&mut self, f: &mut StateReader) -> Result<(), EmuError> {
        let sb = f.read()?;
        let sc = f.read()?;
        // bint fields keep the raw byte (C assignment, no normalisation to 0/1).
        let transfer_enabled = f.read()?;
        let internal_clock = f.read()?;
        let last_cycles = f.read_64bit()?;
        let cycles_to_interrupt = f.read_64bit()?;
        let clock = f.read_64bit()?;
        let clock_target = f.read_64bit()?;
        *self = Serial {
            sb,
            sc,
            transfer_enabled,
            internal_clock,
            cycles_to_interrupt,
            last_cycles,
            clock,
            clock_target,
        };
        Ok(())
    }

    /// PyBoy's `stop()` does nothing for a disconnected port.
    pub fn stop(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_clock_transfer_completes_after_1024_cycles() {
        // From serial.py: set_SC(0x81) -> clock_target = clock + 8*128; tick at +1023 is not
        // enough, +1024 clears SC bit 7 and returns True.
        let mut s = Serial::new();
        s.tick(100);
        s.set_sc(0x81);
        assert_eq!(s.sc, 0xFF);
        assert_eq!(s.cycles_to_interrupt, 1024);
        assert!(!s.tick(100 + 1023));
        assert_eq!(s.cycles_to_interrupt, 1);
        assert!(s.tick(100 + 1024));
        assert_eq!(s.sc, 0x7F);
        assert_eq!(s.cycles_to_interrupt, MAX_CYCLES);
        s.set_sb(0x12);
        assert_eq!(s.sb, 0xFF);
    }

    #[test]
    fn state_is_36_bytes_and_round_trips() {
        let mut s = Serial::new();
        s.set_sc(0x81);
        s.tick(5);
        let mut w = StateWriter::new();
        s.save_state(&mut w);
        assert_eq!(w.buf.len(), 36);
        assert_eq!(
            &w.buf[..4],
            &[0xFF, 0xFF, 0x80, 1],
            "PyBoy saves SC & 0x80 as is"
        );
        let mut s2 = Serial::new();
        s2.load_state(&mut StateReader::new(&w.buf)).unwrap();
        let mut w2 = StateWriter::new();
        s2.save_state(&mut w2);
        assert_eq!(w.buf, w2.buf);
        assert!(s2.load_state(&mut StateReader::new(&w.buf[..35])).is_err());
    }
}

#[cfg(test)]
mod vector_tests {
    use super::*;
    use crate::timer::test_vectors::load;

    /// Replays emurust.tools.vectors's random sequences (PyBoy's serial.py as the oracle).
    #[test]
    fn serial_matches_pyboy_vectors() {
        let data = load("serial.json");
        let mut steps_checked = 0;
        for run in data.arr() {
            let seed = run.get("seed").int();
            let mut s = Serial::new();
            for (n, step) in run.get("steps").arr().iter().enumerate() {
                let v: Vec<u64> = step.arr().iter().map(|x| x.u64()).collect();
                let (op, arg, want) = (v[0], v[1], v[2]);
                let got = match op {
                    0 => s.tick(arg) as u64,
                    1 => {
                        s.set_sb(arg as u8);
                        0
                    }
                    2 => {
                        s.set_sc(arg as u8);
                        0
                    }
                    _ => panic!("unknown op {op}"),
                };
                let fields = [
                    s.sb as u64,
                    s.sc as u64,
                    s.transfer_enabled as u64,
                    s.internal_clock as u64,
                    s.last_cycles,
                    s.cycles_to_interrupt,
                    s.clock,
                    s.clock_target,
                ];
                assert_eq!(
                    (got, &fields[..]),
                    (want, &v[3..]),
                    "seed {seed} step {n} op {op} arg {arg}: (result, SB SC transfer_enabled \
                     internal_clock last_cycles cycles_to_interrupt clock clock_target)"
                );
                steps_checked += 1;
            }
        }
        assert!(
            steps_checked >= 1000,
            "only {steps_checked} steps in serial.json"
        );
    }
}
