//! Crash injection.
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

use super::mem::{not_found, read_slice};
use super::{IoPurpose, RandomAccessFile, Storage, WritableFile};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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

    /// Crash automatically after `n` more mutating operations (append, file sync, create,
    /// rename, delete, sync_dir): the next one after those fails and crashes instead of
    /// happening. `None` disarms.
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
        state.tick()?;
        if let Some(limit) = state.space_limit {
            if state.total_bytes().saturating_add(data.len() as u64) > limit {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    format!("space limit of {limit} bytes reached"),
                ));
            }
        }
        self.inode.contents.lock().data.extend_from_slice(data);
        self.len.fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_handle(self.generation)?;
        state.tick()?;
        let mut c = self.inode.contents.lock();
        c.synced_len = c.data.len();
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len.load(Ordering::Relaxed)
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
        let state = self.state.lock();
        state.check_handle(self.generation)?;
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
}
