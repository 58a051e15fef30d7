//! Open files of a [`super::FaultStorage`]: handles that die with a crash.

use super::injection::IoKind;
use super::state::{InodeRef, State};
use crate::storage::interface::{check_truncate, RandomAccessFile, WritableFile};
use crate::storage::mem::read_slice;
use crate::storage::purpose::IoPurpose;
use parking_lot::Mutex;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(super) struct FaultWritable {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) inode: InodeRef,
    pub(super) generation: u64,
    pub(super) len: AtomicU64,
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

pub(super) struct FaultReadable {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) inode: InodeRef,
    pub(super) generation: u64,
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
