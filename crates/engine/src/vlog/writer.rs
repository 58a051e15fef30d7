//! The writing end of the log: appends to the active segment, rolls to a new one, syncs.

use super::format::{segment_header, segment_name, SEGMENT_HEADER_LEN};
use super::writeback::Writeback;
use crate::error::{Error, IoContext, Result};
use crate::storage::{IoPurpose, StorageRef, WritableFile};
use std::sync::Arc;

/// Appends to the active segment.
pub struct VlogWriter {
    storage: StorageRef,
    file: Arc<dyn WritableFile>,
    segment: u64,
    name: String,
    offset: u64,
    synced: bool,
    /// Early write-back of the segment (`writeback.rs`), kept across rolls.
    writeback: Option<Box<Writeback>>,
    /// Where the next write-back request starts.
    written_back: u64,
}

impl VlogWriter {
    /// Creates segment `id` and makes its existence durable. On failure the file is
    /// deleted again where it can be (recovery skips a segment too short for its header).
    pub fn create(storage: StorageRef, id: u64) -> Result<VlogWriter> {
        let name = segment_name(id);
        let file: Arc<dyn WritableFile> = Arc::from(storage.create(&name).ctx(&name)?);
        let ready = file
            .append(&segment_header(), IoPurpose::Log)
            .and_then(|()| file.sync())
            .and_then(|()| storage.sync_dir());
        if let Err(e) = ready {
            drop(file);
            let _ = storage.delete(&name);
            return Err(Error::io(name, e));
        }
        Ok(VlogWriter {
            storage,
            file,
            segment: id,
            name,
            offset: SEGMENT_HEADER_LEN,
            synced: true,
            writeback: None,
            written_back: SEGMENT_HEADER_LEN,
        })
    }

    /// Asks `wb` to write this segment and the next ones back early, a step at a time.
    pub fn with_writeback(mut self, wb: Option<Box<Writeback>>) -> VlogWriter {
        self.writeback = wb;
        self
    }

    /// `(segment, offset)` where the next record will go.
    pub fn position(&self) -> (u64, u64) {
        (self.segment, self.offset)
    }

    pub fn segment(&self) -> u64 {
        self.segment
    }

    /// Whether appending `len` more bytes should start a new segment first.
    pub fn needs_roll(&self, len: usize, segment_bytes: u64) -> bool {
        self.offset > SEGMENT_HEADER_LEN && self.offset + len as u64 > segment_bytes
    }

    /// Syncs this segment and continues in a new segment `id`. Syncing first keeps what
    /// survives a crash a prefix of the writes. Fails with [`RollError`] saying which step
    /// failed: a failed sync leaves the log in doubt, a failed creation does not.
    pub fn roll(&mut self, id: u64) -> std::result::Result<(), RollError> {
        self.sync().map_err(RollError::Sync)?;
        let next = VlogWriter::create(self.storage.clone(), id).map_err(RollError::Create)?;
        *self = next.with_writeback(self.writeback.take());
        Ok(())
    }

    /// Appends encoded records; returns the offset of the first byte. If the append fails,
    /// whatever part of it reached the file is cut off again; if even that fails, the
    /// error says so with [`AppendError::Torn`].
    pub fn append(&mut self, buf: &[u8]) -> std::result::Result<u64, AppendError> {
        let at = self.offset;
        if let Err(e) = self.file.append(buf, IoPurpose::Log) {
            let e = Error::io(&self.name, e);
            return Err(match self.file.truncate(at) {
                Ok(()) => AppendError::Clean(e),
                Err(_) => AppendError::Torn(e),
            });
        }
        self.offset += buf.len() as u64;
        self.synced = false;
        if let Some(wb) = &self.writeback {
            let due = self.offset - self.written_back;
            if due >= wb.step() && wb.offer(&self.file, self.written_back, due) {
                self.written_back = self.offset;
            }
        }
        Ok(at)
    }

    pub fn sync(&mut self) -> Result<()> {
        if !self.synced {
            self.file.sync().ctx(&self.name)?;
            self.synced = true;
        }
        Ok(())
    }

    /// A handle that makes what was appended so far durable, usable from another thread
    /// (a flush syncs the log behind the memtable it writes without stopping writers).
    pub fn sync_handle(&self) -> LogSync {
        LogSync {
            file: self.file.clone(),
            name: self.name.clone(),
        }
    }
}

/// Why [`VlogWriter::roll`] failed.
#[derive(Debug)]
pub enum RollError {
    /// Syncing the old segment failed: what it holds on disk is unknown.
    Sync(Error),
    /// The new segment could not be made; the writer goes on in the old one.
    Create(Error),
}

/// Why [`VlogWriter::append`] failed.
#[derive(Debug)]
pub enum AppendError {
    /// Nothing of the records stays in the segment.
    Clean(Error),
    /// Part of the records may stay at the segment's end.
    Torn(Error),
}

impl AppendError {
    pub fn into_error(self) -> Error {
        match self {
            AppendError::Clean(e) | AppendError::Torn(e) => e,
        }
    }
}

/// Syncs one segment from any thread.
#[derive(Clone)]
pub struct LogSync {
    file: Arc<dyn WritableFile>,
    name: String,
}

impl LogSync {
    pub fn sync(&self) -> Result<()> {
        self.file.sync().ctx(&self.name)
    }
}
