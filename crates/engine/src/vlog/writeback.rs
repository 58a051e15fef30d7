//! Early write-back of the active segment on a thread of its own.
//!
//! A segment is synced before the next one is made (`docs/format.md`, Durability order), on
//! the thread that writes. Left to the kernel, most of a segment's 128 MiB is still dirty
//! when it fills, and that sync waited 40-58 ms a roll in a load of 1 KiB puts (7 % of the
//! writer's time). So every `step` bytes appended, the writer asks this thread to write the
//! bytes since the last request out to the device and wait for them; the roll's sync then
//! finds little left. Nothing here makes anything durable that was not (only a sync does),
//! so a failed write-back is ignored: the sync that must succeed reports its own error.

use crate::storage::WritableFile;
use crossbeam_channel::{bounded, Sender};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

/// A range of a file to write back.
struct Range {
    file: Arc<dyn WritableFile>,
    offset: u64,
    len: u64,
}

/// The write-back thread, started at the first request (most small databases never make
/// one); stopped and joined on drop.
pub struct Writeback {
    step: u64,
    /// The thread's nice value (`Options::background_nice`).
    nice: i32,
    thread: OnceLock<Option<(Sender<Range>, JoinHandle<()>)>>,
}

impl Writeback {
    /// A write-back every `step` bytes appended, on a thread at nice value `nice`.
    pub fn new(step: u64, nice: i32) -> Writeback {
        Writeback {
            step: step.max(1),
            nice,
            thread: OnceLock::new(),
        }
    }

    fn spawn(nice: i32) -> Option<(Sender<Range>, JoinHandle<()>)> {
        // One request waiting at most: a writer faster than the device skips requests
        // (the next one covers their bytes) instead of queueing them.
        let (tx, rx) = bounded::<Range>(1);
        let spawned = std::thread::Builder::new()
            .name("cerberus-writeback".into())
            .spawn(move || {
                // Background work: the kernel's share of starting the writes runs here too.
                crate::priority::lower_priority(nice);
                for r in rx {
                    if let Err(e) = r.file.write_back(r.offset, r.len) {
                        tracing::debug!(error = %e, "log write-back failed (the next sync reports)");
                    }
                }
            });
        match spawned {
            Ok(t) => Some((tx, t)),
            Err(e) => {
                tracing::warn!(error = %e, "no log write-back thread: rolls sync more");
                None
            }
        }
    }

    /// Bytes appended between two requests.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Asks for `file`'s bytes `[offset, offset + len)` to be written back; false when the
    /// thread is still busy with the last request (the caller asks again later, from the
    /// same offset).
    pub(super) fn offer(&self, file: &Arc<dyn WritableFile>, offset: u64, len: u64) -> bool {
        let Some((tx, _)) = self.thread.get_or_init(|| Self::spawn(self.nice)) else {
            return false;
        };
        let range = Range {
            file: file.clone(),
            offset,
            len,
        };
        tx.try_send(range).is_ok()
    }
}

impl Drop for Writeback {
    fn drop(&mut self) {
        if let Some(Some((tx, thread))) = self.thread.take() {
            drop(tx);
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{IoPurpose, PosixStorage};
    use crate::vlog::VlogWriter;
    use parking_lot::Mutex;
    use std::io;

    /// A file that records the ranges written back.
    #[derive(Default)]
    struct Recording {
        len: Mutex<u64>,
        ranges: Mutex<Vec<(u64, u64)>>,
    }

    impl WritableFile for Recording {
        fn append(&self, data: &[u8], _: IoPurpose) -> io::Result<()> {
            *self.len.lock() += data.len() as u64;
            Ok(())
        }
        fn sync(&self) -> io::Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            *self.len.lock()
        }
        fn write_back(&self, offset: u64, len: u64) -> io::Result<()> {
            self.ranges.lock().push((offset, len));
            Ok(())
        }
    }

    #[test]
    fn accepted_requests_cover_the_file_in_order_without_gaps() {
        let wb = Writeback::new(100, 0);
        let rec = Arc::new(Recording::default());
        let file: Arc<dyn WritableFile> = rec.clone();
        let (mut from, mut accepted) = (0u64, 0);
        for end in (150..=15_000).step_by(150) {
            if end - from >= wb.step() && wb.offer(&file, from, end - from) {
                (from, accepted) = (end, accepted + 1);
            }
        }
        drop(wb); // joins the thread: every accepted request has run
        let ranges = rec.ranges.lock().clone();
        assert_eq!(ranges.len(), accepted);
        assert!(accepted > 0);
        let mut at = 0;
        for (offset, len) in ranges {
            assert_eq!(offset, at, "ranges follow each other with no gap");
            at = offset + len;
        }
        assert_eq!(at, from);
    }

    #[test]
    fn a_writer_with_write_back_rolls_and_its_records_read_back() {
        let dir = std::env::temp_dir().join(format!("cbr-wb-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let storage: crate::storage::StorageRef = Arc::new(PosixStorage::new(&dir).unwrap());
        let mut w = VlogWriter::create(storage.clone(), 1)
            .unwrap()
            .with_writeback(Some(Box::new(Writeback::new(4096, 0))));
        let record = vec![7u8; 1000];
        let mut at = Vec::new();
        for i in 0..200u64 {
            if w.needs_roll(record.len(), 64 << 10) {
                w.roll(2 + i).unwrap();
            }
            at.push((w.segment(), w.append(&record).unwrap()));
        }
        drop(w);
        for (segment, offset) in at {
            let f = storage.open(&crate::vlog::segment_name(segment)).unwrap();
            let got = f.read_at(offset, record.len(), IoPurpose::Log).unwrap();
            assert_eq!(&got[..], &record[..]);
        }
        // A real file writes its range back without an error.
        let f = storage.create("plain").unwrap();
        f.append(&record, IoPurpose::Log).unwrap();
        f.write_back(0, record.len() as u64).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
