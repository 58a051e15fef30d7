//! The process's memory, from `/proc/self/status` (Linux; elsewhere the figures are `None`),
//! and the heap bytes allocated while counting is on ([`CountingAlloc`], the global allocator
//! of the binary: resident memory cannot tell what a few thousand small objects take once the
//! allocator holds freed pages it hands out again).

use serde::Serialize;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// A global allocator that, while counting is on ([`CountingAlloc::count`]), adds the bytes it
/// allocates to a counter and takes the bytes it frees from it (whenever they were allocated).
/// Off, it costs one relaxed load per call.
pub struct CountingAlloc<A> {
    inner: A,
    counting: AtomicBool,
    delta: AtomicI64,
}

impl<A> CountingAlloc<A> {
    pub const fn new(inner: A) -> CountingAlloc<A> {
        CountingAlloc {
            inner,
            counting: AtomicBool::new(false),
            delta: AtomicI64::new(0),
        }
    }

    /// Turns counting on (from 0) or off.
    pub fn count(&self, on: bool) {
        if on {
            self.delta.store(0, Ordering::Relaxed);
        }
        self.counting.store(on, Ordering::Relaxed);
    }

    /// Bytes allocated minus bytes freed since counting was turned on (by every thread).
    pub fn delta(&self) -> i64 {
        self.delta.load(Ordering::Relaxed)
    }

    #[inline]
    fn add(&self, bytes: usize, sign: i64) {
        if self.counting.load(Ordering::Relaxed) {
            self.delta.fetch_add(sign * bytes as i64, Ordering::Relaxed);
        }
    }
}

// SAFETY: every call goes to the inner allocator with the caller's arguments unchanged; the
// counting touches only atomics and allocates nothing.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAlloc<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = self.inner.alloc(layout);
        if !p.is_null() {
            self.add(layout.size(), 1);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = self.inner.alloc_zeroed(layout);
        if !p.is_null() {
            self.add(layout.size(), 1);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.add(layout.size(), -1);
        self.inner.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = self.inner.realloc(ptr, layout, new_size);
        if !p.is_null() {
            self.add(new_size, 1);
            self.add(layout.size(), -1);
        }
        p
    }
}

/// The binary's allocator. The engine frees on background threads what writers allocated
/// (frozen memtables); mimalloc handles such cross-thread frees without contending on one arena
/// lock, unlike glibc malloc. Wrapped to count heap bytes while `itermem` measures (off
/// otherwise: one relaxed load per call). Built without transparent huge pages (`no_thp`):
/// mimalloc asks for them on its arenas, and each page it took back from the system after
/// purging it cost a fault that cleared 2 MiB (a quarter of a device run's CPU at 64 clients
/// pipelined, a run's throughput swinging 2x with it); the device's own binary, on glibc
/// malloc, asks for none.
#[global_allocator]
static GLOBAL: CountingAlloc<mimalloc::MiMalloc> = CountingAlloc::new(mimalloc::MiMalloc);

/// Turns the binary's heap counting on (from 0) or off.
pub fn count_heap(on: bool) {
    GLOBAL.count(on);
}

/// Heap bytes allocated minus bytes freed since [`count_heap`] turned counting on.
pub fn heap_delta() -> i64 {
    GLOBAL.delta()
}

/// Resident memory of the process at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemorySample {
    /// `VmRSS`: resident now.
    pub rss_bytes: Option<u64>,
    /// `VmHWM`: the most resident so far (since the process started, or since the last
    /// [`reset_peak`]).
    pub peak_rss_bytes: Option<u64>,
}

impl MemorySample {
    /// The process's memory now.
    pub fn now() -> MemorySample {
        std::fs::read_to_string("/proc/self/status")
            .map(|s| parse_status(&s))
            .unwrap_or_default()
    }
}

/// `VmRSS` and `VmHWM` of a `/proc/PID/status` text (their values are in kB, that is KiB).
pub fn parse_status(status: &str) -> MemorySample {
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix(':')?;
            let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kib * 1024)
        })
    };
    MemorySample {
        rss_bytes: field("VmRSS"),
        peak_rss_bytes: field("VmHWM"),
    }
}

/// Starts the peak (`VmHWM`) over from the current resident size, so that the peak of each
/// engine's run is its own (writes 5 to `/proc/self/clear_refs`). Whether it could.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_parsed_in_bytes() {
        let status = "Name:\tcerberus-bench\nVmPeak:\t  900000 kB\nVmHWM:\t    2048 kB\n\
                      VmRSS:\t    1024 kB\nThreads:\t5\n";
        assert_eq!(
            parse_status(status),
            MemorySample {
                rss_bytes: Some(1 << 20),
                peak_rss_bytes: Some(2 << 20),
            }
        );
        assert_eq!(parse_status("VmRSS: x kB\n"), MemorySample::default());
        assert_eq!(parse_status(""), MemorySample::default());
    }

    #[test]
    fn the_heap_counter_sees_what_is_allocated() {
        // An allocator of its own, so that other tests' threads do not count.
        let a = CountingAlloc::new(std::alloc::System);
        let layout = Layout::from_size_align(1 << 20, 8).unwrap();
        a.count(true);
        // SAFETY: a non-zero layout, freed with the layout of its last size.
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null());
            assert_eq!(a.delta(), 1 << 20);
            let p = a.realloc(p, layout, 3 << 20);
            assert_eq!(a.delta(), 3 << 20);
            a.dealloc(p, Layout::from_size_align(3 << 20, 8).unwrap());
        }
        assert_eq!(a.delta(), 0);
        a.count(false);
        let p = unsafe { a.alloc(layout) };
        assert_eq!(a.delta(), 0);
        unsafe { a.dealloc(p, layout) };
    }

    #[test]
    fn this_process_has_memory() {
        let m = MemorySample::now();
        if cfg!(target_os = "linux") {
            let (rss, peak) = (m.rss_bytes.unwrap(), m.peak_rss_bytes.unwrap());
            assert!(rss > 0 && peak >= rss / 2, "{m:?}");
        }
    }
}
