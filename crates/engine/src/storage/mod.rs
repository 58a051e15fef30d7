//! The engine's only door to bytes. Every file the engine touches goes through a [`Storage`]:
//! real files ([`PosixStorage`]), memory ([`MemStorage`]), a NAND-flash timing model
//! ([`NandStorage`]) or an in-memory file system that injects crashes and I/O errors
//! ([`FaultStorage`]).
//!
//! Names are flat (no directories). Every read states its [`IoPurpose`] so that a timing model
//! can count page reads by what they were for.

mod fault;
mod interface;
mod mem;
mod nand;
mod nand_stats;
mod posix;
mod purpose;
#[cfg(test)]
pub(crate) mod wrap_open;

pub use fault::{CrashCounts, CrashModel, Fault, FaultError, FaultStorage, IoKind};
pub use interface::{read_all, RandomAccessFile, Storage, StorageRef, WritableFile, CUT_SUFFIX};
pub use mem::MemStorage;
pub(crate) use nand::{deferred, Completion};
pub use nand::{NandConfig, NandStorage};
pub use nand_stats::NandStats;
pub use posix::PosixStorage;
pub use purpose::IoPurpose;
