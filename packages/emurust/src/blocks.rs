//! Decoded straight-line runs of cartridge ROM code (not in PyBoy; changes no observable value).
//!
//! PyBoy's instruction loop fetches every instruction anew: it picks the ROM bank for PC, reads
//! the opcode and its two following bytes, maps a 0xCB prefix, dispatches, then counts the EI
//! delay down and checks for a `bail` and the slice's end. For code in the cartridge ROM the
//! fetch is a pure function of (bank, offset): the ROM never changes while it runs (a ROM patch
//! through `memory[bank, addr] = v` clears this cache), and every write that can switch banks
//! (0000-7FFF) sets `bail`, which ends the slice; where the slice may go on instead
//! (`Motherboard::continue_after_bail`), the CPU loop leaves the block when the write switched
//! the bank it was decoded from and looks the next instruction up anew. So the fetch and
//! dispatch of a whole run of instructions can be done once and replayed: a block is the ops of
//! the instructions run from one ROM byte on, up to and including the first one that can move PC
//! anywhere but to the next instruction, change the EI delay, or stop the CPU. A `CALL nn`, and
//! a `JP nn` or `JR e` forward, to a fixed address in the same 16 KiB region of the address
//! space (so the same bank) goes on at its target instead: PC has one successor there too. A
//! conditional jump, call or return goes on along its fall-through path, which is fixed ROM
//! bytes too: when taken, its step leaves the replay as a block's last op does (a side exit).
//! A conditional jump backward (a loop's closing branch, nearly always taken) ends its block.
//! Blocks are indexed by (bank, region, offset), as the same bank may be mapped in either
//! region (MBC5 bank 0) and an absolute target names an address, not a bank offset.
//!
//! A block replays as threaded code: each op holds a step function, specialised for its opcode,
//! that runs the opcode and then, unless the instruction set `bail` (checked only after opcodes
//! that write memory, the only way a block's body can set it) or reached the slice's target
//! (`Motherboard::slice_target`), jumps straight into the next op's step (a tail call). The last
//! op's step only runs its instruction. So the CPU loop (`cpu::tick_with`) makes one call per
//! block, not per instruction, and sees it return at the same points where PyBoy's loop would
//! stop after an instruction: a `bail`, the slice's end, or the block's last instruction (the one
//! that can jump, for the backward-jump check of `idle`, or start the EI delay, for its
//! countdown; blocks are entered only with the delay at 0). Instructions whose three bytes do not
//! all lie in one 16 KiB bank of the ROM (PyBoy's fetch treats PC 3FFE/3FFF and reads past the
//! ROM specially), illegal opcodes and the boot ROM stay on the fetch path.

use crate::mb::Motherboard;
use crate::opcodes::{HANDLERS, OPCODE_LENGTHS, WRITES_MEMORY};

/// Instructions per block at most (a longer run continues in a second block).
pub const MAX_BLOCK_LEN: usize = 64;

const BANK_SIZE: usize = 0x4000;
/// `index` entry: not decoded yet.
const UNDECODED: u32 = 0;
/// `index` entry: no block starts here (the fetch path runs this instruction).
const NO_BLOCK: u32 = u32::MAX;

/// One decoded instruction: its step (`BODY_STEPS` or, for a block's last op, `LAST_STEPS` at
/// its opcode), the opcode as `HANDLERS` is indexed (0x100 + the byte after a 0xCB prefix) and
/// the two bytes after the opcode as the fetch reads them (passed even when the instruction has
/// no immediate, as the fetch path does).
#[derive(Clone, Copy)]
pub struct Op {
    step: Step,
    pub opcode: u16,
    pub pc2: u16,
    pub pc3: u16,
}

/// Runs the op at `op` and, for a body op, the ones after it while the slice goes on; returns
/// the op after the last one it ran, or null when that was the block's last op.
///
/// Safety: `op` points into a decoded block (`BlockCache::block`'s slice, which must stay
/// borrowed while the steps run) at an op whose step is the one being called. A body step reads
/// the op after its own, which exists because the block's last op has a `LAST_STEPS` step.
pub type Step = unsafe fn(&mut Motherboard, *const Op) -> *const Op;

/// The step of a block's body op with opcode `OP` (`WRITES`: `WRITES_MEMORY[OP]`): the opcode,
/// then PyBoy's loop checks after an instruction (`bail`; the slice's target), then a tail call
/// into the next op's step. (Rust does not promise the tail call; LLVM makes one in release
/// builds, and without it the stack only grows by one frame per op of a block, at most
/// `MAX_BLOCK_LEN`.)
#[inline(always)]
unsafe fn body_step<const OP: usize, const WRITES: bool>(
    mb: &mut Motherboard,
    op: *const Op,
) -> *const Op {
    let o = &*op;
    let _legal = HANDLERS[OP](mb, o.pc2, o.pc3);
    debug_assert!(_legal && mb.cpu.interrupt_enable_delay == 0);
    go_on::<OP>(mb, op, WRITES)
}

/// After a body op's instruction (or a conditional one not taken): PyBoy's loop checks after an
/// instruction (`bail`, only possible where `writes`, a constant where this is inlined; the
/// slice's target), then the next op's step as a tail call, or the next op returned where the
/// replay stops.
#[inline(always)]
unsafe fn go_on<const OP: usize>(mb: &mut Motherboard, op: *const Op, writes: bool) -> *const Op {
    let next = op.add(1);
    if writes && mb.cpu.bail {
        return next;
    }
    debug_assert!(
        !mb.cpu.bail,
        "opcode {OP:#05X} set bail without writing memory"
    );
    #[cfg(test)]
    if mb.test_planted_overrun {
        return ((*next).step)(mb, next); // planted bug: blocks run past the slice's end
    }
    if (mb.cpu.cycles as i64) >= (mb.slice_target as i64) {
        return next;
    }
    ((*next).step)(mb, next)
}

/// The step of a conditional jump, call or return (`is_conditional`) inside a block: when it is
/// taken the block is left there, as after a last op (its PC recorded for the backward-jump
/// check; the CPU loop does what follows); when it is not, PC is at the next instruction, which
/// is the next op (the fall-through is fixed ROM bytes), and the replay goes on as after a body
/// op. The test is PC against the fall-through address, so a taken jump to that very address
/// also goes on, which is right: the next instruction is the one at PC either way (a taken
/// `CALL cc` pushes, so its `bail` is checked as after any body op that writes).
#[inline(always)]
unsafe fn conditional_step<const OP: usize>(mb: &mut Motherboard, op: *const Op) -> *const Op {
    let o = &*op;
    let pc = mb.cpu.PC;
    let _legal = HANDLERS[OP](mb, o.pc2, o.pc3);
    debug_assert!(_legal && mb.cpu.interrupt_enable_delay == 0);
    #[cfg(test)]
    let taken =
        mb.cpu.PC != pc.wrapping_add(OPCODE_LENGTHS[OP] as u16) && !mb.test_planted_no_side_exit;
    #[cfg(not(test))]
    let taken = mb.cpu.PC != pc.wrapping_add(OPCODE_LENGTHS[OP] as u16);
    if taken {
        mb.block_last_pc = pc;
        return std::ptr::null();
    }
    go_on::<OP>(mb, op, WRITES_MEMORY[OP])
}

/// The step of a block's last op with opcode `OP`: the opcode alone (the CPU loop does what
/// follows it); records its PC for the backward-jump check. Returns null: nothing follows.
#[inline(always)]
unsafe fn last_step<const OP: usize>(mb: &mut Motherboard, op: *const Op) -> *const Op {
    let o = &*op;
    mb.block_last_pc = mb.cpu.PC;
    let _legal = HANDLERS[OP](mb, o.pc2, o.pc3);
    debug_assert!(_legal);
    std::ptr::null()
}

/// The sixteen body or last-op steps of the opcodes `$row * 16 ..= $row * 16 + 15`.
macro_rules! step_row {
    ($row:literal, body) => {
        step_row!(@body $row; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    ($row:literal, last) => {
        step_row!(@last $row; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@body $row:literal; $($col:literal)*) => {
        [$(body_step::<{ $row * 16 + $col }, { WRITES_MEMORY[$row * 16 + $col] }>),*]
    };
    (@last $row:literal; $($col:literal)*) => {
        [$(last_step::<{ $row * 16 + $col }>),*]
    };
}

/// The steps of all 512 opcodes, as rows of 16 (`table[opcode >> 4][opcode & 15]`).
macro_rules! step_table {
    ($kind:ident) => {
        step_table!(@rows $kind; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
                                 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    (@rows $kind:ident; $($row:literal)*) => {
        [$(step_row!($row, $kind)),*]
    };
}

/// Body steps by opcode.
static BODY_STEPS: [[Step; 16]; 32] = step_table!(body);
/// Last-op steps by opcode.
static LAST_STEPS: [[Step; 16]; 32] = step_table!(last);

/// The conditional steps of the sixteen `is_conditional` opcodes.
macro_rules! conditional_steps {
    ($($op:literal)*) => {
        fn conditional_step_of(opcode: u16) -> Option<Step> {
            match opcode {
                $($op => Some(conditional_step::<$op>),)*
                _ => None,
            }
        }
    };
}
conditional_steps!(0x20 0x28 0x30 0x38 0xC0 0xC2 0xC4 0xC8 0xCA 0xCC 0xD0 0xD2 0xD4 0xD8 0xDA 0xDC);

impl Op {
    /// The op of `opcode` as a block's last op (`last`) or inside it: a conditional jump, call or
    /// return inside a block gets its conditional step, any other op its body step.
    fn new(opcode: u16, pc2: u16, pc3: u16, last: bool) -> Self {
        let table = if last { &LAST_STEPS } else { &BODY_STEPS };
        let step = match conditional_step_of(opcode) {
            Some(step) if !last => step,
            _ => table[(opcode >> 4) as usize][(opcode & 15) as usize],
        };
        Op {
            step,
            opcode,
            pc2,
            pc3,
        }
    }

    /// True when this op has the step of a block's last op.
    #[cfg(test)]
    fn is_last(&self) -> bool {
        let o = self.opcode as usize;
        self.step as usize == LAST_STEPS[o >> 4][o & 15] as usize
    }
}

/// Replays a decoded block from `op` (the op `BlockCache::block` returned, or one `replay`
/// returned): the steps run the ops until one sets `bail`, reaches `mb.slice_target` or is the
/// block's last; returns the op after the last one run, None when that was the block's last.
#[inline(always)]
pub fn replay<'a>(mb: &mut Motherboard, op: &'a Op) -> Option<&'a Op> {
    // SAFETY: `op` is an op of a decoded block, which ends with a last-op step
    // (`BlockCache::decode`), so a body step's `op.add(1)` stays inside the block; the block
    // stays borrowed for 'a (the cache cannot change meanwhile), and a step returns null or the
    // op after one it ran, which is a body op's successor in the same block.
    unsafe { (op.step)(mb, op).as_ref() }
}

/// The blocks of one cartridge ROM, decoded on first use.
#[derive(Clone, Default)]
pub struct BlockCache {
    /// Set: `Motherboard::tick` fetches every instruction (the tests' reference machine).
    pub disabled: bool,
    /// Per 16 KiB ROM bank and region it runs in (`2 * bank + region`, allocated when first
    /// run): for each offset, `UNDECODED`, `NO_BLOCK`
    /// or the block starting there as `first op << 8 | length`.
    index: Vec<Option<Box<[u32; BANK_SIZE]>>>,
    ops: Vec<Op>,
}

/// True for the opcodes that end a block: every unconditional jump, call, return and restart,
/// HALT and STOP (they change how the CPU continues), and EI (it starts the delay counted after
/// each instruction). DI and writes that end the slice need no entry: they set `bail`. The
/// conditional ones (`is_conditional`) end the replay only when taken.
pub fn ends_block(opcode: u8) -> bool {
    matches!(
        opcode,
        0x10 | 0x18
            | 0x76
            | 0xC3
            | 0xC7
            | 0xC9
            | 0xCD
            | 0xCF
            | 0xD7
            | 0xD9
            | 0xDF
            | 0xE7
            | 0xE9
            | 0xEF
            | 0xF7
            | 0xFB
            | 0xFF
    )
}

/// True for the conditional jumps, calls and returns (`JR cc`, `JP cc`, `CALL cc`, `RET cc`):
/// a block goes on past one, on its fall-through path, and is left there when it is taken.
pub fn is_conditional(opcode: u8) -> bool {
    conditional_step_of(opcode as u16).is_some()
}

/// The target of the relative (`JR e`, `JR cc,e`) or absolute (`JP nn`, `JP cc,nn`) jump
/// `bytes` (opcode and the two bytes after it) at `address`; None for any other instruction.
fn jump_target(bytes: &[u8], address: usize) -> Option<usize> {
    match bytes[0] {
        0x18 | 0x20 | 0x28 | 0x30 | 0x38 => {
            Some((address as isize + 2 + bytes[1] as i8 as isize) as usize)
        }
        0xC3 | 0xC2 | 0xCA | 0xD2 | 0xDA => Some(u16::from_le_bytes([bytes[1], bytes[2]]) as usize),
        _ => None,
    }
}

/// Where PC always goes after the block-ending instruction `bytes` (opcode and the two bytes
/// after it) at `address` when that is a fixed address the idle watcher need not see: the target
/// of `CALL nn`, of `JP nn` and `JR e` when it lies after the instruction (a backward jump ends
/// the block, so that `cpu::tick_with` checks for a polling loop there). Only 0000-7FFF (ROM).
pub fn fixed_successor(bytes: &[u8], address: usize) -> Option<u16> {
    let target = match bytes[0] {
        0xCD => {
            let nn = u16::from_le_bytes([bytes[1], bytes[2]]);
            return (nn < 0x8000).then_some(nn);
        }
        0xC3 | 0x18 => jump_target(bytes, address)?,
        _ => return None,
    };
    (target > address && target < 0x8000).then_some(target as u16)
}

/// True for a conditional `JR cc` or `JP cc` at `address` whose target is at or before it: a
/// loop's closing branch, taken on every iteration but the last, so it ends its block (as a
/// last op, the cheapest end) rather than being a side exit that is nearly always taken.
pub fn backward_conditional_jump(bytes: &[u8], address: usize) -> bool {
    is_conditional(bytes[0]) && jump_target(bytes, address).is_some_and(|t| t <= address)
}

/// The number of bytes PC advances over an instruction starting with `opcode` (the 0xCB prefix
/// and its operand: 2), or None for the opcodes PyBoy cannot execute (no_opcode and BRK 0xDB).
pub fn instruction_length(opcode: u8) -> Option<u16> {
    match (opcode, OPCODE_LENGTHS[opcode as usize]) {
        (0xCB, _) => Some(2),
        (0xDB, _) | (_, 0) => None,
        (_, n) => Some(n as u16),
    }
}

impl BlockCache {
    /// Forget every block (after a ROM byte changed).
    pub fn clear(&mut self) {
        self.index.clear();
        self.ops.clear();
    }

    /// The first op of the block at byte `offset` (<= 0x3FFD: the caller's fetch-path condition)
    /// of the ROM bank mapped in region `key & 1` of the address space (0000-3FFF or 4000-7FFF),
    /// bank `key >> 1`; decoded on first use. None where the fetch path must run the instruction.
    #[inline(always)]
    pub fn block(&mut self, rom: &[u8], key: usize, offset: usize) -> Option<&Op> {
        let entry = match self.index.get(key) {
            Some(Some(table)) => table[offset],
            _ => UNDECODED,
        };
        let entry = if entry == UNDECODED {
            self.decode(rom, key, offset)
        } else {
            entry
        };
        if entry == NO_BLOCK {
            return None;
        }
        self.ops.get((entry >> 8) as usize)
    }

    /// The ops of the block at address `pc` in bank `bank`, decoded on first use (tests).
    #[cfg(test)]
    fn block_ops(&mut self, rom: &[u8], bank: usize, pc: u16) -> Option<&[Op]> {
        let (key, offset) = (2 * bank + (pc >> 14) as usize, (pc & 0x3FFF) as usize);
        self.block(rom, key, offset)?;
        let entry = self.index[key].as_ref().unwrap()[offset];
        let (first, len) = ((entry >> 8) as usize, (entry & 0xFF) as usize);
        Some(&self.ops[first..first + len])
    }

    /// Decode the block at (`key`, `offset`) (as `block` takes them), record it in the index and
    /// return its entry.
    #[cold]
    #[inline(never)]
    fn decode(&mut self, rom: &[u8], key: usize, offset: usize) -> u32 {
        let base = (key >> 1) * BANK_SIZE;
        let region = (key & 1) * BANK_SIZE; // the address of the region's first byte
        let first = self.ops.len();
        let mut at = offset;
        while self.ops.len() - first < MAX_BLOCK_LEN {
            // the fetch path's condition for a whole instruction in this bank, and inside the ROM
            let Some(bytes) = (at + 2 < BANK_SIZE)
                .then(|| rom.get(base + at..base + at + 3))
                .flatten()
            else {
                break;
            };
            let Some(length) = instruction_length(bytes[0]) else {
                break;
            };
            let (pc2, pc3) = (bytes[1] as u16, bytes[2] as u16);
            let opcode = if bytes[0] == 0xCB {
                pc2 | 0x100
            } else {
                bytes[0] as u16
            };
            self.ops.push(Op::new(opcode, pc2, pc3, false));
            if backward_conditional_jump(bytes, region + at) {
                break;
            }
            if ends_block(bytes[0]) {
                match fixed_successor(bytes, region + at) {
                    Some(target) if target & 0x4000 == region as u16 => {
                        at = (target & 0x3FFF) as usize; // the block goes on at the target
                        continue;
                    }
                    _ => break,
                }
            }
            at += length as usize;
        }
        let len = self.ops.len() - first;
        if let Some(last) = self.ops[first..].last_mut() {
            // the step that ends the replay (what makes `replay` safe)
            *last = Op::new(last.opcode, last.pc2, last.pc3, true);
        }
        // `first` fits 24 bits: at most one op per ROM byte per block start, and blocks start at
        // ROM bytes; a ROM is at most 8 MiB (2^23 bytes) but overlapping blocks repeat ops, so
        // stop recording blocks (the fetch path still runs the code) before the field overflows.
        let entry = if len == 0 || first >= 1 << 24 {
            self.ops.truncate(first);
            NO_BLOCK
        } else {
            ((first as u32) << 8) | len as u32
        };
        if self.index.len() <= key {
            self.index.resize_with(key + 1, || None);
        }
        self.index[key].get_or_insert_with(|| Box::new([UNDECODED; BANK_SIZE]))[offset] = entry;
        entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rom_with(code: &[u8]) -> Vec<u8> {
        let mut rom = vec![0u8; 2 * BANK_SIZE];
        rom[0x150..0x150 + code.len()].copy_from_slice(code);
        rom
    }

    fn lengths(cache: &mut BlockCache, rom: &[u8], bank: usize, pc: u16) -> Option<usize> {
        cache.block_ops(rom, bank, pc).map(|ops| ops.len())
    }

    #[test]
    fn a_block_runs_to_the_first_jump_inclusive() {
        // ld a,1 ; add a,b ; ld hl,0xC000 ; set 0,(hl) ; jr -8 ; nop
        let rom = rom_with(&[0x3E, 0x01, 0x80, 0x21, 0x00, 0xC0, 0xCB, 0xC6, 0x18, 0xF8, 0x00]);
        let mut cache = BlockCache::default();
        let ops = cache.block_ops(&rom, 0, 0x150).expect("a block").to_vec();
        assert_eq!(ops.len(), 5);
        // the bytes after each opcode, as the fetch path passes them
        let bytes: Vec<(u16, u16)> = ops.iter().map(|o| (o.pc2, o.pc3)).collect();
        assert_eq!(bytes, [(0x01, 0x80), (0x21, 0x00), (0x00, 0xC0), (0xC6, 0x18), (0xF8, 0x00)]);
        // the CB-prefixed instruction dispatches to its 0x100 + operand entry
        assert_eq!(ops[3].opcode, 0x1C6);
        // only the last op ends the replay
        let last: Vec<bool> = ops.iter().map(Op::is_last).collect();
        assert_eq!(last, [false, false, false, false, true]);
        // entering in the middle decodes a second, shorter block
        assert_eq!(lengths(&mut cache, &rom, 0, 0x152), Some(4));
        assert_eq!(lengths(&mut cache, &rom, 0, 0x158), Some(1));
    }

    #[test]
    fn illegal_opcodes_and_bank_ends_stay_on_the_fetch_path() {
        // nop ; nop ; illegal 0xD3
        let rom = rom_with(&[0x00, 0x00, 0xD3]);
        let mut cache = BlockCache::default();
        assert_eq!(lengths(&mut cache, &rom, 0, 0x150), Some(2));
        assert_eq!(lengths(&mut cache, &rom, 0, 0x152), None);
        // BRK (0xDB) likewise
        let rom = rom_with(&[0xDB]);
        assert_eq!(lengths(&mut BlockCache::default(), &rom, 0, 0x150), None);
        // a run of NOPs up to the bank's end stops where an instruction's bytes would cross it
        let rom = vec![0u8; 2 * BANK_SIZE];
        let mut cache = BlockCache::default();
        assert_eq!(lengths(&mut cache, &rom, 0, 0x3FFC), Some(2));
        assert_eq!(lengths(&mut cache, &rom, 0, 0x3FFE), None);
        // a bank beyond the ROM has no blocks
        assert_eq!(lengths(&mut cache, &rom, 5, 0x100), None);
    }

    #[test]
    fn long_runs_are_split_and_every_terminator_ends_a_block() {
        let rom = vec![0u8; BANK_SIZE];
        let mut cache = BlockCache::default();
        assert_eq!(lengths(&mut cache, &rom, 0, 0), Some(MAX_BLOCK_LEN));
        for op in 0..=255u8 {
            if instruction_length(op).is_none() {
                continue;
            }
            let rom = rom_with(&[op, 0, 0, 0, 0, 0]);
            let got = lengths(&mut BlockCache::default(), &rom, 0, 0x150).expect("a block");
            // CALL 0000 and JR +0 go on at their target, a fixed address in the region
            let goes_on = fixed_successor(&[op, 0, 0], 0x150).is_some();
            assert_eq!(goes_on, op == 0xCD || op == 0x18, "opcode {op:02X}");
            // JP cc 0000 jumps backward: a loop's closing branch ends the block
            let backward = backward_conditional_jump(&[op, 0, 0], 0x150);
            assert_eq!(backward, matches!(op, 0xC2 | 0xCA | 0xD2 | 0xDA), "opcode {op:02X}");
            if (ends_block(op) && !goes_on) || backward {
                assert_eq!(got, 1, "opcode {op:02X}");
            } else {
                assert!(got > 1, "opcode {op:02X}: the NOPs after it continue the block");
            }
            // a conditional one has its conditional step there, not a body step
            let first = BlockCache::default().block_ops(&rom, 0, 0x150).unwrap()[0];
            let conditional =
                first.step as usize == conditional_step_of(op as u16).map_or(0, |s| s as usize);
            assert_eq!(conditional, is_conditional(op) && !backward, "opcode {op:02X}");
            assert!(!(is_conditional(op) && ends_block(op)), "opcode {op:02X}");
            // JR cc, RET cc, JP cc, CALL cc: 001cc000, 110cc000, 110cc010, 110cc100
            let cc = matches!(op & 0b1110_0111, 0x20 | 0xC0 | 0xC2 | 0xC4);
            assert_eq!(is_conditional(op), cc, "opcode {op:02X}");
        }
    }

    #[test]
    fn a_forward_conditional_jump_leaves_the_block_only_when_taken() {
        // 0150: dec a ; jr z,+1 (to 0154) ; inc b ; inc c ; jp 0x0150
        let rom = rom_with(&[0x3D, 0x28, 0x01, 0x04, 0x0C, 0xC3, 0x50, 0x01]);
        let mut cache = BlockCache::default();
        let ops = cache.block_ops(&rom, 0, 0x150).unwrap().to_vec();
        let opcodes: Vec<u16> = ops.iter().map(|o| o.opcode).collect();
        assert_eq!(opcodes, [0x3D, 0x28, 0x04, 0x0C, 0xC3]);
        let last: Vec<bool> = ops.iter().map(Op::is_last).collect();
        assert_eq!(last, [false, false, false, false, true]);
        let mut emu = crate::frame::Emulator::new(&crate::idle::tests::roms()[0].1, None, None)
            .expect("a test ROM");
        let mb = &mut emu.mb;
        mb.slice_target = u64::MAX >> 1;
        let first = cache.block(&rom, 0, 0x150).unwrap();
        // A = 2: not taken (A becomes 1), the block goes on to its last op, the JP back
        (mb.cpu.PC, mb.cpu.A, mb.cpu.B, mb.cpu.C, mb.block_last_pc) = (0x150, 2, 0, 0, 0);
        let cycles = mb.cpu.cycles;
        assert!(replay(mb, first).is_none());
        let cpu = &mb.cpu;
        assert_eq!((cpu.PC, cpu.A, cpu.B, cpu.C, mb.block_last_pc), (0x150, 1, 1, 1, 0x155));
        assert_eq!(mb.cpu.cycles - cycles, 4 + 8 + 4 + 4 + 16);
        // A = 1: taken (A becomes 0), the replay stops at the jump, now at 0154
        assert!(replay(mb, first).is_none());
        let cpu = &mb.cpu;
        assert_eq!((cpu.PC, cpu.A, cpu.B, cpu.C, mb.block_last_pc), (0x154, 0, 1, 1, 0x151));
    }

    #[test]
    fn a_backward_conditional_jump_ends_its_block() {
        // 0150: dec a ; jr nz,-3 (to 0150) ; inc b   and   0160: dec a ; jp nz,0x0160 ; inc b
        let mut rom = rom_with(&[0x3D, 0x20, 0xFD, 0x04]);
        rom[0x160..0x165].copy_from_slice(&[0x3D, 0xC2, 0x60, 0x01, 0x04]);
        let mut cache = BlockCache::default();
        assert_eq!(lengths(&mut cache, &rom, 0, 0x150), Some(2));
        assert_eq!(lengths(&mut cache, &rom, 0, 0x160), Some(2));
    }

    #[test]
    fn calls_and_forward_jumps_to_the_same_region_go_on_at_their_target() {
        let mut rom = vec![0u8; 4 * BANK_SIZE];
        // 0150: call 0x0160 (forward)        0160: inc a ; call 0x0140 (backward) ; 0140: ret
        rom[0x150..0x153].copy_from_slice(&[0xCD, 0x60, 0x01]);
        rom[0x160..0x164].copy_from_slice(&[0x3C, 0xCD, 0x40, 0x01]);
        rom[0x140] = 0xC9;
        let mut cache = BlockCache::default();
        let ops = cache.block_ops(&rom, 0, 0x150).unwrap().to_vec();
        let opcodes: Vec<u16> = ops.iter().map(|o| o.opcode).collect();
        assert_eq!(opcodes, [0xCD, 0x3C, 0xCD, 0xC9]);
        // 0170: jr +2 (forward) ; 0174: jp 0x0170 (backward: ends the block, a possible loop)
        rom[0x170..0x172].copy_from_slice(&[0x18, 0x02]);
        rom[0x174..0x177].copy_from_slice(&[0xC3, 0x70, 0x01]);
        let ops = cache.block_ops(&rom, 0, 0x170).unwrap().to_vec();
        assert_eq!(ops.iter().map(|o| o.opcode).collect::<Vec<_>>(), [0x18, 0xC3]);
        // a call into the other region ends the block: its bank is not this one's
        rom[0x180..0x183].copy_from_slice(&[0xCD, 0x00, 0x40]);
        assert_eq!(lengths(&mut cache, &rom, 0, 0x180), Some(1));
        // bank 1 mapped at 4000: a call to 0x4100 goes on in bank 1 (file offset 0x4100)
        rom[0x4050..0x4053].copy_from_slice(&[0xCD, 0x00, 0x41]);
        rom[0x4100] = 0x04; // inc b, then NOPs
        let ops = cache.block_ops(&rom, 1, 0x4050).unwrap().to_vec();
        assert_eq!(ops[1].opcode, 0x04);
        // the same bank (0) in either region is two blocks: an absolute target names an address
        rom[0x50..0x53].copy_from_slice(&[0xCD, 0x00, 0x01]);
        assert_eq!(lengths(&mut cache, &rom, 0, 0x0050), Some(MAX_BLOCK_LEN));
        assert_eq!(lengths(&mut cache, &rom, 0, 0x4050), Some(1));
    }

    /// A machine replaying blocks against one fetching every instruction (a press every 5
    /// frames, rendering every other frame); the first frame whose save state differs.
    fn first_difference(rom: &[u8], frames: u32, planted: Planted) -> Option<u32> {
        let (diff, fast, plain) =
            crate::idle::tests::lockstep(rom, frames, 5, |f| f % 2 == 0, |e, use_blocks| {
                e.mb.blocks.disabled = !use_blocks;
                e.mb.test_planted_overrun = planted == Planted::Overrun && use_blocks;
                e.mb.test_planted_no_side_exit = planted == Planted::NoSideExit && use_blocks;
            });
        if diff.is_none() {
            assert!(plain.mb.blocks.ops.is_empty(), "the reference machine decoded blocks");
            assert!(!fast.mb.blocks.ops.is_empty(), "no block was replayed");
        }
        diff
    }

    /// A bug planted in the replay (test-only switches of the motherboard).
    #[derive(Clone, Copy, PartialEq)]
    enum Planted {
        Nothing,
        /// blocks run past the slice's end
        Overrun,
        /// a taken conditional jump, call or return goes on in its block
        NoSideExit,
    }

    #[test]
    fn replaying_blocks_changes_no_frame_of_any_rom() {
        for (name, rom) in crate::idle::tests::roms() {
            let diff = first_difference(&rom, 150, Planted::Nothing);
            assert_eq!(diff, None, "{name}: the block machine differs at frame {diff:?}");
        }
    }

    /// The ROMs on which `planted` makes the block machine differ from the fetching one.
    fn caught_on(planted: Planted) -> Vec<String> {
        crate::idle::tests::roms()
            .into_iter()
            .filter(|(_, rom)| first_difference(rom, 150, planted).is_some())
            .map(|(name, _)| name)
            .collect()
    }

    #[test]
    fn a_planted_overrun_is_caught() {
        let caught = caught_on(Planted::Overrun);
        eprintln!("running blocks past the slice's end caught on {caught:?}");
        assert!(caught.len() >= 10, "caught on {} ROMs only: {caught:?}", caught.len());
    }

    #[test]
    fn a_taken_conditional_that_stays_in_its_block_is_caught() {
        let caught = caught_on(Planted::NoSideExit);
        eprintln!("taken conditionals staying in their block caught on {caught:?}");
        assert!(caught.len() >= 15, "caught on {} ROMs only: {caught:?}", caught.len());
    }

    #[test]
    fn clear_forgets_decoded_blocks() {
        let mut rom = rom_with(&[0x00, 0x00, 0x18, 0xFC]);
        let mut cache = BlockCache::default();
        assert_eq!(lengths(&mut cache, &rom, 0, 0x150), Some(3));
        rom[0x151] = 0xC9; // ret
        cache.clear();
        assert_eq!(lengths(&mut cache, &rom, 0, 0x150), Some(2));
    }
}
