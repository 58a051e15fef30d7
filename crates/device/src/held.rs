//! The bytes the whole device may hold for its clients (`max_held_bytes`), one count for
//! every wire (`Shared::held`). NVMe/TCP queues count their started commands' data and
//! buffers and unfetched vendor responses; native connections (plain and TLS) their replies
//! not yet written and their request frames, each of at least [`COUNTED_FROM`] bytes. Each
//! queue or connection has its own bound; this one caps their sum, so a thousand of them,
//! each within its bound, cannot take the process's memory.
//!
//! Past it, new work waits: a queue's next command, in arrival order, until another gives
//! bytes back (a vendor response is replaced by a refusal the host can fetch); a native
//! connection's next frame, unless the connection holds nothing at all (then it runs one
//! command alone), so no client waits on what others hold. When nothing is held, any one
//! command may start, so the largest value always goes through.

use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Notify;

/// Replies and frames under this many bytes are not counted: a connection's or queue's are
/// bounded by their number already, and counting them would put a shared atomic write on
/// every small command.
pub(crate) const COUNTED_FROM: usize = 4096;

/// A device-wide count of held bytes against a limit.
#[derive(Debug)]
pub(crate) struct HeldBytes {
    used: AtomicUsize,
    limit: usize,
    /// Queues waiting for room: only then does giving back wake anyone (a notify takes a
    /// lock; the hot path's completions never pay it).
    starved: AtomicUsize,
    freed: Notify,
}

impl HeldBytes {
    pub fn new(limit: usize) -> HeldBytes {
        HeldBytes {
            used: AtomicUsize::new(0),
            limit,
            starved: AtomicUsize::new(0),
            freed: Notify::new(),
        }
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    /// Whether something is held and `margin` more would pass the limit: a plain load, the
    /// native port's check per frame (its margin is what the answers not counted yet may
    /// add: one largest reply per network thread).
    pub fn over(&self, margin: usize) -> bool {
        let used = self.used.load(Ordering::Relaxed);
        used != 0 && used.saturating_add(margin) > self.limit
    }

    /// Whether `bytes` more would stay within the limit, even when nothing is held.
    pub fn fits(&self, bytes: usize) -> bool {
        self.used.load(Ordering::Relaxed).saturating_add(bytes) <= self.limit
    }

    fn room_for(&self, used: usize, bytes: usize) -> bool {
        used == 0 || used.saturating_add(bytes) <= self.limit
    }

    /// Whether `bytes` more would fit now.
    pub fn has_room(&self, bytes: usize) -> bool {
        self.room_for(self.used(), bytes)
    }

    /// Takes `bytes` if they fit.
    pub fn try_take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                self.room_for(used, bytes).then(|| used + bytes)
            })
            .is_ok()
    }

    /// Takes `bytes` whether or not they fit (what was checked with `has_room` a moment
    /// before: two queues may pass the limit by one response each).
    pub fn take(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::SeqCst);
    }

    /// Gives `bytes` back, waking the queues waiting for room.
    pub fn give(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.used.fetch_sub(bytes, Ordering::SeqCst);
        if self.starved.load(Ordering::SeqCst) > 0 {
            self.freed.notify_waiters();
        }
    }

    /// Returns once `bytes` would fit (without taking them).
    pub async fn room(&self, bytes: usize) {
        self.starved.fetch_add(1, Ordering::SeqCst);
        let _starving = Starving(&self.starved);
        loop {
            let freed = self.freed.notified();
            let mut freed = std::pin::pin!(freed);
            // Registered before the check: a give between the check and the wait wakes it.
            freed.as_mut().enable();
            if self.has_room(bytes) {
                return;
            }
            freed.await;
        }
    }
}

/// Room taken ahead for an answer not made yet (a command handed to a worker: its answer
/// would be counted only once made, and a connection may hand over many before then), given
/// back when dropped, after the answer went to the writer and was counted there.
pub(crate) struct Reserved {
    held: std::sync::Arc<HeldBytes>,
    bytes: usize,
}

impl Reserved {
    /// Takes `bytes` whether or not they fit: the frame was let in by the connection's check.
    pub fn take(held: &std::sync::Arc<HeldBytes>, bytes: usize) -> Reserved {
        if bytes > 0 {
            held.take(bytes);
        }
        Reserved {
            held: held.clone(),
            bytes,
        }
    }
}

impl Reserved {
    /// Gives back `bytes` of it early (a part whose answer is made and counted now).
    pub fn release(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        self.held.give(bytes);
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.held.give(self.bytes);
    }
}

/// `body` (a request frame's), counted in `held` until the last of its slices is dropped: a
/// command's key and value live as long as it needs them (held with the puts of its batch,
/// at a worker, in the engine's write, which copies them), and no longer. Before, a frame
/// was given back by the first reply of its command id, and ids are the client's to choose:
/// a small command under a large one's id gave the large body's count back while the body
/// still waited (review, third round, M2).
pub(crate) fn counted(body: bytes::Bytes, held: &std::sync::Arc<HeldBytes>) -> bytes::Bytes {
    held.take(body.len());
    bytes::Bytes::from_owner(CountedBody {
        body,
        held: held.clone(),
    })
}

struct CountedBody {
    body: bytes::Bytes,
    held: std::sync::Arc<HeldBytes>,
}

impl AsRef<[u8]> for CountedBody {
    fn as_ref(&self) -> &[u8] {
        &self.body
    }
}

impl Drop for CountedBody {
    fn drop(&mut self) {
        self.held.give(self.body.len());
    }
}

/// A connection's outgoing buffer, counted in `held` while it holds at least
/// [`COUNTED_FROM`] bytes, until it is written. An NVMe/TCP queue's answers leave the
/// counts of their commands (a Retrieve's buffer, a kept vendor response) when they are
/// encoded, and may then wait there for a host that reads slowly, up to the write deadline:
/// before the third review, uncounted (about 256 KiB and one answer per queue).
pub(crate) struct CountedBuf {
    held: std::sync::Arc<HeldBytes>,
    counted: usize,
}

impl CountedBuf {
    pub fn new(held: std::sync::Arc<HeldBytes>) -> CountedBuf {
        CountedBuf { held, counted: 0 }
    }

    /// The buffer holds `len` bytes now.
    pub fn grew_to(&mut self, len: usize) {
        if len >= COUNTED_FROM && len > self.counted {
            self.held.take(len - self.counted);
            self.counted = len;
        }
    }

    /// The buffer was written and emptied.
    pub fn emptied(&mut self) {
        self.held.give(std::mem::take(&mut self.counted));
    }
}

impl Drop for CountedBuf {
    fn drop(&mut self) {
        self.emptied();
    }
}

struct Starving<'a>(&'a AtomicUsize);

impl Drop for Starving<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn one_command_alone_passes_the_limit_none_beside_it() {
        let h = HeldBytes::new(100);
        assert!(h.try_take(500), "nothing held: any size");
        assert!(!h.try_take(1));
        h.give(500);
        assert!(h.try_take(60));
        assert!(h.try_take(40));
        assert!(!h.try_take(1));
        assert_eq!(h.used(), 100);
    }

    #[tokio::test]
    async fn a_waiter_wakes_when_bytes_come_back() {
        let h = Arc::new(HeldBytes::new(100));
        assert!(h.try_take(100));
        let waiter = {
            let h = h.clone();
            tokio::spawn(async move { h.room(50).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        h.give(60);
        tokio::time::timeout(std::time::Duration::from_secs(10), waiter)
            .await
            .expect("woken")
            .expect("joined");
        assert_eq!(h.starved.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_counted_body_is_held_until_its_last_slice_goes() {
        let h = Arc::new(HeldBytes::new(1 << 20));
        let body = counted(bytes::Bytes::from(vec![7u8; 5000]), &h);
        assert_eq!(h.used(), 5000);
        let value = body.slice(100..);
        drop(body);
        assert_eq!(
            h.used(),
            5000,
            "a slice (the command's value) still holds it"
        );
        assert_eq!(value[0], 7);
        drop(value);
        assert_eq!(h.used(), 0);
    }

    #[test]
    fn a_buffer_counts_from_its_threshold_until_emptied() {
        let h = Arc::new(HeldBytes::new(1 << 20));
        let mut out = CountedBuf::new(h.clone());
        out.grew_to(100);
        assert_eq!(h.used(), 0, "small: not counted");
        out.grew_to(COUNTED_FROM + 10);
        out.grew_to(3 * COUNTED_FROM);
        assert_eq!(h.used(), 3 * COUNTED_FROM);
        out.emptied();
        assert_eq!(h.used(), 0);
        out.grew_to(COUNTED_FROM);
        drop(out);
        assert_eq!(h.used(), 0, "given back when the connection goes");
    }

    #[test]
    fn a_reservation_is_held_until_dropped() {
        let h = Arc::new(HeldBytes::new(100));
        let mut r = Reserved::take(&h, 80);
        assert_eq!(h.used(), 80);
        assert!(!h.has_room(30));
        r.release(30);
        assert_eq!(h.used(), 50);
        r.release(500);
        assert_eq!(h.used(), 0, "never more than it holds");
        drop(r);
        assert_eq!(h.used(), 0);
    }
}
