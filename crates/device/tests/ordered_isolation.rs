//! A tenant whose write waits on a worker holds up no other tenant's held puts on the same
//! network thread. Tenant A's write takes 3 s on a worker (the `fault-injection` sleep, as a
//! write the engine holds up); A's put on another connection is held, and its piece waits
//! behind that write; tenant B's put, held on the same thread, is answered at once. Before,
//! the task that stores the held puts waited for A's piece, so B's put waited the 3 s too.

#![cfg(feature = "fault-injection")]

mod common;

use cerberus_host::WriteOptions;
use std::time::Duration;

/// The key whose store sleeps for its value's milliseconds on the thread that runs it.
const SLEEP_KEY: &[u8] = b"\0fault-injection:sleep-ms";

#[test]
fn a_tenant_behind_its_slow_write_holds_up_no_other_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.network_threads = 1);
    let (a1, a, a_secret) = common::tenant(&dev, "a");
    let a2 = common::connect(&dev);
    a2.open_namespace(a, &a_secret).expect("auth");
    let (b1, b, _) = common::tenant(&dev, "b");
    std::thread::scope(|s| {
        let slow = s.spawn(|| {
            // A synchronous store goes to a worker, in its connection's order.
            a1.namespace(a)
                .with_write_options(WriteOptions { sync: true })
                .put(SLEEP_KEY, "3000")
                .expect("the slow write");
        });
        std::thread::sleep(Duration::from_millis(300));
        // Held, then stored after the slow write (a piece waits for its namespace's jobs).
        let behind = s.spawn(|| a2.namespace(a).put(&b"k"[..], &b"a"[..]).expect("A's put"));
        std::thread::sleep(Duration::from_millis(300));
        b1.namespace(b).put(&b"k"[..], &b"b"[..]).expect("B's put");
        assert!(
            !slow.is_finished(),
            "B's put was answered only after A's slow write"
        );
        assert!(
            !behind.is_finished(),
            "A's put did not wait for A's slow write"
        );
        slow.join().unwrap();
        behind.join().unwrap();
    });
    assert_eq!(
        a1.namespace(a).get(&b"k"[..]).unwrap().as_deref(),
        Some(&b"a"[..])
    );
    dev.shutdown().unwrap();
}
