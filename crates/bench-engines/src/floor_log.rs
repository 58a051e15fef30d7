//! The log of `--engine floor-log`: the floor's records written as the engine writes its
//! value log, through the engine's own posix storage. One positioned write per put into
//! segments of `vlog_segment_bytes`; each segment synced before the next is begun (the
//! durability order that keeps what survives a crash a prefix of the writes); and, every
//! `log_writeback_bytes` appended, the bytes since written out to the device by a thread of
//! its own at the background's nice value, so that the roll's sync finds little left (the
//! engine's `vlog/writeback.rs`). `floor-write` leaves the whole load dirty in the page
//! cache instead, for the kernel to write out after the run; this floor pays the write-out
//! inside it, as the engine does.

use cerberus_engine::storage::{IoPurpose, PosixStorage, Storage, WritableFile};
use cerberus_engine::Options;
use crossbeam_channel::{bounded, Sender};
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Bytes of a value-log segment's header (the engine's `SEGMENT_HEADER_LEN`).
const SEGMENT_HEADER_LEN: usize = 16;

/// A range of a segment to write out.
type Range = (Arc<dyn WritableFile>, u64, u64);

/// The segmented log and its write-back thread.
pub struct SegmentLog {
    storage: PosixStorage,
    file: Arc<dyn WritableFile>,
    segment: u64,
    /// Bytes in the current segment (its header too), and the first not asked to be written
    /// back yet.
    len: u64,
    written_back: u64,
    segment_bytes: u64,
    step: u64,
    writeback: Option<(Sender<Range>, JoinHandle<()>)>,
}

impl SegmentLog {
    /// A log in `dir`, with the engine's default segment size, write-back step and
    /// background nice value.
    pub fn create(dir: &Path) -> io::Result<SegmentLog> {
        let o = Options::default();
        let storage = PosixStorage::new(dir)?;
        let file = Self::segment(&storage, 1)?;
        Ok(SegmentLog {
            storage,
            file,
            segment: 1,
            len: SEGMENT_HEADER_LEN as u64,
            written_back: SEGMENT_HEADER_LEN as u64,
            segment_bytes: o.vlog_segment_bytes,
            step: o.log_writeback_bytes.max(1),
            writeback: Some(spawn_writeback(o.background_nice)?),
        })
    }

    /// A new segment `id`, made as the engine makes one: a header of the engine's length
    /// written and synced, then the name made durable in the directory.
    fn segment(storage: &PosixStorage, id: u64) -> io::Result<Arc<dyn WritableFile>> {
        let file: Arc<dyn WritableFile> = Arc::from(storage.create(&format!("{id:06}.log"))?);
        file.append(&[0; SEGMENT_HEADER_LEN], IoPurpose::Log)?;
        file.sync()?;
        storage.sync_dir()?;
        Ok(file)
    }

    /// Appends `record`, first syncing the segment and beginning the next if it would not
    /// fit; asks for a write-back every `step` bytes.
    pub fn append(&mut self, record: &[u8]) -> io::Result<()> {
        let start = SEGMENT_HEADER_LEN as u64;
        if self.len > start && self.len + record.len() as u64 > self.segment_bytes {
            self.file.sync()?;
            self.segment += 1;
            self.file = Self::segment(&self.storage, self.segment)?;
            (self.len, self.written_back) = (start, start);
        }
        self.file.append(record, IoPurpose::Log)?;
        self.len += record.len() as u64;
        let due = self.len - self.written_back;
        if due >= self.step {
            if let Some((tx, _)) = &self.writeback {
                // One request waiting at most: a busy thread's next request covers these bytes.
                if tx
                    .try_send((self.file.clone(), self.written_back, due))
                    .is_ok()
                {
                    self.written_back = self.len;
                }
            }
        }
        Ok(())
    }

    /// Stops the write-back thread (once); what it was asked finishes first.
    pub fn stop(&mut self) {
        if let Some((tx, thread)) = self.writeback.take() {
            drop(tx);
            let _ = thread.join();
        }
    }
}

impl Drop for SegmentLog {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn_writeback(nice: i32) -> io::Result<(Sender<Range>, JoinHandle<()>)> {
    let (tx, rx) = bounded::<Range>(1);
    let thread = std::thread::Builder::new()
        .name("floor-writeback".into())
        .spawn(move || {
            // As the engine's background threads: yield the core to the writer. A failure
            // leaves the thread at the writer's priority, which only slows the writer.
            // SAFETY: a plain system call on the calling thread's own id.
            let _ = unsafe {
                libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice)
            };
            for (file, offset, len) in rx {
                // Only the roll's sync makes anything durable; it reports its own errors.
                let _ = file.write_back(offset, len);
            }
        })?;
    Ok((tx, thread))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_segment_is_synced_and_the_next_begun() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SegmentLog::create(dir.path()).unwrap();
        log.segment_bytes = 100;
        log.step = 30;
        for _ in 0..5 {
            log.append(&[1; 40]).unwrap();
        }
        log.stop();
        // After the 16-byte header, 40 + 40 fit in 100; the third begins segment 2, the
        // fifth segment 3.
        let len = |id: u64| {
            std::fs::metadata(dir.path().join(format!("{id:06}.log")))
                .unwrap()
                .len()
        };
        assert_eq!((len(1), len(2), len(3)), (96, 96, 56));
        assert_eq!(log.segment, 3);
    }
}
