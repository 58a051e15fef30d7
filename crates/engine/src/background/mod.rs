//! Background work as decisions. A [`Job`] is a value (flush, split, compaction, value-log
//! GC, index backfill); the [`Policy`] decides which one runs next from the engine's state
//! and learns how each ended; the database only carries jobs out (`db/background.rs`).
//! Nothing here does I/O, so a simulator runs the policy over synthetic workloads
//! (`simulator.rs`, tests) and checks what it promises: never two overlapping compactions,
//! every debt paid, no namespace starved.

mod job;
mod policy;
#[cfg(test)]
mod simulator;

pub use job::{GcUrgency, Job, Outcome};
pub use policy::{Choice, Notice, Policy, View};
