//! Save-state primitives and shared constants (translated from PyBoy 2.8.1 `utils.py`).
//!
//! PyBoy's state files have no framing: every field is written in order, little-endian, booleans
//! as one byte, floats as the 8 native (x86-64: little-endian) bytes of an IEEE-754 double. A reader
//! must therefore know every size, and a short file is an error, never a panic.

use crate::error::EmuError;

/// `pyboy.utils.STATE_VERSION`; emurust reads and writes only this version.
pub const STATE_VERSION: u8 = 29;

pub const INTR_VBLANK: u8 = 1 << 0;
pub const INTR_LCDC: u8 = 1 << 1;
pub const INTR_TIMER: u8 = 1 << 2;
pub const INTR_SERIAL: u8 = 1 << 3;
pub const INTR_HIGHTOLOW: u8 = 1 << 4;

/// PyBoy's "far away" value for `_cycles_to_interrupt` of an idle component (2**31).
pub const MAX_CYCLES: u64 = 1 << 31;

/// Appends fields to a save state, in PyBoy's byte order (`IntIOInterface.write*`).
#[derive(Default)]
pub struct StateWriter {
    pub buf: Vec<u8>,
}

impl StateWriter {
    pub fn new() -> Self {
        Self { buf: Vec::with_capacity(1 << 18) }
    }
    pub fn write(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn write_bool(&mut self, v: bool) {
        self.buf.push(v as u8);
    }
    pub fn write_16bit(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn write_32bit(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn write_64bit(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn write_f64(&mut self, v: f64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn write_bytes(&mut self, v: &[u8]) {
        self.buf.extend_from_slice(v);
    }
}

/// Reads fields back; every read checks the remaining length.
pub struct StateReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> StateReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }
    pub fn position(&self) -> usize {
        self.pos
    }
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], EmuError> {
        if self.remaining() < n {
            return Err(EmuError::State(format!(
                "save state is truncated: needed {n} more byte(s) at offset {}, {} left",
                self.pos,
                self.remaining()
            )));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub fn read(&mut self) -> Result<u8, EmuError> {
        Ok(self.take(1)?[0])
    }
    pub fn read_bool(&mut self) -> Result<bool, EmuError> {
        Ok(self.read()? != 0)
    }
    pub fn read_16bit(&mut self) -> Result<u16, EmuError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    pub fn read_32bit(&mut self) -> Result<u32, EmuError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub fn read_64bit(&mut self) -> Result<u64, EmuError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub fn read_f64(&mut self) -> Result<f64, EmuError> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub fn read_into(&mut self, out: &mut [u8]) -> Result<(), EmuError> {
        let n = out.len();
        out.copy_from_slice(self.take(n)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_width() {
        let mut w = StateWriter::new();
        w.write(0xAB);
        w.write_bool(true);
        w.write_16bit(0x1234);
        w.write_32bit(0xDEADBEEF);
        w.write_64bit(0x0123_4567_89AB_CDEF);
        w.write_f64(87.381_333);
        assert_eq!(&w.buf[2..4], &[0x34, 0x12], "little-endian like PyBoy");
        let mut r = StateReader::new(&w.buf);
        assert_eq!(r.read().unwrap(), 0xAB);
        assert!(r.read_bool().unwrap());
        assert_eq!(r.read_16bit().unwrap(), 0x1234);
        assert_eq!(r.read_32bit().unwrap(), 0xDEADBEEF);
        assert_eq!(r.read_64bit().unwrap(), 0x0123_4567_89AB_CDEF);
        assert_eq!(r.read_f64().unwrap(), 87.381_333);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn short_read_is_an_error_not_a_panic() {
        let mut r = StateReader::new(&[1, 2, 3]);
        let err = r.read_64bit().unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
        assert_eq!(r.position(), 0, "a failed read consumes nothing");
    }
}
