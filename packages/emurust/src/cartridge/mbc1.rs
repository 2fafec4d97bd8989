//! Translated from PyBoy 2.8.1 pyboy/core/cartridge/mbc1.py (LGPL-3.0).
//!
//! MBC1: 5-bit low ROM bank register (0 reads as 1), 2-bit upper/RAM register, banking mode bit
//! (`memorymodel`), and PyBoy's MBC1M multicart detection (64 banks that all repeat the logo
//! area). Every write, whatever the address, recomputes `rombank_selected` and
//! `rombank_selected_low` from the two registers, as PyBoy does.

use super::Cartridge;

impl Cartridge {
    /// MBC1 multicarts repeat the Nintendo logo (0x104..0x134) in every 16 KiB bank.
    pub(super) fn detect_multicart(&self) -> bool {
        self.external_rom_count == 64
            && (1..self.external_rom_count)
                .all(|bank| (0x0104..0x0134).all(|a| self.rom_byte(bank, a) == self.rom_byte(0, a)))
    }

    pub(super) fn mbc1_setitem(&mut self, address: u16, value: u8) {
        let count = self.external_rom_count as u64;
        if address < 0x2000 {
            self.rambank_enabled = ((value & 0b0000_1111) == 0b1010) as u8;
        } else if address < 0x4000 {
            let mut value = value & 0b0001_1111;
            // The register cannot hold 0: writing 0 writes 1.
            if value == 0 {
                value = 1;
            }
            self.bank_select_register1 = value;
        } else if address < 0x6000 {
            self.bank_select_register2 = value & 0b11;
        } else if address < 0x8000 {
            self.memorymodel = value & 0b1;
        } else if (0xA000..0xC000).contains(&address) && self.rambank_enabled != 0 {
            self.rambank_selected = if self.memorymodel == 1 {
                self.bank_select_register2 as u16
            } else {
                0
            };
            let bank = self.rambank_selected as usize % self.external_ram_count;
            self.set_ram_byte(bank, (address - 0xA000) as usize, value);
        }
        let reg1 = self.bank_select_register1 as u64;
        let reg2 = self.bank_select_register2 as u64;
        if self.memorymodel == 1 {
            let bank_shift = if self.multicart { 4 } else { 5 };
            self.rombank_selected_low = ((reg2 << bank_shift) % count) as u16;
        } else {
            self.rombank_selected_low = 0;
        }
        if self.multicart {
            let mut bank = (reg2 << 4) | (reg1 & 0x0F);
            if reg1 & 0x0F == 0 && reg1 & 0x10 == 0 {
                bank |= 1;
            }
            self.rombank_selected = (bank % count) as u16;
        } else {
            self.rombank_selected = (((reg2 << 5) | reg1) % count) as u16;
        }
    }

    pub(super) fn mbc1_getitem(&mut self, address: u16) -> u8 {
        if (0xA000..0xC000).contains(&address) {
            if self.rambank_enabled == 0 {
                return 0xFF;
            }
            // A read re-derives the RAM bank (a side effect PyBoy has too).
            self.rambank_selected = if self.memorymodel == 1 {
                (self.bank_select_register2 as usize % self.external_ram_count) as u16
            } else {
                0
            };
            return self.ram_byte(self.rambank_selected as usize, (address - 0xA000) as usize);
        }
        0
    }
}
