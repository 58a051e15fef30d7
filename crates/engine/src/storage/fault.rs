//! Crash and error injection.
//!
//! [`FaultStorage`] is an in-memory file system that tracks, like a real one, which state would
//! survive a power cut: file contents become durable with [`WritableFile::sync`], directory
//! entries (creations, renames, deletions) with [`Storage::sync_dir`]. [`FaultStorage::crash`]
//! throws away everything else, so recovery code can be tested against exactly what a real
//! crash could leave behind.
//!
//! Model: files are inodes (`data`, `synced_len`); the directory maps names to inodes. There are
//! two directories, `current` (what operations see) and `durable` (the last synced copy). Since
//! files are append-only, the durable contents of an inode are always the prefix
//! `data[..synced_len]`, so one buffer per inode is enough.
//!
//! `create` always makes a fresh inode, even over an existing name: until the directory is
//! synced, a crash brings back the old file, as with a write-to-temporary-and-rename.
//! [`WritableFile::truncate`] cuts `synced_len` too, i.e. a cut is durable at once; a real file
//! system may bring the cut bytes back after a crash, which only matters for cuts below the
//! synced length (the engine only cuts away unsynced bytes of failed appends).
//!
//! Besides crashes, [`FaultStorage::inject`] arms one [`Fault`]: the `nth` call of one
//! [`IoKind`] (optionally every later one too) fails with EIO or ENOSPC and has no effect, except
//! that a `partial` append keeps half its bytes. An injected failure neither crashes the storage
//! nor counts as a mutating operation for [`FaultStorage::crash_after_ops`].

mod crash;
mod file;
mod injection;
mod state;
#[cfg(test)]
mod tests;

pub use crash::{CrashCounts, CrashModel};
pub use injection::{Fault, FaultError, IoKind};

use super::interface::{RandomAccessFile, Storage, WritableFile};
use super::mem::not_found;
use file::{FaultReadable, FaultWritable};
use parking_lot::Mutex;
use state::{Inode, State};
use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// In-memory storage that remembers what was made durable and can lose the rest.
#[derive(Clone, Default)]
pub struct FaultStorage {
    state: Arc<Mutex<State>>,
}

impl FaultStorage {
    /// An empty file system, no fault armed.
    pub fn new() -> Self {
        Self::default()
    }

    /// Power cut now: every unsynced byte and directory change is lost, every open handle dies,
    /// and the storage refuses all operations until [`FaultStorage::restart`]. Disarms
    /// [`FaultStorage::crash_after_ops`].
    pub fn crash(&self) {
        self.state.lock().crash();
    }

    /// Sets what later crashes keep of unsynced bytes ([`CrashModel::Synced`] by default):
    /// [`CrashModel::Disk`] draws, per file, a torn length and a subset of unsynced pages.
    pub fn set_crash_model(&self, model: CrashModel) {
        let mut state = self.state.lock();
        state.crash_model = model;
        state.crash_draws = match model {
            CrashModel::Synced => None,
            CrashModel::Disk { seed } => Some(crash::CrashDraws::new(seed)),
        };
    }

    /// The crash model in force.
    pub fn crash_model(&self) -> CrashModel {
        self.state.lock().crash_model
    }

    /// What the crashes of [`CrashModel::Disk`] did so far (zero under `Synced`).
    pub fn crash_counts(&self) -> CrashCounts {
        let state = self.state.lock();
        state
            .crash_draws
            .as_ref()
            .map(|d| d.counts)
            .unwrap_or_default()
    }

    /// Zeroes the 4 KiB page of `name` that holds `offset` (durable or not), as a latent
    /// sector error returns it; with [`FaultStorage::flip_byte`], the bit rot of a disk.
    pub fn zero_page(&self, name: &str, offset: u64) -> io::Result<()> {
        self.damage(name, offset, |data, at| {
            let lo = at / crash::PAGE * crash::PAGE;
            let hi = (lo + crash::PAGE).min(data.len());
            data[lo..hi].fill(0);
        })
    }

    /// Changes the bytes of `name` (durable or not) around `offset`, which must be inside it.
    fn damage(&self, name: &str, offset: u64, f: impl FnOnce(&mut [u8], usize)) -> io::Result<()> {
        let state = self.state.lock();
        let inode = state.current.get(name).ok_or_else(|| not_found(name))?;
        let mut c = inode.contents.lock();
        let len = c.data.len();
        let at = usize::try_from(offset)
            .ok()
            .filter(|o| *o < len)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("offset {offset} past end {len} of {name}"),
                )
            })?;
        f(&mut c.data, at);
        Ok(())
    }

    /// Makes the storage usable again after a crash (handles opened before stay dead).
    pub fn restart(&self) {
        self.state.lock().crashed = false;
    }

    /// Crash automatically after `n` more mutating operations (append, file sync, truncate,
    /// create, rename, delete, sync_dir): the next one after those fails and crashes instead
    /// of happening. `None` disarms. Calls failed by [`FaultStorage::inject`] do not count.
    pub fn crash_after_ops(&self, n: Option<u64>) {
        self.state.lock().countdown = n;
    }

    /// Mutating operations performed so far (one that crashed instead is not counted).
    pub fn ops_count(&self) -> u64 {
        self.state.lock().ops
    }

    /// Whether a crash happened and `restart` was not called since.
    pub fn is_crashed(&self) -> bool {
        self.state.lock().crashed
    }

    /// Fail appends with `StorageFull` once the files hold more than `limit` bytes.
    pub fn set_space_limit(&self, limit: Option<u64>) {
        self.state.lock().space_limit = limit;
    }

    /// Corrupts one byte of `name` (durable or not), to test checksums.
    pub fn flip_byte(&self, name: &str, offset: u64) -> io::Result<()> {
        self.damage(name, offset, |data, at| data[at] ^= 0xFF)
    }

    /// Current length of `name`, if it exists.
    pub fn file_len(&self, name: &str) -> Option<u64> {
        let state = self.state.lock();
        let inode = state.current.get(name)?;
        let len = inode.contents.lock().data.len() as u64;
        Some(len)
    }

    /// Bytes held by all files, counting deleted files that are still open.
    pub fn total_bytes(&self) -> u64 {
        self.state.lock().total_bytes()
    }

    /// Arms a fault (replacing any armed one); `None` disarms. Resets the per-kind counters
    /// used for `nth`; arming also resets [`FaultStorage::faults_fired`], disarming keeps it.
    /// Crashes and restarts leave the armed fault alone.
    ///
    /// Calls are counted once they reach the storage: calls refused because the storage is
    /// crashed or the handle is stale are not counted and never fail by injection.
    pub fn inject(&self, fault: Option<Fault>) {
        let mut state = self.state.lock();
        let inj = &mut state.injection;
        if fault.is_some() {
            inj.fired = 0;
        }
        inj.fault = fault;
        inj.since_armed = [0; IoKind::COUNT];
    }

    /// Calls of each kind made so far (since creation, not reset by `inject`; failed calls
    /// included), for sizing a sweep. Every kind has an entry.
    pub fn io_counts(&self) -> BTreeMap<IoKind, u64> {
        let state = self.state.lock();
        IoKind::ALL
            .into_iter()
            .map(|k| (k, state.injection.total[k as usize]))
            .collect()
    }

    /// How many calls the armed (or last disarmed) fault has failed so far.
    pub fn faults_fired(&self) -> u64 {
        self.state.lock().injection.fired
    }
}
impl Storage for FaultStorage {
    fn create(&self, name: &str) -> io::Result<Box<dyn WritableFile>> {
        let mut state = self.state.lock();
        state.check_live()?;
        state.inject(IoKind::Create)?;
        state.tick()?;
        let inode = Arc::new(Inode {
            id: state.next_inode,
            contents: Mutex::default(),
        });
        state.next_inode += 1;
        state.current.insert(name.to_string(), inode.clone());
        let generation = state.register(&inode);
        Ok(Box::new(FaultWritable {
            state: self.state.clone(),
            inode,
            generation,
            len: AtomicU64::new(0),
        }))
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn RandomAccessFile>> {
        let mut state = self.state.lock();
        state.check_live()?;
        state.inject(IoKind::Open)?;
        let inode = state
            .current
            .get(name)
            .cloned()
            .ok_or_else(|| not_found(name))?;
        let generation = state.register(&inode);
        Ok(Arc::new(FaultReadable {
            state: self.state.clone(),
            inode,
            generation,
        }))
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_live()?;
        state.inject(IoKind::Delete)?;
        state.tick()?;
        state
            .current
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| not_found(name))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_live()?;
        state.inject(IoKind::Rename)?;
        state.tick()?;
        let inode = state.current.remove(from).ok_or_else(|| not_found(from))?;
        state.current.insert(to.to_string(), inode);
        Ok(())
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let state = self.state.lock();
        state.check_live()?;
        Ok(state.current.keys().cloned().collect())
    }

    fn exists(&self, name: &str) -> io::Result<bool> {
        let state = self.state.lock();
        state.check_live()?;
        Ok(state.current.contains_key(name))
    }

    fn sync_dir(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_live()?;
        state.inject(IoKind::SyncDir)?;
        state.tick()?;
        state.durable = state.current.clone();
        Ok(())
    }
}
