//! Translated from PyBoy 2.8.1 pyboy/core/cartridge/mbc2.py (LGPL-3.0).
//!
//! MBC2: one register range 0000-3FFF where address bit 8 selects RAM enable (clear) or the 4-bit
//! ROM bank (set), and 512 x 4-bit built-in RAM mirrored over A000-BFFF (the upper nibble reads
//! and is stored as 1s).

use super::Cartridge;

impl Cartridge {
    pub(super) fn mbc2_setitem(&mut self, address: u16, value: u8) {
        if address < 0x4000 {
            let mut value = value & 0b0000_1111;
            if address & 0x100 == 0 {
                self.rambank_enabled = (value == 0b0000_1010) as u8;
            } else {
                if value == 0 {
                    value = 1;
                }
                self.rombank_selected = (value as usize % self.external_rom_count) as u16;
            }
        } else if (0xA000..0xC000).contains(&address) && self.rambank_enabled != 0 {
            self.set_ram_byte(0, (address % 512) as usize, value | 0b1111_0000);
        }
    }

    /// PyBoy's MBC2 also answers 0000-7FFF here; the motherboard reads ROM directly instead.
    pub(super) fn mbc2_getitem(&mut self, address: u16) -> u8 {
        if address < 0x4000 {
            self.rom_byte(0, address as usize)
        } else if address < 0x8000 {
            self.rom_byte(self.rombank_selected as usize, (address - 0x4000) as usize)
        } else if (0xA000..0xC000).contains(&address) {
            if self.rambank_enabled == 0 {
                0xFF
            } else {
                self.ram_byte(0, (address % 512) as usize) | 0b1111_0000
            }
        } else {
            0
        }
    }
}
