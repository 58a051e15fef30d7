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

use super::mem::{not_found, read_slice};
use super::{check_truncate, IoPurpose, RandomAccessFile, Storage, WritableFile};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Kinds of I/O call that can be made to fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IoKind {
    /// [`Storage::create`].
    Create,
    /// [`WritableFile::append`].
    Append,
    /// [`WritableFile::sync`].
    Sync,
    /// [`Storage::sync_dir`].
    SyncDir,
    /// [`Storage::rename`].
    Rename,
    /// [`Storage::delete`].
    Delete,
    /// [`WritableFile::truncate`].
    Truncate,
    /// [`Storage::open`].
    Open,
    /// [`RandomAccessFile::read_at`] (`len` of a readable file never fails and is not counted).
    Read,
}

impl IoKind {
    pub const ALL: [IoKind; 9] = [
        IoKind::Create,
        IoKind::Append,
        IoKind::Sync,
        IoKind::SyncDir,
        IoKind::Rename,
        IoKind::Delete,
        IoKind::Truncate,
        IoKind::Open,
        IoKind::Read,
    ];
    const COUNT: usize = IoKind::ALL.len();

    pub fn name(self) -> &'static str {
        match self {
            IoKind::Create => "create",
            IoKind::Append => "append",
            IoKind::Sync => "sync",
            IoKind::SyncDir => "sync_dir",
            IoKind::Rename => "rename",
            IoKind::Delete => "delete",
            IoKind::Truncate => "truncate",
            IoKind::Open => "open",
            IoKind::Read => "read",
        }
    }
}

/// The error an injected fault returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// EIO, the generic failure of a device.
    Eio,
    /// ENOSPC; its kind is `StorageFull`, so the engine reports `Error::NoSpace`.
    NoSpace,
}

impl FaultError {
    /// A fresh `io::Error` carrying the OS error number, as a real failing call would.
    pub fn to_io_error(self) -> io::Error {
        match self {
            FaultError::Eio => io::Error::from_raw_os_error(libc::EIO),
            FaultError::NoSpace => io::Error::from_raw_os_error(libc::ENOSPC),
        }
    }
}

/// A failure to inject with [`FaultStorage::inject`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub kind: IoKind,
    /// Fail the call of this kind numbered `nth` (0-based), counted from when the fault is armed.
    pub nth: u64,
    pub error: FaultError,
    /// Fail every later call of this kind too (until disarmed), not just the nth.
    pub sticky: bool,
    /// For appends: write the first half of the data (len / 2 bytes) before failing, as a
    /// real write can.
    pub partial: bool,
}

/// The armed fault and the call counters.
#[derive(Default)]
struct Injection {
    fault: Option<Fault>,
    /// Calls per kind since the fault was armed, for `nth`.
    since_armed: [u64; IoKind::COUNT],
    /// Calls per kind since the storage was created.
    total: [u64; IoKind::COUNT],
    /// Calls failed since the fault was armed.
    fired: u64,
}

impl Injection {
    /// Counts a call of `kind` and returns the fault to fail it with, if it must fail.
    fn on_call(&mut self, kind: IoKind) -> Option<Fault> {
        self.total[kind as usize] += 1;
        let fault = self.fault.filter(|f| f.kind == kind)?;
        let n = self.since_armed[kind as usize];
        self.since_armed[kind as usize] += 1;
        if n == fault.nth || (fault.sticky && n > fault.nth) {
            self.fired += 1;
            Some(fault)
        } else {
            None
        }
    }
}

#[derive(Default)]
struct Contents {
    data: Vec<u8>,
    /// Bytes made durable by the last sync; a crash truncates `data` to this.
    synced_len: usize,
}

struct Inode {
    id: u64,
    /// Only ever locked while the storage's state lock is held; the mutex just gives shared
    /// inodes interior mutability.
    contents: Mutex<Contents>,
}

type InodeRef = Arc<Inode>;

#[derive(Default)]
struct State {
    current: HashMap<String, InodeRef>,
    durable: HashMap<String, InodeRef>,
    /// Inodes with open handles of the current generation, with their handle counts. They count
    /// as used space even when no name refers to them any more (unix semantics).
    open: HashMap<u64, (InodeRef, usize)>,
    next_inode: u64,
    /// Bumped by every crash; handles from older generations are dead.
    generation: u64,
    crashed: bool,
    /// Mutating operations allowed before an injected crash.
    countdown: Option<u64>,
    /// Mutating operations performed so far.
    ops: u64,
    space_limit: Option<u64>,
    injection: Injection,
}

fn crash_error() -> io::Error {
    io::Error::other("simulated crash")
}

fn stale_error() -> io::Error {
    io::Error::other("simulated crash: stale handle")
}

impl State {
    fn check_live(&self) -> io::Result<()> {
        if self.crashed {
            return Err(crash_error());
        }
        Ok(())
    }

    fn check_handle(&self, generation: u64) -> io::Result<()> {
        // A crash always bumps the generation, so this also covers the crashed state.
        if generation != self.generation {
            return Err(stale_error());
        }
        Ok(())
    }

    /// Counts a call of `kind` and fails it if the armed fault says so. Callers check this
    /// before `tick`, so an injected failure does not use up the crash countdown.
    fn inject(&mut self, kind: IoKind) -> io::Result<()> {
        match self.injection.on_call(kind) {
            Some(fault) => Err(fault.error.to_io_error()),
            None => Ok(()),
        }
    }

    /// Accounts one mutating operation, or performs the armed crash in its place.
    fn tick(&mut self) -> io::Result<()> {
        match self.countdown {
            Some(0) => {
                self.crash();
                return Err(crash_error());
            }
            Some(n) => self.countdown = Some(n - 1),
            None => {}
        }
        self.ops += 1;
        Ok(())
    }

    fn crash(&mut self) {
        self.current = self.durable.clone();
        for inode in self.durable.values() {
            let mut c = inode.contents.lock();
            let synced = c.synced_len;
            c.data.truncate(synced);
        }
        // Inodes reachable only from now-dead handles are lost with them.
        self.open.clear();
        self.crashed = true;
        self.generation += 1;
        // A crash fires once; re-arming is the test's decision.
        self.countdown = None;
    }

    /// Records a new handle on `inode` and returns the generation it belongs to.
    fn register(&mut self, inode: &InodeRef) -> u64 {
        self.open
            .entry(inode.id)
            .or_insert_with(|| (inode.clone(), 0))
            .1 += 1;
        self.generation
    }

    fn release(&mut self, inode: &Inode, generation: u64) {
        // Handles of older generations were forgotten wholesale by the crash.
        if generation != self.generation {
            return;
        }
        if let Some(entry) = self.open.get_mut(&inode.id) {
            entry.1 -= 1;
            if entry.1 == 0 {
                self.open.remove(&inode.id);
            }
        }
    }

    /// Bytes held by inodes that are named or open.
    fn total_bytes(&self) -> u64 {
        let mut live: HashMap<u64, &InodeRef> = HashMap::new();
        for inode in self
            .current
            .values()
            .chain(self.open.values().map(|e| &e.0))
        {
            live.insert(inode.id, inode);
        }
        live.values()
            .map(|i| i.contents.lock().data.len() as u64)
            .sum()
    }
}

/// In-memory storage that remembers what was made durable and can lose the rest.
#[derive(Clone, Default)]
pub struct FaultStorage {
    state: Arc<Mutex<State>>,
}

impl FaultStorage {
    pub fn new() -> Self {
        Self::default()
    }

    /// Power cut now: every unsynced byte and directory change is lost, every open handle dies,
    /// and the storage refuses all operations until [`FaultStorage::restart`]. Disarms
    /// [`FaultStorage::crash_after_ops`].
    pub fn crash(&self) {
        self.state.lock().crash();
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
        let state = self.state.lock();
        let inode = state.current.get(name).ok_or_else(|| not_found(name))?;
        let mut c = inode.contents.lock();
        let len = c.data.len();
        let byte = usize::try_from(offset)
            .ok()
            .and_then(|o| c.data.get_mut(o))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("offset {offset} past end {len} of {name}"),
                )
            })?;
        *byte ^= 0xFF;
        Ok(())
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

struct FaultWritable {
    state: Arc<Mutex<State>>,
    inode: InodeRef,
    generation: u64,
    len: AtomicU64,
}

impl WritableFile for FaultWritable {
    fn append(&self, data: &[u8], _purpose: IoPurpose) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_handle(self.generation)?;
        if let Some(fault) = state.injection.on_call(IoKind::Append) {
            if fault.partial {
                // The prefix still obeys the space limit: a real device stops where it fills.
                let room = match state.space_limit {
                    Some(limit) => limit.saturating_sub(state.total_bytes()),
                    None => u64::MAX,
                };
                let half = data.len() / 2;
                let kept = usize::try_from(room).map_or(half, |room| half.min(room));
                self.write(&data[..kept]);
            }
            return Err(fault.error.to_io_error());
        }
        state.tick()?;
        if let Some(limit) = state.space_limit {
            if state.total_bytes().saturating_add(data.len() as u64) > limit {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    format!("space limit of {limit} bytes reached"),
                ));
            }
        }
        self.write(data);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_handle(self.generation)?;
        state.inject(IoKind::Sync)?;
        state.tick()?;
        let mut c = self.inode.contents.lock();
        c.synced_len = c.data.len();
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len.load(Ordering::Relaxed)
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_handle(self.generation)?;
        state.inject(IoKind::Truncate)?;
        // An invalid length is refused before it counts as an operation. The contents lock is
        // released before `tick`, whose crash locks every durable inode.
        let current = self.inode.contents.lock().data.len() as u64;
        check_truncate(len, current)?;
        state.tick()?;
        // Fits in usize: it is at most the current length.
        let len_usize = len as usize;
        let mut c = self.inode.contents.lock();
        c.data.truncate(len_usize);
        c.synced_len = c.synced_len.min(len_usize);
        self.len.store(len, Ordering::Relaxed);
        Ok(())
    }
}

impl FaultWritable {
    /// Appends to the inode; the caller holds the state lock.
    fn write(&self, data: &[u8]) {
        self.inode.contents.lock().data.extend_from_slice(data);
        self.len.fetch_add(data.len() as u64, Ordering::Relaxed);
    }
}

impl Drop for FaultWritable {
    fn drop(&mut self) {
        self.state.lock().release(&self.inode, self.generation);
    }
}

struct FaultReadable {
    state: Arc<Mutex<State>>,
    inode: InodeRef,
    generation: u64,
}

impl RandomAccessFile for FaultReadable {
    fn read_at(&self, offset: u64, len: usize, _purpose: IoPurpose) -> io::Result<Vec<u8>> {
        let mut state = self.state.lock();
        state.check_handle(self.generation)?;
        state.inject(IoKind::Read)?;
        let c = self.inode.contents.lock();
        read_slice(&c.data, offset, len)
    }

    fn len(&self) -> io::Result<u64> {
        let state = self.state.lock();
        state.check_handle(self.generation)?;
        let len = self.inode.contents.lock().data.len() as u64;
        Ok(len)
    }
}

impl Drop for FaultReadable {
    fn drop(&mut self) {
        self.state.lock().release(&self.inode, self.generation);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::read_all;

    const P: IoPurpose = IoPurpose::Other;

    fn read(fs: &FaultStorage, name: &str) -> Vec<u8> {
        read_all(fs, name, P).unwrap()
    }

    fn crash_and_restart(fs: &FaultStorage) {
        fs.crash();
        assert!(fs.is_crashed());
        fs.restart();
        assert!(!fs.is_crashed());
    }

    #[test]
    fn unsynced_appends_vanish_synced_ones_stay() {
        let fs = FaultStorage::new();
        let f = fs.create("a").unwrap();
        fs.sync_dir().unwrap();
        f.append(b"hello ", P).unwrap();
        f.sync().unwrap();
        f.append(b"world", P).unwrap();
        assert_eq!(read(&fs, "a"), b"hello world");
        assert_eq!(fs.file_len("a"), Some(11));
        crash_and_restart(&fs);
        assert_eq!(read(&fs, "a"), b"hello ");
        assert_eq!(fs.file_len("a"), Some(6));
    }

    #[test]
    fn created_file_without_sync_dir_is_gone() {
        let fs = FaultStorage::new();
        let f = fs.create("a").unwrap();
        f.append(b"data", P).unwrap();
        f.sync().unwrap();
        crash_and_restart(&fs);
        assert!(!fs.exists("a").unwrap());
        assert_eq!(fs.file_len("a"), None);
        assert!(fs.list().unwrap().is_empty());
    }

    #[test]
    fn rename_and_delete_are_durable_only_after_sync_dir() {
        let fs = FaultStorage::new();
        let f = fs.create("tmp").unwrap();
        f.append(b"v1", P).unwrap();
        f.sync().unwrap();
        fs.sync_dir().unwrap();
        fs.rename("tmp", "final").unwrap();
        crash_and_restart(&fs);
        assert!(fs.exists("tmp").unwrap());
        assert!(!fs.exists("final").unwrap());
        assert_eq!(read(&fs, "tmp"), b"v1");

        fs.rename("tmp", "final").unwrap();
        fs.sync_dir().unwrap();
        fs.delete("final").unwrap();
        crash_and_restart(&fs);
        assert_eq!(fs.list().unwrap(), vec!["final".to_string()]);
        assert_eq!(read(&fs, "final"), b"v1");

        fs.delete("final").unwrap();
        fs.sync_dir().unwrap();
        crash_and_restart(&fs);
        assert!(!fs.exists("final").unwrap());
    }

    #[test]
    fn create_over_existing_name_keeps_old_file_until_sync_dir() {
        let fs = FaultStorage::new();
        let f = fs.create("m").unwrap();
        f.append(b"old", P).unwrap();
        f.sync().unwrap();
        fs.sync_dir().unwrap();
        let g = fs.create("m").unwrap();
        g.append(b"new", P).unwrap();
        g.sync().unwrap();
        assert_eq!(read(&fs, "m"), b"new");
        crash_and_restart(&fs);
        assert_eq!(read(&fs, "m"), b"old");
    }

    #[test]
    fn stale_handles_fail_after_crash_and_storage_fails_while_crashed() {
        let fs = FaultStorage::new();
        let w = fs.create("a").unwrap();
        w.append(b"abc", P).unwrap();
        w.sync().unwrap();
        fs.sync_dir().unwrap();
        let r = fs.open("a").unwrap();
        fs.crash();

        for e in [
            fs.create("b").err(),
            fs.open("a").err(),
            fs.delete("a").err(),
            fs.rename("a", "b").err(),
            fs.list().err(),
            fs.exists("a").err(),
            fs.sync_dir().err(),
        ] {
            let e = e.expect("operation should fail while crashed");
            assert_eq!(e.to_string(), "simulated crash");
        }

        fs.restart();
        let stale = |e: io::Error| {
            assert_eq!(e.kind(), io::ErrorKind::Other);
            assert_eq!(e.to_string(), "simulated crash: stale handle");
        };
        stale(w.append(b"x", P).unwrap_err());
        stale(w.sync().unwrap_err());
        stale(r.read_at(0, 1, P).unwrap_err());
        stale(r.len().unwrap_err());
        // New handles work.
        let r2 = fs.open("a").unwrap();
        assert_eq!(r2.read_at(0, 3, P).unwrap(), b"abc");
    }

    #[test]
    fn readers_see_unsynced_data_and_deleted_open_files() {
        let fs = FaultStorage::new();
        let w = fs.create("a").unwrap();
        w.append(b"abcdef", P).unwrap();
        let r = fs.open("a").unwrap();
        assert_eq!(r.len().unwrap(), 6);
        assert_eq!(r.read_at(2, 3, P).unwrap(), b"cde");
        assert_eq!(
            r.read_at(4, 3, P).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        fs.delete("a").unwrap();
        assert!(fs.open("a").is_err());
        w.append(b"gh", P).unwrap();
        assert_eq!(r.read_at(0, 8, P).unwrap(), b"abcdefgh");
        // Still occupies space while open, freed once the last handle goes.
        assert_eq!(fs.total_bytes(), 8);
        drop(w);
        assert_eq!(fs.total_bytes(), 8);
        drop(r);
        assert_eq!(fs.total_bytes(), 0);
    }

    /// A fixed sequence of mutating operations (plus reads), for crash-point enumeration.
    fn workload(fs: &FaultStorage) -> io::Result<()> {
        let f = fs.create("log")?; // op 1
        f.append(b"one", P)?; // op 2
        f.sync()?; // op 3
        fs.sync_dir()?; // op 4
        f.append(b"two", P)?; // op 5
        fs.rename("log", "log2")?; // op 6
        f.sync()?; // op 7
        Ok(())
    }

    #[test]
    fn crash_after_ops_fires_at_the_right_op() {
        let fs = FaultStorage::new();
        workload(&fs).unwrap();
        let total = fs.ops_count();
        assert_eq!(total, 7);

        for k in 0..total {
            let fs = FaultStorage::new();
            fs.crash_after_ops(Some(k));
            let err = workload(&fs).unwrap_err();
            assert_eq!(err.to_string(), "simulated crash");
            assert!(fs.is_crashed());
            assert_eq!(fs.ops_count(), k, "crash point {k}");
            fs.restart();
            // What survived is exactly what the first k operations made durable.
            let durable = match k {
                0..=3 => None,
                _ => Some(b"one".to_vec()),
            };
            let got = fs.exists("log").unwrap().then(|| read(&fs, "log"));
            assert_eq!(got, durable, "crash point {k}");
            assert!(!fs.exists("log2").unwrap());
        }

        // With k == total the workload completes; disarming works too.
        let fs = FaultStorage::new();
        fs.crash_after_ops(Some(total));
        workload(&fs).unwrap();
        fs.crash_after_ops(None);
        fs.sync_dir().unwrap();
        assert!(!fs.is_crashed());
    }

    #[test]
    fn crash_on_append_appends_nothing() {
        let fs = FaultStorage::new();
        let f = fs.create("a").unwrap();
        fs.sync_dir().unwrap();
        f.append(b"ab", P).unwrap();
        f.sync().unwrap();
        fs.crash_after_ops(Some(0));
        assert!(f.append(b"cd", P).is_err());
        fs.restart();
        assert_eq!(read(&fs, "a"), b"ab");
    }

    #[test]
    fn space_limit_gives_storage_full_and_appends_nothing() {
        let fs = FaultStorage::new();
        fs.set_space_limit(Some(10));
        let a = fs.create("a").unwrap();
        let b = fs.create("b").unwrap();
        a.append(&[1; 6], P).unwrap();
        b.append(&[2; 4], P).unwrap();
        let e = b.append(&[3], P).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(fs.file_len("b"), Some(4));
        assert_eq!(b.len(), 4);
        assert_eq!(fs.total_bytes(), 10);
        // Deleting a file whose last handle is gone frees its space.
        drop(a);
        fs.delete("a").unwrap();
        b.append(&[3; 6], P).unwrap();
        fs.set_space_limit(None);
        b.append(&[4; 100], P).unwrap();
        assert_eq!(fs.total_bytes(), 110);
    }

    #[test]
    fn flip_byte_corrupts_one_byte() {
        let fs = FaultStorage::new();
        let f = fs.create("a").unwrap();
        f.append(&[0x0F, 0x00], P).unwrap();
        fs.flip_byte("a", 1).unwrap();
        assert_eq!(read(&fs, "a"), vec![0x0F, 0xFF]);
        assert_eq!(
            fs.flip_byte("a", 2).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            fs.flip_byte("nope", 0).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn clones_share_state() {
        let fs = FaultStorage::new();
        let other = fs.clone();
        fs.create("a").unwrap();
        assert!(other.exists("a").unwrap());
        other.crash();
        assert!(fs.is_crashed());
    }

    #[test]
    fn truncate_cuts_data_and_synced_length() {
        let fs = FaultStorage::new();
        let f = fs.create("a").unwrap();
        fs.sync_dir().unwrap();
        f.append(b"hello world", P).unwrap();
        f.sync().unwrap();
        let ops = fs.ops_count();
        let e = f.truncate(12).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(fs.ops_count(), ops, "a refused truncate is no operation");
        f.truncate(5).unwrap();
        assert_eq!(fs.ops_count(), ops + 1);
        assert_eq!(f.len(), 5);
        assert_eq!(fs.file_len("a"), Some(5));
        assert_eq!(fs.total_bytes(), 5);
        f.append(b"!", P).unwrap();
        assert_eq!(read(&fs, "a"), b"hello!");
        // The cut reached the synced length, so a crash cannot bring " world" back.
        crash_and_restart(&fs);
        assert_eq!(read(&fs, "a"), b"hello");
    }

    #[test]
    fn truncate_is_a_mutating_op_for_crash_injection() {
        let fs = FaultStorage::new();
        let f = fs.create("a").unwrap();
        fs.sync_dir().unwrap();
        f.append(b"abcd", P).unwrap();
        fs.crash_after_ops(Some(0));
        assert_eq!(f.truncate(2).unwrap_err().to_string(), "simulated crash");
        assert!(fs.is_crashed());
        fs.restart();
        // Nothing was synced, and the stale handle stays dead.
        assert_eq!(read(&fs, "a"), b"");
        assert_eq!(
            f.truncate(0).unwrap_err().to_string(),
            "simulated crash: stale handle"
        );
    }

    fn fault(kind: IoKind, nth: u64) -> Fault {
        Fault {
            kind,
            nth,
            error: FaultError::Eio,
            sticky: false,
            partial: false,
        }
    }

    /// Files for [`call`]: a writer and a reader on "a", and spare files to rename and delete.
    struct Setup {
        fs: FaultStorage,
        w: Box<dyn WritableFile>,
        r: Arc<dyn RandomAccessFile>,
    }

    fn setup() -> Setup {
        let fs = FaultStorage::new();
        for i in 0..8 {
            fs.create(&format!("ren{i}")).unwrap();
            fs.create(&format!("del{i}")).unwrap();
        }
        let w = fs.create("a").unwrap();
        w.append(b"abc", P).unwrap();
        let r = fs.open("a").unwrap();
        Setup { fs, w, r }
    }

    /// Makes call number `i` of `kind`; each call is valid, so only an injection fails it.
    fn call(s: &Setup, kind: IoKind, i: u64) -> io::Result<()> {
        match kind {
            IoKind::Create => s.fs.create(&format!("new{i}")).map(drop),
            IoKind::Append => s.w.append(b"x", P),
            IoKind::Sync => s.w.sync(),
            IoKind::SyncDir => s.fs.sync_dir(),
            IoKind::Rename => s.fs.rename(&format!("ren{i}"), &format!("renamed{i}")),
            IoKind::Delete => s.fs.delete(&format!("del{i}")),
            IoKind::Truncate => s.w.truncate(s.w.len()),
            IoKind::Open => s.fs.open("a").map(drop),
            IoKind::Read => s.r.read_at(0, 1, P).map(drop),
        }
    }

    fn is_eio(r: io::Result<()>) -> bool {
        r.is_err_and(|e| e.raw_os_error() == Some(libc::EIO))
    }

    #[test]
    fn each_kind_fails_at_the_nth_call_and_not_before() {
        for kind in IoKind::ALL {
            for nth in 0..3 {
                let s = setup();
                // Calls made before arming do not count towards `nth`.
                call(&s, kind, 7).unwrap();
                s.fs.inject(Some(fault(kind, nth)));
                for i in 0..nth {
                    call(&s, kind, i).unwrap_or_else(|e| panic!("{kind:?} call {i}: {e}"));
                }
                assert!(is_eio(call(&s, kind, nth)), "{kind:?} call {nth}");
                assert_eq!(s.fs.faults_fired(), 1);
                // Not sticky: the next call goes through.
                call(&s, kind, nth + 1).unwrap();
                assert_eq!(s.fs.faults_fired(), 1);
                // Calls of other kinds are never failed.
                for other in IoKind::ALL.into_iter().filter(|k| *k != kind) {
                    call(&s, other, 5).unwrap_or_else(|e| panic!("{other:?} with {kind:?}: {e}"));
                }
                assert!(!s.fs.is_crashed());
            }
        }
    }

    #[test]
    fn failed_calls_have_no_effect() {
        let once = |fs: &FaultStorage, kind| fs.inject(Some(fault(kind, 0)));
        let fs = FaultStorage::new();
        let w = fs.create("a").unwrap();
        w.append(b"abc", P).unwrap();
        w.sync().unwrap();
        fs.sync_dir().unwrap();
        let ops = fs.ops_count();

        once(&fs, IoKind::Create);
        assert!(fs.create("b").is_err());
        assert!(!fs.exists("b").unwrap());
        once(&fs, IoKind::Append);
        assert!(w.append(b"def", P).is_err());
        assert_eq!(w.len(), 3);
        assert_eq!(read(&fs, "a"), b"abc");
        once(&fs, IoKind::Truncate);
        assert!(w.truncate(1).is_err());
        assert_eq!(w.len(), 3);
        once(&fs, IoKind::Rename);
        assert!(fs.rename("a", "b").is_err());
        assert!(fs.exists("a").unwrap() && !fs.exists("b").unwrap());
        once(&fs, IoKind::Delete);
        assert!(fs.delete("a").is_err());
        assert!(fs.exists("a").unwrap());
        once(&fs, IoKind::Open);
        assert!(fs.open("a").is_err());
        once(&fs, IoKind::Read);
        let r = fs.open("a").unwrap();
        assert!(r.read_at(0, 3, P).is_err());
        assert_eq!(r.len().unwrap(), 3);
        assert_eq!(ops, fs.ops_count(), "failed calls are no operations");

        // A failed sync or sync_dir makes nothing durable.
        w.append(b"def", P).unwrap();
        let c = fs.create("c").unwrap();
        c.append(b"c", P).unwrap();
        c.sync().unwrap();
        once(&fs, IoKind::Sync);
        assert!(w.sync().is_err());
        once(&fs, IoKind::SyncDir);
        assert!(fs.sync_dir().is_err());
        fs.inject(None);
        crash_and_restart(&fs);
        assert_eq!(read(&fs, "a"), b"abc");
        assert!(!fs.exists("c").unwrap());
    }

    #[test]
    fn sticky_faults_fail_every_later_call_until_disarmed() {
        let s = setup();
        s.fs.inject(Some(Fault {
            sticky: true,
            ..fault(IoKind::Read, 1)
        }));
        call(&s, IoKind::Read, 0).unwrap();
        for i in 1..5 {
            assert!(is_eio(call(&s, IoKind::Read, i)), "read {i}");
        }
        assert_eq!(s.fs.faults_fired(), 4);
        s.fs.inject(None);
        call(&s, IoKind::Read, 5).unwrap();
        // Disarming keeps the tally; arming a new fault resets it.
        assert_eq!(s.fs.faults_fired(), 4);
        s.fs.inject(Some(fault(IoKind::Read, 0)));
        assert_eq!(s.fs.faults_fired(), 0);
        assert!(is_eio(call(&s, IoKind::Read, 6)));
        call(&s, IoKind::Read, 7).unwrap();
        assert_eq!(s.fs.faults_fired(), 1);
    }

    #[test]
    fn inject_replaces_the_armed_fault_and_restarts_the_count() {
        let s = setup();
        s.fs.inject(Some(fault(IoKind::Sync, 1)));
        call(&s, IoKind::Sync, 0).unwrap();
        // The new fault counts from zero again and the old one is gone.
        s.fs.inject(Some(fault(IoKind::Append, 1)));
        call(&s, IoKind::Sync, 1).unwrap();
        call(&s, IoKind::Append, 0).unwrap();
        assert!(is_eio(call(&s, IoKind::Append, 1)));
    }

    #[test]
    fn partial_append_leaves_exactly_half_and_truncate_removes_it() {
        let fs = FaultStorage::new();
        let w = fs.create("log").unwrap();
        fs.sync_dir().unwrap();
        w.append(b"head", P).unwrap();
        w.sync().unwrap();
        fs.inject(Some(Fault {
            partial: true,
            ..fault(IoKind::Append, 0)
        }));
        let e = w.append(b"1234567", P).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
        assert_eq!(w.len(), 7);
        assert_eq!(fs.file_len("log"), Some(7));
        assert_eq!(read(&fs, "log"), b"head123");
        // The writer cleans up and goes on.
        w.truncate(4).unwrap();
        assert_eq!(read(&fs, "log"), b"head");
        w.append(b"tail", P).unwrap();
        w.sync().unwrap();
        assert_eq!(read(&fs, "log"), b"headtail");
        crash_and_restart(&fs);
        assert_eq!(read(&fs, "log"), b"headtail");
    }

    #[test]
    fn partial_append_prefix_is_unsynced_and_obeys_the_space_limit() {
        let fs = FaultStorage::new();
        let w = fs.create("log").unwrap();
        fs.sync_dir().unwrap();
        w.append(b"ab", P).unwrap();
        w.sync().unwrap();
        fs.set_space_limit(Some(5));
        fs.inject(Some(Fault {
            partial: true,
            error: FaultError::NoSpace,
            ..fault(IoKind::Append, 0)
        }));
        // Half of 10 bytes is 5, but only 3 fit.
        assert!(w.append(&[7; 10], P).is_err());
        assert_eq!(w.len(), 5);
        assert_eq!(fs.total_bytes(), 5);
        crash_and_restart(&fs);
        assert_eq!(read(&fs, "log"), b"ab");
    }

    #[test]
    fn no_space_fault_maps_to_engine_no_space() {
        use crate::error::Error;
        let e = FaultError::NoSpace.to_io_error();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(e.raw_os_error(), Some(28));
        assert!(matches!(Error::io("f", e), Error::NoSpace { .. }));
        let e = FaultError::Eio.to_io_error();
        assert_eq!(e.raw_os_error(), Some(5));
        assert!(matches!(Error::io("f", e), Error::Io { .. }));

        // And as returned by an injected call.
        let s = setup();
        s.fs.inject(Some(Fault {
            error: FaultError::NoSpace,
            ..fault(IoKind::Append, 0)
        }));
        let e = call(&s, IoKind::Append, 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert!(matches!(Error::io("a", e), Error::NoSpace { .. }));
    }

    #[test]
    fn injected_faults_neither_crash_nor_use_up_the_countdown() {
        let fs = FaultStorage::new();
        let w = fs.create("a").unwrap();
        fs.sync_dir().unwrap();
        w.append(b"abc", P).unwrap();
        let ops = fs.ops_count();
        fs.crash_after_ops(Some(1));
        fs.inject(Some(Fault {
            sticky: true,
            ..fault(IoKind::Sync, 0)
        }));
        for _ in 0..3 {
            assert!(w.sync().is_err());
        }
        assert!(!fs.is_crashed());
        assert_eq!(fs.ops_count(), ops);
        fs.inject(None);
        w.sync().unwrap(); // the one allowed operation
        assert_eq!(fs.ops_count(), ops + 1);
        assert_eq!(
            w.append(b"d", P).unwrap_err().to_string(),
            "simulated crash"
        );
        assert!(fs.is_crashed());
        assert_eq!(fs.io_counts()[&IoKind::Sync], 4);
        assert_eq!(fs.faults_fired(), 3);
    }

    #[test]
    fn io_counts_count_every_call_of_each_kind() {
        let fs = FaultStorage::new();
        assert!(fs.io_counts().values().all(|n| *n == 0));
        assert_eq!(fs.io_counts().len(), IoKind::ALL.len());
        workload(&fs).unwrap();
        let r = fs.open("log2").unwrap();
        r.read_at(0, 3, P).unwrap();
        r.read_at(0, 99, P).unwrap_err(); // failed calls count too
        r.len().unwrap(); // not counted
        fs.exists("log2").unwrap(); // not counted
        fs.list().unwrap(); // not counted
        fs.delete("log2").unwrap();
        fs.delete("log2").unwrap_err();
        fs.create("t").unwrap().truncate(0).unwrap();
        let want = [
            (IoKind::Create, 2),
            (IoKind::Append, 2),
            (IoKind::Sync, 2),
            (IoKind::SyncDir, 1),
            (IoKind::Rename, 1),
            (IoKind::Delete, 2),
            (IoKind::Truncate, 1),
            (IoKind::Open, 1),
            (IoKind::Read, 2),
        ];
        assert_eq!(fs.io_counts(), BTreeMap::from(want));
        // Calls refused by a crashed storage never reach it and are not counted.
        fs.crash();
        assert!(fs.create("u").is_err());
        assert_eq!(fs.io_counts()[&IoKind::Create], 2);
        // Crashes and injection do not reset the totals.
        fs.restart();
        fs.inject(Some(fault(IoKind::Create, 0)));
        assert!(fs.create("u").is_err());
        assert_eq!(fs.io_counts()[&IoKind::Create], 3);
    }

    #[test]
    fn armed_fault_survives_a_crash() {
        let fs = FaultStorage::new();
        fs.inject(Some(fault(IoKind::Create, 1)));
        fs.create("a").unwrap();
        crash_and_restart(&fs);
        assert!(fs.create("b").is_err());
        fs.create("c").unwrap();
    }

    #[test]
    fn io_kind_names_are_distinct() {
        let names: std::collections::HashSet<_> = IoKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), IoKind::ALL.len());
        assert_eq!(IoKind::SyncDir.name(), "sync_dir");
    }
}
