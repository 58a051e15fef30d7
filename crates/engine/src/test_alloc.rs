//! The unit tests' allocator: the system's, counting the bytes each thread has allocated
//! and not freed, so that a test can weigh what a structure takes against what it says.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    // No destructor and a constant start: reading them never allocates.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // A thread being torn down has no counters left; its frees go uncounted.
    let _ = LIVE.try_with(|c| {
        let live = c.get() + delta;
        c.set(live);
        let _ = PEAK.try_with(|p| p.set(p.get().max(live)));
    });
}

fn size(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

// SAFETY: every call goes to `System` unchanged; the counter is a thread-local cell.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller's contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(size(layout.size()));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller's contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(size(layout.size()));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller's contract.
        unsafe { System.dealloc(ptr, layout) };
        count(-size(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as the caller's contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(size(new_size) - size(layout.size()));
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes this thread has allocated and not freed (frees of its bytes on other threads count
/// there).
pub(crate) fn live_bytes() -> isize {
    LIVE.try_with(Cell::get).unwrap_or(0)
}

/// The most [`live_bytes`] reached since [`reset_peak`] (or the thread's start).
pub(crate) fn peak_bytes() -> isize {
    PEAK.try_with(Cell::get).unwrap_or(0)
}

/// Starts [`peak_bytes`] again from what is live now.
pub(crate) fn reset_peak() {
    let _ = PEAK.try_with(|p| p.set(live_bytes()));
}
