//! Translated from PyBoy 2.8.1 pyboy/core/cpu.py (LGPL-3.0).
//!
//! The SM83 CPU state and PyBoy's instruction loop: `tick(cycles_target)` checks interrupts once,
//! applies PyBoy's HALT model (a halted CPU adds the whole target; leaving HALT is modelled by
//! `PC += 1` escapes), then runs `fetch_and_execute` until the cycle target or a `bail` (a write
//! that may change the next event's time). The CPU lives inside the `Motherboard`; the functions
//! that touch memory take `mb: &mut Motherboard` and use `mb.cpu`, exactly like PyBoy's
//! `self.mb.getitem`/`cpu.mb.setitem`, so there is no shared-ownership plumbing. Illegal opcodes
//! come back as `Err(EmuError::IllegalOpcode)` through `tick` (PyBoy hangs there).

use crate::blocks::{self, BlockCache};
use crate::error::{EmuError, IllegalOpcode};
use crate::idle;
use crate::mb::Motherboard;
use crate::opcodes::{self, OPCODE_LENGTHS};
use crate::utils::{
    StateReader, StateWriter, INTR_HIGHTOLOW, INTR_LCDC, INTR_SERIAL, INTR_TIMER, INTR_VBLANK,
};

/// `pyboy.core.cpu.CPU`. Field types follow the crate convention (u8 registers, u16 pairs, u64
/// cycles); PyBoy's wider `int16_t`/`int` registers never hold an unmasked value that is read
/// (checked per opcode by `emurust.tools.cpu_vectors`).
#[allow(non_snake_case)]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
// C layout, in this order: the polling-loop watcher (`idle`) compares the registers and the
// interrupt state as three words that are contiguous bytes here (bytes 0-7, 8-15, 16-17).
#[repr(C)]
pub struct Cpu {
    pub A: u8,
    pub F: u8,
    pub B: u8,
    pub C: u8,
    pub D: u8,
    pub E: u8,
    pub HL: u16,
    pub SP: u16,
    /// IF (FF0F), 5 bits; reads add 0xE0 in the motherboard.
    pub interrupts_flag_register: u8,
    /// IE (FFFF).
    pub interrupts_enabled_register: u8,
    pub interrupt_master_enable: bool,
    /// EI sets 2; counted down after each instruction, IME turns on at 0.
    pub interrupt_enable_delay: u8,
    pub interrupt_queued: bool,
    pub halted: bool,
    pub halted_during_ei: bool,
    pub stopped: bool,
    pub PC: u16,
    /// Cycles between `cycles` and the moment of the current memory access (immediate fetches
    /// and 6 opcodes); the motherboard catches the LCD up to `cycles + offset` for VRAM/OAM.
    pub memory_access_offset: u8,
    /// Set by writes that may move the next event; ends the current `tick` early.
    pub bail: bool,
    /// Absolute T-cycle counter since power-on (`int64_t` in PyBoy).
    pub cycles: u64,
}

impl Cpu {
    /// `CPU.__init__`: everything zero (the boot ROM sets the registers up).
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set_interruptflag(&mut self, flag: u8) {
        self.interrupts_flag_register |= flag;
    }

    /// 27 bytes: A F B C D E, HL SP PC, IME, EI delay, halted, stopped, IE, queued, IF, cycles.
    pub fn save_state(&self, f: &mut StateWriter) {
        for n in [self.A, self.F, self.B, self.C, self.D, self.E] {
            f.write(n);
        }
        for n in [self.HL, self.SP, self.PC] {
            f.write_16bit(n);
        }
        f.write_bool(self.interrupt_master_enable);
        f.write(self.interrupt_enable_delay);
        f.write_bool(self.halted);
        f.write_bool(self.stopped);
        f.write(self.interrupts_enabled_register);
        f.write_bool(self.interrupt_queued);
        f.write(self.interrupts_flag_register);
        f.write_64bit(self.cycles);
    }

    /// Version 29 only (the motherboard rejects other versions before calling this).
    pub fn load_state(&mut self, f: &mut StateReader) -> Result<(), EmuError> {
        self.A = f.read()?;
        self.F = f.read()?;
        self.B = f.read()?;
        self.C = f.read()?;
        self.D = f.read()?;
        self.E = f.read()?;
        self.HL = f.read_16bit()?;
        self.SP = f.read_16bit()?;
        self.PC = f.read_16bit()?;
        // bint fields: any non-zero byte is True (and is written back as 1).
        self.interrupt_master_enable = f.read_bool()?;
        self.interrupt_enable_delay = f.read()?;
        self.halted = f.read_bool()?;
        self.stopped = f.read_bool()?;
        self.interrupts_enabled_register = f.read()?;
        self.interrupt_queued = f.read_bool()?;
        // A uint8_t field: PyBoy keeps the byte as read (bits 5-7 included) until the next write.
        self.interrupts_flag_register = f.read()?;
        self.cycles = f.read_64bit()?;
        Ok(())
    }
}

/// `CPU.tick(cycles_target)`, fetching every instruction.
pub fn tick(mb: &mut Motherboard, cycles_target: u64) -> Result<(), EmuError> {
    tick_with(mb, None, cycles_target).map(|_| ())
}

/// `CPU.tick(cycles_target)`, replaying decoded ROM blocks from `blocks` where it can (see
/// `blocks`; the same instructions in the same order). With blocks, the slices that follow may
/// run here too (see `run_slice_blocks`); true when the last one's `Motherboard::after_slice`
/// has been done here.
pub fn tick_with(
    mb: &mut Motherboard,
    blocks: Option<&mut BlockCache>,
    cycles_target: u64,
) -> Result<bool, EmuError> {
    let cycles0 = mb.cpu.cycles;
    let target = cycles0.wrapping_add(cycles_target);

    if check_interrupts(mb) {
        mb.cpu.halted = false;
    }

    let cpu = &mut mb.cpu;
    if cpu.halted {
        // a halted slice passes time without instructions: no polling-loop period spans it
        mb.watch.tainted = true;
    }
    if cpu.halted && cpu.interrupt_queued {
        // PyBoy's halt-bug model: the instruction after HALT is "skipped" by this +1.
        cpu.halted = false;
        cpu.PC = cpu.PC.wrapping_add(1);
    } else if cpu.halted {
        cpu.cycles = cpu.cycles.wrapping_add(cycles_target);
        cpu.interrupt_queued = false;
        cpu.bail = false;
        return Ok(false); // the loop below would not run: `cycles` is the target
    }
    start_slice(mb, target);
    // The boot ROM is switched off by a write (FF50), which ends the slice (`bail`): each slice
    // runs with one value of `bootrom_enabled`, so the loop is compiled for each.
    match blocks {
        _ if mb.bootrom_enabled => run_slice::<true>(mb, target).map(|_| false),
        Some(blocks) => run_slice_blocks(mb, blocks, target),
        None => run_slice::<false>(mb, target).map(|_| false),
    }
}

/// PyBoy's `while self.cycles < _target` loop of `CPU.tick`, for a known `bootrom_enabled`.
#[inline(always)]
fn run_slice<const BOOTROM: bool>(mb: &mut Motherboard, target: u64) -> Result<(), EmuError> {
    // Signed compare, as PyBoy's int64_t `self.cycles < _target`.
    while (mb.cpu.cycles as i64) < (target as i64) {
        let pc = mb.cpu.PC;
        fetch_and_execute_with::<BOOTROM>(mb)?;
        if mb.cpu.bail {
            break;
        }
        if mb.cpu.PC <= pc {
            // a backward jump: maybe a polling loop that can be fast-forwarded (see `idle`)
            idle::at_backward_jump(mb, target);
        }
    }
    Ok(())
}

/// `run_slice::<false>` replaying blocks: an instruction in ROM, with the EI delay at 0, starts
/// its block, which replays (`blocks::replay`) until an instruction sets `bail`, reaches the
/// slice's target or is the block's last; after the last come the checks only it can need (EI
/// countdown, backward jump). Anything else takes one turn of the fetch loop.
///
/// When the slice reaches its target (not a `bail`), the frame loop's work between slices is
/// done here (`slice_boundary`) and, when the next slice's `CPU.tick` would start with nothing
/// to do, that slice continues in this loop, inside the same block if it ended inside one. After
/// a `bail` the slice goes on where returning to the frame loop would change nothing
/// (`Motherboard::continue_after_bail`); otherwise the slice ends there and the next one starts
/// here in the same way (`after_bail`). Returns whether the last slice's `after_slice` was done
/// here.
fn run_slice_blocks(
    mb: &mut Motherboard,
    blocks: &mut BlockCache,
    mut target: u64,
) -> Result<bool, EmuError> {
    #[cfg(test)]
    if mb.test_flat.is_some() {
        return run_slice::<false>(mb, target).map(|_| false); // the flat memory is not the ROM
    }
    loop {
        'slice: while (mb.cpu.cycles as i64) < (target as i64) {
            let pc = mb.cpu.PC;
            if mb.cpu.interrupt_enable_delay == 0 {
                // the fetch path's two ROM cases (offset + 2 inside the bank)
                let (bank, region) = if pc <= 0x3FFD {
                    (mb.cartridge.rombank_selected_low, 0)
                } else if (0x4000..=0x7FFD).contains(&pc) {
                    (mb.cartridge.rombank_selected, 1)
                } else {
                    (0, 2)
                };
                if region < 2 {
                    let rom = &mb.cartridge.rombanks;
                    let key = 2 * bank as usize + region;
                    if let Some(first) = blocks.block(rom, key, (pc & 0x3FFF) as usize) {
                        let mut op = first;
                        // until the block's last instruction ran
                        while let Some(next) = blocks::replay(mb, op) {
                            op = next;
                            if mb.cpu.bail {
                                if let Some(done) = after_bail(mb, &mut target) {
                                    return Ok(done);
                                }
                                if mb.cartridge.bank_mapped_at(pc) != bank {
                                    // the write switched the bank this block was decoded from:
                                    // what follows is another bank's code
                                    continue 'slice;
                                }
                                continue;
                            }
                            match slice_boundary(mb) {
                                Some(next_target) => target = next_target,
                                None => return Ok(true),
                            }
                        }
                        after_instruction(&mut mb.cpu);
                        if mb.cpu.bail {
                            // (no polling-loop check: a write ended any observation)
                            match after_bail(mb, &mut target) {
                                Some(done) => return Ok(done),
                                None => continue,
                            }
                        }
                        if mb.cpu.PC <= mb.block_last_pc {
                            idle::at_backward_jump(mb, target);
                        }
                        continue;
                    }
                }
            }
            fetch_and_execute_with::<false>(mb)?;
            if mb.cpu.bail {
                match after_bail(mb, &mut target) {
                    Some(done) => return Ok(done),
                    None => continue,
                }
            }
            if mb.cpu.PC <= pc {
                idle::at_backward_jump(mb, target);
            }
        }
        match slice_boundary(mb) {
            Some(next_target) => target = next_target,
            None => return Ok(true),
        }
    }
}

/// After an instruction that set `bail`: None when execution goes on in this loop, either in
/// the same slice (`Motherboard::continue_after_bail`) or, after a write that may move an
/// event, in the next one, which the frame loop would start with the same `after_slice` and
/// target (`slice_boundary`, as at a slice's target); `Some(events_done)` when the frame loop
/// must take over (`events_done`: its `after_slice` was done here).
#[inline(always)]
fn after_bail(mb: &mut Motherboard, target: &mut u64) -> Option<bool> {
    if mb.continue_after_bail() {
        return None;
    }
    #[cfg(test)]
    if mb.test_bails == crate::mb::BailTest::AllEndTheSlice {
        return Some(false); // the tests' reference: every bail returns to the frame loop
    }
    match slice_boundary(mb) {
        Some(next_target) => {
            *target = next_target;
            #[cfg(test)]
            {
                mb.test_bails_new_slice += 1;
            }
            None
        }
        None => Some(true),
    }
}

/// The end of a slice that reached its target: the frame loop's `after_slice`, then, if the
/// frame goes on and the next `CPU.tick` would only start its loop (CPU not halted, and
/// `check_interrupts` returning early or finding no enabled interrupt raised), that tick's
/// preamble and its target; None when the frame loop must take over (after_slice done).
#[inline(always)]
fn slice_boundary(mb: &mut Motherboard) -> Option<u64> {
    mb.after_slice();
    let cpu = &mb.cpu;
    let no_interrupt_check = cpu.interrupt_queued
        || cpu.interrupt_enable_delay != 0
        || (cpu.interrupts_flag_register & cpu.interrupts_enabled_register & 0b11111) == 0;
    if mb.lcd.frame_done || cpu.halted || !no_interrupt_check {
        return None;
    }
    let target = mb.cpu.cycles.wrapping_add(mb.slice_length());
    // `CPU.tick`'s preamble for a running CPU with nothing to dispatch
    start_slice(mb, target);
    Some(target)
}

/// The end of `CPU.tick`'s preamble for a running CPU (no interrupt queued, no `bail`), and the
/// slice's state the CPU loop keeps beside PyBoy's: its target and no event-moving write yet.
#[inline(always)]
fn start_slice(mb: &mut Motherboard, target: u64) {
    mb.cpu.interrupt_queued = false;
    mb.cpu.bail = false;
    mb.bail_moves_events = false;
    mb.slice_target = target;
}

/// `CPU.check_interrupts()`: true when an enabled interrupt is raised (dispatched if IME).
pub fn check_interrupts(mb: &mut Motherboard) -> bool {
    let cpu = &mut mb.cpu;
    if cpu.interrupt_queued || cpu.interrupt_enable_delay != 0 {
        return false;
    }
    let raised_and_enabled =
        (cpu.interrupts_flag_register & 0b11111) & (cpu.interrupts_enabled_register & 0b11111);
    if raised_and_enabled != 0 {
        if cpu.halted && !cpu.halted_during_ei {
            cpu.PC = cpu.PC.wrapping_add(1); // Escape HALT on return
        }
        cpu.halted_during_ei = false;

        if cpu.interrupt_master_enable {
            if raised_and_enabled & INTR_VBLANK != 0 {
                handle_interrupt(mb, INTR_VBLANK, 0x0040);
            } else if raised_and_enabled & INTR_LCDC != 0 {
                handle_interrupt(mb, INTR_LCDC, 0x0048);
            } else if raised_and_enabled & INTR_TIMER != 0 {
                handle_interrupt(mb, INTR_TIMER, 0x0050);
            } else if raised_and_enabled & INTR_SERIAL != 0 {
                handle_interrupt(mb, INTR_SERIAL, 0x0058);
            } else if raised_and_enabled & INTR_HIGHTOLOW != 0 {
                handle_interrupt(mb, INTR_HIGHTOLOW, 0x0060);
            }
        }
        mb.cpu.interrupt_queued = true;
        true
    } else {
        cpu.interrupt_queued = false;
        false
    }
}

/// `CPU.handle_interrupt(flag, addr)`: the high push may write IE and cancel the dispatch. As
/// in PyBoy, the arguments are overwritten by a re-evaluation after that push.
pub fn handle_interrupt(mb: &mut Motherboard, _flag: u8, _addr: u16) -> bool {
    let sp = mb.cpu.SP;
    let pc = mb.cpu.PC;
    mb.setitem(sp.wrapping_sub(1), (pc >> 8) as u8); // High

    let cpu = &mut mb.cpu;
    let raised_and_enabled =
        (cpu.interrupts_flag_register & 0b11111) & (cpu.interrupts_enabled_register & 0b11111);
    let (flag, addr) = if raised_and_enabled != 0 {
        if raised_and_enabled & INTR_VBLANK != 0 {
            (INTR_VBLANK, 0x0040)
        } else if raised_and_enabled & INTR_LCDC != 0 {
            (INTR_LCDC, 0x0048)
        } else if raised_and_enabled & INTR_TIMER != 0 {
            (INTR_TIMER, 0x0050)
        } else if raised_and_enabled & INTR_SERIAL != 0 {
            (INTR_SERIAL, 0x0058)
        } else {
            (INTR_HIGHTOLOW, 0x0060)
        }
    } else {
        // An IE write during the upper push cancels dispatch; the CPU resumes at 0.
        cpu.PC = 0;
        cpu.interrupt_master_enable = false;
        return false;
    };

    cpu.interrupts_flag_register ^= flag; // Remove flag
    let (sp, pc) = (cpu.SP, cpu.PC);
    mb.setitem(sp.wrapping_sub(2), (pc & 0xFF) as u8); // Low
    let cpu = &mut mb.cpu;
    cpu.SP = cpu.SP.wrapping_sub(2);
    cpu.PC = addr;
    // "The entire process lasts 5 M-cycles."
    cpu.cycles = cpu.cycles.wrapping_add(20);
    cpu.interrupt_master_enable = false;
    true
}

/// A byte of the cartridge ROM as PyBoy's fetch fast path reads it: `rombanks[bank, offset]`
/// compiled without bounds checks or wrap-around, i.e. flat index `bank * 0x4000 + offset` even
/// when `offset` is negative (PC 0x3FFE/0x3FFF read the previous bank's last bytes through
/// `rombank_selected`, a PyBoy quirk kept on purpose). Outside the ROM: 0xFF, like the
/// cartridge's own out-of-range reads (PyBoy would read undefined memory).
#[inline(always)]
fn rom_fast(mb: &Motherboard, bank: u16, offset: i32) -> u16 {
    let idx = bank as i64 * 0x4000 + offset as i64;
    if idx < 0 {
        return 0xFF;
    }
    mb.cartridge
        .rombanks
        .get(idx as usize)
        .copied()
        .unwrap_or(0xFF) as u16
}

/// The three bytes at `rom_fast(bank, offset..offset + 3)`: one bounds check when all three
/// lie inside the ROM (the common case), else byte by byte with `rom_fast`'s rules.
#[inline(always)]
fn rom_fast3(mb: &Motherboard, bank: u16, offset: i32) -> (u16, u16, u16) {
    let idx = bank as i64 * 0x4000 + offset as i64;
    let rom = &mb.cartridge.rombanks;
    if idx >= 0 {
        if let Some(s) = rom.get(idx as usize..idx as usize + 3) {
            return (s[0] as u16, s[1] as u16, s[2] as u16);
        }
    }
    (
        rom_fast(mb, bank, offset),
        rom_fast(mb, bank, offset + 1),
        rom_fast(mb, bank, offset + 2),
    )
}

/// `CPU.fetch_and_execute()`: fetch the opcode and its immediate (ROM fast path or `getitem`
/// with `memory_access_offset` 0/4/8), execute it, then count the EI delay down.
pub fn fetch_and_execute(mb: &mut Motherboard) -> Result<(), IllegalOpcode> {
    if mb.bootrom_enabled {
        fetch_and_execute_with::<true>(mb)
    } else {
        fetch_and_execute_with::<false>(mb)
    }
}

/// `fetch_and_execute` for a known `bootrom_enabled` (`BOOTROM`).
#[inline(always)]
fn fetch_and_execute_with<const BOOTROM: bool>(mb: &mut Motherboard) -> Result<(), IllegalOpcode> {
    let pc = mb.cpu.PC as i32;
    // Uninitialised locals in PyBoy when unused; 0 here (never read then).
    let (mut pc2, mut pc3): (u16, u16) = (0, 0);
    let pc1 = if !BOOTROM && pc + 2 < 0x4000 {
        let p1;
        (p1, pc2, pc3) = rom_fast3(mb, mb.cartridge.rombank_selected_low, pc);
        p1
    } else if !BOOTROM && pc + 2 < 0x8000 {
        // 16kB switchable ROM bank
        let p1;
        (p1, pc2, pc3) = rom_fast3(mb, mb.cartridge.rombank_selected, pc - 0x4000);
        p1
    } else {
        mb.cpu.memory_access_offset = 0;
        let p1 = mb.getitem(mb.cpu.PC) as u16;
        if p1 == 0xCB || OPCODE_LENGTHS[p1 as usize] >= 2 {
            mb.cpu.memory_access_offset = 4;
            pc2 = mb.getitem(mb.cpu.PC.wrapping_add(1)) as u16;
        }
        if OPCODE_LENGTHS[p1 as usize] == 3 {
            mb.cpu.memory_access_offset = 8;
            pc3 = mb.getitem(mb.cpu.PC.wrapping_add(2)) as u16;
        }
        mb.cpu.memory_access_offset = 0;
        p1
    };

    // Extension code: CB opcodes are 0x100-0x1FF and have no immediates.
    let opcode = if pc1 == 0xCB { pc2 | 0x100 } else { pc1 };
    // The immediate (8-bit `pc2`, or 16-bit little-endian `(pc3 << 8) + pc2` by OPCODE_LENGTHS)
    // is built inside execute_opcode's arms, where the length is a constant.
    if !opcodes::execute_opcode(mb, opcode, pc2, pc3) {
        return Err(IllegalOpcode { opcode: (opcode & 0xFF) as u8, pc: mb.cpu.PC });
    }
    after_instruction(&mut mb.cpu);
    Ok(())
}

/// The end of `fetch_and_execute`: count the EI delay down; IME turns on at 0 (and the slice
/// ends when an enabled interrupt is already raised).
#[inline(always)]
fn after_instruction(cpu: &mut Cpu) {
    if cpu.interrupt_enable_delay != 0 {
        cpu.interrupt_enable_delay -= 1;
        if cpu.interrupt_enable_delay == 0 {
            cpu.interrupt_master_enable = true;
            cpu.bail = (cpu.interrupts_flag_register & 0b11111)
                & (cpu.interrupts_enabled_register & 0b11111)
                != 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mb::FlatMem;

    /// A 32 KiB ROM-only cartridge of zeros with a valid header checksum (PyBoy checks 0x14D).
    pub(crate) fn blank_rom() -> Vec<u8> {
        let mut rom = vec![0u8; 0x8000];
        let mut x: u8 = 0;
        for b in &rom[0x134..0x14D] {
            x = x.wrapping_sub(*b).wrapping_sub(1);
        }
        rom[0x14D] = x;
        rom
    }

    fn flat_mb() -> Motherboard {
        let mut mb = Motherboard::new(&blank_rom(), None, None).unwrap();
        mb.test_flat = Some(Box::new(FlatMem {
            mem: vec![0; 0x10000],
            log: Vec::new(),
        }));
        mb
    }

    fn set_regs(c: &mut Cpu, r: &[i64]) {
        c.A = r[0] as u8;
        c.F = r[1] as u8;
        c.B = r[2] as u8;
        c.C = r[3] as u8;
        c.D = r[4] as u8;
        c.E = r[5] as u8;
        c.HL = r[6] as u16;
        c.SP = r[7] as u16;
        c.PC = r[8] as u16;
        c.interrupt_master_enable = r[9] != 0;
        c.interrupts_enabled_register = r[10] as u8;
        c.interrupts_flag_register = r[11] as u8;
        c.interrupt_enable_delay = r[12] as u8;
        c.interrupt_queued = r[13] != 0;
        c.halted = r[14] != 0;
        c.halted_during_ei = r[15] != 0;
        c.stopped = r[16] != 0;
        c.cycles = r[17] as u64;
        c.memory_access_offset = r[18] as u8;
        c.bail = r[19] != 0;
    }

    fn regs(c: &Cpu) -> Vec<i64> {
        vec![
            c.A as i64,
            c.F as i64,
            c.B as i64,
            c.C as i64,
            c.D as i64,
            c.E as i64,
            c.HL as i64,
            c.SP as i64,
            c.PC as i64,
            c.interrupt_master_enable as i64,
            c.interrupts_enabled_register as i64,
            c.interrupts_flag_register as i64,
            c.interrupt_enable_delay as i64,
            c.interrupt_queued as i64,
            c.halted as i64,
            c.halted_during_ei as i64,
            c.stopped as i64,
            c.cycles as i64,
            c.memory_access_offset as i64,
            c.bail as i64,
        ]
    }

    const NREGS: usize = 20;

    /// Differential test against PyBoy's own opcodes.py/cpu.py run from source with a flat fake
    /// memory (emurust.tools.cpu_vectors): registers after one `fetch_and_execute` (every
    /// opcode incl. CB, random edge-biased states) or one `tick(target)` (interrupts, HALT, EI),
    /// and the exact sequence of memory accesses with `cycles` and `memory_access_offset` at each.
    #[test]
    fn vectors_match_pyboy() {
        let path = std::env::var("EMUREST_CPU_VECTORS")
            .or_else(|_| std::env::var("EMURUST_CPU_VECTORS"))
            .unwrap_or_else(|_| {
                concat!(env!("CARGO_MANIFEST_DIR"), "/target/vectors/cpu.json").into()
            });
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{path}: {e}. Generate the vectors first: `./dev tests` does, or by hand \
                 `python -m emurust.tools.cpu_vectors` (a Python with pyboy==2.8.1)"
            )
        });
        let mut mb = flat_mb();
        let mut n = 0usize;
        let mut opcodes_seen = [false; 512];
        for line in text.lines() {
            let line = line.trim().trim_end_matches(',');
            if line == "[" || line == "]" || line.is_empty() {
                continue;
            }
            let v: Vec<i64> = line
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .map(|s| s.parse().unwrap())
                .collect();
            let (mode, arg, illegal) = (v[0], v[1] as u64, v[2] != 0);
            let regs_in = &v[3..3 + NREGS];
            let mut p = 3 + NREGS;
            let n_init = v[p] as usize;
            p += 1;
            {
                let f = mb.test_flat.as_mut().unwrap();
                f.mem.fill(0);
                f.log.clear();
                for k in 0..n_init {
                    f.mem[v[p + 2 * k] as usize] = v[p + 2 * k + 1] as u8;
                }
            }
            p += 2 * n_init;
            let regs_out = &v[p..p + NREGS];
            p += NREGS;
            let n_log = v[p] as usize;
            p += 1;
            let log: Vec<(u8, u16, u8, u64, u8)> = (0..n_log)
                .map(|k| {
                    let e = &v[p + 5 * k..p + 5 * k + 5];
                    (e[0] as u8, e[1] as u16, e[2] as u8, e[3] as u64, e[4] as u8)
                })
                .collect();

            mb.cpu = Cpu::new();
            set_regs(&mut mb.cpu, regs_in);
            mb.bootrom_enabled = true; // fetch through getitem, like the fake
            let mut executed = None;
            if mode == 0 {
                let pc = mb.cpu.PC;
                let m = &mb.test_flat.as_ref().unwrap().mem;
                let op = m[pc as usize] as usize;
                let op = if op == 0xCB {
                    0x100 + m[pc.wrapping_add(1) as usize] as usize
                } else {
                    op
                };
                opcodes_seen[op] = true;
                executed = Some(op);
            }
            let before = format!("case {n}: mode {mode} arg {arg} regs_in {regs_in:?}");
            let res = if mode == 0 {
                fetch_and_execute(&mut mb).map_err(EmuError::from)
            } else {
                tick(&mut mb, arg)
            };
            match res {
                Err(EmuError::IllegalOpcode { .. }) => {
                    assert!(illegal, "{before}: unexpected illegal opcode")
                }
                Err(e) => panic!("{before}: {e}"),
                Ok(()) => assert!(
                    !illegal,
                    "{before}: PyBoy hit an illegal opcode, emurust did not"
                ),
            }
            assert_eq!(
                regs(&mb.cpu),
                regs_out,
                "{before}: registers after (PyBoy right)"
            );
            assert_eq!(
                mb.test_flat.as_ref().unwrap().log,
                log,
                "{before}: memory accesses (PyBoy right)"
            );
            // `blocks` checks `bail` after a body op (one that does not end a block) only if
            // it may write memory (its body ops run with the EI delay at 0, whose countdown can
            // set `bail` too)
            let delay_in = regs_in[12];
            let in_body = |op: usize| op >= 0x100 || !crate::blocks::ends_block(op as u8);
            let checked = |op: usize| in_body(op) && !opcodes::WRITES_MEMORY[op] && delay_in == 0;
            if let Some(op) = executed.filter(|&op| checked(op)) {
                assert!(
                    log.iter().all(|e| e.0 == 0) && !mb.cpu.bail,
                    "{before}: opcode {op:#05X} wrote memory or set bail, WRITES_MEMORY says not"
                );
            }
            n += 1;
        }
        assert!(
            n > 10_000,
            "only {n} cases in {path}; regenerate the vectors"
        );
        // 0xCB itself is only a prefix (PyBoy's PREFIX_CB is unreachable from fetch_and_execute).
        let missing: Vec<usize> = (0..512)
            .filter(|&o| o != 0xCB && !opcodes_seen[o])
            .collect();
        assert!(
            missing.is_empty(),
            "vectors do not cover opcodes {missing:x?}"
        );
    }

    #[test]
    fn state_is_27_bytes_and_round_trips() {
        // Layout from PyBoy's CPU.save_state: 6 x u8, 3 x u16 LE, 6 x u8 flags/registers, u64.
        let mut c = Cpu::new();
        c.A = 0x01;
        c.F = 0xB0;
        c.HL = 0x1234;
        c.SP = 0xFFFE;
        c.PC = 0x0100;
        c.interrupt_master_enable = true;
        c.interrupts_flag_register = 0xE1;
        c.cycles = 4_507_360;
        let mut w = StateWriter::new();
        c.save_state(&mut w);
        assert_eq!(w.buf.len(), 27);
        assert_eq!(&w.buf[6..12], &[0x34, 0x12, 0xFE, 0xFF, 0x00, 0x01]);
        assert_eq!(w.buf[18], 0xE1, "IF is written as stored");
        let mut d = Cpu::new();
        d.load_state(&mut StateReader::new(&w.buf)).unwrap();
        assert_eq!(c, d);
        assert!(Cpu::new()
            .load_state(&mut StateReader::new(&w.buf[..26]))
            .is_err());
    }

    #[test]
    fn illegal_opcode_is_an_error_not_a_hang() {
        // PyBoy's no_opcode adds no cycles, so its CPU.tick would loop forever on 0xD3.
        let mut mb = flat_mb();
        mb.bootrom_enabled = true;
        mb.cpu.PC = 0xC000;
        mb.test_flat.as_mut().unwrap().mem[0xC000] = 0xD3;
        match tick(&mut mb, 100) {
            Err(EmuError::IllegalOpcode { opcode, pc }) => assert_eq!((opcode, pc), (0xD3, 0xC000)),
            other => panic!("expected IllegalOpcode, got {other:?}"),
        }
    }
}
