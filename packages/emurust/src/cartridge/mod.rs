//! Translated from PyBoy 2.8.1 pyboy/core/cartridge/cartridge.py and base_mbc.py (LGPL-3.0).
//!
//! `load_cartridge` validates a ROM image as PyBoy does (empty, not a multiple of 16 KiB, header
//! checksum at 0x14D, RAM-size code, cartridge type), picks the memory bank controller from
//! PyBoy's cartridge table and builds a `Cartridge`. PyBoy has one class per MBC; here one struct
//! holds every class's fields and `MbcKind` selects the `setitem`/`getitem`/state behaviour (the
//! per-MBC code lives in mbc1.rs, mbc2.rs, mbc3.rs, mbc5.rs, the RTC in rtc.rs). Like PyBoy it
//! always allocates 16 RAM banks but saves/loads only `external_ram_count` of them.
//!
//! Bounds: PyBoy is compiled without bounds checks, so a bank number past the data (a 16 KiB
//! ROM-only cart's bank 1, or a bank byte from a save state) reads or writes outside its buffer.
//! emurust cannot copy undefined behaviour: such reads return 0xFF and such writes are dropped.

pub mod mbc1;
pub mod mbc2;
pub mod mbc3;
pub mod mbc5;
pub mod rtc;

use crate::error::EmuError;
use crate::utils::{StateReader, StateWriter};
pub use rtc::Rtc;

pub const ROM_BANK_SIZE: usize = 16 * 1024;
pub const RAM_BANK_SIZE: usize = 8 * 1024;
/// PyBoy allocates the maximum number of RAM banks for every cart ("easier in Cython").
pub const RAM_BANKS_ALLOCATED: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MbcKind {
    RomOnly,
    Mbc1,
    Mbc2,
    Mbc3,
    /// MBC3 with > 4 RAM banks or > 128 ROM banks (same type codes, told apart by the header).
    Mbc30,
    Mbc5,
}

/// `CARTRIDGE_TABLE`: type code -> (MBC, SRAM, battery, RTC).
pub fn cartridge_table(carttype: u8) -> Option<(MbcKind, bool, bool, bool)> {
    use MbcKind::*;
    Some(match carttype {
        0x00 => (RomOnly, false, false, false),
        0x01 => (Mbc1, false, false, false),
        0x02 => (Mbc1, true, false, false),
        0x03 => (Mbc1, true, true, false),
        0x05 => (Mbc2, false, false, false),
        0x06 => (Mbc2, false, true, false),
        0x08 => (RomOnly, true, false, false),
        0x09 => (RomOnly, true, true, false),
        0x0F => (Mbc3, false, true, true),
        0x10 => (Mbc3, true, true, true),
        0x11 => (Mbc3, false, false, false),
        0x12 => (Mbc3, true, false, false),
        0x13 => (Mbc3, true, true, false),
        0x19 => (Mbc5, false, false, false),
        0x1A => (Mbc5, true, false, false),
        0x1B => (Mbc5, true, true, false),
        0x1C => (Mbc5, false, false, false),
        0x1D => (Mbc5, true, false, false),
        0x1E => (Mbc5, true, true, false),
        _ => return None,
    })
}

/// `EXTERNAL_RAM_TABLE`: header byte 0x149 -> number of 8 KiB banks (PyBoy allocates one even
/// for "no RAM", and uses the same table for MBC2).
pub fn external_ram_table(code: u8) -> Option<usize> {
    Some(match code {
        0x00 | 0x01 | 0x02 => 1,
        0x03 => 4,
        0x04 => 16,
        0x05 => 8,
        _ => return None,
    })
}

pub struct Cartridge {
    pub kind: MbcKind,
    /// The ROM, `external_rom_count` banks of 16 KiB back to back.
    pub rombanks: Vec<u8>,
    /// RAM_BANKS_ALLOCATED banks of 8 KiB back to back.
    pub rambanks: Vec<u8>,
    pub carttype: u8,
    pub battery: bool,
    pub rtc_enabled: bool,
    pub rtc: Option<Rtc>,
    pub rambank_initialized: bool,
    pub external_rom_count: usize,
    pub external_ram_count: usize,
    pub cgb: bool,
    pub gamename: String,
    pub memorymodel: u8,
    pub rambank_enabled: bool,
    pub rambank_selected: u16,
    pub rombank_selected: u16,
    /// Bank mapped at 0000-3FFF (MBC1 mode 1); not saved in states.
    pub rombank_selected_low: u16,
    pub rumble_supported: bool,
    pub rumble_enabled: bool,
    // MBC1 only.
    pub bank_select_register1: u8,
    pub bank_select_register2: u8,
    pub multicart: bool,
}

/// `load_cartridge(gamerom, ram_file, rtc_file)`. `ram_file` is read only for battery carts, as
/// in PyBoy (and must then hold at least `external_ram_count` x 8 KiB); `rtc_file` only for RTC
/// carts (33 bytes, the RTC state block). The RTC reads the host clock; see `Rtc::fake_time`.
pub fn load_cartridge(
    rom: &[u8],
    ram_file: Option<&[u8]>,
    rtc_file: Option<&[u8]>,
) -> Result<Cartridge, EmuError> {
    // load_romfile
    if rom.is_empty() {
        return Err(EmuError::Rom("Empty ROM file".into()));
    }
    if rom.len() % ROM_BANK_SIZE != 0 {
        return Err(EmuError::Rom(format!(
            "Unexpected ROM file length! ROM data of {} doesn't divide evenly into bank size {}",
            rom.len(),
            ROM_BANK_SIZE
        )));
    }
    if !validate_checksum(rom) {
        return Err(EmuError::Rom("Cartridge header checksum mismatch!".into()));
    }
    // PyBoy looks the RAM size up before the type; an unknown code is a KeyError there.
    let external_ram_count = external_ram_table(rom[0x149]).ok_or_else(|| {
        EmuError::Rom(format!("RAM size code invalid: {} (header byte 0x149)", rom[0x149]))
    })?;
    let carttype = rom[0x147];
    let (mut kind, sram, battery, rtc_enabled) = cartridge_table(carttype)
        .ok_or_else(|| EmuError::Rom(format!("Catridge type invalid: {carttype}")))?;
    let external_rom_count = rom.len() / ROM_BANK_SIZE;
    if kind == MbcKind::Mbc3 && (external_ram_count > 4 || external_rom_count > 128) {
        kind = MbcKind::Mbc30;
    }
    Cartridge::new(kind, rom, ram_file, rtc_file, external_ram_count, carttype, sram, battery, rtc_enabled)
}

/// The header checksum over 0x134..0x14D (the caller guarantees at least 16 KiB).
pub fn validate_checksum(rom: &[u8]) -> bool {
    let mut x: u8 = 0;
    for &b in &rom[0x134..0x14D] {
        x = x.wrapping_sub(b).wrapping_sub(1);
    }
    rom[0x14D] == x
}

impl Cartridge {
    #[allow(clippy::too_many_arguments)]
    fn new(
        kind: MbcKind,
        rom: &[u8],
        ram_file: Option<&[u8]>,
        rtc_file: Option<&[u8]>,
        external_ram_count: usize,
        carttype: u8,
        sram: bool,
        battery: bool,
        rtc_enabled: bool,
    ) -> Result<Cartridge, EmuError> {
        let rtc = if rtc_enabled { Some(Rtc::new(rtc_file)?) } else { None };
        let cgb = (rom[0x143] >> 7) != 0;
        let mut c = Cartridge {
            kind,
            rombanks: rom.to_vec(),
            rambanks: vec![0; RAM_BANKS_ALLOCATED * RAM_BANK_SIZE],
            carttype,
            battery,
            rtc_enabled,
            rtc,
            rambank_initialized: true,
            external_rom_count: rom.len() / ROM_BANK_SIZE,
            external_ram_count,
            cgb,
            gamename: getgamename(rom, cgb),
            memorymodel: 0,
            rambank_enabled: false,
            rambank_selected: 0,
            rombank_selected: 1,
            rombank_selected_low: 0,
            rumble_supported: false,
            rumble_enabled: false,
            bank_select_register1: 1,
            bank_select_register2: 0,
            multicart: false,
        };
        // BaseMBC.__init__ loads the .ram file before the subclass __init__ runs.
        if let (Some(data), true) = (ram_file, battery) {
            c.load_ram(&mut StateReader::new(data))?;
        }
        match kind {
            // ROMOnly: no bank switching, so SRAM (if present) is always available.
            MbcKind::RomOnly => c.rambank_enabled = sram,
            MbcKind::Mbc1 => c.multicart = c.detect_multicart(),
            MbcKind::Mbc5 => c.rumble_supported = mbc5::RUMBLE_CARTRIDGE_TYPES.contains(&carttype),
            _ => {}
        }
        Ok(c)
    }

    /// `external_ram_count` banks, what PyBoy writes to the .ram file (and into states).
    pub fn save_ram(&self) -> Vec<u8> {
        self.rambanks[..self.external_ram_count * RAM_BANK_SIZE].to_vec()
    }

    fn load_ram(&mut self, f: &mut StateReader) -> Result<(), EmuError> {
        let n = self.external_ram_count * RAM_BANK_SIZE;
        if f.remaining() < n {
            return Err(EmuError::State(format!(
                "cartridge RAM needs {n} bytes, {} left (PyBoy: No data)",
                f.remaining()
            )));
        }
        f.read_into(&mut self.rambanks[..n])
    }

    /// `stop(ram_file, rtc_file)`: the bytes PyBoy would write to the .ram file (battery carts)
    /// and to the .rtc file (RTC carts). The caller decides whether those files exist.
    pub fn stop(&self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let ram = if self.battery { Some(self.save_ram()) } else { None };
        let rtc = self.rtc.as_ref().map(|r| {
            let mut w = StateWriter::new();
            r.save_state(&mut w);
            w.buf
        });
        (ram, rtc)
    }

    pub fn save_state(&self, f: &mut StateWriter) {
        // `write(uint8_t)` truncates the uint16 bank numbers (an MBC5 bank > 255 loses bit 8).
        f.write(self.rombank_selected as u8);
        f.write(self.rambank_selected as u8);
        f.write_bool(self.rambank_enabled);
        f.write(self.memorymodel);
        f.write_bytes(&self.save_ram());
        if let Some(rtc) = &self.rtc {
            rtc.save_state(f);
        }
        match self.kind {
            MbcKind::Mbc1 => {
                f.write(self.bank_select_register1);
                f.write(self.bank_select_register2);
            }
            MbcKind::Mbc5 => {
                f.write_bool(self.rumble_supported);
                if self.rumble_supported {
                    f.write_bool(self.rumble_enabled);
                }
            }
            _ => {}
        }
    }

    /// As PyBoy, fields are assigned while reading: a truncated state leaves a partly loaded
    /// cartridge (the caller discards the emulator state on error anyway).
    pub fn load_state(&mut self, f: &mut StateReader) -> Result<(), EmuError> {
        self.rombank_selected = f.read()? as u16;
        self.rambank_selected = f.read()? as u16;
        self.rambank_enabled = f.read_bool()?;
        self.memorymodel = f.read()?;
        self.load_ram(f)?;
        if let Some(rtc) = &mut self.rtc {
            rtc.load_state(f)?;
        }
        match self.kind {
            MbcKind::Mbc1 => {
                self.bank_select_register1 = f.read()?;
                self.bank_select_register2 = f.read()?;
            }
            MbcKind::Mbc5 => {
                self.rumble_supported = f.read_bool()?;
                self.rumble_enabled = if self.rumble_supported { f.read_bool()? } else { false };
            }
            _ => {}
        }
        Ok(())
    }

    pub fn rtc_tick(&mut self, cycles: u64) {
        if let Some(rtc) = &mut self.rtc {
            rtc.tick(cycles);
        }
    }

    /// ROM byte `offset` (0..0x4000) of `bank`; 0xFF past the ROM (see the module note).
    pub fn rom_byte(&self, bank: usize, offset: usize) -> u8 {
        if offset >= ROM_BANK_SIZE {
            return 0xFF;
        }
        self.rombanks.get(bank * ROM_BANK_SIZE + offset).copied().unwrap_or(0xFF)
    }

    /// What the motherboard reads at 0000-7FFF once the boot ROM is unmapped
    /// (`rombanks[rombank_selected_low, i]` / `rombanks[rombank_selected, i - 0x4000]`).
    pub fn read_rom(&self, address: u16) -> u8 {
        if address < 0x4000 {
            self.rom_byte(self.rombank_selected_low as usize, address as usize)
        } else {
            self.rom_byte(self.rombank_selected as usize, (address as usize) & 0x3FFF)
        }
    }

    /// RAM byte `offset` (0..0x2000) of `bank`; 0xFF outside the 16 allocated banks.
    pub fn ram_byte(&self, bank: usize, offset: usize) -> u8 {
        if offset >= RAM_BANK_SIZE {
            return 0xFF;
        }
        self.rambanks.get(bank * RAM_BANK_SIZE + offset).copied().unwrap_or(0xFF)
    }

    /// Writes RAM byte `offset` of `bank`; dropped outside the 16 allocated banks.
    pub fn set_ram_byte(&mut self, bank: usize, offset: usize, value: u8) {
        if offset < RAM_BANK_SIZE {
            if let Some(b) = self.rambanks.get_mut(bank * RAM_BANK_SIZE + offset) {
                *b = value;
            }
        }
    }

    /// `overrideitem`: patch a ROM byte of `rom_bank` at 0000-3FFF (PyBoy's `memory[bank, a] = v`).
    pub fn overrideitem(&mut self, rom_bank: usize, address: u16, value: u8) -> Result<(), EmuError> {
        if address >= 0x4000 {
            return Err(EmuError::InvalidInput(format!("Invalid override address: {address:04x}")));
        }
        if rom_bank >= self.external_rom_count {
            return Err(EmuError::OutOfBounds(format!(
                "ROM bank out of bounds. Asked for {rom_bank}, max is {}",
                self.external_rom_count
            )));
        }
        self.rombanks[rom_bank * ROM_BANK_SIZE + address as usize] = value;
        Ok(())
    }

    /// Cartridge read at A000-BFFF (PyBoy's `getitem`; other addresses return 0, as the C
    /// function falling off its end does). The MBC1 read has a side effect on `rambank_selected`.
    pub fn getitem(&mut self, address: u16) -> u8 {
        match self.kind {
            MbcKind::Mbc1 => self.mbc1_getitem(address),
            MbcKind::Mbc2 => self.mbc2_getitem(address),
            _ => self.base_getitem(address),
        }
    }

    /// MBC command (0000-7FFF) or cartridge RAM write (A000-BFFF).
    pub fn setitem(&mut self, address: u16, value: u8) {
        match self.kind {
            MbcKind::RomOnly => self.romonly_setitem(address, value),
            MbcKind::Mbc1 => self.mbc1_setitem(address, value),
            MbcKind::Mbc2 => self.mbc2_setitem(address, value),
            MbcKind::Mbc3 => self.mbc3_setitem(address, value),
            MbcKind::Mbc30 => self.mbc30_setitem(address, value),
            MbcKind::Mbc5 => self.mbc5_setitem(address, value),
        }
    }

    fn base_getitem(&mut self, address: u16) -> u8 {
        if (0xA000..0xC000).contains(&address) {
            if !self.rambank_enabled {
                return 0xFF;
            }
            if let (Some(rtc), 0x08..=0x0C) = (&self.rtc, self.rambank_selected) {
                return rtc.getregister(self.rambank_selected as u8);
            }
            return self.ram_byte(self.rambank_selected as usize, (address - 0xA000) as usize);
        }
        0
    }

    fn romonly_setitem(&mut self, address: u16, value: u8) {
        if (0x2000..0x4000).contains(&address) {
            let value = if value == 0 { 1 } else { value };
            self.rombank_selected = (value & 0b1) as u16;
        } else if (0xA000..0xC000).contains(&address) {
            // No enable check on write, as in PyBoy (reads do check rambank_enabled = sram).
            self.set_ram_byte(self.rambank_selected as usize, (address - 0xA000) as usize, value);
        }
    }
}

/// Title: 0x134..0x143 (0x134..0x142 on CGB carts), cut at the first NUL, bytes as Latin-1.
pub fn getgamename(rom: &[u8], cgb: bool) -> String {
    let end = if cgb { 0x0142 } else { 0x0143 };
    rom[0x134..end].iter().take_while(|&&b| b != 0).map(|&b| b as char).collect()
}

