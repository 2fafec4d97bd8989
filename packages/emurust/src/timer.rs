//! Translated from PyBoy 2.8.1 pyboy/core/timer.py (LGPL-3.0).
//!
//! The DIV/TIMA/TMA/TAC timer. Like PyBoy it is advanced lazily: `tick(cycles)` catches the timer
//! up from `last_cycles` to the absolute CPU cycle count `cycles`, with PyBoy's arithmetic fast
//! path (no TIMA overflow inside the step) and its cycle-by-cycle slow path (an overflow or a
//! pending reload), and it reports `_cycles_to_interrupt` as the distance to the next overflow so
//! the motherboard can pick its next CPU target. Integer widths follow `timer.pxd`: the counters
//! are C `uint64_t` there, so every subtraction/addition that could wrap uses wrapping arithmetic.

use crate::error::EmuError;
use crate::utils::{StateReader, StateWriter, MAX_CYCLES};

pub struct Timer {
    /// FF04, always `div_counter >> 8`.
    pub div: u8,
    /// FF05. PyBoy stores it in a `uint64_t` and tests `> 0xFF` after an increment; it never
    /// holds more than 0xFF afterwards, so u8 plus an explicit `== 0xFF` test is the same.
    pub tima: u8,
    /// The 16-bit system counter (DIV is its high byte).
    pub div_counter: u16,
    /// Countdown of the 4-cycle reload phases. `uint64_t` in PyBoy: a state file could load it as
    /// 0 in reload state 1, and the decrement must then wrap the same way.
    pub tima_counter: u64,
    pub tma: u8,
    pub tac: u8,
    pub dividers: [u64; 4],
    /// 0: none, 1: overflowed (TIMA reads 0), 2: reloaded (TIMA writes ignored).
    pub tima_reload_state: u8,
    /// `_cycles_to_interrupt` (int64 in PyBoy, never negative: it is a sum of positive terms).
    pub cycles_to_interrupt: u64,
    pub last_cycles: u64,
}

impl Default for Timer {
    fn default() -> Self {
        Self::new()
    }
}

impl Timer {
    pub fn new() -> Self {
        Timer {
            div: 0,
            tima: 0,
            div_counter: 0,
            tima_counter: 0,
            tma: 0,
            tac: 0,
            dividers: [10, 4, 6, 8],
            tima_reload_state: 0,
            // PyBoy starts at 0 (not MAX_CYCLES): the first motherboard target is then max(4, 0).
            cycles_to_interrupt: 0,
            last_cycles: 0,
        }
    }

    /// `1 << (dividers[tac & 3] - 1)`: the system-counter bit whose falling edge bumps TIMA.
    #[inline(always)]
    fn timer_bit(&self, tac: u8) -> u16 {
        // PyBoy's divider table is constant (`dividers` is never written): the bits it gives,
        // as a table, instead of a shift by a loaded amount on every catch-up
        const BITS: [u16; 4] = [1 << 9, 1 << 3, 1 << 5, 1 << 7];
        debug_assert_eq!(BITS[(tac & 3) as usize], 1u16 << (self.dividers[(tac & 3) as usize] - 1));
        BITS[(tac & 0b11) as usize]
    }

    /// A write to DIV (FF04): a falling edge of the selected bit bumps TIMA.
    pub fn reset(&mut self) {
        let timer_bit = self.timer_bit(self.tac);
        if self.tac & 0b100 != 0 && self.div_counter & timer_bit != 0 {
            self.increase_tima();
        }
        self.div_counter = 0;
        self.div = 0;
    }

    fn increase_tima(&mut self) {
        if self.tima == 0xFF {
            self.tima = self.tma;
            self.tima_reload_state = 1;
            self.tima_counter = 4;
        } else {
            self.tima += 1;
        }
    }

    pub fn write_tima(&mut self, value: u8) {
        if self.tima_reload_state != 2 {
            self.tima = value;
        }
    }

    pub fn write_tma(&mut self, value: u8) {
        self.tma = value;
        if self.tima_reload_state != 0 {
            self.tima = value;
        }
    }

    /// TAC write with the "TAC glitch": disabling the timer or switching to a rate whose bit is
    /// low while the old bit was high is a falling edge.
    pub fn write_tac(&mut self, value: u8) {
        let old_timer_bit = self.timer_bit(self.tac);
        let new_timer_bit = self.timer_bit(value);
        if self.tac & 0b100 != 0
            && self.div_counter & old_timer_bit != 0
            && (value & 0b100 == 0 || self.div_counter & new_timer_bit == 0)
        {
            self.increase_tima();
        }
        self.tac = value & 0b111;
    }

    pub fn read_tima(&self) -> u8 {
        if self.tima_reload_state == 1 {
            return 0;
        }
        self.tima
    }

    /// Catches up to the absolute cycle count `cycles_now`; true when the timer interrupt fires.
    /// As in PyBoy, a `cycles_now` below `last_cycles` wraps (uint64) and would run the slow path
    /// for ~2^64 cycles; the motherboard never goes backwards.
    #[inline(never)] // one call from each of the motherboard's many catch-up points
    pub fn tick(&mut self, cycles_now: u64) -> bool {
        let cycles = cycles_now.wrapping_sub(self.last_cycles);
        if cycles == 0 {
            return false;
        }
        self.last_cycles = cycles_now;

        let timer_bit = self.timer_bit(self.tac);

        // Fast path: no reload in progress; advance arithmetically unless TIMA overflows.
        if self.tima_reload_state == 0 {
            if self.tac & 0b100 != 0 {
                let period = (timer_bit as u64) * 2;
                let mask = period - 1;
                let start = self.div_counter as u64;
                let end = start.wrapping_add(cycles);
                // uint64 arithmetic as in Cython; the +period keeps the true values non-negative.
                // period is a power of two (timer_bit is `1 << n`): `/ period` as a shift, the
                // same uint64 result without a hardware divide.
                let shift = period.trailing_zeros();
                let a = end.wrapping_sub(1).wrapping_sub(mask).wrapping_add(period) >> shift;
                let b = start
                    .wrapping_sub(1)
                    .wrapping_sub(mask)
                    .wrapping_add(period)
                    >> shift;
                let tima_increases = a.wrapping_sub(b);
                if (self.tima as u64).wrapping_add(tima_increases) <= 0xFF {
                    self.tima = (self.tima as u64 + tima_increases) as u8;
                    self.div_counter = (end & 0xFFFF) as u16;
                    self.div = (self.div_counter >> 8) as u8;
                    let dc = self.div_counter as u64;
                    let next_edge = ((dc & !(period - 1)) + period) - dc;
                    // Wake only for the overflow, not for every increment.
                    self.cycles_to_interrupt = next_edge + (0xFF - self.tima as u64) * period;
                    return false;
                }
            } else {
                self.div_counter = ((self.div_counter as u64).wrapping_add(cycles) & 0xFFFF) as u16;
                self.div = (self.div_counter >> 8) as u8;
                self.cycles_to_interrupt = MAX_CYCLES;
                return false;
            }
        }

        self.tick_slow(cycles, timer_bit)
    }

    /// The rest of `tick` when a reload is in progress or TIMA overflows: one cycle at a time,
    /// as on hardware (PyBoy's loop), except that a stretch without a reload in progress is
    /// taken in one step up to the next falling edge of the selected bit: only that last cycle
    /// of it can change anything but the counter. Out of line, so that the common case above
    /// saves and restores no registers.
    #[inline(never)]
    fn tick_slow(&mut self, mut cycles: u64, timer_bit: u16) -> bool {
        let mut ret = false;
        while cycles != 0 {
            if self.tima_reload_state == 0 {
                let enabled = self.tac & 0b100 != 0;
                let period = (timer_bit as u64) * 2;
                // cycles until the counter is a multiple of `period` (its bit falls then)
                let to_edge = period - (self.div_counter as u64 & (period - 1));
                let step = if enabled { to_edge.min(cycles) } else { cycles };
                let new_counter = (self.div_counter as u64).wrapping_add(step) as u16;
                if enabled && step == to_edge {
                    self.increase_tima();
                }
                self.div_counter = new_counter;
                self.div = (new_counter >> 8) as u8;
                cycles -= step;
                continue;
            }
            if self.tima_reload_state != 0 {
                self.tima_counter = self.tima_counter.wrapping_sub(1);
                if self.tima_counter == 0 {
                    if self.tima_reload_state == 1 {
                        self.tima_reload_state = 2;
                        self.tima_counter = 4;
                        ret = true;
                    } else {
                        self.tima_reload_state = 0;
                    }
                }
            }

            let counter = self.div_counter;
            let new_counter = counter.wrapping_add(1);
            if self.tac & 0b100 != 0 && counter & timer_bit != 0 && new_counter & timer_bit == 0 {
                self.increase_tima();
            }

            self.div_counter = new_counter;
            self.div = (new_counter >> 8) as u8;
            cycles -= 1;
        }

        if self.tac & 0b100 != 0 {
            let period = (timer_bit as u64) * 2;
            let dc = self.div_counter as u64;
            let next_edge = ((dc & !(period - 1)) + period) - dc;
            self.cycles_to_interrupt = next_edge + (0xFF - self.tima as u64) * period;
            if self.tima_reload_state == 1 {
                // The interrupt is raised when TIMA_counter expires.
                self.cycles_to_interrupt = self.cycles_to_interrupt.min(self.tima_counter);
            }
        } else {
            self.cycles_to_interrupt = MAX_CYCLES;
        }
        ret
    }

    pub fn save_state(&self, f: &mut StateWriter) {
        f.write(self.div);
        f.write(self.tima);
        f.write_16bit(self.div_counter);
        // `write_16bit(uint16_t)` truncates the uint64 field, as the C call does.
        f.write_16bit(self.tima_counter as u16);
        f.write(self.tma);
        f.write(self.tac);
        f.write(self.tima_reload_state);
        f.write_64bit(self.last_cycles);
        f.write_64bit(self.cycles_to_interrupt);
    }

    pub fn load_state(&mut self, f: &mut StateReader) -> Result<(), EmuError> {
        // Read everything first so a truncated state leaves the timer untouched.
        let div = f.read()?;
        let tima = f.read()?;
        let div_counter = f.read_16bit()?;
        let tima_counter = f.read_16bit()?;
        let tma = f.read()?;
        let tac = f.read()?;
        let tima_reload_state = f.read()?;
        let last_cycles = f.read_64bit()?;
        let cycles_to_interrupt = f.read_64bit()?;
        self.div = div;
        self.tima = tima;
        self.div_counter = div_counter;
        self.tima_counter = tima_counter as u64;
        self.tma = tma;
        self.tac = tac;
        self.tima_reload_state = tima_reload_state;
        self.last_cycles = last_cycles;
        self.cycles_to_interrupt = cycles_to_interrupt;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tac_05_overflows_after_256_increments_of_16_cycles() {
        // Expected values worked out from timer.py by hand: TAC=5 -> dividers[1]=4, bit 3,
        // period 16; TIMA 0 -> 0xFF needs 255 edges, the 256th (at counter 0xFFF..) overflows.
        let mut t = Timer::new();
        t.write_tac(0b101);
        assert!(!t.tick(16 * 255));
        assert_eq!(t.tima, 0xFF);
        // next edge is 16 cycles away, TIMA=0xFF: 16 + 0*16.
        assert_eq!(t.cycles_to_interrupt, 16);
        assert!(!t.tick(16 * 256));
        assert_eq!(t.tima_reload_state, 1);
        assert_eq!(
            t.read_tima(),
            0,
            "TIMA reads 0 during the first reload phase"
        );
        assert!(
            t.tick(16 * 256 + 4),
            "the interrupt is requested 4 cycles after the overflow"
        );
        assert_eq!(t.tima_reload_state, 2);
    }

    #[test]
    fn save_state_is_25_bytes_in_pyboy_order() {
        let mut t = Timer::new();
        t.div_counter = 0x1234;
        t.div = 0x12;
        t.last_cycles = 7;
        let mut w = StateWriter::new();
        t.save_state(&mut w);
        assert_eq!(w.buf.len(), 25);
        assert_eq!(&w.buf[..4], &[0x12, 0, 0x34, 0x12]);
        let mut t2 = Timer::new();
        t2.load_state(&mut StateReader::new(&w.buf)).unwrap();
        let mut w2 = StateWriter::new();
        t2.save_state(&mut w2);
        assert_eq!(w.buf, w2.buf);
        assert!(Timer::new()
            .load_state(&mut StateReader::new(&w.buf[..24]))
            .is_err());
    }
}

/// Test-only reader for the vector files of `emurust.tools.vectors` (the crate has no JSON
/// dependency; the files hold only objects, arrays, integers, strings and booleans).
#[cfg(test)]
pub(crate) mod test_vectors {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    #[derive(Debug, Clone)]
    pub enum Json {
        Int(i128),
        Str(String),
        Bool(bool),
        Arr(Vec<Json>),
        Obj(BTreeMap<String, Json>),
    }

    impl Json {
        pub fn int(&self) -> i128 {
            match self {
                Json::Int(v) => *v,
                Json::Bool(b) => *b as i128,
                other => panic!("not an integer: {other:?}"),
            }
        }
        pub fn u64(&self) -> u64 {
            u64::try_from(self.int()).expect("vector value out of u64 range")
        }
        pub fn str(&self) -> &str {
            match self {
                Json::Str(s) => s,
                other => panic!("not a string: {other:?}"),
            }
        }
        pub fn arr(&self) -> &[Json] {
            match self {
                Json::Arr(v) => v,
                other => panic!("not an array: {other:?}"),
            }
        }
        pub fn get(&self, key: &str) -> &Json {
            match self {
                Json::Obj(m) => m.get(key).unwrap_or_else(|| panic!("no key {key}")),
                other => panic!("not an object: {other:?}"),
            }
        }
    }

    struct P<'a> {
        s: &'a [u8],
        i: usize,
    }

    impl P<'_> {
        fn ws(&mut self) {
            while self.i < self.s.len() && (self.s[self.i] as char).is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn value(&mut self) -> Json {
            self.ws();
            match self.s[self.i] {
                b'[' => {
                    self.i += 1;
                    let mut v = Vec::new();
                    loop {
                        self.ws();
                        if self.s[self.i] == b']' {
                            self.i += 1;
                            return Json::Arr(v);
                        }
                        v.push(self.value());
                        self.ws();
                        if self.s[self.i] == b',' {
                            self.i += 1;
                        }
                    }
                }
                b'{' => {
                    self.i += 1;
                    let mut m = BTreeMap::new();
                    loop {
                        self.ws();
                        if self.s[self.i] == b'}' {
                            self.i += 1;
                            return Json::Obj(m);
                        }
                        let k = match self.value() {
                            Json::Str(k) => k,
                            other => panic!("bad key {other:?}"),
                        };
                        self.ws();
                        assert_eq!(self.s[self.i], b':');
                        self.i += 1;
                        let v = self.value();
                        m.insert(k, v);
                        self.ws();
                        if self.s[self.i] == b',' {
                            self.i += 1;
                        }
                    }
                }
                b'"' => {
                    self.i += 1;
                    let start = self.i;
                    while self.s[self.i] != b'"' {
                        assert_ne!(self.s[self.i], b'\\', "escapes are not used by the vectors");
                        self.i += 1;
                    }
                    self.i += 1;
                    Json::Str(String::from_utf8(self.s[start..self.i - 1].to_vec()).unwrap())
                }
                b't' => {
                    self.i += 4;
                    Json::Bool(true)
                }
                b'f' => {
                    self.i += 5;
                    Json::Bool(false)
                }
                _ => {
                    let start = self.i;
                    while self.i < self.s.len()
                        && (self.s[self.i] == b'-' || self.s[self.i].is_ascii_digit())
                    {
                        self.i += 1;
                    }
                    let t = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                    Json::Int(t.parse().unwrap_or_else(|_| panic!("bad number {t:?}")))
                }
            }
        }
    }

    /// Loads `packages/emurust/target/vectors/<name>`; panics (fails the test) with the command
    /// that creates it when it is missing.
    pub fn load(name: &str) -> Json {
        let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "target", "vectors", name]
            .iter()
            .collect();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}. Generate the PyBoy vectors first: \
                 python -m emurust.tools.vectors (with pyboy==2.8.1 installed)",
                path.display()
            )
        });
        P {
            s: text.as_bytes(),
            i: 0,
        }
        .value()
    }
}

#[cfg(test)]
mod vector_tests {
    use super::test_vectors::load;
    use super::*;

    /// Replays emurust.tools.vectors's random sequences (PyBoy's timer.py as the oracle) and
    /// compares the return value and every field after every step.
    #[test]
    fn timer_matches_pyboy_vectors() {
        let data = load("timer.json");
        let mut steps_checked = 0;
        for run in data.arr() {
            let seed = run.get("seed").int();
            let mut t = Timer::new();
            for (n, step) in run.get("steps").arr().iter().enumerate() {
                let s: Vec<u64> = step.arr().iter().map(|v| v.u64()).collect();
                let (op, arg, want) = (s[0], s[1], s[2]);
                let got: u64 = match op {
                    0 => t.tick(arg) as u64,
                    1 => {
                        t.reset();
                        0
                    }
                    2 => {
                        t.write_tima(arg as u8);
                        0
                    }
                    3 => {
                        t.write_tma(arg as u8);
                        0
                    }
                    4 => {
                        t.write_tac(arg as u8);
                        0
                    }
                    5 => t.read_tima() as u64,
                    _ => panic!("unknown op {op}"),
                };
                let fields = [
                    t.div as u64,
                    t.tima as u64,
                    t.div_counter as u64,
                    t.tima_counter,
                    t.tma as u64,
                    t.tac as u64,
                    t.tima_reload_state as u64,
                    t.last_cycles,
                    t.cycles_to_interrupt,
                ];
                assert_eq!(
                    (got, &fields[..]),
                    (want, &s[3..]),
                    "seed {seed} step {n} op {op} arg {arg}: (result, DIV TIMA DIV_counter \
                     TIMA_counter TMA TAC reload last_cycles cycles_to_interrupt)"
                );
                steps_checked += 1;
            }
        }
        assert!(
            steps_checked >= 1000,
            "only {steps_checked} steps in timer.json"
        );
    }
}
