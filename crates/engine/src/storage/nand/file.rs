//! Open files of a [`super::NandStorage`]: appends charged as page programs, syncs that wait
//! for them, reads charged as page reads.

use super::clock::{self, wait_until};
use super::device::{duration_ns, Device};
use crate::storage::interface::{RandomAccessFile, WritableFile};
use crate::storage::purpose::IoPurpose;
use parking_lot::Mutex;
use std::io;
use std::ops::RangeInclusive;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

pub(super) struct NandWritable {
    pub(super) inner: Box<dyn WritableFile>,
    pub(super) device: Arc<Device>,
    pub(super) base: u64,
    pub(super) state: Mutex<WriteState>,
}

pub(super) struct WriteState {
    pub(super) len: u64,
    /// Bytes covered by programs already charged. Mid-page after a sync of a partial page;
    /// that page is programmed again once appends fill it (flash cannot add to a page, so the
    /// device writes the completed page anew).
    pub(super) programmed: u64,
    /// When the last program charged for this file completes.
    pub(super) pending_until: Instant,
    pub(super) last_purpose: IoPurpose,
}

impl NandWritable {
    fn program(
        &self,
        st: &mut WriteState,
        now: Instant,
        pages: RangeInclusive<u64>,
        purpose: IoPurpose,
    ) {
        let count = pages.end() - pages.start() + 1;
        let done = self.device.schedule_programs(now, self.base, pages);
        st.pending_until = st.pending_until.max(done);
        self.device.counters.page_programs[purpose as usize].fetch_add(count, Ordering::Relaxed);
    }
}

impl WritableFile for NandWritable {
    fn append(&self, data: &[u8], purpose: IoPurpose) -> io::Result<()> {
        // The inner file gets the bytes first: a failed append must not be charged.
        if let Err(e) = self.inner.append(data, purpose) {
            // It may have kept a prefix; track it so that len() shows it and a later append
            // or sync programs it.
            let mut st = self.state.lock();
            st.len = self.inner.len();
            st.programmed = st.programmed.min(st.len);
            return Err(e);
        }
        let mut st = self.state.lock();
        st.len += data.len() as u64;
        st.last_purpose = purpose;
        let page_size = self.device.config.page_size as u64;
        let first = st.programmed / page_size;
        let full_pages = st.len / page_size;
        if full_pages > first {
            // Pages first..full_pages are now complete; the device programs them in the
            // background, so the appender does not wait.
            self.program(&mut st, Instant::now(), first..=full_pages - 1, purpose);
            st.programmed = full_pages * page_size;
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let issued = Instant::now();
        let pending_until = {
            let mut st = self.state.lock();
            if st.programmed < st.len {
                let page = st.programmed / self.device.config.page_size as u64;
                let purpose = st.last_purpose;
                self.program(&mut st, issued, page..=page, purpose);
                st.programmed = st.len;
            }
            st.pending_until
        };
        let wait = pending_until.saturating_duration_since(issued);
        self.device
            .counters
            .sync_wait_ns
            .fetch_add(duration_ns(wait), Ordering::Relaxed);
        // The real sync runs inside the modeled wait rather than after it, so that a slow host
        // file system does not add to the modeled device time.
        let result = self.inner.sync();
        wait_until(pending_until);
        result
    }

    fn len(&self) -> u64 {
        self.state.lock().len
    }

    /// Not charged: dropping bytes is a mapping update in the flash translation layer. A page
    /// left partial is programmed anew once appends fill it or a sync comes.
    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        self.inner.truncate(len)?;
        st.len = len;
        st.programmed = st.programmed.min(len);
        Ok(())
    }
}

pub(super) struct NandReadable {
    pub(super) inner: Arc<dyn RandomAccessFile>,
    pub(super) device: Arc<Device>,
    pub(super) base: u64,
}

impl RandomAccessFile for NandReadable {
    fn read_at(&self, offset: u64, len: usize, purpose: IoPurpose) -> io::Result<Vec<u8>> {
        if len == 0 {
            return self.inner.read_at(offset, len, purpose);
        }
        let issued = clock::issue_time();
        let (done, pages) = self.device.schedule_read(issued, self.base, offset, len);
        let c = &self.device.counters;
        c.page_reads[purpose as usize].fetch_add(pages, Ordering::Relaxed);
        c.read_requests[purpose as usize].fetch_add(1, Ordering::Relaxed);
        c.read_time_ns
            .fetch_add(duration_ns(done - issued), Ordering::Relaxed);
        // As for sync: the real read overlaps the modeled latency instead of adding to it.
        let result = self.inner.read_at(offset, len, purpose);
        clock::complete(done);
        result
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}
