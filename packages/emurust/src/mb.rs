//! Translated from PyBoy 2.8.1 pyboy/core/mb.py (LGPL-3.0).
//!
//! The motherboard: it owns every component, maps the 64 KiB address space (`getitem`/`setitem`
//! and their I/O-port halves, with PyBoy's VRAM/OAM blocking and lazy OAM DMA), runs PyBoy's
//! catch-up scheduler (`tick`: run the CPU to the nearest component event, then catch the
//! components up to `cpu.cycles`) and reads/writes the whole save state (version 29, DMG). Only
//! DMG paths are kept (`cgb` is always false): HDMA, KEY0/KEY1, WRAM banking, VRAM bank 1 and the
//! CGB palette registers were dropped, each with a note where PyBoy has the branch. The SGB is
//! never enabled without PyBoy's `sgb_border` option (not supported here), so its state block is
//! carried as opaque bytes. Breakpoints (PyBoy's `OPCODE_BRK` patching) are not supported.

use crate::blocks::BlockCache;
use crate::bootrom::BootRom;
use crate::cartridge::{load_cartridge, Cartridge};
use crate::cpu::{self, Cpu};
use crate::error::EmuError;
use crate::idle::LoopWatch;
use crate::interaction::Interaction;
use crate::lcd::{Lcd, DMG_PALETTE_GREY};
use crate::ram::Ram;
use crate::serial::Serial;
use crate::sound::Sound;
use crate::timer::Timer;
use crate::utils::{
    StateReader, StateWriter, INTR_HIGHTOLOW, INTR_SERIAL, INTR_TIMER, MAX_CYCLES, STATE_VERSION,
};

/// Size of `SGB.save_state`: 7 flags, 4 joypad bytes, border tiles, map and palettes.
pub const SGB_STATE_SIZE: usize = 7 + 4 + 0x2000 + 0x800 + 0x80;

/// The timer's `cycles_to_interrupt` while its catch-up is deferred until `until` (the absolute
/// time of its overflow, `u64::MAX` while it is off), relative to its last (deferred) catch-up at
/// `last`, as PyBoy's is to its last catch-up.
#[inline(always)]
fn deferred_timer_term(until: u64, last: u64) -> u64 {
    if until == u64::MAX {
        MAX_CYCLES
    } else {
        until - last
    }
}

/// `SGB.save_state` of a fresh, disabled SGB (`multiplayer_players` 1, joypad_data 0xFF x 4).
fn sgb_fresh_state() -> Vec<u8> {
    let mut b = vec![0u8; SGB_STATE_SIZE];
    b[2] = 1;
    b[7..11].fill(0xFF);
    b
}

pub struct Motherboard {
    pub cartridge: Cartridge,
    pub bootrom: BootRom,
    pub timer: Timer,
    pub interaction: Interaction,
    pub ram: Ram,
    pub cpu: Cpu,
    pub serial: Serial,
    pub lcd: Lcd,
    pub sound: Sound,
    /// `SGB.save_state` bytes, kept as loaded (the SGB never runs in DMG mode without a border).
    pub sgb_state: Vec<u8>,
    pub bootrom_enabled: bool,
    /// Serial bytes written by the game (FF01), not part of the state.
    pub serialbuffer: [u8; 1024],
    pub serialbuffer_count: u16,
    pub oam_dma_active: bool,
    pub oam_dma_reading: bool,
    pub oam_dma_source: u8,
    pub oam_dma_index: u8,
    /// `int64_t` in PyBoy; compared signed below.
    pub oam_dma_start_cycle: u64,
    // CGB fields that DMG still writes in the state (always their DMG values).
    pub key0: u8,
    pub key1: u8,
    pub wram_select: u8,
    pub double_speed: bool,
    pub cgb: bool,
    /// Deferred catch-ups of the frame loop (not PyBoy state; see `tick`). While non-zero, the
    /// timer is in a state where PyBoy's per-event `timer.tick(t)` is pure arithmetic for every
    /// `t < timer_quiet_until` (no reload pending, TIMA cannot overflow before then), so the loop
    /// only records `t` in `timer_pending` and `timer_sync` applies the latest one before anything
    /// reads the timer. `u64::MAX`: timer disabled (TAC bit 2 clear).
    timer_quiet_until: u64,
    timer_pending: u64,
    /// Likewise for the serial port while no transfer is running (its tick only advances a clock).
    serial_quiet: bool,
    serial_pending: u64,
    /// The polling-loop watcher (`idle`; not PyBoy state): the memory map marks writes and
    /// time-dependent reads, `cpu::tick` skips iterations of confirmed fixed-point loops.
    pub watch: LoopWatch,
    /// Decoded ROM blocks (`blocks`; not PyBoy state): lent to `cpu::tick_with` by `tick`.
    pub blocks: BlockCache,
    /// The target cycle count of the CPU slice being run (not PyBoy state; set by
    /// `cpu::tick_with` when a slice starts). `blocks` and `continue_after_bail` read it.
    pub slice_target: u64,
    /// Set with `cpu.bail` by a write that may move a component's next event or change how the
    /// CPU loop runs (timer, serial, sound, LCD registers, FF50); cleared when a slice starts.
    /// A `bail` without it came from writes that move no event (`slice_goes_on_after_bail`).
    pub bail_moves_events: bool,
    /// PC of the last instruction of the decoded block replayed last (`blocks`), for the CPU
    /// loop's backward-jump check.
    pub block_last_pc: u16,
    /// Test-only flat 64 KiB memory that replaces the memory map (opcode vectors).
    #[cfg(test)]
    pub test_flat: Option<Box<FlatMem>>,
    /// Test-only: the frame loop's halted-CPU path (`run_halted`) off, a bug planted in it, and
    /// the slices it has run.
    #[cfg(test)]
    pub halted_loop: HaltedLoopTest,
    /// Test-only planted bug: decoded blocks run past the slice's end.
    #[cfg(test)]
    pub test_planted_overrun: bool,
    /// Test-only planted bug: a taken conditional jump inside a block goes on in the block.
    #[cfg(test)]
    pub test_planted_no_side_exit: bool,
    /// Test-only: every `bail` ends the slice (the reference machine of the neutral-bail tests),
    /// or (planted bug) none does when the slice could otherwise go on.
    #[cfg(test)]
    pub test_bails: BailTest,
    /// Test-only: bails after which a slice went on (`continue_after_bail`).
    #[cfg(test)]
    pub test_bails_continued: u64,
    /// Test-only: bails after which the next slice started in the CPU loop (`cpu::after_bail`).
    #[cfg(test)]
    pub test_bails_new_slice: u64,
}

#[cfg(test)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BailTest {
    #[default]
    AsDesigned,
    AllEndTheSlice,
    PlantedAllNeutral,
}

#[cfg(test)]
#[derive(Default)]
pub struct HaltedLoopTest {
    pub off: bool,
    /// slices that ignore the timer's next event (they may run past a TIMA overflow)
    pub planted_no_timer: bool,
    pub slices: u64,
}

/// A flat memory with an access log, mirroring the fake `mb` of emurust.tools.cpu_vectors.
#[cfg(test)]
pub struct FlatMem {
    pub mem: Vec<u8>,
    /// (kind 0 = read, 1 = write, address, value, cpu.cycles, cpu.memory_access_offset)
    pub log: Vec<(u8, u16, u8, u64, u8)>,
}

impl Motherboard {
    /// `Motherboard(gamerom, ram_file, rtc_file, bootrom_file=None, ..., cgb=False)` with sound
    /// off and the DMG boot ROM.
    pub fn new(
        rom: &[u8],
        ram_file: Option<&[u8]>,
        rtc_file: Option<&[u8]>,
    ) -> Result<Self, EmuError> {
        let cartridge = load_cartridge(rom, ram_file, rtc_file)?;
        Ok(Motherboard {
            cartridge,
            bootrom: BootRom::new(),
            timer: Timer::new(),
            interaction: Interaction::new(),
            ram: Ram::new(),
            cpu: Cpu::new(),
            serial: Serial::new(),
            lcd: Lcd::new(DMG_PALETTE_GREY),
            sound: Sound::new(),
            sgb_state: sgb_fresh_state(),
            bootrom_enabled: true,
            serialbuffer: [0; 1024],
            serialbuffer_count: 0,
            oam_dma_active: false,
            oam_dma_reading: false,
            oam_dma_source: 0,
            oam_dma_index: 0,
            oam_dma_start_cycle: 0,
            key0: 0,
            key1: 0,
            wram_select: 0,
            double_speed: false,
            cgb: false,
            timer_quiet_until: 0,
            timer_pending: 0,
            serial_quiet: false,
            serial_pending: 0,
            watch: LoopWatch::default(),
            blocks: BlockCache::default(),
            slice_target: 0,
            bail_moves_events: false,
            block_last_pc: 0,
            #[cfg(test)]
            test_flat: None,
            #[cfg(test)]
            halted_loop: HaltedLoopTest::default(),
            #[cfg(test)]
            test_planted_overrun: false,
            #[cfg(test)]
            test_planted_no_side_exit: false,
            #[cfg(test)]
            test_bails: BailTest::default(),
            #[cfg(test)]
            test_bails_continued: 0,
            #[cfg(test)]
            test_bails_new_slice: 0,
        })
    }

    /// The boot ROM bytes (PyBoy's `memory[-1, 0x00:0x100]`).
    pub fn bootrom_bytes(&self) -> &[u8] {
        &self.bootrom.bootrom
    }

    pub fn bootrom_bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bootrom.bootrom
    }

    /// `getserial()`: the bytes written to FF01 since the last call.
    pub fn getserial(&mut self) -> Vec<u8> {
        let n = (self.serialbuffer_count as usize).min(self.serialbuffer.len());
        let b = self.serialbuffer[..n].to_vec();
        self.serialbuffer_count = 0;
        b
    }

    /// `buttonevent(key)`: a WindowEvent press/release; a new press raises the joypad interrupt.
    pub fn buttonevent(&mut self, key: u32) {
        if self.interaction.key_event(key) {
            self.cpu.set_interruptflag(INTR_HIGHTOLOW);
        }
    }

    // ------------------------------------------------------------------ state

    /// `save_state`: the whole state file, version byte first.
    pub fn save_state(&self) -> Vec<u8> {
        let mut f = StateWriter::new();
        f.write(STATE_VERSION);
        f.write_bool(self.bootrom_enabled);
        f.write(self.key0);
        f.write(self.key1);
        f.write_bool(self.double_speed);
        f.write_bool(self.cgb);
        // (HDMA block only if cgb: dropped.)
        self.cpu.save_state(&mut f);
        f.write_bool(self.oam_dma_active);
        f.write_bool(self.oam_dma_reading);
        f.write(self.oam_dma_source);
        f.write(self.oam_dma_index);
        f.write_64bit(self.oam_dma_start_cycle);
        self.lcd.save_state(&mut f);
        self.sound.save_state(&mut f);
        self.lcd.renderer.save_state(&mut f);
        self.ram.save_state(&mut f);
        f.write(self.wram_select);
        self.timer.save_state(&mut f);
        self.cartridge.save_state(&mut f);
        self.interaction.save_state(&mut f);
        self.serial.save_state(&mut f);
        f.write_bytes(&self.sgb_state);
        f.buf
    }

    /// `load_state` for version 29 DMG states only. Rejects another version, a CGB state,
    /// truncated data and trailing bytes. Unlike PyBoy (which leaves a half-loaded machine), a
    /// failed load restores the state saved just before it.
    pub fn load_state(&mut self, data: &[u8]) -> Result<(), EmuError> {
        // the deferred catch-ups belong to the state being replaced (already applied: a frame
        // ends with them applied); the loaded timer/serial are taken as they are
        self.timer_sync();
        self.serial_sync();
        match data.first() {
            None => return Err(EmuError::State("save state is empty".into())),
            Some(&v) if v != STATE_VERSION => {
                return Err(EmuError::State(format!(
                    "unsupported save-state version {v}: emurust reads version {STATE_VERSION} \
                     (PyBoy 2.8.1) only"
                )))
            }
            _ => {}
        }
        if data.get(5).is_some_and(|&cgb| cgb != 0) {
            return Err(EmuError::State(
                "Loading state which *is* CGB-mode, but PyBoy *is not* in CGB mode!".into(),
            ));
        }
        let backup = self.save_state();
        let result = self.load_state_inner(data);
        if let Err(e) = result {
            // Cannot fail for bytes this machine just wrote; reported rather than panicking.
            if let Err(e2) = self.load_state_inner(&backup) {
                return Err(EmuError::State(format!(
                    "{e}; restoring the previous state failed: {e2}"
                )));
            }
            return Err(e);
        }
        Ok(())
    }

    fn load_state_inner(&mut self, data: &[u8]) -> Result<(), EmuError> {
        let mut f = StateReader::new(data);
        let _version = f.read()?;
        self.bootrom_enabled = f.read_bool()?;
        self.key0 = f.read()?;
        self.key1 = f.read()?;
        self.double_speed = f.read_bool()?;
        let cgb = f.read()?;
        if cgb != 0 {
            return Err(EmuError::State(
                "Loading state which *is* CGB-mode, but PyBoy *is not* in CGB mode!".into(),
            ));
        }
        self.cpu.load_state(&mut f)?;
        self.oam_dma_active = f.read_bool()?;
        self.oam_dma_reading = f.read_bool()?;
        self.oam_dma_source = f.read()?;
        self.oam_dma_index = f.read()?;
        self.oam_dma_start_cycle = f.read_64bit()?;
        self.lcd.load_state(&mut f)?;
        self.sound.load_state(&mut f)?;
        self.lcd.renderer.load_state(&mut f)?;
        self.lcd.renderer.clear_cache();
        self.ram.load_state(&mut f)?;
        self.wram_select = f.read()?;
        self.timer.load_state(&mut f)?;
        self.cartridge.load_state(&mut f)?;
        self.interaction.load_state(&mut f)?;
        self.serial.load_state(&mut f)?;
        let mut sgb = vec![0u8; SGB_STATE_SIZE];
        f.read_into(&mut sgb)?;
        self.sgb_state = sgb;
        if f.remaining() != 0 {
            return Err(EmuError::State(format!(
                "{} unexpected byte(s) after the end of the save state",
                f.remaining()
            )));
        }
        Ok(())
    }

    // ------------------------------------------------------------------ coordinator

    /// `Motherboard.tick()`: one frame, i.e. until the LCD sets `frame_done`.
    ///
    /// PyBoy catches sound, serial, timer and LCD up after every CPU slice (one per component
    /// event, ~600 per frame). The sound's catch-up only records the time, and the serial's and
    /// the timer's are path-independent arithmetic while nothing is pending, so this loop defers
    /// those three (`timer_quiet_until`, `serial_quiet`) and applies the last deferred catch-up
    /// before anything reads them (register accesses, the frame's end, an error): the same
    /// states at every point where they are observed, and the same event times in the loop.
    pub fn tick(&mut self) -> Result<(), EmuError> {
        self.watch.reset();
        // moved out for the frame so the CPU loop holds it beside `&mut self`
        let mut blocks = std::mem::take(&mut self.blocks);
        let result = self.tick_events((!blocks.disabled).then_some(&mut blocks));
        self.blocks = blocks;
        self.timer_sync();
        self.serial_sync();
        self.sound.tick(self.cpu.cycles);
        result
    }

    fn tick_events(&mut self, mut blocks: Option<&mut BlockCache>) -> Result<(), EmuError> {
        while !self.lcd.frame_done {
            #[cfg(test)]
            let off = self.halted_loop.off;
            #[cfg(not(test))]
            let off = false;
            if !off && self.halted_and_asleep() {
                self.run_halted();
                continue;
            }
            let cycles_target = self.slice_length();
            // (breakpoint_singlestep: no breakpoints in emurust.)
            let events_done = cpu::tick_with(self, blocks.as_deref_mut(), cycles_target)?;
            if !events_done {
                self.after_slice();
            }
        }
        Ok(())
    }

    /// True when the next `CPU.tick` would only pass time: the CPU is halted, `check_interrupts`
    /// finds no enabled interrupt raised (and is not skipped by a queued interrupt or the EI
    /// delay), and nothing between slices but the timer and the LCD has work (no OAM DMA, the
    /// serial port deferred).
    #[inline(always)]
    fn halted_and_asleep(&self) -> bool {
        let cpu = &self.cpu;
        cpu.halted
            && !cpu.interrupt_queued
            && cpu.interrupt_enable_delay == 0
            && cpu.interrupts_flag_register & cpu.interrupts_enabled_register & 0b11111 == 0
            && !self.oam_dma_active
            && self.serial_quiet
    }

    /// PyBoy's frame loop while `halted_and_asleep` holds, slice by slice: each slice adds its
    /// length to `cycles` (`CPU.tick`'s halted branch) and the components catch up. Nothing in
    /// here can start OAM DMA, end the serial port's deferral, queue an interrupt or touch the
    /// EI delay, so only IF (and the frame's end) can end the state; the loop stops there and
    /// the frame loop takes over. Same slices, same states as the general loop, without its
    /// per-slice tests that cannot change here.
    #[inline(never)]
    fn run_halted(&mut self) {
        // `CPU.tick`'s halted branch, the same in every slice
        self.watch.tainted = true;
        self.cpu.interrupt_queued = false;
        self.cpu.bail = false;
        // the terms of `slice_length` that stay fixed here (sound off and serial deferred do not
        // move their countdowns; a sound state may hold any value, so it is read once)
        let fixed = (self.sound.cycles_to_interrupt as i64)
            .min(self.serial.cycles_to_interrupt as i64)
            .min(MAX_CYCLES as i64);
        let enabled = self.cpu.interrupts_enabled_register & 0b11111;
        loop {
            if self.timer_quiet_until != 0 && self.run_halted_timer_deferred(fixed, enabled) {
                return;
            }
            #[cfg(test)]
            {
                self.halted_loop.slices += 1;
            }
            let cycles =
                self.halted_slice_end(self.cpu.cycles, self.timer_cycles_to_interrupt(), fixed);
            self.cpu.cycles = cycles;
            // `after_slice` with no DMA and the serial port deferred
            self.catch_up_serial_timer_lcd(cycles);
            if self.halted_stretch_ends(enabled) {
                return;
            }
        }
    }

    /// `run_halted`'s slices while the timer's catch-up is deferred and stays so (each slice ends
    /// before `timer_quiet_until`): the same slices and states, with the time, the timer's and
    /// the serial port's deferred catch-up times in locals, stored once at the end. Returns true
    /// when the halted state ended (an enabled IF bit or the frame's end); false before the
    /// first slice that would reach `timer_quiet_until`, which `run_halted`'s general iteration
    /// then runs (a real timer catch-up), computing the same slice again.
    #[inline(always)]
    fn run_halted_timer_deferred(&mut self, fixed: i64, enabled: u8) -> bool {
        let until = self.timer_quiet_until;
        let start = self.cpu.cycles;
        let mut last = self.timer_pending;
        let mut cycles = start;
        let ended = loop {
            let next = self.halted_slice_end(cycles, deferred_timer_term(until, last), fixed);
            if next >= until {
                break false;
            }
            #[cfg(test)]
            {
                self.halted_loop.slices += 1;
            }
            (cycles, last) = (next, next);
            self.lcd_catch_up(cycles);
            if self.halted_stretch_ends(enabled) {
                break true;
            }
        };
        if cycles != start {
            self.cpu.cycles = cycles;
            self.timer_pending = last;
            self.serial_pending = cycles;
        }
        ended
    }

    /// The end of a halted slice starting at `cycles`: `slice_length` with the timer's term
    /// `timer` (ignored under the tests' planted bug) and the terms that stay `fixed` while
    /// halted.
    #[inline(always)]
    fn halted_slice_end(&self, cycles: u64, timer: u64, fixed: i64) -> u64 {
        #[cfg(test)]
        let timer = if self.halted_loop.planted_no_timer {
            MAX_CYCLES
        } else {
            timer
        };
        let m = (timer as i64)
            .min(self.lcd.cycles_to_interrupt)
            .min(self.lcd.cycles_to_frame)
            .min(fixed);
        cycles.wrapping_add(4i64.max(m) as u64)
    }

    /// Whether a halted stretch ends: the frame's end, or an interrupt among `enabled` raised.
    #[inline(always)]
    fn halted_stretch_ends(&self, enabled: u8) -> bool {
        self.lcd.frame_done || self.cpu.interrupts_flag_register & enabled != 0
    }

    /// The length of the next CPU slice: up to the next component event, at least 4 cycles.
    #[inline(always)]
    pub fn slice_length(&self) -> u64 {
        // (CGB HDMA branch dropped.) Fast-forward to the next component event; all of these
        // are int64 in PyBoy (the LCD's may be negative when it ran past its target).
        let mode0_cycles = MAX_CYCLES as i64;
        let m = (self.timer_cycles_to_interrupt() as i64)
            .min(self.lcd.cycles_to_interrupt)
            .min(self.lcd.cycles_to_frame)
            .min(self.sound.cycles_to_interrupt as i64)
            .min(self.serial.cycles_to_interrupt as i64)
            .min(mode0_cycles);
        4i64.max(m) as u64
    }

    /// After an instruction that set `bail`: clears it and returns true when the slice goes on
    /// (`slice_goes_on_after_bail`); false when the CPU loop must return to the frame loop.
    #[inline]
    pub fn continue_after_bail(&mut self) -> bool {
        if !self.slice_goes_on_after_bail() {
            return false;
        }
        self.cpu.bail = false;
        #[cfg(test)]
        {
            self.test_bails_continued += 1;
        }
        true
    }

    /// Whether the slice can go on after the instruction that just set `bail`, instead of
    /// returning to the frame loop: true only where PyBoy's frame loop would then do nothing
    /// that can be seen, and start a slice with the same target.
    ///
    /// PyBoy sets `bail` on every write to the cartridge's MBC registers, P1, IF, IE and the
    /// unused I/O registers too, though none of them moves a component's next event
    /// (`bail_moves_events` is not set for them). After such an instruction, at cycle count `c`,
    /// the frame loop would: sync OAM DMA (none is running, required here); let serial and timer
    /// catch up (deferred: pure arithmetic that gives the same state whenever it is applied, as
    /// `serial_quiet` and `c < timer_quiet_until` require) and the LCD (whose next transition is
    /// the slice's target `T`, not due before it: a catch-up without a transition gives the same
    /// state whenever it is done); then compute the next slice's length. `T` was the smallest
    /// term when the slice started at `s` (`T - s >= 4` here, so unclamped): the timer's and the
    /// serial's terms are event times minus now, at least `T - c` at `c`, the sound's and
    /// MAX_CYCLES' are constants of at least `T - s > T - c`, and the LCD's is `T - c`; so with
    /// `T - c >= 4` the new target is `c + (T - c) = T`. `CPU.tick` would then find nothing to do
    /// in `check_interrupts` (no interrupt queued, EI delay 0, no enabled interrupt raised:
    /// required here) and clear `bail`. Continuing the slice does exactly that.
    #[inline]
    fn slice_goes_on_after_bail(&self) -> bool {
        #[cfg(test)]
        match self.test_bails {
            BailTest::AsDesigned => {}
            BailTest::AllEndTheSlice => return false,
            BailTest::PlantedAllNeutral => {
                return (self.slice_target as i64).wrapping_sub(self.cpu.cycles as i64) >= 4
            }
        }
        let cpu = &self.cpu;
        !self.bail_moves_events
            && (self.slice_target as i64).wrapping_sub(cpu.cycles as i64) >= 4
            && self.lcd.next_transition_at() == self.slice_target
            && !self.lcd.frame_done
            && !self.oam_dma_active
            && self.serial_quiet
            && cpu.cycles < self.timer_quiet_until
            && !cpu.interrupt_queued
            && cpu.interrupt_enable_delay == 0
            && !cpu.halted
            && cpu.interrupts_flag_register & cpu.interrupts_enabled_register & 0b11111 == 0
    }

    /// What PyBoy's frame loop does after each CPU slice: OAM DMA, serial, timer and LCD catch
    /// up to the CPU (sound and, while nothing is pending, serial and timer deferred).
    #[inline(always)]
    pub fn after_slice(&mut self) {
        if self.oam_dma_active && !self.oam_dma_reading {
            self.sync_oam_dma(0);
        }

        let cycles = self.cpu.cycles;
        // self.sound.tick(cycles): deferred to the end of the frame (it only stores `cycles`).
        if !self.serial_quiet {
            if self.serial.tick(cycles) {
                self.cpu.set_interruptflag(INTR_SERIAL);
            }
            self.serial_quiet = self.serial.transfer_enabled == 0;
        }
        self.catch_up_serial_timer_lcd(cycles);
    }

    /// The end of `after_slice` (and of every halted slice): record the deferred serial
    /// catch-up, catch the timer up (or defer it while that is exact) and the LCD, raising
    /// their interrupts.
    #[inline(always)]
    fn catch_up_serial_timer_lcd(&mut self, cycles: u64) {
        self.serial_pending = cycles;
        if cycles < self.timer_quiet_until {
            self.timer_pending = cycles;
        } else {
            self.timer_sync();
            if self.timer.tick(cycles) {
                self.cpu.set_interruptflag(INTR_TIMER);
            }
            self.timer_arm(cycles);
        }
        self.lcd_catch_up(cycles);
    }

    /// The timer's `cycles_to_interrupt` as PyBoy's would read after its catch-up at
    /// `timer_pending` (relative to that time, as PyBoy's is to its last catch-up).
    #[inline(always)]
    fn timer_cycles_to_interrupt(&self) -> u64 {
        match self.timer_quiet_until {
            0 => self.timer.cycles_to_interrupt,
            until => deferred_timer_term(until, self.timer_pending),
        }
    }

    /// After a real catch-up at `cycles`: defer the next ones while that is exact.
    #[inline]
    fn timer_arm(&mut self, cycles: u64) {
        self.timer_pending = cycles;
        self.timer_quiet_until = if self.timer.tima_reload_state != 0 {
            0
        } else if self.timer.tac & 0b100 == 0 {
            u64::MAX
        } else {
            // the absolute time of the overflow (cycles_to_interrupt is relative to `cycles`)
            cycles.saturating_add(self.timer.cycles_to_interrupt).max(1)
        };
    }

    /// Apply the deferred timer catch-up (PyBoy's state after its last per-event tick) and stop
    /// deferring until the frame loop re-arms: the caller is about to read or write the timer.
    #[inline]
    fn timer_sync(&mut self) {
        if self.timer_quiet_until != 0 {
            self.timer_quiet_until = 0;
            // strictly before the overflow: no interrupt, pure arithmetic
            let fired = self.timer.tick(self.timer_pending);
            debug_assert!(!fired);
        }
    }

    /// Apply the deferred serial catch-up and stop deferring (see `timer_sync`).
    #[inline]
    fn serial_sync(&mut self) {
        if self.serial_quiet {
            self.serial_quiet = false;
            let fired = self.serial.tick(self.serial_pending);
            debug_assert!(!fired);
        }
    }

    // ------------------------------------------------------------------ memory manager

    /// `sync_oam_dma(memory_access_offset)`: copy the DMA bytes due by `cycles + offset`.
    pub fn sync_oam_dma(&mut self, memory_access_offset: u8) {
        if !self.oam_dma_active || self.oam_dma_reading {
            return;
        }
        let elapsed = (self.cpu.cycles as i64)
            .wrapping_add(memory_access_offset as i64)
            .wrapping_sub(self.oam_dma_start_cycle as i64);
        if elapsed < 4 {
            return;
        }
        let target = 0xA0i64.min(elapsed / 4);
        while (self.oam_dma_index as i64) < target {
            self.oam_dma_reading = true;
            let mut source = self.oam_dma_source;
            if !self.cgb && source >= 0xFE {
                source -= 0x20;
            }
            let value = self.getitem(((source as u16) << 8) | self.oam_dma_index as u16);
            self.oam_dma_reading = false;
            // oam_dma_index < 0xA0 here (target <= 0xA0).
            self.lcd.write_oam(self.oam_dma_index as usize, value);
            self.oam_dma_index += 1;
        }
        if self.oam_dma_index == 0xA0 {
            self.oam_dma_active = false;
        }
    }

    /// Catch the LCD up to `cpu.cycles + cpu.memory_access_offset` (VRAM/OAM access checks).
    #[inline]
    fn lcd_catch_up_with_offset(&mut self) {
        self.lcd_catch_up(
            self.cpu
                .cycles
                .wrapping_add(self.cpu.memory_access_offset as u64),
        );
    }

    /// Catch the LCD up to `cycles` and raise the interrupts its transition (if any) raised.
    #[inline(always)]
    fn lcd_catch_up(&mut self, cycles: u64) {
        let lcd_interrupt = self.lcd.tick(cycles);
        if lcd_interrupt != 0 {
            self.cpu.set_interruptflag(lcd_interrupt);
        }
    }

    /// `getitem` with the WRAM case (C000-DFFF: a plain read, no side effects) inlined at the
    /// call site; everything else goes through the full memory map in `getitem_map`.
    #[inline(always)]
    pub fn getitem(&mut self, i: u16) -> u8 {
        #[cfg(test)]
        if self.test_flat.is_some() {
            return self.getitem_map(i);
        }
        if i & 0xE000 == 0xC000 {
            // (i & 0x1FFF == i - 0xC000 here; the mask lets the compiler drop the bounds check)
            return self.ram.internal_ram0[(i & 0x1FFF) as usize];
        }
        self.getitem_map(i)
    }

    pub fn getitem_map(&mut self, i: u16) -> u8 {
        #[cfg(test)]
        if let Some(f) = self.test_flat.as_mut() {
            self.watch.tainted = true;
            let v = f.mem[i as usize];
            f.log
                .push((0, i, v, self.cpu.cycles, self.cpu.memory_access_offset));
            return v;
        }
        match i {
            0x0000..=0x3FFF => {
                // 16kB ROM bank #0 (the CGB boot ROM's 0x200-0x8FF part is dropped)
                if self.bootrom_enabled && i <= 0xFF {
                    self.bootrom.getitem(i)
                } else {
                    self.cartridge
                        .rom_byte(self.cartridge.rombank_selected_low as usize, i as usize)
                }
            }
            0x4000..=0x7FFF => {
                // 16kB switchable ROM bank
                self.cartridge.rom_byte(
                    self.cartridge.rombank_selected as usize,
                    (i - 0x4000) as usize,
                )
            }
            0x8000..=0x9FFF => {
                // 8kB Video RAM (blocked or not depending on the time: taints a polling loop)
                self.watch.tainted = true;
                if self.cpu.memory_access_offset != 0 {
                    self.lcd_catch_up_with_offset();
                    let lcd = &self.lcd;
                    if lcd.lcdc.lcd_enable
                        && (lcd.stat.mode == 3
                            || (lcd.stat.mode == 2
                                && lcd.clock <= lcd.clock_target
                                && lcd.clock_target - lcd.clock <= 4))
                    {
                        return 0xFF;
                    }
                }
                // (VRAM bank 1 is CGB only.)
                self.lcd.vram0[(i - 0x8000) as usize]
            }
            0xA000..=0xBFFF => {
                // 8kB switchable RAM bank (the RTC moves with time: taints a polling loop)
                self.watch.tainted = true;
                if self.cartridge.rtc_enabled
                    && (0x08..=0x0C).contains(&self.cartridge.rambank_selected)
                {
                    self.cartridge.rtc_tick(self.cpu.cycles);
                }
                self.cartridge.getitem(i)
            }
            0xC000..=0xDFFF => {
                // 8kB Internal RAM (CGB WRAM banking dropped)
                self.ram.internal_ram0[(i - 0xC000) as usize]
            }
            0xE000..=0xFDFF => self.getitem(i - 0x2000), // Echo of 8kB Internal RAM
            0xFE00..=0xFE9F => {
                // Sprite Attribute Memory (OAM; blocked depending on the time)
                self.watch.tainted = true;
                if self.cpu.memory_access_offset != 0 && !self.oam_dma_reading {
                    self.lcd_catch_up_with_offset();
                    if self.lcd.lcdc.lcd_enable
                        && (matches!(self.lcd.stat.mode, 2 | 3)
                            || self.lcd.is_startup_mode2_delay())
                    {
                        // OAM locks when LY advances, before startup mode 2 begins.
                        return 0xFF;
                    }
                }
                if self.oam_dma_active && !self.oam_dma_reading {
                    self.sync_oam_dma(self.cpu.memory_access_offset);
                }
                let memory_access_offset = self.cpu.memory_access_offset as i64;
                let started = |mb: &Motherboard| {
                    (mb.cpu.cycles as i64).wrapping_add(memory_access_offset)
                        >= mb.oam_dma_start_cycle as i64
                };
                let mut dma_started = started(self);
                if self.oam_dma_active && !self.oam_dma_reading && dma_started && self.cpu.HL == i {
                    self.sync_oam_dma((memory_access_offset as u8).max(4));
                    dma_started = started(self);
                }
                if self.oam_dma_active && dma_started && !self.oam_dma_reading {
                    return 0xFF;
                }
                self.lcd.oam()[(i - 0xFE00) as usize]
            }
            0xFEA0..=0xFEFF => self.ram.non_io_internal_ram0[(i - 0xFEA0) as usize],
            _ => self.getitem_io_ports(i),
        }
    }

    pub fn getitem_io_ports(&mut self, i: u16) -> u8 {
        #[cfg(test)]
        if let Some(f) = self.test_flat.as_mut() {
            self.watch.tainted = true;
            let v = f.mem[i as usize];
            f.log
                .push((0, i, v, self.cpu.cycles, self.cpu.memory_access_offset));
            return v;
        }
        if self.oam_dma_active && !self.oam_dma_reading {
            self.watch.tainted = true;
            self.sync_oam_dma(self.cpu.memory_access_offset);
        }
        // the registers polled most (HRAM, LCD, P1) tested first; the rest in `getitem_io_other`
        if i >= 0xFF80 {
            return if i == 0xFFFF {
                self.cpu.interrupts_enabled_register
            } else {
                self.ram.internal_ram1[(i - 0xFF80) as usize]
            };
        }
        if (0xFF40..=0xFF4B).contains(&i) {
            self.lcd_catch_up_with_offset();
            let value = if i == 0xFF41 {
                if self.lcd.stat_mode_override {
                    self.watch.tainted = true; // this read clears the override
                }
                self.lcd.read_stat()
            } else {
                self.lcd_register(i)
            };
            self.watch.note_lcd_read(i, value);
            return value;
        }
        if i == 0xFF00 {
            // P1/JOYP: computed on write; the stored byte is returned.
            return self.ram.io_ports[0];
        }
        self.getitem_io_other(i)
    }

    /// `getitem_io_ports` below FF80 except P1 and the LCD registers.
    fn getitem_io_other(&mut self, i: u16) -> u8 {
        match i {
            0xFF01..=0xFF02 => {
                self.watch.tainted = true;
                self.serial_sync();
                if self.serial.tick(self.cpu.cycles) {
                    self.cpu.set_interruptflag(INTR_SERIAL);
                }
                if i == 0xFF01 {
                    self.serial.sb
                } else {
                    self.serial.sc
                }
            }
            0xFF03 => 0xFF, // Undocumented register
            0xFF04..=0xFF07 => {
                self.watch.tainted = true;
                self.timer_sync();
                if self.timer.tick(self.cpu.cycles) {
                    self.cpu.set_interruptflag(INTR_TIMER);
                }
                match i {
                    0xFF04 => self.timer.div,
                    0xFF05 => self.timer.read_tima(),
                    0xFF06 => self.timer.tma,
                    _ => self.timer.tac | 0b1111_1000,
                }
            }
            0xFF08..=0xFF0E => 0xFF, // Undocumented registers
            0xFF0F => self.cpu.interrupts_flag_register | 0b1110_0000,
            0xFF10..=0xFF3F => {
                self.watch.tainted = true;
                self.sound.tick(self.cpu.cycles);
                self.sound.get((i - 0xFF10) as u8)
            }
            0xFF00..=0xFF4B => self.ram.io_ports[(i - 0xFF00) as usize],
            // Empty but unusable for I/O; the CGB registers here are dropped (DMG reads 0xFF).
            0xFF4C..=0xFF7F => 0xFF,
            // Below FF00: PyBoy's function would fall off its end (0); only reachable by a direct
            // call, never from getitem.
            _ => 0,
        }
    }

    /// FF40-FF4B as `getitem` returns them after its LCD catch-up, except STAT (FF41), whose
    /// read may clear a mode override (`Lcd::read_stat`).
    #[inline]
    fn lcd_register(&self, i: u16) -> u8 {
        match i {
            0xFF40 => self.lcd.lcdc.value,
            0xFF41 => self.lcd.stat.value,
            0xFF42 => self.lcd.scy,
            0xFF43 => self.lcd.scx,
            0xFF44 => self.lcd.ly,
            0xFF45 => self.lcd.lyc,
            0xFF46 => self.oam_dma_source,
            0xFF47 => self.lcd.bgp.get(),
            0xFF48 => self.lcd.obp0.get(),
            0xFF49 => self.lcd.obp1.get(),
            0xFF4A => self.lcd.wy,
            _ => self.lcd.wx,
        }
    }

    /// The value a read of LCD register `i` (FF40-FF4B) would return now if no LCD transition
    /// happened first, without side effects; `None` when that read would have one (STAT with its
    /// mode override pending).
    pub fn lcd_register_peek(&self, i: u16) -> Option<u8> {
        if i == 0xFF41 && self.lcd.stat_mode_override {
            return None;
        }
        Some(self.lcd_register(i))
    }

    /// `setitem` with the WRAM case (C000-DFFF: a plain write, no side effects) inlined at the
    /// call site; everything else goes through the full memory map in `setitem_map`.
    #[inline(always)]
    pub fn setitem(&mut self, i: u16, value: u8) {
        #[cfg(test)]
        if self.test_flat.is_some() {
            return self.setitem_map(i, value);
        }
        self.watch.tainted = true; // every write ends a polling loop's observation
        if i & 0xE000 == 0xC000 {
            self.ram.internal_ram0[(i & 0x1FFF) as usize] = value;
            return;
        }
        self.setitem_map(i, value)
    }

    pub fn setitem_map(&mut self, i: u16, value: u8) {
        #[cfg(test)]
        if let Some(f) = self.test_flat.as_mut() {
            self.watch.tainted = true;
            f.mem[i as usize] = value;
            f.log
                .push((1, i, value, self.cpu.cycles, self.cpu.memory_access_offset));
            return;
        }
        match i {
            0x0000..=0x3FFF => {
                // 16kB ROM bank #0: MBC commands, the data does not change.
                self.cartridge.setitem(i, value);
                self.cpu.bail = true;
            }
            0x4000..=0x7FFF => {
                if self.cartridge.rtc_enabled && i >= 0x6000 {
                    self.cartridge.rtc_tick(self.cpu.cycles);
                }
                self.cartridge.setitem(i, value);
                self.cpu.bail = true;
            }
            0x8000..=0x9FFF => {
                // 8kB Video RAM
                if self.cpu.memory_access_offset != 0 {
                    self.lcd_catch_up_with_offset();
                    if self.lcd.lcdc.lcd_enable && self.lcd.stat.mode == 3 {
                        return;
                    }
                }
                // (VRAM bank 1 is CGB only.) Tile-data writes invalidate the renderer's caches.
                self.lcd.write_vram(i - 0x8000, value);
            }
            0xA000..=0xBFFF => {
                if self.cartridge.rtc_enabled
                    && (0x08..=0x0C).contains(&self.cartridge.rambank_selected)
                {
                    self.cartridge.rtc_tick(self.cpu.cycles);
                }
                self.cartridge.setitem(i, value);
            }
            0xC000..=0xDFFF => {
                // (CGB WRAM banking dropped.)
                self.ram.internal_ram0[(i - 0xC000) as usize] = value;
            }
            0xE000..=0xFDFF => self.setitem(i - 0x2000, value), // Echo of 8kB Internal RAM
            0xFE00..=0xFE9F => {
                // Sprite Attribute Memory (OAM)
                if self.cpu.memory_access_offset != 0 {
                    self.lcd_catch_up_with_offset();
                    let lcd = &self.lcd;
                    if lcd.lcdc.lcd_enable
                        && (lcd.stat.mode == 3
                            || (lcd.stat.mode == 2
                                && !(
                                    // OAM briefly opens during the final four startup cycles of mode 2.
                                    lcd.first_frame
                                        && lcd.clock <= lcd.clock_target
                                        && lcd.clock_target - lcd.clock <= 4
                                )))
                    {
                        return;
                    }
                }
                if self.oam_dma_active && !self.oam_dma_reading {
                    self.sync_oam_dma(self.cpu.memory_access_offset);
                }
                if !self.oam_dma_active {
                    self.lcd.write_oam((i - 0xFE00) as usize, value);
                }
            }
            0xFEA0..=0xFEFF => self.ram.non_io_internal_ram0[(i - 0xFEA0) as usize] = value,
            _ => self.setitem_io_ports(i, value),
        }
    }

    // PyBoy's if/elif layout is kept (FF50 then the dropped CGB registers).
    #[allow(clippy::collapsible_match)]
    pub fn setitem_io_ports(&mut self, i: u16, value: u8) {
        self.watch.tainted = true; // (the opcodes' LDH writes call this directly)
        #[cfg(test)]
        if let Some(f) = self.test_flat.as_mut() {
            self.watch.tainted = true;
            f.mem[i as usize] = value;
            f.log
                .push((1, i, value, self.cpu.cycles, self.cpu.memory_access_offset));
            return;
        }
        if self.oam_dma_active && !self.oam_dma_reading {
            self.sync_oam_dma(self.cpu.memory_access_offset);
        }
        if (0xFF80..=0xFFFE).contains(&i) {
            // HRAM, tested first: the most frequent target of these writes
            self.ram.internal_ram1[(i - 0xFF80) as usize] = value;
            return;
        }
        match i {
            0xFF00..=0xFF4B => {
                match i {
                    0xFF00 => {
                        // P1/JOYP. (SGB packet/multiplayer handling: the SGB is never enabled.)
                        self.ram.io_ports[0] = self.interaction.pull(value);
                    }
                    0xFF01..=0xFF02 => {
                        self.serial_sync();
                        if self.serial.tick(self.cpu.cycles) {
                            self.cpu.set_interruptflag(INTR_SERIAL);
                        }
                        if i == 0xFF01 {
                            let n = (self.serialbuffer_count & 0x3FF) as usize;
                            self.serialbuffer[n] = value;
                            self.serialbuffer_count = (self.serialbuffer_count + 1) & 0x3FF;
                            self.serial.set_sb(value);
                        } else {
                            self.serial.set_sc(value);
                        }
                    }
                    0xFF04..=0xFF07 => {
                        self.timer_sync();
                        if self.timer.tick(self.cpu.cycles) {
                            self.cpu.set_interruptflag(INTR_TIMER);
                        }
                        match i {
                            0xFF04 => {
                                // A DIV write while its APU bit is set is a DIV-APU falling edge.
                                let apu_div_edge = (self.timer.div as u32)
                                    & 0b1_0000u32
                                        .checked_shl(self.sound.speed_shift as u32)
                                        .unwrap_or(0);
                                self.sound.tick(self.cpu.cycles); // Process outstanding cycles
                                if apu_div_edge != 0 {
                                    self.sound.apu_poweron_after_div_write = 1;
                                    self.sound.last_div_write_cycles = self.sound.cycles;
                                }
                                self.sound.reset_apu_div(apu_div_edge != 0);
                                self.timer.reset();
                            }
                            0xFF05 => self.timer.write_tima(value),
                            0xFF06 => self.timer.write_tma(value),
                            _ => self.timer.write_tac(value),
                        }
                    }
                    0xFF0F => self.cpu.interrupts_flag_register = value & 0b0001_1111,
                    0xFF10..=0xFF3F => self.sound_register_write(i, value),
                    0xFF40..=0xFF4B => {
                        // No memory_access_offset here, as in PyBoy.
                        self.lcd_catch_up(self.cpu.cycles);
                        let irq = match i {
                            0xFF40 => self.lcd.set_lcdc(value),
                            0xFF41 => self.lcd.stat.set(value),
                            0xFF42 => {
                                self.lcd.scy = value;
                                0
                            }
                            0xFF43 => {
                                self.lcd.scx = value;
                                0
                            }
                            0xFF44 => 0, // LY is read-only
                            0xFF45 => self.lcd.write_lyc(value),
                            0xFF46 => {
                                self.transfer_DMA(value);
                                0
                            }
                            0xFF47 => {
                                self.lcd.bgp.set(value);
                                0
                            }
                            0xFF48 => {
                                self.lcd.obp0.set(value);
                                0
                            }
                            0xFF49 => {
                                self.lcd.obp1.set(value);
                                0
                            }
                            0xFF4A => {
                                self.lcd.wy = value;
                                0
                            }
                            _ => {
                                self.lcd.wx = value;
                                0
                            }
                        };
                        if irq != 0 {
                            self.cpu.set_interruptflag(irq);
                        }
                        if i == 0xFF44 {
                            // PyBoy returns before setting bail for the read-only LY.
                            return;
                        }
                    }
                    _ => self.ram.io_ports[(i - 0xFF00) as usize] = value,
                }
                self.cpu.bail = true;
                // P1, IF and the unused registers move no component's event
                if !matches!(i, 0xFF00 | 0xFF03 | 0xFF08..=0xFF0F) {
                    self.bail_moves_events = true;
                }
            }
            0xFF4C..=0xFF7F => {
                if self.bootrom_enabled && i == 0xFF50 && (value == 0x1 || value == 0x11) {
                    self.bootrom_enabled = false;
                    self.cpu.bail = true;
                    self.bail_moves_events = true; // the CPU loop runs without the boot ROM now
                }
                // Everything else here is a CGB register (KEY0/KEY1, VBK, HDMA, palettes, WRAM
                // bank, undocumented) or read-only: ignored on DMG.
            }
            0xFFFF => {
                self.cpu.interrupts_enabled_register = value;
                self.cpu.bail = true;
            }
            // Below FF00: only reachable by a direct call; PyBoy does nothing.
            _ => {}
        }
    }

    /// FF10-FF3F write (`setitem_io_ports`' sound branch, DMG: `sound.cgb` is false).
    fn sound_register_write(&mut self, i: u16, value: u8) {
        self.timer_sync(); // reads DIV below
        self.sound.tick(self.cpu.cycles);
        let div_bit = 0b1_0000u32
            .checked_shl(self.sound.speed_shift as u32)
            .unwrap_or(0);
        if i == 0xFF26 && value & 0x80 != 0 && self.sound.poweron == 0 {
            // Starting the APU while DIV's clock bit is high skips its next edge.
            // (The CGB-only conditions are dropped.)
            if self.sound.apu_poweron_after_div_write != 0 && (self.timer.div as u32) & div_bit != 0
            {
                self.sound.div_apu_counter = 2;
            } else {
                self.sound.div_apu_counter = 0;
            }
        }
        self.sound.set((i - 0xFF10) as u8, value);
        if i == 0xFF14 {
            self.sound.apu_poweron_after_div_write = 0;
        }
        if i == 0xFF26 && value & 0x80 != 0 && self.sound.div_apu_counter != 0 {
            self.sound.div_apu = 1;
            // cython.int maths; speed_shift is 0 on DMG (a corrupt state cannot overflow here).
            let shift = (self.sound.speed_shift as u32).min(31);
            let div_period: i64 = 0x2000i64 << shift;
            let cycles_to_div_edge =
                div_period - (self.timer.div_counter as i64 & (div_period - 1));
            self.sound.cycles_target_512hz =
                self.sound.cycles as f64 + (cycles_to_div_edge >> shift) as f64;
        }
    }

    /// `transfer_DMA(src)`: schedule an OAM DMA (bytes are copied lazily by `sync_oam_dma`).
    #[allow(non_snake_case)]
    pub fn transfer_DMA(&mut self, src: u8) {
        if self.oam_dma_active && self.oam_dma_index == 0 {
            self.oam_dma_start_cycle = self.cpu.cycles.wrapping_add(8);
        } else {
            self.oam_dma_start_cycle = self.cpu.cycles.wrapping_add(12);
        }
        self.oam_dma_active = true;
        self.oam_dma_reading = false;
        self.oam_dma_source = src;
        self.oam_dma_index = 0;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Same rule as `events_for_frame` in emurust.tools.cpu_vectors: joypad WindowEvents sent
    /// before the f-th frame (press a button every 5 frames from frame 66, release it 2 later).
    fn events_for_frame(f: u32) -> Vec<u32> {
        if f < 66 {
            return vec![];
        }
        let k = (f / 5) % 8;
        match f % 5 {
            0 => vec![1 + k],
            2 => vec![9 + k],
            _ => vec![],
        }
    }

    /// The PyBoy system vectors (and the ROMs they were recorded from), linked into a
    /// generate work dir as `target/vectors`.
    pub(crate) fn system_dir() -> PathBuf {
        match std::env::var("EMURUST_VECTORS_DIR") {
            Ok(d) => PathBuf::from(d).join("system"),
            Err(_) => PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/target/vectors/system"
            )),
        }
    }

    /// Names the save-state block holding `off` (layout of `save_state`, for failure messages).
    fn block_of(off: usize) -> String {
        let blocks: [(&str, usize); 9] = [
            ("header", 6),
            ("cpu", 27),
            ("oam_dma", 12),
            ("lcd", 9116),
            ("sound", 2032),
            ("renderer", 115_201),
            ("ram", 8491),
            ("wram_select", 1),
            ("timer", 25),
        ];
        let mut start = 0;
        for (name, size) in blocks {
            if off < start + size {
                return format!("{name}+{}", off - start);
            }
            start += size;
        }
        format!("cartridge/joypad/serial/sgb +{}", off - start)
    }

    /// Same rule as `render_sound_for_frame` in the tool: `tick(1, render, sound)` of frame f.
    fn render_sound_for_frame(f: u32) -> (bool, bool) {
        (f % 3 != 0, f % 4 != 0)
    }

    /// PyBoy's `_tick(render, sound)` around `Motherboard.tick` (input events are applied by the
    /// caller first, as `_handle_events` does).
    fn frame(mb: &mut Motherboard, f: u32) -> Result<(), EmuError> {
        let (render, sound) = render_sound_for_frame(f);
        mb.lcd.frame_done = false;
        mb.lcd.disable_renderer = !render;
        mb.sound.disable_sampling = !sound as u8;
        mb.sound.clear_buffer();
        mb.tick()
    }

    /// Whole system from power-on (boot ROM included) with scripted joypad input and frames with
    /// rendering/sampling off against the
    /// compiled PyBoy 2.8.1 in the reference configuration: the save-state bytes after each frame
    /// count PyBoy stored (`<rom>.f<N>.state`; by default 1, 2, 63, 64 (the boot ROM hands over),
    /// 65 and 100) must be identical, PyBoy's state must load and save back unchanged, and a fresh
    /// machine that loads it must match a fresh PyBoy after one more frame (`.load1`). RTC
    /// cartridges are skipped: their state holds host wall-clock times.
    #[test]
    fn system_states_match_pyboy() {
        let dir = system_dir();
        let mut roms: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| {
                panic!(
                    "{}: {e}. Generate the vectors first: `./dev tests` does, or by hand \
                     `python -m emurust.tools.cpu_vectors --system` (a Python with pyboy==2.8.1)",
                    dir.display()
                )
            })
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "gb"))
            .collect();
        roms.sort();
        assert!(!roms.is_empty(), "no ROMs in {}", dir.display());
        let mut failures = Vec::new();
        let mut compared = 0;
        for rom_path in &roms {
            let rom = std::fs::read(rom_path).unwrap();
            let name = rom_path.file_stem().unwrap().to_string_lossy().to_string();
            let mut mb = Motherboard::new(&rom, None, None).unwrap();
            if mb.cartridge.rtc_enabled {
                continue;
            }
            let prefix = format!("{name}.f");
            let mut frames: Vec<u32> = std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter_map(|n| {
                    n.strip_prefix(&prefix)?
                        .strip_suffix(".state")?
                        .parse()
                        .ok()
                })
                .collect();
            frames.sort();
            assert!(!frames.is_empty(), "{name}: no states");
            for f in 1..=*frames.last().unwrap() {
                for e in events_for_frame(f) {
                    mb.buttonevent(e);
                }
                if let Err(e) = frame(&mut mb, f) {
                    failures.push(format!("{name}: frame {f}: {e}"));
                    break;
                }
                if !frames.contains(&f) {
                    continue;
                }
                let want = std::fs::read(dir.join(format!("{name}.f{f}.state"))).unwrap();
                let got = mb.save_state();
                compared += 1;
                if got != want {
                    let off = got
                        .iter()
                        .zip(&want)
                        .position(|(a, b)| a != b)
                        .unwrap_or(got.len().min(want.len()));
                    failures.push(format!(
                        "{name}: frame {f}: state differs first at byte {off} ({}), len {} vs PyBoy {}: \
                         ours {:?} PyBoy {:?}",
                        block_of(off),
                        got.len(),
                        want.len(),
                        got.get(off..(off + 8).min(got.len())),
                        want.get(off..(off + 8).min(want.len())),
                    ));
                    break;
                }
                let mut other = Motherboard::new(&rom, None, None).unwrap();
                other.load_state(&want).unwrap();
                assert!(
                    other.save_state() == want,
                    "{name}: frame {f}: load(PyBoy state) then save differs"
                );
                // L2-style: a fresh machine loads PyBoy's state and runs one more frame, like a
                // fresh PyBoy did (fields PyBoy does not save start from a fresh instance on both).
                for e in events_for_frame(f + 1) {
                    other.buttonevent(e);
                }
                frame(&mut other, f + 1).unwrap();
                let want1 = std::fs::read(dir.join(format!("{name}.f{f}.load1"))).unwrap();
                let got1 = other.save_state();
                if got1 != want1 {
                    let off = got1
                        .iter()
                        .zip(&want1)
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    failures.push(format!(
                        "{name}: load(frame {f}) + 1 frame differs first at byte {off} ({})",
                        block_of(off)
                    ));
                    break;
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} ROMs differ from PyBoy:\n{}",
            failures.len(),
            roms.len(),
            failures.join("\n")
        );
        assert!(compared > 0);
    }

    fn fresh() -> Motherboard {
        let mut rom = vec![0u8; 0x8000];
        let mut x: u8 = 0;
        for b in &rom[0x134..0x14D] {
            x = x.wrapping_sub(*b).wrapping_sub(1);
        }
        rom[0x14D] = x;
        Motherboard::new(&rom, None, None).unwrap()
    }

    #[test]
    fn load_state_rejects_bad_input_and_keeps_the_machine() {
        let mut mb = fresh();
        mb.cpu.A = 0x42;
        let good = mb.save_state();
        // PyBoy's ROM-only state is 153 524 bytes (docs/emurust.md section 1).
        assert_eq!(good.len(), 153_524);
        let mut other = fresh();
        for bad in [
            Vec::new(),
            good[..good.len() - 1].to_vec(),
            [good.clone(), vec![0]].concat(),
            {
                let mut b = good.clone();
                b[0] = 28;
                b
            },
            {
                let mut b = good.clone();
                b[5] = 1;
                b
            },
            good[..100].to_vec(),
        ] {
            other.cpu.A = 7;
            assert!(other.load_state(&bad).is_err());
            assert_eq!(other.cpu.A, 7, "a failed load leaves the machine as it was");
        }
        other.load_state(&good).unwrap();
        assert_eq!(other.cpu.A, 0x42);
        assert!(other.save_state() == good);
    }

    /// Random byte flips and truncations of a valid state: `load_state` returns Ok or Err but
    /// never panics, and an accepted state saves back to the same length.
    #[test]
    fn load_state_survives_corrupt_bytes() {
        let mut mb = fresh();
        for _ in 0..3 {
            mb.lcd.frame_done = false;
            mb.tick().unwrap();
        }
        let good = mb.save_state();
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            // xorshift64*: a fixed sequence, no dependency.
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            seed.wrapping_mul(0x2545_F491_4F6C_DD1D)
        };
        let mut other = fresh();
        let mut accepted = 0;
        for _ in 0..400 {
            let mut bad = good.clone();
            for _ in 0..1 + next() % 8 {
                // Mostly the small fields outside VRAM/screen/RAM bulk (first 8 KiB + tail).
                let off = if next() % 2 == 0 {
                    (next() % 45) as usize
                } else {
                    (next() % bad.len() as u64) as usize
                };
                bad[off] = next() as u8;
            }
            if next() % 4 == 0 {
                bad.truncate((next() % good.len() as u64) as usize);
            }
            if other.load_state(&bad).is_ok() {
                accepted += 1;
                assert_eq!(other.save_state().len(), good.len());
            }
        }
        assert!(accepted > 0, "some mutations must still be valid states");
    }

    #[test]
    fn oam_dma_is_lazy_and_blocks_oam() {
        // transfer_DMA schedules the start 12 cycles later; bytes appear one per 4 cycles.
        let mut mb = fresh();
        mb.bootrom_enabled = false;
        for k in 0..0xA0u16 {
            mb.ram.internal_ram0[k as usize] = k as u8 ^ 0x5A;
        }
        mb.cpu.cycles = 1000;
        mb.setitem(0xFF46, 0xC0);
        assert_eq!(mb.oam_dma_start_cycle, 1012);
        assert_eq!(mb.getitem(0xFF46), 0xC0, "FF46 reads back the source");
        mb.cpu.cycles = 1012 + 4 * 10;
        assert_eq!(mb.getitem(0xFE00), 0xFF, "OAM reads 0xFF during the DMA");
        assert_eq!(mb.oam_dma_index, 10);
        assert_eq!(mb.lcd.oam()[9], 9 ^ 0x5A);
        mb.cpu.cycles = 1012 + 4 * 0xA0;
        mb.sync_oam_dma(0);
        assert!(!mb.oam_dma_active);
        assert_eq!(mb.getitem(0xFE9F), 0x9F ^ 0x5A);
    }

    /// The halted-CPU path against the general frame loop (a press every 3 frames, rendering
    /// every third frame); the first differing frame and the slices the path ran.
    fn halted_loop_difference(rom: &[u8], planted_no_timer: bool) -> (Option<u32>, u64) {
        let (diff, fast, plain) = crate::idle::tests::lockstep(
            rom,
            150,
            3,
            |f| f % 3 == 0,
            |e, use_loop| {
                e.mb.halted_loop.off = !use_loop;
                e.mb.halted_loop.planted_no_timer = planted_no_timer;
            },
        );
        assert_eq!(plain.mb.halted_loop.slices, 0);
        (diff, fast.mb.halted_loop.slices)
    }

    #[test]
    fn the_halted_cpu_path_changes_no_frame_of_any_rom() {
        let mut roms_halted = vec![];
        for (name, rom) in crate::idle::tests::roms() {
            let (diff, slices) = halted_loop_difference(&rom, false);
            assert_eq!(
                diff, None,
                "{name}: the halted-CPU path differs at frame {diff:?}"
            );
            if slices > 0 {
                roms_halted.push(name);
            }
        }
        // not vacuous: the game and the interrupt ROMs sleep in HALT most of each frame
        eprintln!("the halted-CPU path ran on {roms_halted:?}");
        assert!(roms_halted.len() >= 3, "ran on {roms_halted:?} only");
    }

    #[test]
    fn a_bug_planted_in_the_halted_cpu_path_is_caught() {
        let caught: Vec<String> = crate::idle::tests::roms()
            .into_iter()
            .filter(|(_, rom)| halted_loop_difference(rom, true).0.is_some())
            .map(|(name, _)| name)
            .collect();
        eprintln!("slices past the timer's event caught on {caught:?}");
        assert!(!caught.is_empty(), "the planted bug went unnoticed");
    }

    /// Slices going on after bails against every bail ending the slice (both replaying blocks; a
    /// press every 4 frames, rendering every other frame); the first differing frame, the bails
    /// after which a slice went on and those after which the next slice started in the CPU loop.
    fn neutral_bail_difference(rom: &[u8], bails: BailTest) -> (Option<u32>, u64, u64) {
        let (diff, tested, reference) = crate::idle::tests::lockstep(
            rom,
            150,
            4,
            |f| f % 2 == 0,
            |e, under_test| {
                e.mb.test_bails = if under_test {
                    bails
                } else {
                    BailTest::AllEndTheSlice
                };
            },
        );
        assert_eq!(reference.mb.test_bails_continued + reference.mb.test_bails_new_slice, 0);
        (diff, tested.mb.test_bails_continued, tested.mb.test_bails_new_slice)
    }

    #[test]
    fn going_on_after_neutral_bails_changes_no_frame_of_any_rom() {
        let (mut roms_going_on, mut roms_new_slice) = (vec![], vec![]);
        for (name, rom) in crate::idle::tests::roms() {
            let (diff, continued, new_slice) =
                neutral_bail_difference(&rom, BailTest::AsDesigned);
            assert_eq!(
                diff, None,
                "{name}: going on after bails differs at frame {diff:?}"
            );
            if continued > 0 {
                roms_going_on.push(name.clone());
            }
            if new_slice > 0 {
                roms_new_slice.push(name);
            }
        }
        // the timer ROM writes the timer registers in every experiment
        eprintln!("next slices started in the CPU loop after bails on {roms_new_slice:?}");
        assert!(roms_new_slice.iter().any(|n| n == "timer"), "{roms_new_slice:?}");
        // not vacuous: the MBC ROMs switch banks and the joypad ROM writes P1 in loops
        eprintln!("slices went on after bails on {roms_going_on:?}");
        for rom in ["joypad", "mbc1", "mbc2", "mbc3", "mbc5"] {
            assert!(
                roms_going_on.iter().any(|n| n == rom),
                "none on {rom}: {roms_going_on:?}"
            );
        }
    }

    #[test]
    fn going_on_after_a_bail_that_moves_an_event_is_caught() {
        // planted bug: every bail is taken as neutral (timer, LCD, serial register writes too)
        let caught: Vec<String> = crate::idle::tests::roms()
            .into_iter()
            .filter(|(_, rom)| {
                neutral_bail_difference(rom, BailTest::PlantedAllNeutral)
                    .0
                    .is_some()
            })
            .map(|(name, _)| name)
            .collect();
        eprintln!("going on after every bail caught on {caught:?}");
        assert!(
            caught.len() >= 5,
            "caught on {} ROMs only: {caught:?}",
            caught.len()
        );
    }

    /// A switch of the ROM bank the running code is in (an MBC write goes on as a neutral bail):
    /// the instructions after the write come from the new bank. Bank 1 at 0x4000 switches to
    /// bank 2 and goes on at 0x4005, where bank 1 holds `inc b` and bank 2 `inc c; inc c`; both
    /// jump back to bank 0, which selects bank 1 again.
    #[test]
    fn code_that_switches_its_own_bank_goes_on_in_the_new_bank() {
        let mut rom = std::fs::read(system_dir().join("mbc1.gb")).expect("mbc1.gb (MBC1 header)");
        // bank 0 at 0x150: ld sp,0xDFF0; loop: ld a,1; ld (0x2000),a; jp 0x4000
        let bank0 = [0x31, 0xF0, 0xDF, 0x3E, 0x01, 0xEA, 0x00, 0x20, 0xC3, 0x00, 0x40];
        rom[0x150..0x150 + bank0.len()].copy_from_slice(&bank0);
        // bank 1 at 0x4000: ld a,2; ld (0x2000),a; inc b; jp 0x0153
        let bank1 = [0x3E, 0x02, 0xEA, 0x00, 0x20, 0x04, 0xC3, 0x53, 0x01];
        rom[0x4000..0x4000 + bank1.len()].copy_from_slice(&bank1);
        // bank 2 at 0x4005: inc c; inc c; jp 0x0153
        let bank2 = [0x0C, 0x0C, 0xC3, 0x53, 0x01];
        rom[0x8005..0x8005 + bank2.len()].copy_from_slice(&bank2);
        let (diff, tested, _) =
            crate::idle::tests::lockstep(&rom, 80, 1000, |_| false, |e, use_blocks| {
                e.mb.blocks.disabled = !use_blocks;
            });
        assert_eq!(diff, None, "replaying blocks differs at frame {diff:?}");
        let cpu = &tested.mb.cpu;
        assert!(cpu.C > 0 && tested.mb.test_bails_continued > 0, "the loop did not run");
        assert_eq!(cpu.B, 0x00, "ran bank 1's instruction after switching to bank 2");
    }
}
