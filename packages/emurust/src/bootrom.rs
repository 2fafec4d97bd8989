//! Translated from PyBoy 2.8.1 pyboy/core/bootrom.py (LGPL-3.0).
//!
//! The boot ROM mapped at 0000-00FF until FF50 is written. emurust runs only PyBoy's own DMG boot
//! ROM (`core/bootrom_dmg.bin`, 256 bytes, LGPL like emurust, copied here by
//! `emurust.tools.bootrom`, which checks its SHA-256), because frames 0..63 of a run are the
//! boot sequence and must match PyBoy's. User-supplied and CGB boot ROMs are not supported.

/// `core/bootrom_dmg.bin` of PyBoy 2.8.1 (sha256 817b42b6...290dd).
pub const BOOTROM_DMG: &[u8; 256] = include_bytes!("bootrom_dmg.bin");

pub struct BootRom {
    /// Writable like PyBoy's array (breakpoints patch it there); reset by `new`.
    pub bootrom: [u8; 256],
    /// Always false: only the DMG boot ROM (PyBoy sets it from `len(rom) > 0x100`).
    pub cgb: bool,
}

impl Default for BootRom {
    fn default() -> Self {
        Self::new()
    }
}

impl BootRom {
    pub fn new() -> Self {
        BootRom {
            bootrom: *BOOTROM_DMG,
            cgb: false,
        }
    }

    /// Byte at `addr` (the motherboard maps only 0000-00FF here on DMG); 0xFF past the end.
    pub fn getitem(&self, addr: u16) -> u8 {
        self.bootrom.get(addr as usize).copied().unwrap_or(0xFF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_rom_is_pyboys_dmg_boot_rom() {
        // First and last instructions of PyBoy's bootrom_dmg.bin (xxd): LD SP,$FFFE at 0 and the
        // final `ld c,$13; ldh ($50),a` whose FF50 write unmaps the boot ROM.
        let b = BootRom::new();
        assert_eq!(&b.bootrom[..3], &[0x31, 0xFE, 0xFF]);
        assert_eq!(&b.bootrom[0xFC..], &[0x0E, 0x13, 0xE0, 0x50]);
        assert!(!b.cgb);
        assert_eq!(b.getitem(0x100), 0xFF);
    }
}
