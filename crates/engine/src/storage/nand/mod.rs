//! NAND-flash timing model.
//!
//! [`NandStorage`] wraps any other storage and makes every request take, in real time, what it
//! would take on a flash device of `channels x ways` dies. Requests from different threads
//! overlap when they land on different dies and channels and queue behind each other when they
//! do not, so the engine's parallelism (or lack of it) shows up in wall-clock measurements.
//!
//! The model:
//! - A file's page `i` lives on die `(xxh3(name) + i) % dies` (striping, with a per-file start
//!   so that small files do not all pile up on die 0); die `d` hangs off channel
//!   `d % channels`.
//! - Every die and channel has a `busy_until` instant. A page read occupies its die for `t_read`
//!   and then its channel for the transfer of the bytes the request needs from that page. A page
//!   program occupies the channel for a full page transfer and then the die for `t_prog`.
//! - Readers wait until their last page has been transferred. Writers do not wait for programs
//!   (the device has a write-back buffer); only `sync` waits for the programs of its file.
//!
//! The die of a page is derived from the file's *current* name, so a file written under one name
//! and read under another (after a rename) is modeled on other dies. That is harmless: striping
//! is arbitrary, and all that matters is that pages of one file spread over the dies.

mod clock;
mod config;
mod device;
mod file;
#[cfg(test)]
mod tests;
mod timed_storage;

pub(crate) use clock::deferred;
pub(crate) use clock::Completion;
pub use config::NandConfig;
pub use timed_storage::NandStorage;
