//! Translated from PyBoy 2.8.1 pyboy/core/cartridge/mbc3.py (LGPL-3.0).
//!
//! MBC3 (7-bit ROM bank, 4 RAM banks, RTC register select 08-0C, latch command at 6000-7FFF)
//! and its MBC30 variant (8-bit ROM bank, 8 RAM banks), which PyBoy picks from the header sizes.

use super::Cartridge;

impl Cartridge {
    pub(super) fn mbc3_setitem(&mut self, address: u16, value: u8) {
        if address < 0x2000 {
            // Only xA enables; PyBoy's three branches all reduce to this.
            self.rambank_enabled = ((value & 0b0000_1111) == 0b1010) as u8;
        } else if address < 0x4000 {
            let mut value = value & 0b0111_1111;
            if value == 0 {
                value = 1;
            }
            self.rombank_selected = (value as usize % self.external_rom_count) as u16;
        } else if address < 0x6000 {
            if (0x08..=0x0C).contains(&value) {
                // RTC register select
                self.rambank_selected = value as u16;
            } else {
                self.rambank_selected = (value as usize % self.external_ram_count) as u16;
            }
        } else if address < 0x8000 {
            // Without an RTC the command is ignored (Pokemon Red/Blue issue it).
            if let Some(rtc) = &mut self.rtc {
                rtc.writecommand(value);
            }
        } else if (0xA000..0xC000).contains(&address) && self.rambank_enabled != 0 {
            self.mbc3_ram_write(address, value, 0x03);
        }
    }

    fn mbc3_ram_write(&mut self, address: u16, value: u8, last_ram_bank: u16) {
        if self.rambank_selected <= last_ram_bank {
            self.set_ram_byte(
                self.rambank_selected as usize,
                (address - 0xA000) as usize,
                value,
            );
        } else if (0x08..=0x0C).contains(&self.rambank_selected) {
            let reg = self.rambank_selected as u8;
            if let Some(rtc) = &mut self.rtc {
                rtc.setregister(reg, value);
            }
        }
    }

    pub(super) fn mbc30_setitem(&mut self, address: u16, value: u8) {
        if (0x2000..0x4000).contains(&address) {
            // The full 8-bit register (256 banks).
            let value = if value == 0 { 1 } else { value };
            self.rombank_selected = (value as usize % self.external_rom_count) as u16;
        } else if (0xA000..0xC000).contains(&address) {
            if self.rambank_enabled != 0 {
                self.mbc3_ram_write(address, value, 0x07);
            }
        } else {
            self.mbc3_setitem(address, value);
        }
    }
}
