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
        0x00..=0x02 => 1,
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
    /// `bint` in PyBoy: a C int that keeps whatever was assigned (a loaded byte such as 5 is
    /// stored and saved back as 5), so the saved `bint`s are u8 here.
    pub rambank_enabled: u8,
    pub rambank_selected: u16,
    pub rombank_selected: u16,
    /// Bank mapped at 0000-3FFF (MBC1 mode 1); not saved in states.
    pub rombank_selected_low: u16,
    pub rumble_supported: u8,
    /// `value & 0x08` in PyBoy, i.e. 8 (not 1) when the motor is on; saved as is.
    pub rumble_enabled: u8,
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
    if !rom.len().is_multiple_of(ROM_BANK_SIZE) {
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
        EmuError::Rom(format!(
            "RAM size code invalid: {} (header byte 0x149)",
            rom[0x149]
        ))
    })?;
    let carttype = rom[0x147];
    let (mut kind, sram, battery, rtc_enabled) = cartridge_table(carttype)
        .ok_or_else(|| EmuError::Rom(format!("Catridge type invalid: {carttype}")))?;
    let external_rom_count = rom.len() / ROM_BANK_SIZE;
    if kind == MbcKind::Mbc3 && (external_ram_count > 4 || external_rom_count > 128) {
        kind = MbcKind::Mbc30;
    }
    Cartridge::new(
        kind,
        rom,
        ram_file,
        rtc_file,
        external_ram_count,
        carttype,
        sram,
        battery,
        rtc_enabled,
    )
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
        let rtc = if rtc_enabled {
            Some(Rtc::new(rtc_file)?)
        } else {
            None
        };
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
            rambank_enabled: 0,
            rambank_selected: 0,
            rombank_selected: 1,
            rombank_selected_low: 0,
            rumble_supported: 0,
            rumble_enabled: 0,
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
            MbcKind::RomOnly => c.rambank_enabled = sram as u8,
            MbcKind::Mbc1 => c.multicart = c.detect_multicart(),
            MbcKind::Mbc5 => {
                c.rumble_supported = mbc5::RUMBLE_CARTRIDGE_TYPES.contains(&carttype) as u8
            }
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
        let ram = if self.battery {
            Some(self.save_ram())
        } else {
            None
        };
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
        f.write(self.rambank_enabled);
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
                f.write(self.rumble_supported);
                if self.rumble_supported != 0 {
                    f.write(self.rumble_enabled);
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
        self.rambank_enabled = f.read()?;
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
                self.rumble_supported = f.read()?;
                self.rumble_enabled = if self.rumble_supported != 0 {
                    f.read()?
                } else {
                    0
                };
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
        self.rombanks
            .get(bank * ROM_BANK_SIZE + offset)
            .copied()
            .unwrap_or(0xFF)
    }

    /// The ROM bank mapped at `address` (0000-7FFF): `rombank_selected_low` below 0x4000,
    /// `rombank_selected` above.
    #[inline(always)]
    pub fn bank_mapped_at(&self, address: u16) -> u16 {
        if address < 0x4000 {
            self.rombank_selected_low
        } else {
            self.rombank_selected
        }
    }

    /// What the motherboard reads at 0000-7FFF once the boot ROM is unmapped
    /// (`rombanks[rombank_selected_low, i]` / `rombanks[rombank_selected, i - 0x4000]`).
    pub fn read_rom(&self, address: u16) -> u8 {
        self.rom_byte(self.bank_mapped_at(address) as usize, (address as usize) & 0x3FFF)
    }

    /// RAM byte `offset` (0..0x2000) of `bank`; 0xFF outside the 16 allocated banks.
    pub fn ram_byte(&self, bank: usize, offset: usize) -> u8 {
        if offset >= RAM_BANK_SIZE {
            return 0xFF;
        }
        self.rambanks
            .get(bank * RAM_BANK_SIZE + offset)
            .copied()
            .unwrap_or(0xFF)
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
    pub fn overrideitem(
        &mut self,
        rom_bank: usize,
        address: u16,
        value: u8,
    ) -> Result<(), EmuError> {
        if address >= 0x4000 {
            return Err(EmuError::InvalidInput(format!(
                "Invalid override address: {address:04x}"
            )));
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
            if self.rambank_enabled == 0 {
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
            self.set_ram_byte(
                self.rambank_selected as usize,
                (address - 0xA000) as usize,
                value,
            );
        }
    }
}

/// Title: 0x134..0x143 (0x134..0x142 on CGB carts), cut at the first NUL, bytes as Latin-1.
pub fn getgamename(rom: &[u8], cgb: bool) -> String {
    let end = if cgb { 0x0142 } else { 0x0143 };
    rom[0x134..end]
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::test_vectors::load;

    /// Same ROM as emurust.tools.vectors:make_rom (bank number at 0x2000/0x2001 of each bank).
    pub(crate) fn make_rom(
        carttype: u8,
        banks: usize,
        ramcode: u8,
        distinct_logo: bool,
    ) -> Vec<u8> {
        let mut rom = vec![0u8; banks * ROM_BANK_SIZE];
        for b in 0..banks {
            let base = b * ROM_BANK_SIZE;
            rom[base + 0x2000] = (b & 0xFF) as u8;
            rom[base + 0x2001] = (b >> 8) as u8;
            if distinct_logo {
                rom[base + 0x0104] = (b & 0xFF) as u8;
            }
        }
        rom[0x134..0x13C].copy_from_slice(b"EMURUSTC");
        rom[0x147] = carttype;
        rom[0x149] = ramcode;
        let mut x: u8 = 0;
        for &v in &rom[0x134..0x14D] {
            x = x.wrapping_sub(v).wrapping_sub(1);
        }
        rom[0x14D] = x;
        rom
    }

    fn fnv1a64(data: &[u8]) -> u64 {
        let mut h: u64 = 0xCBF29CE484222325;
        for &b in data {
            h = (h ^ b as u64).wrapping_mul(0x100000001B3);
        }
        h
    }

    /// The cartridge block as the vectors hash it: without the RTC's 33 wall-clock bytes.
    fn block(c: &Cartridge) -> Vec<u8> {
        let mut w = StateWriter::new();
        c.save_state(&mut w);
        let mut b = w.buf;
        if c.rtc_enabled {
            let cut = 4 + c.external_ram_count * RAM_BANK_SIZE;
            b.drain(cut..cut + rtc::STATE_SIZE);
        }
        b
    }

    /// Replays emurust.tools.vectors's cartridge sequences: real PyBoy driven through
    /// `pyboy.memory[...]`, i.e. Motherboard.setitem/getitem's cartridge paths (RTC ticks with
    /// cycles 0, the boot ROM still mapped at 0000-00FF), compared read by read and by the
    /// cartridge save-state block after every step.
    #[test]
    fn cartridge_matches_pyboy_vectors() {
        let data = load("cartridge.json");
        let mut steps_checked = 0;
        let mut kinds = std::collections::BTreeSet::new();
        for cfg in data.arr() {
            let name = cfg.get("name").str().to_string();
            let rom = make_rom(
                cfg.get("carttype").int() as u8,
                cfg.get("banks").int() as usize,
                cfg.get("ramcode").int() as u8,
                cfg.get("distinct_logo").int() != 0,
            );
            let mut c = load_cartridge(&rom, None, None).unwrap();
            kinds.insert(format!(
                "{:?}{}",
                c.kind,
                if c.multicart { "-multicart" } else { "" }
            ));
            if let Some(rtc) = &mut c.rtc {
                rtc.timelock = true; // pyboy.rtc_lock_experimental(True)
                rtc.fake_time = Some(1.0e9);
            }
            for (n, step) in cfg.get("steps").arr().iter().enumerate() {
                let s = step.arr();
                let (op, addr, value, want) = (
                    s[0].int(),
                    s[1].int() as u16,
                    s[2].int() as u8,
                    s[3].int() as u8,
                );
                let got = if op == 0 {
                    if addr < 0x4000 {
                        c.setitem(addr, value);
                    } else if addr < 0x8000 {
                        if c.rtc_enabled && addr >= 0x6000 {
                            c.rtc_tick(0);
                        }
                        c.setitem(addr, value);
                    } else {
                        if c.rtc_enabled && (0x08..=0x0C).contains(&c.rambank_selected) {
                            c.rtc_tick(0);
                        }
                        c.setitem(addr, value);
                    }
                    0
                } else if addr < 0x8000 {
                    assert!(addr > 0xFF, "the probes avoid the boot ROM area");
                    c.read_rom(addr)
                } else {
                    if c.rtc_enabled && (0x08..=0x0C).contains(&c.rambank_selected) {
                        c.rtc_tick(0);
                    }
                    c.getitem(addr)
                };
                let b = block(&c);
                let head: Vec<i128> = s[4..8].iter().map(|v| v.int()).collect();
                let want_head: Vec<i128> = b[..4].iter().map(|&v| v as i128).collect();
                assert_eq!(
                    (got, &head[..], s[8].str()),
                    (
                        want,
                        &want_head[..],
                        format!("{:016x}", fnv1a64(&b)).as_str()
                    ),
                    "{name} step {n}: op {op} addr {addr:04X} value {value:02X}; (read, block \
                     head rombank/rambank/enabled/model, block hash); emurust banks: rom {} low \
                     {} ram {}",
                    c.rombank_selected,
                    c.rombank_selected_low,
                    c.rambank_selected
                );
                steps_checked += 1;
            }
        }
        assert!(
            steps_checked >= 1000,
            "only {steps_checked} steps in cartridge.json"
        );
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>().join(","),
            "Mbc1,Mbc1-multicart,Mbc2,Mbc3,Mbc30,Mbc5,RomOnly",
            "the vectors cover every MBC kind"
        );
    }

    #[test]
    fn load_cartridge_rejects_bad_roms_like_pyboy() {
        // Messages and order from cartridge.py: load_romfile, validate_checksum, the RAM table
        // lookup (a KeyError in PyBoy), then the type table.
        let err = |r: &[u8]| load_cartridge(r, None, None).err().unwrap().to_string();
        assert!(err(&[]).contains("Empty ROM file"));
        assert!(err(&[0u8; 0x4001]).contains("doesn't divide evenly into bank size 16384"));
        let mut bad_sum = make_rom(0x00, 2, 0, true);
        bad_sum[0x14D] ^= 1;
        assert!(err(&bad_sum).contains("Cartridge header checksum mismatch!"));
        assert!(err(&make_rom(0x00, 2, 6, true)).contains("RAM size code invalid: 6"));
        assert!(err(&make_rom(0x04, 2, 0, true)).contains("Catridge type invalid: 4"));
        assert!(err(&make_rom(0xFC, 2, 0, true)).contains("Catridge type invalid: 252"));
        let c = load_cartridge(&make_rom(0x13, 128, 3, true), None, None).unwrap();
        assert_eq!(c.kind, MbcKind::Mbc3);
        assert_eq!(
            load_cartridge(&make_rom(0x13, 256, 3, true), None, None)
                .unwrap()
                .kind,
            MbcKind::Mbc30
        );
        assert_eq!(
            load_cartridge(&make_rom(0x11, 2, 5, true), None, None)
                .unwrap()
                .kind,
            MbcKind::Mbc30
        );
        assert_eq!(c.gamename, "EMURUSTC");
    }

    #[test]
    fn ram_file_is_loaded_for_battery_carts_only_and_saved_back() {
        // base_mbc.py: load_ram only `if ram_file is not None and self.battery`; a short file is
        // PyBoy's "No data" error; save_ram writes external_ram_count banks.
        let ram: Vec<u8> = (0..4 * RAM_BANK_SIZE).map(|i| (i * 7) as u8).collect();
        let c = load_cartridge(&make_rom(0x03, 4, 3, true), Some(&ram), None).unwrap();
        assert_eq!(c.save_ram(), ram);
        assert_eq!(c.stop().0, Some(ram.clone()));
        let c = load_cartridge(&make_rom(0x02, 4, 3, true), Some(&ram), None).unwrap();
        assert!(
            c.save_ram().iter().all(|&b| b == 0),
            "no battery: the file is ignored"
        );
        assert_eq!(c.stop(), (None, None));
        assert!(load_cartridge(&make_rom(0x03, 4, 3, true), Some(&ram[..100]), None).is_err());
    }

    #[test]
    fn state_round_trips_and_truncation_is_an_error() {
        for (t, banks, ramcode) in [
            (0x03u8, 64usize, 3u8),
            (0x1E, 8, 3),
            (0x10, 8, 3),
            (0x06, 4, 0),
        ] {
            let mut c = load_cartridge(&make_rom(t, banks, ramcode, true), None, None).unwrap();
            if let Some(r) = &mut c.rtc {
                r.fake_time = Some(1000.0);
            }
            c.setitem(0x0000, 0x0A);
            c.setitem(0x2100, 0x05);
            c.setitem(0x4000, 0x0B);
            c.setitem(0xA123, 0x42);
            let mut w = StateWriter::new();
            c.save_state(&mut w);
            let mut d = load_cartridge(&make_rom(t, banks, ramcode, true), None, None).unwrap();
            if let Some(r) = &mut d.rtc {
                r.fake_time = Some(1000.0);
            }
            d.load_state(&mut StateReader::new(&w.buf)).unwrap();
            let mut w2 = StateWriter::new();
            d.save_state(&mut w2);
            assert_eq!(w.buf, w2.buf, "type {t:02X}");
            for cut in [0, 3, 4, w.buf.len() / 2, w.buf.len() - 1] {
                assert!(
                    d.load_state(&mut StateReader::new(&w.buf[..cut])).is_err(),
                    "cut {cut}"
                );
            }
        }
    }

    #[test]
    fn out_of_range_banks_never_panic() {
        // A 16 KiB ROM-only cart selects bank 1 (PyBoy reads past its buffer) and a state can
        // name any bank byte: emurust reads 0xFF and drops writes there.
        let mut c = load_cartridge(&make_rom(0x09, 1, 0, true), None, None).unwrap();
        assert_eq!(c.read_rom(0x4000), 0xFF);
        let mut state = StateWriter::new();
        c.save_state(&mut state);
        state.buf[0] = 0xFF;
        state.buf[1] = 0xFF;
        c.load_state(&mut StateReader::new(&state.buf)).unwrap();
        assert_eq!(c.read_rom(0x7FFF), 0xFF);
        c.setitem(0xA000, 1);
        assert_eq!(c.getitem(0xA000), 0xFF);
        assert_eq!(c.rom_byte(0, ROM_BANK_SIZE), 0xFF);
        assert!(c.overrideitem(5, 0x100, 1).is_err());
        assert!(c.overrideitem(0, 0x4000, 1).is_err());
        c.overrideitem(0, 0x150, 0xAB).unwrap();
        assert_eq!(c.read_rom(0x150), 0xAB);
    }
}
