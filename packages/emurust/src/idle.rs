//! Exact fast-forward of polling loops (not in PyBoy; changes no observable value).
//!
//! Game Boy programs spend much of a frame in loops such as `1: ldh a,(rLY); cp 144; jr nz,1b`
//! that only read and branch until the LCD moves on. Inside one `cpu::tick` slice nothing but the
//! CPU advances, so such an iteration is a pure function of the CPU registers and the values it
//! reads. When one iteration, observed from a backward jump to the next one landing on the same
//! PC, wrote nothing, read only memory that cannot change without a write (ROM, WRAM, HRAM, IE,
//! IF, the joypad byte) or LCD registers, saw no LCD transition, and ended with every register as
//! it began, then every later iteration is the same iteration: same reads, same registers, the
//! same number of cycles `period`. `cpu::tick` may then add `m * period` cycles at once, where
//! `m` keeps every skipped instruction start before the slice's target (PyBoy's loop would not
//! stop inside them) and every skipped read before the LCD's next transition (the LCD registers
//! keep their values until then; an LCD catch-up is path-independent without a transition, so
//! skipping the reads' catch-ups leaves the LCD in the state the next catch-up gives it anyway).
//!
//! The observation survives a slice boundary: after an LCD transition the confirmed iteration is
//! reused when the LCD registers it read still hold the values it read (checked without side
//! effects). Anything else -- a write, a time-dependent or side-effecting read (timer, serial,
//! sound, VRAM, OAM, cartridge RAM, any read during OAM DMA, a STAT read that clears its mode
//! override), a HALT, an interrupt dispatch (it writes the stack), a new frame -- drops it.

use crate::cpu::Cpu;
use crate::mb::Motherboard;

/// The CPU state an iteration must end with to be a fixed point (everything but PC, which is
/// compared separately, the cycle counter, and the per-access scratch fields), as three words
/// read from bytes that `Cpu`'s C layout keeps contiguous, so that taking and comparing it costs
/// a few instructions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LoopRegs(u64, u64, u16);

impl LoopRegs {
    #[inline(always)]
    fn of(cpu: &Cpu) -> Self {
        let [l, h] = cpu.HL.to_le_bytes();
        let [sl, sh] = cpu.SP.to_le_bytes();
        LoopRegs(
            u64::from_le_bytes([cpu.A, cpu.F, cpu.B, cpu.C, cpu.D, cpu.E, l, h]),
            u64::from_le_bytes([
                sl,
                sh,
                cpu.interrupts_flag_register,
                cpu.interrupts_enabled_register,
                cpu.interrupt_master_enable as u8,
                cpu.interrupt_enable_delay,
                cpu.interrupt_queued as u8,
                cpu.halted as u8,
            ]),
            u16::from_le_bytes([cpu.halted_during_ei as u8, cpu.stopped as u8]),
        )
    }
}

/// At most this many LCD register reads per iteration are recorded; more taint the iteration.
const MAX_READS: usize = 4;

/// LCD register reads of one iteration: (address low byte, value), in program order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Reads {
    n: u8,
    list: [(u8, u8); MAX_READS],
}

/// The loop watcher: the memory map reports into it, `cpu::tick` consults it at backward jumps.
#[derive(Clone, Debug, Default)]
pub struct LoopWatch {
    /// Set by every write and every read that is not a pure function of unwritten memory and the
    /// LCD registers; cleared at each backward jump.
    pub tainted: bool,
    /// LCD register reads since the last backward jump.
    reads: Reads,
    /// The PC of the last backward jump.
    pc: u16,
    /// The observation: an iteration started at `pc` with `regs` at `cycles`, after
    /// `transitions` LCD transitions.
    armed: bool,
    regs: LoopRegs,
    cycles: u64,
    transitions: u64,
    /// A confirmed fixed point from (`pc`, `regs`): its cycle count and its LCD reads.
    confirmed: bool,
    period: u64,
    confirmed_reads: Reads,
    /// Iterations skipped since power-on (diagnostics and tests; not emulator state).
    pub skipped: u64,
    /// Never skip (the differential tests run every ROM both ways).
    pub disabled: bool,
    /// Planted bugs for the tests (0: none).
    #[cfg(test)]
    planted: Planted,
}

impl LoopWatch {
    /// Forget everything (a new frame: the host may have changed memory or the buttons).
    #[inline]
    pub fn reset(&mut self) {
        self.armed = false;
        self.confirmed = false;
        self.tainted = true;
    }

    /// An LCD register read (`i` in FF40-FF4B) that returned `value`.
    #[inline]
    pub fn note_lcd_read(&mut self, i: u16, value: u8) {
        let n = self.reads.n as usize;
        if n < MAX_READS {
            self.reads.list[n] = ((i & 0xFF) as u8, value);
            self.reads.n += 1;
        } else {
            self.tainted = true;
        }
    }

    /// Start a new iteration at the backward jump just taken.
    #[inline(always)]
    fn next_iteration(&mut self) {
        self.tainted = false;
        self.reads.n = 0;
    }

    /// Start observing an iteration from this state (a new iteration begins here).
    #[inline]
    fn arm(&mut self, regs: LoopRegs, cycles: u64, transitions: u64) {
        self.armed = true;
        self.regs = regs;
        self.cycles = cycles;
        self.transitions = transitions;
        self.next_iteration();
    }

    /// Drop the fixed point (if any) and observe afresh from this state.
    #[inline]
    fn restart(&mut self, regs: LoopRegs, cycles: u64, transitions: u64) {
        self.confirmed = false;
        self.arm(regs, cycles, transitions);
    }
}

/// Called by `cpu::tick` after an instruction that left PC at or below its own address (a
/// taken backward branch, a jump to itself, a return or call to lower code), with the slice's
/// cycle target. Skips whole iterations of a confirmed fixed-point loop; otherwise goes on
/// observing. The common cases (another loop, an iteration that wrote) stay inline.
#[inline(always)]
pub fn at_backward_jump(mb: &mut Motherboard, target: u64) {
    let pc = mb.cpu.PC;
    let w = &mut mb.watch;
    if w.pc != pc || w.tainted || w.disabled {
        w.pc = pc;
        w.armed = false;
        w.confirmed = false;
        w.next_iteration();
        return;
    }
    same_pc_untainted(mb, target);
}

/// `at_backward_jump` after an iteration from this PC back to it that read only what cannot
/// change without a write.
#[inline(never)]
fn same_pc_untainted(mb: &mut Motherboard, target: u64) {
    let w = &mut mb.watch;
    let regs = LoopRegs::of(&mb.cpu);
    let now = mb.cpu.cycles;
    let transitions = mb.lcd.transitions;
    if !w.armed || w.regs != regs || mb.oam_dma_active {
        w.restart(regs, now, transitions);
        return;
    }
    if transitions == w.transitions && now > w.cycles {
        // The iteration just run saw no LCD transition: it is the fixed point.
        w.confirmed = true;
        w.period = now - w.cycles;
        w.confirmed_reads = w.reads;
    } else if !(w.confirmed && (confirmed_reads_hold(mb) || planted_reuse(mb))) {
        // A transition happened during that iteration and the confirmed one (if any) read
        // values that changed since: observe again from here.
        mb.watch.restart(regs, now, transitions);
        return;
    }
    // Every skipped instruction starts before `target` and every skipped read happens before
    // the LCD's next transition: both are before the end of the last skipped iteration.
    let lcd_due = mb.lcd.next_transition_at();
    let limit = (target as i64).min(lcd_due.min(i64::MAX as u64) as i64);
    let w = &mut mb.watch;
    let mut at = now;
    if limit > now as i64 {
        let m = (limit as u64 - now) / w.period;
        #[cfg(test)]
        let m = m + (w.planted == Planted::OneMore) as u64;
        at = now + m * w.period;
        w.skipped += m;
    }
    mb.cpu.cycles = at;
    mb.watch.arm(regs, at, transitions);
}

/// Bugs the tests plant to show that the frame comparison notices a wrong skip.
#[cfg(test)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Planted {
    #[default]
    None,
    /// skip one iteration more than the limits allow
    OneMore,
    /// reuse a confirmed iteration after a transition without checking what it read
    ReuseBlindly,
}

#[cfg(test)]
fn planted_reuse(mb: &Motherboard) -> bool {
    mb.watch.planted == Planted::ReuseBlindly
}

#[cfg(not(test))]
#[inline(always)]
fn planted_reuse(_: &Motherboard) -> bool {
    false
}

/// Whether every LCD register the confirmed iteration read holds the value it read.
fn confirmed_reads_hold(mb: &Motherboard) -> bool {
    let r = &mb.watch.confirmed_reads;
    r.list[..r.n as usize]
        .iter()
        .all(|&(lo, value)| mb.lcd_register_peek(0xFF00 | lo as u16) == Some(value))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::Planted;
    use crate::frame::Emulator;
    use std::path::PathBuf;

    /// The test ROMs, from the PyBoy system vectors' folder (emurust.tools.cpu_vectors
    /// --system copies them there; it is what a generate work dir links, without `roms/`).
    pub(crate) fn roms() -> Vec<(String, Vec<u8>)> {
        let dir = crate::mb::tests::system_dir();
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| {
                panic!(
                    "{}: {e}; make the vectors first (./dev tests)",
                    dir.display()
                )
            })
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "gb"))
            .collect();
        paths.sort();
        assert!(
            paths.len() >= 17,
            "expected the 17 test ROMs in {}",
            dir.display()
        );
        paths
            .iter()
            .map(|p| {
                let name = p.file_stem().unwrap().to_string_lossy().to_string();
                (name, std::fs::read(p).unwrap())
            })
            .collect()
    }

    /// Runs `frames` frames of `rom` on two machines, the one under test set up by
    /// `configure(e, true)` and the reference by `configure(e, false)`, with the same host clock
    /// for an RTC, the same button presses (a press or release every `press_every` frames) and
    /// rendering where `render(frame)`; returns the first frame whose save state (CPU, memory,
    /// LCD, timer, screen buffer, ...) differs, and both machines.
    pub(crate) fn lockstep(
        rom: &[u8],
        frames: u32,
        press_every: u32,
        render: fn(u32) -> bool,
        configure: impl Fn(&mut Emulator, bool),
    ) -> (Option<u32>, Emulator, Emulator) {
        let machine = |under_test: bool| {
            let mut e = Emulator::new(rom, None, None).unwrap();
            if let Some(rtc) = e.mb.cartridge.rtc.as_mut() {
                rtc.fake_time = Some(1.0e9);
            }
            configure(&mut e, under_test);
            e
        };
        let (mut tested, mut reference) = (machine(true), machine(false));
        for f in 0..frames {
            if f % press_every == 0 {
                let k = ((f / press_every) % 16) as u8; // press 1..8, release 9..16 in turn
                for e in [&mut tested, &mut reference] {
                    e.send_input(1 + k, 0);
                }
            }
            for e in [&mut tested, &mut reference] {
                e.tick_frame(render(f), false).unwrap();
            }
            if tested.save_state() != reference.save_state() {
                return (Some(f), tested, reference);
            }
        }
        (None, tested, reference)
    }

    /// A skipping machine against a plain one (a press every 7 frames, rendering two frames
    /// in three); the first differing frame and the iterations skipped.
    fn first_difference(rom: &[u8], frames: u32, planted: Planted) -> (Option<u32>, u64) {
        let (diff, fast, plain) = lockstep(
            rom,
            frames,
            7,
            |f| f % 3 != 0,
            |e, skip| {
                e.mb.watch.disabled = !skip;
                e.mb.watch.planted = if skip { planted } else { Planted::None };
            },
        );
        if diff.is_none() {
            assert_eq!(plain.mb.watch.skipped, 0);
        }
        (diff, fast.mb.watch.skipped)
    }

    #[test]
    fn skipping_changes_no_frame_of_any_rom() {
        let mut skipped_total = 0;
        let mut roms_with_skips = 0;
        for (name, rom) in roms() {
            let (diff, skipped) = first_difference(&rom, 150, Planted::None);
            assert_eq!(
                diff, None,
                "{name}: the skipping machine differs at frame {diff:?}"
            );
            skipped_total += skipped;
            roms_with_skips += (skipped > 0) as u32;
        }
        // the comparison is not vacuous: most ROMs poll LY somewhere
        assert!(
            roms_with_skips >= 10,
            "only {roms_with_skips} ROMs skipped anything"
        );
        assert!(skipped_total > 10_000, "{skipped_total} iterations skipped");
    }

    #[test]
    fn planted_skipping_bugs_are_caught() {
        for planted in [Planted::ReuseBlindly, Planted::OneMore] {
            let caught: Vec<String> = roms()
                .into_iter()
                .filter(|(_, rom)| first_difference(rom, 150, planted).0.is_some())
                .map(|(name, _)| name)
                .collect();
            eprintln!("{planted:?} caught on {caught:?}");
            assert!(!caught.is_empty(), "{planted:?} went unnoticed");
        }
    }
}
