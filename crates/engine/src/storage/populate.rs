//! Page tables filled ahead for the maps reads go through.
//!
//! A get that reads through a fresh map (a value in a value-log segment, a block of a new
//! table the block cache misses) takes a page fault on the first touch of each 64 KiB the
//! kernel maps around a fault: on a virtual machine some 10 us, paid by the client's thread
//! (a minor fault: the page is in the page cache). Right after a load that is a get in
//! forty. A thread of the storage's own asks the kernel to fill a new map's page tables
//! instead (`MADV_POPULATE_READ`), for the pages the page cache holds only: a map of a file
//! that is not cached reads nothing from the disk here, its gets fault as before.

use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

/// Maps waiting to be filled at most: more are dropped (filling is a hint).
const QUEUE: usize = 256;
/// The filling thread's nice value: the engine's background threads' default.
const NICE: i32 = 10;
/// Bytes checked and filled at a time: the residency vector of one step stays small.
const STEP: usize = 2 << 20;

/// A range of a map to fill; the map stays alive while the job waits.
struct Job {
    map: Bytes,
    start: usize,
    end: usize,
}

/// The filling thread of one storage, started on its first job, ended when the storage and
/// every file it opened are dropped.
pub(super) struct Populator {
    queue: Mutex<Option<SyncSender<Job>>>,
    stats: Arc<Stats>,
}

#[derive(Default)]
struct Stats {
    /// Bytes whose page tables were filled.
    filled: AtomicU64,
    /// Jobs dropped with the queue full.
    dropped: AtomicU64,
}

impl Populator {
    pub(super) fn new() -> Populator {
        Populator {
            queue: Mutex::new(None),
            stats: Arc::default(),
        }
    }

    /// Asks for `[start, end)` of `map` (a whole map, as mapped) to be filled, in the
    /// background.
    pub(super) fn fill(&self, map: &Bytes, start: usize, end: usize) {
        if !cfg!(target_os = "linux") || start >= end.min(map.len()) {
            return;
        }
        let job = Job {
            map: map.clone(),
            start,
            end: end.min(map.len()),
        };
        let Ok(mut queue) = self.queue.lock() else {
            return;
        };
        if queue.is_none() {
            let (tx, rx) = sync_channel(QUEUE);
            let stats = self.stats.clone();
            let started = std::thread::Builder::new()
                .name("cerberus-populate".into())
                .spawn(move || run(rx, &stats));
            if started.is_err() {
                return;
            }
            *queue = Some(tx);
        }
        if let Some(tx) = queue.as_ref() {
            if let Err(TrySendError::Full(_)) = tx.try_send(job) {
                self.stats.dropped.fetch_add(1, Relaxed);
            }
        }
    }

    /// Bytes filled so far.
    #[cfg(test)]
    pub(super) fn filled(&self) -> u64 {
        self.stats.filled.load(Relaxed)
    }
}

fn run(jobs: Receiver<Job>, stats: &Stats) {
    // Filling only saves clients' threads time: it yields their cores to them, as the
    // engine's flushes and compactions do by default (`Options::background_nice`).
    crate::priority::lower_priority(NICE);
    while let Ok(job) = jobs.recv() {
        let filled = fill_resident(&job.map, job.start, job.end);
        stats.filled.fetch_add(filled as u64, Relaxed);
    }
}

/// Fills the page tables of the pages of `map[start..end]` the page cache holds; returns the
/// bytes filled.
#[cfg(target_os = "linux")]
fn fill_resident(map: &Bytes, start: usize, end: usize) -> usize {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let base = map.as_ptr() as usize;
    if page == 0 || !base.is_multiple_of(page) {
        return 0;
    }
    let mut filled = 0;
    let mut resident = vec![0u8; STEP.div_ceil(page)];
    let mut at = start - start % page;
    while at < end {
        let len = STEP.min(end - at);
        let pages = len.div_ceil(page);
        // SAFETY: `[base + at, base + at + len)` lies in the map, which `map` keeps alive;
        // `base + at` is page-aligned and `resident` has a byte per page of the range.
        let ok =
            unsafe { libc::mincore((base + at) as *mut libc::c_void, len, resident.as_mut_ptr()) };
        if ok != 0 {
            return filled;
        }
        let mut page_at = 0;
        while page_at < pages {
            if resident[page_at] & 1 == 0 {
                page_at += 1;
                continue;
            }
            let run_start = page_at;
            while page_at < pages && resident[page_at] & 1 != 0 {
                page_at += 1;
            }
            let run_len = ((page_at - run_start) * page).min(len - run_start * page);
            // SAFETY: as above; filling page tables changes no byte of the map.
            let done = unsafe {
                libc::madvise(
                    (base + at + run_start * page) as *mut libc::c_void,
                    run_len,
                    libc::MADV_POPULATE_READ,
                )
            };
            if done == 0 {
                filled += run_len;
            }
        }
        at += len;
    }
    filled
}

#[cfg(not(target_os = "linux"))]
fn fill_resident(_map: &Bytes, _start: usize, _end: usize) -> usize {
    0
}
