//! Page tables filled ahead for the maps gets read values through.
//!
//! A get that reads a value through a fresh map of a value-log segment takes a page fault on
//! the first touch of each 64 KiB the kernel maps around a fault: on a virtual machine some
//! 10 us, paid by the client's thread (a minor fault: the page is in the page cache). Right
//! after a load that is a get in forty. A thread of the storage's own asks the kernel to fill
//! the page tables instead (`MADV_POPULATE_READ`), once per byte, of the segments this
//! storage wrote, and of their pages the page cache holds only (`mincore` first): a segment
//! not cached is read from the disk by its gets, as before, not here. Tables are not filled:
//! the block cache reads each block through a map about once.

use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

/// Maps waiting to be filled at most: more are dropped (filling is a hint).
const QUEUE: usize = 256;
/// The filling thread's nice value: the engine's background threads' default.
const NICE: i32 = 10;
/// Bytes checked and filled at a time: the residency vector of one step stays small.
const STEP: usize = 2 << 20;

/// How much of a file this storage wrote has been filled, in any of its maps. Each byte is
/// filled once: a map made again (a segment doubled) faults on its earlier part as any map
/// did, and the page cache's readahead marks (which a fault turns into disk reads) are never
/// met on pages the process wrote and filled right after.
#[derive(Default)]
pub(super) struct Filled {
    upto: AtomicU64,
    /// Deleted: a job waiting for it is dropped, not run.
    gone: AtomicBool,
}

impl Filled {
    /// Bytes from the file's start asked to be filled.
    #[cfg(test)]
    pub(super) fn upto(&self) -> u64 {
        self.upto.load(Relaxed)
    }
}

/// A range of a map to fill; the map stays alive while the job waits.
struct Job {
    map: Bytes,
    start: usize,
    end: usize,
    file: Arc<Filled>,
}

/// The filling thread of one storage, started on its first job, ended when the storage and
/// every file it opened are dropped; and the files it fills: those the storage created.
pub(super) struct Populator {
    queue: Mutex<Queue>,
    written: Mutex<HashMap<String, Arc<Filled>>>,
    stats: Arc<Stats>,
}

enum Queue {
    NotStarted,
    Running(SyncSender<Job>),
    /// The thread could not be started, or the kernel cannot fill (before Linux 5.14).
    Off,
}

#[derive(Default)]
struct Stats {
    /// Bytes whose page tables were filled.
    filled: AtomicU64,
    /// Jobs dropped with the queue full.
    dropped: AtomicU64,
    /// The kernel refused to fill (`EINVAL`: no `MADV_POPULATE_READ`).
    unsupported: AtomicBool,
}

impl Populator {
    pub(super) fn new() -> Populator {
        Populator {
            queue: Mutex::new(Queue::NotStarted),
            written: Mutex::default(),
            stats: Arc::default(),
        }
    }

    /// The storage created `name`: its maps will be filled.
    pub(super) fn created(&self, name: &str) {
        if let Ok(mut w) = self.written.lock() {
            w.insert(name.to_string(), Arc::default());
        }
    }

    pub(super) fn renamed(&self, from: &str, to: &str) {
        if let Ok(mut w) = self.written.lock() {
            if let Some(f) = w.remove(from) {
                w.insert(to.to_string(), f);
            }
        }
    }

    pub(super) fn deleted(&self, name: &str) {
        if let Ok(mut w) = self.written.lock() {
            if let Some(f) = w.remove(name) {
                f.gone.store(true, Relaxed);
            }
        }
    }

    /// What has been filled of `name`, if the storage wrote it.
    pub(super) fn written(&self, name: &str) -> Option<Arc<Filled>> {
        self.written.lock().ok()?.get(name).cloned()
    }

    /// Asks for `[from, end)` of `map` (a whole map, as mapped) of `file` to be filled, in
    /// the background, less what was filled already.
    pub(super) fn fill(&self, file: &Arc<Filled>, map: &Bytes, from: usize, end: usize) {
        let end = end.min(map.len());
        let before = file.upto.fetch_max(end as u64, Relaxed);
        let start = from.max(usize::try_from(before).unwrap_or(usize::MAX));
        if !cfg!(target_os = "linux") || start >= end || self.stats.unsupported.load(Relaxed) {
            return;
        }
        let job = Job {
            map: map.clone(),
            start,
            end,
            file: file.clone(),
        };
        let Ok(mut queue) = self.queue.lock() else {
            return;
        };
        if let Queue::NotStarted = *queue {
            let (tx, rx) = sync_channel(QUEUE);
            let stats = self.stats.clone();
            let started = std::thread::Builder::new()
                .name("cerberus-populate".into())
                .spawn(move || run(rx, &stats));
            *queue = match started {
                Ok(_) => Queue::Running(tx),
                Err(_) => Queue::Off,
            };
        }
        if let Queue::Running(tx) = &*queue {
            if let Err(TrySendError::Full(_)) = tx.try_send(job) {
                self.stats.dropped.fetch_add(1, Relaxed);
            }
        }
    }

    /// Bytes filled so far, and whether the kernel can fill at all.
    #[cfg(test)]
    pub(super) fn filled(&self) -> (u64, bool) {
        (
            self.stats.filled.load(Relaxed),
            !self.stats.unsupported.load(Relaxed),
        )
    }
}

fn run(jobs: Receiver<Job>, stats: &Stats) {
    // Filling only saves clients' threads time: it yields their cores to them, as the
    // engine's flushes and compactions do by default (`Options::background_nice`).
    crate::priority::lower_priority(NICE);
    while let Ok(job) = jobs.recv() {
        if job.file.gone.load(Relaxed) || stats.unsupported.load(Relaxed) {
            continue;
        }
        match fill_resident(&job.map, job.start, job.end) {
            Some(filled) => stats.filled.fetch_add(filled as u64, Relaxed),
            None => {
                stats.unsupported.store(true, Relaxed);
                continue;
            }
        };
    }
}

/// Fills the page tables of the pages of `map[start..end]` the page cache holds; returns the
/// bytes filled, or `None` if this kernel cannot fill.
#[cfg(target_os = "linux")]
fn fill_resident(map: &Bytes, start: usize, end: usize) -> Option<usize> {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let base = map.as_ptr() as usize;
    if page == 0 || !base.is_multiple_of(page) {
        return Some(0);
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
            return Some(filled);
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
            } else if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                return None;
            }
        }
        at += len;
    }
    Some(filled)
}

#[cfg(not(target_os = "linux"))]
fn fill_resident(_map: &Bytes, _start: usize, _end: usize) -> Option<usize> {
    Some(0)
}
