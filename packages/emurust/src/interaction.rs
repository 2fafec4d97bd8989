//! Translated from PyBoy 2.8.1 pyboy/core/interaction.py (LGPL-3.0).
//!
//! The joypad. `directional` and `standard` hold the low nibbles of P1 for the two button groups
//! (1 = released). `key_event` applies one of PyBoy's `WindowEvent` press/release numbers and says
//! whether a button went from released to pressed (the motherboard then requests the joypad
//! interrupt); `pull` computes the P1 byte for a value written to FF00 (PyBoy computes P1 on write
//! and stores it, reads return the stored byte).

use crate::error::EmuError;
use crate::utils::{StateReader, StateWriter};

// `pyboy.utils.WindowEvent` numbers (a `range(45)` unpacking; QUIT is 0).
pub const PRESS_ARROW_UP: u32 = 1;
pub const PRESS_ARROW_DOWN: u32 = 2;
pub const PRESS_ARROW_RIGHT: u32 = 3;
pub const PRESS_ARROW_LEFT: u32 = 4;
pub const PRESS_BUTTON_A: u32 = 5;
pub const PRESS_BUTTON_B: u32 = 6;
pub const PRESS_BUTTON_SELECT: u32 = 7;
pub const PRESS_BUTTON_START: u32 = 8;
pub const RELEASE_ARROW_UP: u32 = 9;
pub const RELEASE_ARROW_DOWN: u32 = 10;
pub const RELEASE_ARROW_RIGHT: u32 = 11;
pub const RELEASE_ARROW_LEFT: u32 = 12;
pub const RELEASE_BUTTON_A: u32 = 13;
pub const RELEASE_BUTTON_B: u32 = 14;
pub const RELEASE_BUTTON_SELECT: u32 = 15;
pub const RELEASE_BUTTON_START: u32 = 16;

const P10: u8 = 0;
const P11: u8 = 1;
const P12: u8 = 2;
const P13: u8 = 3;

fn reset_bit(x: u8, bit: u8) -> u8 {
    x & !(1 << bit)
}

fn set_bit(x: u8, bit: u8) -> u8 {
    x | (1 << bit)
}

pub struct Interaction {
    pub directional: u8,
    pub standard: u8,
}

impl Default for Interaction {
    fn default() -> Self {
        Self::new()
    }
}

impl Interaction {
    pub fn new() -> Self {
        Interaction {
            directional: 0xF,
            standard: 0xF,
        }
    }

    /// Applies a WindowEvent number; other numbers change nothing. True when a button went from
    /// released (1) to pressed (0), i.e. the joypad interrupt should be requested.
    pub fn key_event(&mut self, key: u32) -> bool {
        let old_directional = self.directional;
        let old_standard = self.standard;
        match key {
            PRESS_ARROW_RIGHT => self.directional = reset_bit(self.directional, P10),
            PRESS_ARROW_LEFT => self.directional = reset_bit(self.directional, P11),
            PRESS_ARROW_UP => self.directional = reset_bit(self.directional, P12),
            PRESS_ARROW_DOWN => self.directional = reset_bit(self.directional, P13),
            PRESS_BUTTON_A => self.standard = reset_bit(self.standard, P10),
            PRESS_BUTTON_B => self.standard = reset_bit(self.standard, P11),
            PRESS_BUTTON_SELECT => self.standard = reset_bit(self.standard, P12),
            PRESS_BUTTON_START => self.standard = reset_bit(self.standard, P13),
            RELEASE_ARROW_RIGHT => self.directional = set_bit(self.directional, P10),
            RELEASE_ARROW_LEFT => self.directional = set_bit(self.directional, P11),
            RELEASE_ARROW_UP => self.directional = set_bit(self.directional, P12),
            RELEASE_ARROW_DOWN => self.directional = set_bit(self.directional, P13),
            RELEASE_BUTTON_A => self.standard = set_bit(self.standard, P10),
            RELEASE_BUTTON_B => self.standard = set_bit(self.standard, P11),
            RELEASE_BUTTON_SELECT => self.standard = set_bit(self.standard, P12),
            RELEASE_BUTTON_START => self.standard = set_bit(self.standard, P13),
            _ => {}
        }
        // XOR finds the changed bits, AND keeps those that were high (released) before.
        ((old_directional ^ self.directional) & old_directional) != 0
            || ((old_standard ^ self.standard) & old_standard) != 0
    }

    /// The P1 byte for a value written to FF00, exactly as PyBoy's `pull` computes it (both
    /// select bits low gives the written bits | 0xCF with no button bits, as PyBoy does).
    pub fn pull(&self, joystickbyte: u8) -> u8 {
        let p14 = (joystickbyte >> 4) & 1;
        let p15 = (joystickbyte >> 5) & 1;
        let mut joystick_byte = joystickbyte | 0b1100_1111;
        if p14 != 0 && p15 != 0 {
            joystick_byte = 0xF;
        } else if p14 == 0 && p15 == 0 {
            // PyBoy: "FIXME: What happens when both are requested?" -- left as is.
        } else if p14 == 0 {
            joystick_byte &= self.directional;
        } else {
            joystick_byte &= self.standard;
        }
        joystick_byte | 0b1100_0000
    }

    pub fn save_state(&self, f: &mut StateWriter) {
        f.write(self.directional);
        f.write(self.standard);
    }

    pub fn load_state(&mut self, f: &mut StateReader) -> Result<(), EmuError> {
        let directional = f.read()?;
        let standard = f.read()?;
        self.directional = directional;
        self.standard = standard;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn press_requests_interrupt_once_and_pull_selects_groups() {
        // Expectations from interaction.py: RIGHT clears directional bit 0, A clears standard
        // bit 0; a second press of the same button changes nothing, so no interrupt.
        let mut j = Interaction::new();
        assert!(j.key_event(PRESS_ARROW_RIGHT));
        assert!(!j.key_event(PRESS_ARROW_RIGHT));
        assert!(j.key_event(PRESS_BUTTON_A));
        assert!(
            !j.key_event(RELEASE_BUTTON_A),
            "a release never requests the interrupt"
        );
        assert!(j.key_event(PRESS_BUTTON_START));
        assert_eq!(j.directional, 0b1110);
        assert_eq!(j.standard, 0b0111);
        assert_eq!(j.pull(0x20), 0xCE, "P14 low: directional group");
        assert_eq!(j.pull(0x10), 0xC7, "P15 low: standard group");
        assert_eq!(j.pull(0x30), 0xCF);
        assert_eq!(j.pull(0x00), 0xCF);
        assert!(!j.key_event(0), "QUIT is not a button");
    }

    #[test]
    fn state_round_trip() {
        let mut j = Interaction::new();
        j.key_event(PRESS_ARROW_DOWN);
        let mut w = StateWriter::new();
        j.save_state(&mut w);
        assert_eq!(w.buf, vec![0b0111, 0xF]);
        let mut k = Interaction::new();
        k.load_state(&mut StateReader::new(&w.buf)).unwrap();
        assert_eq!((k.directional, k.standard), (0b0111, 0xF));
        assert!(k.load_state(&mut StateReader::new(&w.buf[..1])).is_err());
    }
}

#[cfg(test)]
mod vector_tests {
    use super::*;
    use crate::timer::test_vectors::load;

    /// Replays emurust.tools.vectors's interaction.json (PyBoy's interaction.py as oracle).
    #[test]
    fn joypad_matches_pyboy_vectors() {
        let data = load("interaction.json");
        let mut steps_checked = 0;
        for run in data.arr() {
            let seed = run.get("seed").int();
            let mut j = Interaction::new();
            for (n, step) in run.get("steps").arr().iter().enumerate() {
                let s: Vec<u64> = step.arr().iter().map(|v| v.u64()).collect();
                let irq = j.key_event(s[0] as u32) as u64;
                let v = s[9] as u8;
                let got: Vec<u64> = [irq, j.directional as u64, j.standard as u64]
                    .into_iter()
                    .chain(
                        [0x00, 0x10, 0x20, 0x30, v]
                            .iter()
                            .map(|&x| j.pull(x) as u64),
                    )
                    .collect();
                assert_eq!(
                    &got[..],
                    &s[1..9],
                    "seed {seed} step {n} event {}: (interrupt, directional, standard, \
                     pull 00/10/20/30/{v:02X})",
                    s[0]
                );
                steps_checked += 1;
            }
        }
        assert!(
            steps_checked >= 1000,
            "only {steps_checked} steps in interaction.json"
        );
    }
}
