//! Translated from PyBoy 2.8.1 pyboy/core/cartridge/rtc.py (LGPL-3.0).
//!
//! The MBC3 real-time clock. It counts emulated cycles (`tick(cycles)`, 4,194,304 per second),
//! but, like PyBoy, it also reads the host clock: `tick` falls back to host time when called twice
//! at the same cycle count, `load_state` advances by the wall time since the state was saved, and
//! `save_state` writes two wall-clock doubles. The host clock is `time()`, which returns
//! `fake_time` when set (deterministic tests and runs) and the system time otherwise; `timelock`
//! is PyBoy's `rtc_lock_experimental`. The `.rtc` file and the state block have the same 33 bytes.
//! Field widths follow rtc.pxd (uint8 registers, uint16 day arithmetic, uint64 cycles).

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::EmuError;
use crate::utils::{StateReader, StateWriter};

/// `CLOCK_RATE`.
pub const RTC_CYCLES_PER_SECOND: u64 = 4_194_304;
pub const STATE_SIZE: usize = 33;

pub struct Rtc {
    /// Host time matching the RTC's zero. A `Cell` because PyBoy's `save_state` updates it
    /// while the rest of the save is read-only.
    pub timezero: Cell<f64>,
    pub timelock: bool,
    pub day_carry: u8,
    pub halt: u8,
    pub seconds: u8,
    pub minutes: u8,
    pub hours: u8,
    pub day_low: u8,
    pub day_high: u8,
    pub rtc_cycles: u64,
    pub last_cycles: u64,
    pub latch_enabled: bool,
    pub sec_latch: u8,
    pub min_latch: u8,
    pub hour_latch: u8,
    pub day_latch_low: u8,
    pub day_latch_high: u8,
    /// When set, `time()` returns it instead of the system clock (not part of PyBoy).
    pub fake_time: Option<f64>,
}

fn system_time() -> f64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

impl Rtc {
    /// `RTC(rtc_file)` with the system clock.
    pub fn new(rtc_file: Option<&[u8]>) -> Result<Rtc, EmuError> {
        Self::with_clock(rtc_file, None)
    }

    /// `RTC(rtc_file)` with an optional fixed host time.
    pub fn with_clock(rtc_file: Option<&[u8]>, fake_time: Option<f64>) -> Result<Rtc, EmuError> {
        let mut r = Rtc {
            timezero: Cell::new(0.0),
            timelock: false,
            day_carry: 0,
            halt: 0,
            seconds: 0,
            minutes: 0,
            hours: 0,
            day_low: 0,
            day_high: 0,
            rtc_cycles: 0,
            last_cycles: 0,
            latch_enabled: false,
            sec_latch: 0,
            min_latch: 0,
            hour_latch: 0,
            day_latch_low: 0,
            day_latch_high: 0,
            fake_time,
        };
        r.timezero.set(r.time());
        if let Some(data) = rtc_file {
            r.load_state(&mut StateReader::new(data))?;
        }
        r.timezero.set(r.time());
        Ok(r)
    }

    /// `time.time()`.
    pub fn time(&self) -> f64 {
        self.fake_time.unwrap_or_else(system_time)
    }

    pub fn save_state(&self, f: &mut StateWriter) {
        let now = self.time();
        // Python: the integer sum is exact, then one float addition.
        let whole = self.seconds as u64
            + self.minutes as u64 * 60
            + self.hours as u64 * 3600
            + ((((self.day_high & 1) as u64) << 8) | self.day_low as u64) * 86400;
        let elapsed = whole as f64 + self.rtc_cycles as f64 / RTC_CYCLES_PER_SECOND as f64;
        self.timezero.set(now - elapsed);
        f.write_f64(self.timezero.get());
        f.write(self.halt);
        f.write(self.day_carry);
        f.write(self.seconds);
        f.write(self.minutes);
        f.write(self.hours);
        f.write(self.day_low);
        f.write(self.day_high & 1);
        f.write(self.halt);
        f.write(self.day_carry);
        f.write_64bit(self.rtc_cycles);
        f.write_f64(now);
        self.timezero.set(now);
    }

    pub fn load_state(&mut self, f: &mut StateReader) -> Result<(), EmuError> {
        if f.remaining() < STATE_SIZE {
            return Err(EmuError::State(format!(
                "RTC block needs {STATE_SIZE} bytes, {} left",
                f.remaining()
            )));
        }
        self.timezero.set(f.read_f64()?);
        self.halt = f.read()?;
        self.day_carry = f.read()?;
        self.seconds = f.read()? & 0x3F;
        self.minutes = f.read()? & 0x3F;
        self.hours = f.read()? & 0x1F;
        self.day_low = f.read()?;
        self.day_high = f.read()? & 1;
        self.halt = f.read()? & 1;
        self.day_carry = f.read()? & 1;
        self.rtc_cycles = f.read_64bit()? % RTC_CYCLES_PER_SECOND;
        let saved_time = f.read_f64()?;

        self.last_cycles = 0;

        if self.halt == 0 && !self.timelock {
            // Python's max(0.0, x) returns 0.0 when x is NaN (the comparison is false).
            let diff = self.time() - saved_time;
            let elapsed = if diff > 0.0 { diff } else { 0.0 };
            // int(elapsed): PyBoy then passes it as a uint64 argument, which raises
            // OverflowError past 2^64 (and int(inf) raises too).
            if !elapsed.is_finite() || elapsed >= 18446744073709551616.0 {
                return Err(EmuError::State(format!(
                    "RTC saved time {saved_time} is too far from the current time"
                )));
            }
            let whole_seconds = elapsed.trunc();
            self.rtc_cycles = self
                .rtc_cycles
                .wrapping_add(((elapsed - whole_seconds) * RTC_CYCLES_PER_SECOND as f64) as u64);
            let seconds = (whole_seconds as u64)
                .checked_add(self.rtc_cycles / RTC_CYCLES_PER_SECOND)
                .ok_or_else(|| EmuError::State("RTC elapsed time overflows".into()))?;
            self.advance_seconds(seconds);
            self.rtc_cycles %= RTC_CYCLES_PER_SECOND;
        }
        Ok(())
    }

    /// `_advance_seconds`: a closed form past an hour when the registers are in range, otherwise
    /// second by second with the hardware's odd wrap-arounds (0x3F -> 0, 0x1F -> 0).
    pub fn advance_seconds(&mut self, mut seconds: u64) {
        if seconds > 60 * 60 && self.seconds < 60 && self.minutes < 60 && self.hours < 24 {
            let mut total =
                (self.hours as u64 * 3600 + self.minutes as u64 * 60 + self.seconds as u64)
                    .wrapping_add(seconds);
            let days_elapsed = total / 86400;
            total %= 86400;
            self.hours = (total / 3600) as u8;
            self.minutes = ((total / 60) % 60) as u8;
            self.seconds = (total % 60) as u8;
            // `day` is a uint16_t in PyBoy: the sum is truncated to 16 bits.
            let mut day = (((((self.day_high & 1) as u16) << 8) | self.day_low as u16) as u64)
                .wrapping_add(days_elapsed) as u16;
            if day > 0x1FF {
                self.day_carry = 1;
                day &= 0x1FF;
            }
            self.day_low = (day & 0xFF) as u8;
            self.day_high = ((day >> 8) & 1) as u8;
            return;
        }

        while seconds != 0 {
            let old_seconds = self.seconds;
            let old_minutes = self.minutes;
            let old_hours = self.hours;

            if self.seconds == 59 || self.seconds == 0x3F {
                self.seconds = 0;
            } else {
                self.seconds = self.seconds.wrapping_add(1);
            }

            if old_seconds == 59 {
                if self.minutes == 59 || self.minutes == 0x3F {
                    self.minutes = 0;
                } else {
                    self.minutes = self.minutes.wrapping_add(1);
                }

                if old_minutes == 59 {
                    if self.hours == 23 || self.hours == 0x1F {
                        self.hours = 0;
                    } else {
                        self.hours = self.hours.wrapping_add(1);
                    }

                    if old_hours == 23 {
                        let mut day = (((self.day_high & 1) as u16) << 8) | self.day_low as u16;
                        day += 1;
                        if day > 0x1FF {
                            day = 0;
                            self.day_carry = 1;
                        }
                        self.day_low = (day & 0xFF) as u8;
                        self.day_high = ((day >> 8) & 1) as u8;
                    }
                }
            }
            seconds -= 1;
        }
    }

    pub fn latch_rtc(&mut self) {
        if self.timelock {
            self.sec_latch = 0;
            self.min_latch = 0;
            self.hour_latch = 0;
            self.day_latch_low = 0;
            self.day_latch_high = 0;
            return;
        }
        self.sec_latch = self.seconds & 0x3F;
        self.min_latch = self.minutes & 0x3F;
        self.hour_latch = self.hours & 0x1F;
        self.day_latch_low = self.day_low;
        self.day_latch_high = self.day_high & 1;
    }

    pub fn tick(&mut self, cycles: u64) {
        let now = self.time();
        let host_elapsed = now - self.timezero.get();
        self.timezero.set(now);

        if cycles < self.last_cycles {
            self.last_cycles = cycles;
            return;
        }

        let mut elapsed = cycles - self.last_cycles;
        self.last_cycles = cycles;
        if elapsed == 0 && host_elapsed > 0.0 {
            // double -> uint64 conversion (saturating here; C leaves huge values undefined).
            elapsed = (host_elapsed * RTC_CYCLES_PER_SECOND as f64) as u64;
        }
        if self.halt != 0 || self.timelock {
            return;
        }

        self.rtc_cycles = self.rtc_cycles.wrapping_add(elapsed);
        let elapsed_seconds = self.rtc_cycles / RTC_CYCLES_PER_SECOND;
        self.rtc_cycles %= RTC_CYCLES_PER_SECOND;
        self.advance_seconds(elapsed_seconds);
    }

    /// Write to 6000-7FFF: 0 arms the latch, 1 after 0 latches the registers.
    pub fn writecommand(&mut self, value: u8) {
        if value == 0x00 {
            self.latch_enabled = false;
        } else if value == 0x01 {
            if !self.latch_enabled {
                self.latch_rtc();
            }
            self.latch_enabled = true;
        }
    }

    /// Latched register 0x08-0x0C (0 for others, as the C function falling off its end).
    pub fn getregister(&self, register: u8) -> u8 {
        match register {
            0x08 => self.sec_latch,
            0x09 => self.min_latch,
            0x0A => self.hour_latch,
            0x0B => self.day_latch_low,
            0x0C => {
                let day_high = self.day_latch_high & 0b1;
                let halt = self.halt.wrapping_shl(6);
                let day_carry = self.day_carry.wrapping_shl(7);
                day_high.wrapping_add(halt).wrapping_add(day_carry)
            }
            _ => 0,
        }
    }

    pub fn setregister(&mut self, register: u8, value: u8) {
        if self.timelock {
            return;
        }
        match register {
            0x08 => {
                self.seconds = value & 0x3F;
                self.rtc_cycles = 0;
            }
            0x09 => self.minutes = value & 0x3F,
            0x0A => self.hours = value & 0x1F,
            0x0B => self.day_low = value,
            0x0C => {
                self.day_high = value & 0b1;
                self.halt = (value & 0b100_0000) >> 6;
                self.day_carry = (value & 0b1000_0000) >> 7;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtc_at(t: f64) -> Rtc {
        Rtc::with_clock(None, Some(t)).unwrap()
    }

    #[test]
    fn cycles_advance_registers_and_latch_copies_them() {
        // rtc.py: 61 s of cycles from 0:00:00 -> 0:01:01; latch after 0 then 1.
        let mut r = rtc_at(100.0);
        r.tick(61 * RTC_CYCLES_PER_SECOND + 5);
        assert_eq!((r.seconds, r.minutes, r.hours), (1, 1, 0));
        assert_eq!(r.rtc_cycles, 5);
        r.writecommand(0);
        r.writecommand(1);
        assert_eq!((r.getregister(0x08), r.getregister(0x09)), (1, 1));
        r.setregister(0x0C, 0b1100_0001);
        assert_eq!(r.getregister(0x0C), 0b1100_0000 | r.day_latch_high);
        r.tick(70 * RTC_CYCLES_PER_SECOND);
        assert_eq!(r.seconds, 1, "halted: no advance");
    }

    #[test]
    fn advance_seconds_fast_path_and_day_carry() {
        // Fast path (> 1 h): 511 days + 23:59:59 then 2 s more wraps day 511 -> 0 with carry.
        let mut r = rtc_at(0.0);
        r.advance_seconds(511 * 86400 + 86399);
        assert_eq!(
            (r.day_low, r.day_high, r.hours, r.minutes, r.seconds),
            (0xFF, 1, 23, 59, 59)
        );
        assert_eq!(r.day_carry, 0);
        r.advance_seconds(2);
        assert_eq!(
            (r.day_low, r.day_high, r.seconds, r.day_carry),
            (0, 0, 1, 1)
        );
        // Slow path odd wrap: seconds 0x3F -> 0 without a minute carry (old value was not 59).
        r.seconds = 0x3F;
        r.advance_seconds(1);
        assert_eq!((r.seconds, r.minutes), (0, 0));
    }

    #[test]
    fn state_round_trip_with_fixed_clock_and_wall_time_catch_up() {
        let mut r = rtc_at(5000.0);
        r.tick(3 * RTC_CYCLES_PER_SECOND + RTC_CYCLES_PER_SECOND / 2);
        let mut w = StateWriter::new();
        r.save_state(&mut w);
        assert_eq!(w.buf.len(), STATE_SIZE);
        // timezero = now - 3.5 s; `now` last.
        assert_eq!(f64::from_le_bytes(w.buf[0..8].try_into().unwrap()), 4996.5);
        assert_eq!(
            f64::from_le_bytes(w.buf[25..33].try_into().unwrap()),
            5000.0
        );
        // Loaded 10.25 s later: advances 10 s and a quarter second of cycles.
        let r2 = Rtc::with_clock(Some(&w.buf), Some(5010.25)).unwrap();
        assert_eq!(r2.seconds, 13);
        assert_eq!(
            r2.rtc_cycles,
            RTC_CYCLES_PER_SECOND / 2 + RTC_CYCLES_PER_SECOND / 4
        );
        // timelock: no catch-up.
        let mut r3 = rtc_at(9999.0);
        r3.timelock = true;
        r3.load_state(&mut StateReader::new(&w.buf)).unwrap();
        assert_eq!(r3.seconds, 3);
        // A saved time of -inf is PyBoy's OverflowError, an error here, not a hang or panic.
        let mut bad = w.buf.clone();
        bad[25..33].copy_from_slice(&f64::NEG_INFINITY.to_le_bytes());
        assert!(rtc_at(0.0).load_state(&mut StateReader::new(&bad)).is_err());
        assert!(rtc_at(0.0)
            .load_state(&mut StateReader::new(&w.buf[..32]))
            .is_err());
    }

    #[test]
    fn same_cycle_tick_uses_host_time() {
        // rtc.py tick: elapsed == 0 and host time moved -> host seconds are used.
        let mut r = rtc_at(100.0);
        r.fake_time = Some(102.0);
        r.tick(0);
        assert_eq!(r.seconds, 2);
    }
}

#[cfg(test)]
mod vector_tests {
    use super::*;
    use crate::timer::test_vectors::{load, Json};

    fn f64_from_hex(s: &str) -> f64 {
        let mut b = [0u8; 8];
        for (i, byte) in b.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        f64::from_le_bytes(b)
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|v| format!("{v:02x}")).collect()
    }

    /// Replays emurust.tools.vectors's rtc.json: PyBoy's rtc.py (source) with a fake
    /// `time.time()`, so host-time fallbacks, wall-clock catch-up on load and the two saved
    /// doubles are all compared exactly.
    #[test]
    fn rtc_matches_pyboy_vectors() {
        let data = load("rtc.json");
        let mut steps_checked = 0;
        for run in data.arr() {
            let seed = run.get("seed").int();
            let mut r = Rtc::with_clock(None, Some(f64_from_hex(run.get("start").str()))).unwrap();
            let mut saved: Option<Vec<u8>> = None;
            for (n, step) in run.get("steps").arr().iter().enumerate() {
                let s = step.arr();
                let (op, a, b) = (s[0].int(), s[1].int(), s[2].int());
                let got: Json = match op {
                    0 => {
                        r.tick(a as u64);
                        Json::Int(0)
                    }
                    1 => {
                        r.writecommand(a as u8);
                        Json::Int(0)
                    }
                    2 => {
                        r.setregister(a as u8, b as u8);
                        Json::Int(0)
                    }
                    3 => Json::Int(r.getregister(a as u8) as i128),
                    4 => {
                        r.fake_time = Some(r.fake_time.unwrap() + a as f64 / 1000.0);
                        Json::Int(0)
                    }
                    5 => {
                        let mut w = StateWriter::new();
                        r.save_state(&mut w);
                        let h = hex(&w.buf);
                        saved = Some(w.buf);
                        Json::Str(h)
                    }
                    6 => {
                        if let Some(bytes) = &saved {
                            r.load_state(&mut StateReader::new(bytes)).unwrap();
                        }
                        Json::Int(0)
                    }
                    7 => {
                        r.timelock = a != 0;
                        Json::Int(0)
                    }
                    _ => panic!("unknown op {op}"),
                };
                let got = match got {
                    Json::Str(h) => h,
                    other => other.int().to_string(),
                };
                let want = match &s[3] {
                    Json::Str(h) => h.clone(),
                    other => other.int().to_string(),
                };
                let fields: Vec<String> = vec![
                    r.seconds.to_string(),
                    r.minutes.to_string(),
                    r.hours.to_string(),
                    r.day_low.to_string(),
                    r.day_high.to_string(),
                    r.day_carry.to_string(),
                    r.halt.to_string(),
                    r.rtc_cycles.to_string(),
                    r.last_cycles.to_string(),
                    (r.latch_enabled as u8).to_string(),
                    r.sec_latch.to_string(),
                    r.min_latch.to_string(),
                    r.hour_latch.to_string(),
                    r.day_latch_low.to_string(),
                    r.day_latch_high.to_string(),
                    hex(&r.timezero.get().to_le_bytes()),
                ];
                let want_fields: Vec<String> = s[4..]
                    .iter()
                    .map(|v| match v {
                        Json::Str(h) => h.clone(),
                        other => other.int().to_string(),
                    })
                    .collect();
                assert_eq!(
                    (&got, &fields),
                    (&want, &want_fields),
                    "seed {seed} step {n}: op {op} a {a} b {b}; (result, [sec min hour day_low \
                     day_high carry halt rtc_cycles last_cycles latch_enabled latches.. timezero])"
                );
                steps_checked += 1;
            }
        }
        assert!(
            steps_checked >= 1000,
            "only {steps_checked} steps in rtc.json"
        );
    }
}
