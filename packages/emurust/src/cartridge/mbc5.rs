//! Translated from PyBoy 2.8.1 pyboy/core/cartridge/mbc5.py (LGPL-3.0).
//!
//! MBC5: 9-bit ROM bank (low 8 bits at 2000-2FFF, bit 8 at 3000-3FFF, bank 0 selectable), 4-bit
//! RAM bank, RAM enable only by exactly 0x0A, and the rumble motor bit for types 1C-1E.

use super::Cartridge;

/// Rumble cartridge types from Pan Docs.
pub const RUMBLE_CARTRIDGE_TYPES: [u8; 3] = [0x1C, 0x1D, 0x1E];

impl Cartridge {
    pub(super) fn mbc5_setitem(&mut self, address: u16, value: u8) {
        let count = self.external_rom_count;
        if address < 0x2000 {
            // All 8 bits matter: only 0x0A enables RAM.
            self.rambank_enabled = (value == 0b0000_1010) as u8;
        } else if address < 0x3000 {
            let bank = (self.rombank_selected as usize & 0b1_0000_0000) | value as usize;
            self.rombank_selected = (bank % count) as u16;
        } else if address < 0x4000 {
            let bank = (((value & 0x1) as usize) << 8) | (self.rombank_selected as usize & 0xFF);
            self.rombank_selected = (bank % count) as u16;
        } else if address < 0x6000 {
            self.rambank_selected = ((value & 0xF) as usize % self.external_ram_count) as u16;
            if self.rumble_supported != 0 {
                self.rumble_enabled = value & 0x08;
            }
        } else if (0xA000..0xC000).contains(&address) && self.rambank_enabled != 0 {
            let offset = (address - 0xA000) as usize;
            self.set_ram_byte(self.rambank_selected as usize, offset, value);
        }
    }
}
