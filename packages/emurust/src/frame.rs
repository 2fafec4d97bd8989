//! Translated from PyBoy 2.8.1 pyboy/pyboy.py (LGPL-3.0).
//!
//! `Emulator` is PyBoy's `PyBoy` object minus the windows and plugins: a `Motherboard` plus the
//! frame logic of `PyBoy._tick` / `PyBoy.tick` (button events queued by the API are applied at the
//! start of the next frame, `frame_done = False`, `disable_renderer = not render`,
//! `disable_sampling = not sound`, one `mb.tick()`, `frame_count += 1`, then delayed events whose
//! frame has come move into the next frame's event list) and `send_input` with its delay heap. It
//! is the one place that reaches into the Motherboard's fields for the bindings (`python.rs`) and
//! the vectorised env (`vec.rs`), so both step emulators exactly the same way.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::error::EmuError;
use crate::mb::Motherboard;

/// PyBoy's `WindowEvent` numbers for the 16 button events (pyboy/utils.py; PRESS 1..=8 then
/// RELEASE 9..=16, in the order up, down, right, left, a, b, select, start).
pub const PRESS_ARROW_UP: u8 = 1;
pub const RELEASE_ARROW_UP: u8 = 9;

/// Button names in `WindowEvent` order: index i is PRESS event 1 + i and RELEASE event 9 + i.
pub const BUTTONS: [&str; 8] = ["up", "down", "right", "left", "a", "b", "select", "start"];

/// The PRESS event of a (case-insensitive) button name, as `PyBoy.button_press` maps it.
pub fn press_event(name: &str) -> Option<u8> {
    let lower = name.to_ascii_lowercase();
    BUTTONS.iter().position(|b| *b == lower).map(|i| PRESS_ARROW_UP + i as u8)
}

pub struct Emulator {
    pub mb: Motherboard,
    /// `PyBoy.frame_count`: +1 per emulated frame, not part of save states.
    pub frame_count: u64,
    /// `PyBoy.events`: applied (through `Motherboard.buttonevent`) at the start of the next frame.
    pub events: Vec<u8>,
    /// `PyBoy.queued_input`: a heapq of `(frame, event)`; a min-heap here, popped in the same
    /// (frame, event) order as Python's tuple comparison.
    pub queued_input: BinaryHeap<Reverse<(u64, u8)>>,
    pub stopped: bool,
}

impl Emulator {
    pub fn new(rom: &[u8], ram_file: Option<&[u8]>, rtc_file: Option<&[u8]>) -> Result<Self, EmuError> {
        Ok(Emulator {
            mb: Motherboard::new(rom, ram_file, rtc_file)?,
            frame_count: 0,
            events: Vec::new(),
            queued_input: BinaryHeap::new(),
            stopped: false,
        })
    }

    /// `PyBoy.send_input(event, delay)`: delay 0 queues for the next frame, `delay` > 0 frames
    /// later (PyBoy raises for a negative delay; the caller checks that).
    pub fn send_input(&mut self, event: u8, delay: u64) {
        if delay != 0 {
            self.queued_input.push(Reverse((self.frame_count.wrapping_add(delay), event)));
        } else {
            self.events.push(event);
        }
    }

    /// `PyBoy._tick(render, sound)` for an unpaused emulator without breakpoints. An illegal
    /// opcode stops the frame with an error (PyBoy would spin forever); the frame is then not
    /// counted.
    pub fn tick_frame(&mut self, render: bool, sound: bool) -> Result<(), EmuError> {
        // _handle_events: the null window passes the API's events through unchanged; only button
        // events can be queued through this API, and all of them go to Motherboard.buttonevent.
        for i in 0..self.events.len() {
            let e = self.events[i];
            self.mb.buttonevent(e.into());
        }
        self.mb.lcd.frame_done = false;
        self.mb.lcd.disable_renderer = !render;
        self.mb.sound.disable_sampling = u8::from(!sound); // a Cython bint: 0 or 1
        // sound.clear_buffer() only resets the sample buffer, which sound_emulated=False never
        // fills (docs/emurust.md §1 Sound): nothing to do.
        self.mb.tick()?;
        self.frame_count += 1;
        self.post_handle_events();
        Ok(())
    }

    /// `PyBoy._post_handle_events`.
    fn post_handle_events(&mut self) {
        self.events.clear();
        while let Some(Reverse((frame, event))) = self.queued_input.peek().copied() {
            if frame != self.frame_count {
                break;
            }
            self.queued_input.pop();
            self.events.push(event);
        }
    }

    /// `PyBoy.tick(count, render, sound)`: render and sample only the last frame; returns
    /// `running` as PyBoy does (False for `count == 0`).
    pub fn tick(&mut self, count: u64, render: bool, sound: bool) -> Result<bool, EmuError> {
        let mut running = false;
        let mut left = count;
        while left != 0 {
            self.tick_frame(render && left == 1, sound && left == 1)?;
            running = true;
            left -= 1;
        }
        Ok(running)
    }

    // -- register file (PyBoyRegisterFile) ---------------------------------------------------

    /// A F B C D E HL SP PC.
    pub fn registers(&self) -> [u16; 9] {
        let c = &self.mb.cpu;
        [
            c.A as u16, c.F as u16, c.B as u16, c.C as u16, c.D as u16, c.E as u16, c.HL, c.SP, c.PC,
        ]
    }

    /// The setters of `PyBoyRegisterFile`: mask to the width, F keeps `& 0xF0`.
    pub fn set_register(&mut self, name: &str, value: u64) -> Result<(), EmuError> {
        let c = &mut self.mb.cpu;
        match name {
            "A" => c.A = (value & 0xFF) as u8,
            "F" => c.F = (value & 0xF0) as u8,
            "B" => c.B = (value & 0xFF) as u8,
            "C" => c.C = (value & 0xFF) as u8,
            "D" => c.D = (value & 0xFF) as u8,
            "E" => c.E = (value & 0xFF) as u8,
            "HL" => c.HL = (value & 0xFFFF) as u16,
            "SP" => c.SP = (value & 0xFFFF) as u16,
            "PC" => c.PC = (value & 0xFFFF) as u16,
            _ => return Err(EmuError::InvalidInput(format!("no register {name:?}"))),
        }
        Ok(())
    }

    pub fn cycles(&self) -> u64 {
        self.mb.cpu.cycles
    }

    // -- memory --------------------------------------------------------------------------------

    pub fn getitem(&mut self, addr: u16) -> u8 {
        self.mb.getitem(addr)
    }

    pub fn setitem(&mut self, addr: u16, value: u8) {
        self.mb.setitem(addr, value)
    }

    /// The screen as 144*160*4 RGBA bytes (`Renderer._screenbuffer` viewed as bytes).
    pub fn screen(&self) -> &[u8] {
        self.mb.lcd.renderer.screen_rgba()
    }

    pub fn save_state(&self) -> Vec<u8> {
        self.mb.save_state()
    }

    pub fn load_state(&mut self, data: &[u8]) -> Result<(), EmuError> {
        self.mb.load_state(data)
    }

    /// `cartridge.external_rom_count` / `external_ram_count`.
    pub fn external_rom_count(&self) -> usize {
        self.mb.cartridge.external_rom_count
    }

    pub fn external_ram_count(&self) -> usize {
        self.mb.cartridge.external_ram_count
    }

    pub fn rtc_enabled(&self) -> bool {
        self.mb.cartridge.rtc_enabled
    }

    pub fn battery(&self) -> bool {
        self.mb.cartridge.battery
    }

    /// `PyBoy.rtc_lock_experimental(enable)`.
    pub fn rtc_lock(&mut self, enable: bool) -> Result<(), EmuError> {
        if !self.mb.cartridge.rtc_enabled {
            return Err(EmuError::InvalidInput("There's no RTC for this cartridge type".into()));
        }
        if let Some(rtc) = self.mb.cartridge.rtc.as_mut() {
            rtc.timelock = enable;
        }
        Ok(())
    }

    /// What `PyBoy.stop(save=True)` writes to the .ram file (nothing without a battery).
    pub fn save_ram(&self) -> Vec<u8> {
        if self.mb.cartridge.battery {
            self.mb.cartridge.save_ram()
        } else {
            Vec::new()
        }
    }

    /// What `PyBoy.stop(save=True)` writes to the .rtc file (nothing without an RTC).
    pub fn save_rtc(&self) -> Vec<u8> {
        self.mb.cartridge.stop().1.unwrap_or_default()
    }

    /// Direct bank access behind `PyBoy.memory[bank, addr]` (the Python side checks PyBoy's
    /// bounds first; these checks only keep a bad index from panicking).
    pub fn bank_get(&self, region: Region, bank: i64, offset: usize) -> Result<u8, EmuError> {
        let oob = || EmuError::OutOfBounds(format!("{region:?} bank {bank} offset 0x{offset:04X}"));
        match region {
            Region::Bootrom => self.mb.bootrom.bootrom.get(offset).copied().ok_or_else(oob),
            Region::Rom => {
                let b = usize::try_from(bank).map_err(|_| oob())?;
                if b >= self.mb.cartridge.external_rom_count || offset >= 0x4000 {
                    return Err(oob());
                }
                self.mb.cartridge.rombanks.get(b * 0x4000 + offset).copied().ok_or_else(oob)
            }
            Region::Vram => self.mb.lcd.vram0.get(offset).copied().ok_or_else(oob),
            Region::CartRam => {
                let b = usize::try_from(bank).map_err(|_| oob())?;
                if offset >= 0x2000 {
                    return Err(oob());
                }
                self.mb.cartridge.rambanks.get(b * 0x2000 + offset).copied().ok_or_else(oob)
            }
            Region::Wram => self.mb.ram.internal_ram0.get(offset).copied().ok_or_else(oob),
        }
    }

    pub fn bank_set(&mut self, region: Region, bank: i64, offset: usize, value: u8) -> Result<(), EmuError> {
        let oob = || EmuError::OutOfBounds(format!("{region:?} bank {bank} offset 0x{offset:04X}"));
        let slot: Option<&mut u8> = match region {
            Region::Bootrom => self.mb.bootrom.bootrom.get_mut(offset),
            Region::Rom => {
                // cartridge.overrideitem (ROM patches are not saved in states, as in PyBoy)
                let b = usize::try_from(bank).map_err(|_| oob())?;
                if offset >= 0x4000 {
                    return Err(oob());
                }
                self.mb.cartridge.overrideitem(b, offset as u16, value)?;
                self.mb.blocks.clear(); // decoded from the old bytes
                return Ok(());
            }
            Region::Vram => self.mb.lcd.vram0.get_mut(offset),
            Region::CartRam => {
                let b = usize::try_from(bank).map_err(|_| oob())?;
                if offset >= 0x2000 {
                    return Err(oob());
                }
                self.mb.cartridge.rambanks.get_mut(b * 0x2000 + offset)
            }
            Region::Wram => self.mb.ram.internal_ram0.get_mut(offset),
        };
        *slot.ok_or_else(oob)? = value;
        Ok(())
    }
}

/// The memories `PyBoy.memory[bank, addr]` reaches directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    Bootrom,
    Rom,
    Vram,
    CartRam,
    Wram,
}

impl Region {
    pub fn from_code(code: u8) -> Result<Region, EmuError> {
        Ok(match code {
            0 => Region::Bootrom,
            1 => Region::Rom,
            2 => Region::Vram,
            3 => Region::CartRam,
            4 => Region::Wram,
            _ => return Err(EmuError::InvalidInput(format!("no memory region {code}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn button_names_follow_windowevent_numbers() {
        // pyboy/utils.py WindowEvent: QUIT=0, PRESS_ARROW_UP=1 .. PRESS_BUTTON_START=8,
        // RELEASE_ARROW_UP=9 .. RELEASE_BUTTON_START=16.
        assert_eq!(press_event("UP"), Some(1));
        assert_eq!(press_event("left"), Some(4));
        assert_eq!(press_event("a"), Some(5));
        assert_eq!(press_event("Start"), Some(8));
        assert_eq!(press_event("x"), None);
        assert_eq!(RELEASE_ARROW_UP + 7, 16);
    }

    /// The ROM of tests/conftest.py: at 0x150 select the d-pad, copy FF00 to C001, increment
    /// C000, loop.
    fn loop_rom() -> Vec<u8> {
        let mut rom = vec![0u8; 0x8000];
        rom[0x100..0x104].copy_from_slice(&[0x00, 0xC3, 0x50, 0x01]);
        let program = [
            0x3E, 0x20, 0xE0, 0x00, 0xF0, 0x00, 0xEA, 0x01, 0xC0, 0x21, 0x00, 0xC0, 0x34, 0x18, 0xF1,
        ];
        rom[0x150..0x150 + program.len()].copy_from_slice(&program);
        rom[0x134..0x138].copy_from_slice(b"TEST");
        let mut x: u8 = 0;
        for &v in &rom[0x134..0x14D] {
            x = x.wrapping_sub(v).wrapping_sub(1);
        }
        rom[0x14D] = x;
        rom
    }

    #[test]
    fn tick_counts_frames_like_pyboy() {
        // PyBoy.tick: `running = False` then one _tick per count, so tick(0) returns False.
        let mut e = Emulator::new(&loop_rom(), None, None).unwrap();
        assert!(!e.tick(0, true, true).unwrap());
        assert_eq!(e.frame_count, 0);
        assert!(e.tick(3, true, true).unwrap());
        assert_eq!(e.frame_count, 3);
        // PyBoy._tick sets disable_renderer = not render, disable_sampling = not sound; tick()
        // passes render/sound only to the last frame
        e.tick(2, false, false).unwrap();
        assert!(e.mb.lcd.disable_renderer);
        assert_eq!(e.mb.sound.disable_sampling, 1);
    }

    #[test]
    fn events_apply_at_the_start_of_the_next_frame_and_delays_count_frames() {
        // PyBoy: send_input(e) appends to `events`, handled by the next _tick; send_input(e, d)
        // pushes (frame_count + d, e), moved into `events` by _post_handle_events of the frame
        // whose count reaches frame_count + d, i.e. applied at the start of the frame after it.
        let mut e = Emulator::new(&loop_rom(), None, None).unwrap();
        e.tick(2, false, false).unwrap();
        let left = press_event("left").unwrap();
        e.send_input(left, 0);
        e.send_input(left + 8, 2);
        // Interaction.directional: bit 1 = left, 0 = pressed (pyboy/core/interaction.py)
        assert_eq!(e.mb.interaction.directional & 0b10, 0b10);
        e.tick_frame(false, false).unwrap();
        assert_eq!(e.mb.interaction.directional & 0b10, 0, "pressed in the first frame");
        e.tick_frame(false, false).unwrap();
        assert_eq!(e.mb.interaction.directional & 0b10, 0, "still held");
        assert_eq!(e.events, vec![left + 8], "release queued for the next frame");
        e.tick_frame(false, false).unwrap();
        assert_eq!(e.mb.interaction.directional & 0b10, 0b10, "released");
        assert!(e.queued_input.is_empty() && e.events.is_empty());
    }

    #[test]
    fn delayed_events_pop_in_python_tuple_order() {
        // heapq on (frame, event) tuples pops by frame then event number.
        let mut h: BinaryHeap<Reverse<(u64, u8)>> = BinaryHeap::new();
        for x in [(2u64, 9u8), (1, 16), (1, 9), (3, 1)] {
            h.push(Reverse(x));
        }
        let order: Vec<(u64, u8)> = std::iter::from_fn(|| h.pop().map(|Reverse(x)| x)).collect();
        assert_eq!(order, vec![(1, 9), (1, 16), (2, 9), (3, 1)]);
    }
}
