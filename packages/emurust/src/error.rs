//! The one error type of the crate. Every failure a user can cause (bad ROM, bad save state, bad
//! address, illegal opcode) is one of these, mapped by the bindings onto PyBoy's exception classes;
//! nothing a user passes in may panic.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmuError {
    /// Truncated/corrupt ROM, bad header checksum, unsupported cartridge type (PyBoyException).
    Rom(String),
    /// Invalid, foreign or truncated save state (PyBoyException).
    State(String),
    /// Address or bank out of range (PyBoyOutOfBoundsException).
    OutOfBounds(String),
    /// Bad argument from the caller (PyBoyInvalidInputException).
    InvalidInput(String),
    /// The CPU fetched one of the 11 opcodes the SM83 does not have. PyBoy spins forever there
    /// (no cycles, no PC change); emurust stops with this error instead.
    IllegalOpcode { opcode: u8, pc: u16 },
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmuError::Rom(m) => write!(f, "invalid ROM: {m}"),
            EmuError::State(m) => write!(f, "invalid save state: {m}"),
            EmuError::OutOfBounds(m) => write!(f, "out of bounds: {m}"),
            EmuError::InvalidInput(m) => write!(f, "invalid input: {m}"),
            EmuError::IllegalOpcode { opcode, pc } => write!(
                f,
                "illegal opcode 0x{opcode:02X} at PC=0x{pc:04X} (the Game Boy CPU has no such \
                 instruction; PyBoy would hang here)"
            ),
        }
    }
}

impl std::error::Error for EmuError {}

/// What `opcodes::execute_opcode` / `cpu::fetch_and_execute` return for an illegal opcode: small
/// and `Copy`, so the per-instruction `Result` travels in registers; `cpu::tick` turns it into
/// `EmuError::IllegalOpcode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IllegalOpcode {
    pub opcode: u8,
    pub pc: u16,
}

impl From<IllegalOpcode> for EmuError {
    #[cold]
    fn from(e: IllegalOpcode) -> Self {
        EmuError::IllegalOpcode { opcode: e.opcode, pc: e.pc }
    }
}
