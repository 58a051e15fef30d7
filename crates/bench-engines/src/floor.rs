//! The floor of Cerberus's write path (`--engine floor`, `cerberus-bench floor`): per put, only
//! what the design cannot skip. The record (the engine's value-log format: a 29-byte header
//! with a header checksum and a key-and-value checksum, crc32c, then key and value) is
//! appended through a user-space buffer to one file (`BufWriter`, 64 KiB; never synced, as
//! the engine without `--sync`), and `nsid ++ key` with its seqno goes into a concurrent
//! skiplist (`crossbeam_skiplist::SkipMap`, the engine's memtable structure until session 91;
//! the engine now has a list of its own, `memtable/skiplist.rs`, and the floor keeps the
//! stock crate so its figures stay comparable) holding the value (a slice of the record, as
//! the engine's memtable does) and its log offset.
//!
//! `--engine floor-write` is the same with the record handed to the kernel by one `write(2)`
//! per put, as the engine does (so an acknowledged put outlives a crash of the process): what
//! the buffer saves is the system call.
//!
//! `--engine floor-log` writes its log as the engine writes its value log (`floor_log.rs`):
//! a positioned write per put into 128 MiB segments, each synced before the next is begun,
//! and written out to the device every MiB by a thread of its own on the way. `floor-write`
//! leaves the whole load dirty in the page cache; this one pays its write-out inside the run.
//!
//! A skiplist past the engine's memtable budget, or holding its most entries
//! (`memtable_max_entries`, met by small values), is swapped for a new one and dropped on a
//! thread of its own, as the engine hands a full memtable to the background; nothing is
//! flushed to tables. It measures puts only: gets fail.

use crate::config::{OpenConfig, StorageArg};
use crate::db::BenchDb;
use crate::error::{EngineError, Result};
use crate::floor_log::SegmentLog;
use crate::op::Op;
use bytes::Bytes;
use crossbeam_skiplist::SkipMap;
use parking_lot::{Mutex, RwLock};
use std::cmp::Reverse;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// Bytes of a record's header, as the engine's value log writes it.
pub const RECORD_HEADER_LEN: usize = 29;
/// The user-space buffer in front of the log file.
const LOG_BUFFER: usize = 64 << 10;
/// Bytes counted per skiplist entry besides key and value (the engine's `ENTRY_OVERHEAD`).
const ENTRY_OVERHEAD: usize = 64;
/// The namespace every put goes to (the engine's default namespace is 0 too).
const NSID: u32 = 0;

type Skiplist = SkipMap<(Bytes, Reverse<u64>), (Bytes, u64)>;

struct Log {
    sink: Sink,
    offset: u64,
    next_seq: u64,
}

/// How a floor writes its log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogMode {
    /// Through a 64 KiB user-space buffer (`floor`).
    Buffered,
    /// One `write(2)` per put (`floor-write`).
    Write,
    /// As the engine: segments synced in order, written back early (`floor-log`).
    Segments,
}

/// Where the records go, as each [`LogMode`] writes them.
enum Sink {
    Buffered(BufWriter<File>),
    Write(BufWriter<File>),
    Segments(SegmentLog),
}

impl Sink {
    fn append(&mut self, record: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Buffered(f) => f.write_all(record),
            Sink::Write(f) => {
                f.write_all(record)?;
                f.flush()
            }
            Sink::Segments(log) => log.append(record),
        }
    }

    /// Writes out what the user-space buffer holds (a segment log has none).
    fn flush_buffer(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Buffered(f) | Sink::Write(f) => f.flush(),
            Sink::Segments(_) => Ok(()),
        }
    }

    /// Writes out what the user-space buffer holds; stops the write-back thread.
    fn end(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Buffered(f) | Sink::Write(f) => f.flush(),
            Sink::Segments(log) => {
                log.stop();
                Ok(())
            }
        }
    }
}

/// The floor: a log and a skiplist.
pub struct FloorDb {
    log: Mutex<Log>,
    mem: RwLock<Arc<Skiplist>>,
    mem_bytes: AtomicUsize,
    mem_entries: AtomicUsize,
    budget: usize,
    /// The engine's `memtable_max_entries` (0: no bound).
    max_entries: usize,
    dropper: Mutex<Option<Dropper>>,
}

/// The thread that frees full skiplists, and the way to hand it one.
type Dropper = (mpsc::Sender<Arc<Skiplist>>, JoinHandle<()>);

/// Appends one record in the engine's value-log format to `out`.
pub fn encode_record(out: &mut Vec<u8>, seq: u64, key: &[u8], value: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&NSID.to_le_bytes());
    // A put (1), the last record of its write (2): one record per put, as the engine's.
    out.push(1 | 2);
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    let header_crc = crc32c::crc32c(&out[start + 8..start + RECORD_HEADER_LEN]);
    let payload_crc = crc32c::crc32c_append(crc32c::crc32c(key), value);
    out[start..start + 4].copy_from_slice(&header_crc.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&payload_crc.to_le_bytes());
}

impl FloorDb {
    pub fn open(config: &OpenConfig, mode: LogMode) -> Result<FloorDb> {
        if config.sync {
            return Err(EngineError::FloorNeverSyncs);
        }
        let created = |path: std::path::PathBuf| {
            move |source| EngineError::Floor {
                op: Op::Create { path },
                source,
            }
        };
        let sink = match mode {
            LogMode::Segments => Sink::Segments(
                SegmentLog::create(&config.path).map_err(created(config.path.clone()))?,
            ),
            LogMode::Buffered | LogMode::Write => {
                let path = config.path.join("floor.log");
                let file = File::create(&path).map_err(created(path))?;
                let file = BufWriter::with_capacity(LOG_BUFFER, file);
                match mode {
                    LogMode::Buffered => Sink::Buffered(file),
                    _ => Sink::Write(file),
                }
            }
        };
        let (tx, rx) = mpsc::channel::<Arc<Skiplist>>();
        let dropper = std::thread::Builder::new()
            .name("floor-drop".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .map_err(floor_failed(Op::StartDropper))?;
        Ok(FloorDb {
            log: Mutex::new(Log {
                sink,
                offset: 0,
                next_seq: 1,
            }),
            mem: RwLock::new(Arc::new(SkipMap::new())),
            mem_bytes: AtomicUsize::new(0),
            mem_entries: AtomicUsize::new(0),
            budget: cerberus_engine::Options::default().memtable_bytes,
            max_entries: cerberus_engine::Options::default().memtable_max_entries,
            dropper: Mutex::new(Some((tx, dropper))),
        })
    }

    /// Whether the skiplist is past the budget or at the entry bound, as the engine's
    /// memtable freezes.
    fn full(&self) -> bool {
        self.mem_bytes.load(Ordering::Relaxed) >= self.budget
            || (self.max_entries > 0
                && self.mem_entries.load(Ordering::Relaxed) >= self.max_entries)
    }

    /// Swaps a full skiplist for a new one; the dropper thread frees the old.
    fn rotate_if_full(&self) {
        if !self.full() {
            return;
        }
        let mut mem = self.mem.write();
        if !self.full() {
            return;
        }
        let old = std::mem::replace(&mut *mem, Arc::new(SkipMap::new()));
        self.mem_bytes.store(0, Ordering::Relaxed);
        self.mem_entries.store(0, Ordering::Relaxed);
        drop(mem);
        if let Some((tx, _)) = &*self.dropper.lock() {
            // A dropper that is gone leaves the freeing to this thread.
            let _ = tx.send(old);
        }
    }

    fn end(&self) -> Result<()> {
        self.log
            .lock()
            .sink
            .end()
            .map_err(floor_failed(Op::WriteLog))?;
        if let Some((tx, handle)) = self.dropper.lock().take() {
            drop(tx);
            let _ = handle.join();
        }
        Ok(())
    }
}

impl BenchDb for FloorDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.rotate_if_full();
        let mut record = Vec::with_capacity(RECORD_HEADER_LEN + key.len() + value.len());
        let (seq, offset) = {
            let mut log = self.log.lock();
            let seq = log.next_seq;
            encode_record(&mut record, seq, key, value);
            log.sink.append(&record).map_err(floor_failed(Op::Append))?;
            let offset = log.offset;
            log.offset += record.len() as u64;
            log.next_seq += 1;
            (seq, offset)
        };
        let record = Bytes::from(record);
        let value = record.slice(RECORD_HEADER_LEN + key.len()..);
        let mut user = Vec::with_capacity(4 + key.len());
        user.extend_from_slice(&NSID.to_be_bytes());
        user.extend_from_slice(key);
        self.mem_bytes
            .fetch_add(user.len() + value.len() + ENTRY_OVERHEAD, Ordering::Relaxed);
        self.mem_entries.fetch_add(1, Ordering::Relaxed);
        let mem = self.mem.read().clone();
        mem.insert((Bytes::from(user), Reverse(seq)), (value, offset));
        Ok(())
    }

    fn get(&self, _key: &[u8]) -> Result<bool> {
        Err(EngineError::FloorPutsOnly)
    }

    /// Writes the log's buffer out (the floor has no tables).
    fn flush(&self) -> Result<()> {
        self.log
            .lock()
            .sink
            .flush_buffer()
            .map_err(floor_failed(Op::WriteLog))
    }

    fn compact(&self) -> Result<()> {
        Ok(())
    }

    fn stats_json(&self) -> serde_json::Value {
        let log = self.log.lock();
        serde_json::json!({
            "log_bytes": log.offset,
            "puts": log.next_seq - 1,
        })
    }

    fn close(&self) -> Result<()> {
        self.end()
    }
}

impl Drop for FloorDb {
    fn drop(&mut self) {
        let _ = self.end();
    }
}

/// The error of the floor's log or thread failing in `op`.
fn floor_failed(op: Op) -> impl FnOnce(std::io::Error) -> EngineError {
    move |source| EngineError::Floor { op, source }
}

/// The floor runs on real files only.
pub fn check(config: &OpenConfig) -> Result<()> {
    if config.storage == StorageArg::Nand {
        return Err(EngineError::NandUnsupported {
            engine: "the floor",
        });
    }
    if config.sync {
        return Err(EngineError::FloorNeverSyncs);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LayoutArg;

    fn config(path: &std::path::Path) -> OpenConfig {
        OpenConfig::at(path, LayoutArg::PerNamespace)
    }

    #[test]
    fn puts_land_in_the_log_and_the_skiplist() {
        let dir = tempfile::tempdir().unwrap();
        let db = FloorDb::open(&config(dir.path()), LogMode::Buffered).unwrap();
        db.put(b"k1", b"value one").unwrap();
        db.put(b"k0", b"v0").unwrap();
        db.put(b"k1", b"value two").unwrap();
        let mem = db.mem.read().clone();
        let keys: Vec<(Vec<u8>, u64)> = mem
            .iter()
            .map(|e| (e.key().0.to_vec(), e.key().1 .0))
            .collect();
        // Key order, newest version first, each key after the namespace id.
        assert_eq!(
            keys,
            vec![
                (b"\0\0\0\0k0".to_vec(), 2),
                (b"\0\0\0\0k1".to_vec(), 3),
                (b"\0\0\0\0k1".to_vec(), 1)
            ]
        );
        let newest = mem.iter().nth(1).unwrap();
        assert_eq!(&newest.value().0[..], b"value two");
        db.close().unwrap();
        let log = std::fs::read(dir.path().join("floor.log")).unwrap();
        let lens = [29 + 2 + 9, 29 + 2 + 2, 29 + 2 + 9];
        assert_eq!(log.len(), lens.iter().sum::<usize>());
        assert_eq!(newest.value().1, (lens[0] + lens[1]) as u64);
        // The second record, decoded by hand: header checksum, payload checksum, fields.
        let r = &log[lens[0]..lens[0] + lens[1]];
        let crc = |b: &[u8]| crc32c::crc32c(b).to_le_bytes();
        assert_eq!(r[..4], crc(&r[8..29]));
        assert_eq!(r[4..8], crc(b"k0v0"));
        assert_eq!(r[8..16], 2u64.to_le_bytes());
        assert_eq!(&r[29..], b"k0v0");
        assert!(db.get(b"k0").is_err());
    }

    #[test]
    fn a_full_skiplist_is_swapped_for_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = FloorDb::open(&config(dir.path()), LogMode::Buffered).unwrap();
        db.budget = 1000;
        for i in 0..40u32 {
            db.put(&i.to_be_bytes(), &[7; 100]).unwrap();
        }
        // 168 bytes counted a put: a swap every 6 puts; 40 % 6 = 4 in the last.
        assert_eq!(db.mem.read().len(), 4);
        assert_eq!(db.stats_json()["puts"], 40);
        db.close().unwrap();
    }

    #[test]
    fn a_skiplist_at_the_entry_bound_is_swapped_whatever_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = FloorDb::open(&config(dir.path()), LogMode::Buffered).unwrap();
        assert_eq!(
            db.max_entries,
            cerberus_engine::Options::default().memtable_max_entries
        );
        db.max_entries = 7;
        for i in 0..40u32 {
            db.put(&i.to_be_bytes(), &[7; 10]).unwrap();
        }
        // Far under the byte budget: lists of 7, 40 % 7 = 5 in the last.
        assert_eq!(db.mem.read().len(), 5);
        db.close().unwrap();
    }

    #[test]
    fn floor_write_hands_each_put_to_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let db = FloorDb::open(&config(dir.path()), LogMode::Write).unwrap();
        db.put(b"k", b"v").unwrap();
        let len = std::fs::metadata(dir.path().join("floor.log"))
            .unwrap()
            .len();
        assert_eq!(len, 29 + 2);
        db.close().unwrap();
    }

    #[test]
    fn sync_and_nand_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        c.sync = true;
        assert!(check(&c).is_err());
        c.sync = false;
        c.storage = StorageArg::Nand;
        assert!(check(&c).is_err());
    }
}
