//! Translated from PyBoy 2.8.1 pyboy/core/ram.py (LGPL-3.0).
//!
//! The CPU-side RAM areas that the motherboard maps: WRAM C000-DFFF (`internal_ram0`, 8 KiB on
//! DMG; the CGB's 32 KiB was dropped), the unusable FEA0-FEFF area (`non_io_internal_ram0`), the
//! raw I/O backing bytes FF00-FF4B (`io_ports`) and HRAM FF80-FFFE (`internal_ram1`). Everything
//! starts zeroed: PyBoy randomises only with the undocumented `randomize=True` kwarg (default
//! False), whose Python `getrandbits` stream cannot be reproduced anyway; `randomize_with` offers
//! the same fill order with a caller-supplied byte source.

use crate::error::EmuError;
use crate::utils::{StateReader, StateWriter};

pub const INTERNAL_RAM0: usize = 8 * 1024;
pub const NON_IO_INTERNAL_RAM0: usize = 0x60;
pub const IO_PORTS: usize = 0x4C;
pub const INTERNAL_RAM1: usize = 0x7F;
/// Size of the RAM block in a save state.
pub const STATE_SIZE: usize = INTERNAL_RAM0 + NON_IO_INTERNAL_RAM0 + IO_PORTS + INTERNAL_RAM1;

pub struct Ram {
    pub internal_ram0: [u8; INTERNAL_RAM0],
    pub non_io_internal_ram0: [u8; NON_IO_INTERNAL_RAM0],
    pub io_ports: [u8; IO_PORTS],
    pub internal_ram1: [u8; INTERNAL_RAM1],
}

impl Default for Ram {
    fn default() -> Self {
        Self::new()
    }
}

impl Ram {
    pub fn new() -> Self {
        Ram {
            internal_ram0: [0; INTERNAL_RAM0],
            non_io_internal_ram0: [0; NON_IO_INTERNAL_RAM0],
            io_ports: [0; IO_PORTS],
            internal_ram1: [0; INTERNAL_RAM1],
        }
    }

    /// PyBoy's `randomize=True` fill: WRAM, then FEA0-FEFF, then HRAM (io_ports stay 0).
    pub fn randomize_with(&mut self, mut next_byte: impl FnMut() -> u8) {
        for b in self.internal_ram0.iter_mut() {
            *b = next_byte();
        }
        for b in self.non_io_internal_ram0.iter_mut() {
            *b = next_byte();
        }
        for b in self.internal_ram1.iter_mut() {
            *b = next_byte();
        }
    }

    pub fn save_state(&self, f: &mut StateWriter) {
        f.write_bytes(&self.internal_ram0[..]);
        f.write_bytes(&self.non_io_internal_ram0);
        f.write_bytes(&self.io_ports);
        f.write_bytes(&self.internal_ram1);
    }

    pub fn load_state(&mut self, f: &mut StateReader) -> Result<(), EmuError> {
        if f.remaining() < STATE_SIZE {
            return Err(EmuError::State(format!(
                "RAM block needs {STATE_SIZE} bytes, {} left",
                f.remaining()
            )));
        }
        f.read_into(&mut self.internal_ram0[..])?;
        f.read_into(&mut self.non_io_internal_ram0)?;
        f.read_into(&mut self.io_ports)?;
        f.read_into(&mut self.internal_ram1)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_is_8491_bytes_in_area_order() {
        // 8491 = the RAM block size measured in PyBoy's state (docs/emurust.md section 1).
        let mut r = Ram::new();
        r.internal_ram0[0] = 1;
        r.non_io_internal_ram0[0] = 2;
        r.io_ports[0] = 3;
        r.internal_ram1[126] = 4;
        let mut w = StateWriter::new();
        r.save_state(&mut w);
        assert_eq!(w.buf.len(), 8491);
        assert_eq!(
            (w.buf[0], w.buf[8192], w.buf[8288], w.buf[8490]),
            (1, 2, 3, 4)
        );
        let mut r2 = Ram::new();
        r2.load_state(&mut StateReader::new(&w.buf)).unwrap();
        let mut w2 = StateWriter::new();
        r2.save_state(&mut w2);
        assert_eq!(w.buf, w2.buf);
        let mut r3 = Ram::new();
        assert!(r3
            .load_state(&mut StateReader::new(&w.buf[..8490]))
            .is_err());
        assert_eq!(r3.internal_ram0[0], 0, "a truncated block changes nothing");
    }

    #[test]
    fn randomize_fills_in_pyboy_order() {
        let mut r = Ram::new();
        let mut n = 0u32;
        r.randomize_with(|| {
            n += 1;
            (n % 251) as u8
        });
        assert_eq!(r.internal_ram0[0], 1);
        assert_eq!(r.non_io_internal_ram0[0], ((8192 + 1) % 251) as u8);
        assert_eq!(r.io_ports, [0; IO_PORTS]);
        assert_eq!(r.internal_ram1[0], ((8192 + 96 + 1) % 251) as u8);
    }
}
