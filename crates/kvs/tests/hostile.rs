//! The hostile review's tests (issue 63): what a buggy or hostile C program does with
//! handles and callbacks (stale iterator handles, one kind of handle passed for another,
//! callbacks that re-enter the library, closes racing async calls, a full queue, one
//! iterator read from two threads), against a device this test starts.

#[allow(dead_code)]
#[path = "stress/device.rs"]
mod device;
#[allow(dead_code)]
#[path = "stress/ffi.rs"]
mod ffi;

use cerberus_kvs::{
    code, kvs_delete_kvp_async, kvs_store_kvp_async, KvsKey, KvsOptionDelete,
    KvsPostprocessContext, KvsValue,
};
use device::{close_device, close_key_space, create_key_space, open_key_space, Rig, Wire};
use ffi::{key_of, ptr, value_of, H};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// A device, an admin handle and key space `name` open on it.
fn setup(name: &str) -> (Rig, H, H) {
    let rig = Rig::start(Wire::Native);
    let dev = rig.open(true).expect("open the device");
    create_key_space(dev, name, 0).expect("create");
    let ks = open_key_space(dev, name).expect("open");
    (rig, dev, ks)
}

/// A double delete, or a next after delete, of an iterator handle must not reach the
/// iterator opened after it (another thread's, in a real program).
#[test]
fn a_closed_iterator_handle_names_no_later_iterator() {
    let (_rig, dev, ks) = setup("iters");
    let prefix = *b"itr0";
    for i in 0..5u8 {
        assert_eq!(ffi::store(ks, &[b'i', b't', b'r', b'0', i], b"v", None), 0);
    }
    let (c, first) = ffi::create_iterator(ks, &prefix, false);
    assert_eq!(c, 0);
    assert_eq!(ffi::delete_iterator(ks, first), 0);
    let (c, second) = ffi::create_iterator(ks, &prefix, false);
    assert_eq!(c, 0);
    assert_eq!(
        ffi::iterate_next(ks, first, 4096).code,
        code::ITERATOR_NOT_EXIST,
        "a next on the closed handle read the new iterator"
    );
    assert_eq!(
        ffi::delete_iterator(ks, first),
        code::ITERATOR_NOT_EXIST,
        "the second delete closed the new iterator"
    );
    let b = ffi::iterate_next(ks, second, 4096);
    assert_eq!((b.code, b.entries, b.end), (0, 5, true));
    assert_eq!(ffi::delete_iterator(ks, second), 0);
    assert_eq!(close_device(dev), 0);
}

/// A device handle passed where a key space handle goes (or the other way) is not a
/// handle of the other kind, even when both registries have handed out as many.
#[test]
fn a_device_handle_is_no_key_space_handle() {
    let (rig, dev, ks) = setup("kinds");
    let mut devs = vec![dev];
    let mut spaces = vec![ks];
    // Open more of whichever kind is behind until a number of one kind equals one of the
    // other, or show that none can.
    for i in 0..64 {
        let (d, k) = (*devs.last().unwrap(), *spaces.last().unwrap());
        if d == k {
            break;
        }
        if d < k {
            devs.push(rig.open(true).expect("open"));
        } else {
            let name = format!("kinds{i}");
            create_key_space(dev, &name, 0).expect("create");
            spaces.push(open_key_space(dev, &name).expect("open"));
        }
    }
    for &d in &devs {
        assert_eq!(
            ffi::store(d, b"key1", b"v", None),
            code::KS_NOT_OPEN,
            "device {d:#x}"
        );
    }
    for &k in &spaces {
        assert_eq!(ffi::capacity(k).0, code::DEV_NOT_EXIST, "key space {k:#x}");
    }
    for d in devs {
        assert_eq!(close_device(d), 0);
    }
}

/// What the re-entering callbacks do, by `private2`.
const CLOSE_KEY_SPACE: usize = 1;
const CLOSE_DEVICE: usize = 2;
const SUBMIT_MORE: usize = 3;

struct Reenter {
    ks: H,
    dev: H,
    key: KvsKey,
    value: KvsValue,
    calls: AtomicUsize,
    /// The code each nested call returned (queued or not).
    nested: AtomicUsize,
}

unsafe extern "C" fn reenter(ctx: *mut KvsPostprocessContext) {
    // SAFETY: the test's context: private1 is a Reenter that outlives the callbacks.
    let ctx = unsafe { &*ctx };
    let r = unsafe { &mut *ctx.private1.cast::<Reenter>() };
    r.calls.fetch_add(1, Ordering::SeqCst);
    match ctx.private2 as usize {
        CLOSE_KEY_SPACE => {
            close_key_space(r.ks);
        }
        CLOSE_DEVICE => {
            close_device(r.dev);
        }
        SUBMIT_MORE => {
            let me = (r as *mut Reenter).cast::<c_void>();
            // SAFETY: the key and value live in `r`.
            let c = unsafe {
                kvs_store_kvp_async(
                    ptr(r.ks),
                    &mut r.key,
                    &mut r.value,
                    null_mut(),
                    me,
                    null_mut(),
                    Some(reenter),
                )
            };
            r.nested.store(c as usize + 1, Ordering::SeqCst);
        }
        _ => {}
    }
}

fn wait_for(what: &str, f: impl Fn() -> bool) {
    for _ in 0..2000 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("no {what} after 10 s");
}

/// Callbacks that close their key space or device, or queue more calls: no crash, no
/// hang, each queued call's callback runs once, and the handles are closed after.
#[test]
fn callbacks_that_re_enter_the_library() {
    for action in [CLOSE_KEY_SPACE, CLOSE_DEVICE, SUBMIT_MORE] {
        let (_rig, dev, ks) = setup("reenter");
        let key = b"reenter1".to_vec();
        let val = b"value".to_vec();
        let mut r = Box::new(Reenter {
            ks,
            dev,
            key: key_of(&key),
            value: value_of(&val),
            calls: AtomicUsize::new(0),
            nested: AtomicUsize::new(0),
        });
        let me = (&mut *r as *mut Reenter).cast::<c_void>();
        let mut keys: Vec<KvsKey> = (0..20).map(|_| key_of(&key)).collect();
        let mut opt = KvsOptionDelete {
            kvs_delete_error: 0,
        };
        let mut queued = 0;
        for k in keys.iter_mut() {
            // SAFETY: everything lives until the callbacks were counted below.
            let c = unsafe {
                kvs_delete_kvp_async(
                    ptr(ks),
                    k,
                    &mut opt,
                    me,
                    action as *mut c_void,
                    Some(reenter),
                )
            };
            if c == 0 {
                queued += 1;
            }
        }
        assert!(queued > 0);
        let want = if action == SUBMIT_MORE { 2 } else { 1 };
        // Every queued call calls back (a nested store too, once queued).
        wait_for("callbacks", || {
            r.calls.load(Ordering::SeqCst) >= queued.min(want)
        });
        if action == SUBMIT_MORE {
            wait_for("callbacks", || r.calls.load(Ordering::SeqCst) > queued);
            assert_eq!(close_device(dev), 0);
        } else {
            // A callback's close cannot wait for its own thread: the rest run after it.
            wait_for("callbacks", || r.calls.load(Ordering::SeqCst) >= queued);
            // The handle the callback closed is closed; the device closes (or is closed).
            let c = close_device(dev);
            assert!(c == 0 || c == code::DEV_NOT_EXIST, "{c:#x}");
        }
        let n = r.calls.load(Ordering::SeqCst);
        if action != SUBMIT_MORE {
            assert_eq!(n, queued, "each queued call calls back once");
        }
        assert_eq!(ffi::store(ks, b"k", b"v", None), code::KS_NOT_OPEN);
    }
}

static CALLED: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn count(_: *mut KvsPostprocessContext) {
    CALLED.fetch_add(1, Ordering::SeqCst);
}

/// Threads queueing async stores on a key space, with callbacks that count themselves in
/// `private1` (an `AtomicUsize`) and check their result is success or "not open".
unsafe extern "C" fn count_in(ctx: *mut KvsPostprocessContext) {
    // SAFETY: the library's context; private1 an AtomicUsize the test keeps.
    let ctx = unsafe { &*ctx };
    assert!(
        ctx.result == 0 || ctx.result == code::KS_NOT_OPEN,
        "{:#x}",
        ctx.result
    );
    unsafe { &*ctx.private1.cast::<AtomicUsize>() }.fetch_add(1, Ordering::SeqCst);
}

/// A key space closed while other threads queue calls on it: the calls queued before the
/// close run (or find it closed), each calls back once; the calls after are refused.
#[test]
fn closing_a_key_space_while_other_threads_queue_calls() {
    let (_rig, dev, ks) = setup("ksracing");
    let called: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
    let accepted = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(5));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (accepted, start) = (accepted.clone(), start.clone());
            std::thread::spawn(move || {
                let k = Box::leak(Box::new(key_of(b"ksracing")));
                let v = Box::leak(Box::new(value_of(&[9u8; 64])));
                let me = (called as *const AtomicUsize).cast_mut().cast::<c_void>();
                start.wait();
                loop {
                    // SAFETY: leaked structures.
                    let c = unsafe {
                        kvs_store_kvp_async(
                            ptr(ks),
                            k,
                            v,
                            null_mut(),
                            me,
                            null_mut(),
                            Some(count_in),
                        )
                    };
                    match c {
                        0 => {
                            accepted.fetch_add(1, Ordering::SeqCst);
                        }
                        code::SYS_IO => std::thread::yield_now(),
                        code::KS_NOT_OPEN => return,
                        other => panic!("queued with {other:#x}"),
                    }
                }
            })
        })
        .collect();
    start.wait();
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(close_key_space(ks), 0);
    for t in threads {
        t.join().expect("submitter");
    }
    // The device's close waits for every queued call.
    assert_eq!(close_device(dev), 0);
    assert_eq!(
        called.load(Ordering::SeqCst),
        accepted.load(Ordering::SeqCst)
    );
}

/// Threads queue async stores while another closes the device: every call the library
/// accepted calls back exactly once before the close returns; the refused never do.
#[test]
fn closing_a_device_while_other_threads_queue_calls() {
    let (_rig, dev, ks) = setup("racing");
    let key = b"racing01".to_vec();
    let val = vec![5u8; 100];
    let accepted = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(5));
    let kb = Arc::new(key);
    let vb = Arc::new(val);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (accepted, start, kb, vb) =
                (accepted.clone(), start.clone(), kb.clone(), vb.clone());
            std::thread::spawn(move || {
                // Leaked: valid whenever a queued call runs.
                let k: &'static mut KvsKey =
                    Box::leak(Box::new(key_of(Box::leak(kb.to_vec().into_boxed_slice()))));
                let v: &'static mut KvsValue = Box::leak(Box::new(value_of(Box::leak(
                    vb.to_vec().into_boxed_slice(),
                ))));
                start.wait();
                loop {
                    // SAFETY: leaked structures.
                    let c = unsafe {
                        kvs_store_kvp_async(
                            ptr(ks),
                            k,
                            v,
                            null_mut(),
                            null_mut(),
                            null_mut(),
                            Some(count),
                        )
                    };
                    match c {
                        0 => {
                            accepted.fetch_add(1, Ordering::SeqCst);
                        }
                        code::SYS_IO => std::thread::yield_now(),
                        code::DEV_NOT_EXIST | code::KS_NOT_OPEN => return,
                        other => panic!("queued with {other:#x}"),
                    }
                }
            })
        })
        .collect();
    start.wait();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(close_device(dev), 0);
    let after_close = CALLED.load(Ordering::SeqCst);
    for t in threads {
        t.join().expect("submitter");
    }
    assert_eq!(after_close, accepted.load(Ordering::SeqCst));
    assert_eq!(
        CALLED.load(Ordering::SeqCst),
        accepted.load(Ordering::SeqCst)
    );
}

/// One iterator read from two threads at once: together they read every key once.
#[test]
fn one_iterator_read_from_two_threads() {
    let (_rig, dev, ks) = setup("shared");
    let n = 500u32;
    for i in 0..n {
        let k = format!("shr0{i:05}");
        assert_eq!(ffi::store(ks, k.as_bytes(), b"x", None), 0);
    }
    let (c, it) = ffi::create_iterator(ks, b"shr0", false);
    assert_eq!(c, 0);
    let read = |_| {
        let mut keys = Vec::new();
        loop {
            let b = ffi::iterate_next(ks, it, 200);
            assert_eq!(b.code, 0);
            keys.extend(
                ffi::parse_entries(&b.bytes, false)
                    .unwrap()
                    .into_iter()
                    .map(|(k, _)| k),
            );
            if b.end {
                return keys;
            }
        }
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| read(0));
        let b = s.spawn(|| read(1));
        (a.join().unwrap(), b.join().unwrap())
    });
    let mut all: Vec<Vec<u8>> = a.into_iter().chain(b).collect();
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!((before, all.len()), (n as usize, n as usize));
    assert_eq!(close_device(dev), 0);
}

/// The result each `record` callback saw, by `private2` (an index).
static RESULTS: [std::sync::atomic::AtomicI32; 4] =
    [const { std::sync::atomic::AtomicI32::new(-1) }; 4];
unsafe extern "C" fn record(ctx: *mut KvsPostprocessContext) {
    // SAFETY: the library's context.
    let ctx = unsafe { &*ctx };
    RESULTS[ctx.private2 as usize].store(ctx.result, Ordering::SeqCst);
}

/// A misaligned offset is `KVS_ERR_VALUE_OFFSET_MISALIGNED` whether the key exists or
/// not, from the async retrieve as from the sync one.
#[test]
fn an_async_retrieve_checks_its_offset_as_the_sync_one() {
    let (_rig, dev, ks) = setup("offsets");
    assert_eq!(ffi::store(ks, b"present1", &[1u8; 2000], None), 0);
    for (i, key) in [&b"present1"[..], &b"absent01"[..]].into_iter().enumerate() {
        let sync = ffi::retrieve(ks, key, 64, 3, false).code;
        assert_eq!(sync, code::VALUE_OFFSET_MISALIGNED);
        let mut k = key_of(key);
        let mut buf = [0u8; 64];
        let mut v = KvsValue {
            value: buf.as_mut_ptr().cast(),
            length: 64,
            actual_value_size: 0,
            offset: 3,
        };
        // SAFETY: everything lives until the close below waited for the callback.
        let c = unsafe {
            cerberus_kvs::kvs_retrieve_kvp_async(
                ptr(ks),
                &mut k,
                null_mut(),
                null_mut(),
                i as *mut c_void,
                &mut v,
                Some(record),
            )
        };
        assert_eq!(c, 0);
        wait_for("the callback", || RESULTS[i].load(Ordering::SeqCst) != -1);
        assert_eq!(RESULTS[i].load(Ordering::SeqCst), sync, "key {i}");
    }
    assert_eq!(close_device(dev), 0);
}

static GATE: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
static GATE_CV: std::sync::Condvar = std::sync::Condvar::new();
static GATED: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn gated(_: *mut KvsPostprocessContext) {
    let mut open = GATE.lock().unwrap_or_else(|p| p.into_inner());
    while !*open {
        open = GATE_CV.wait(open).unwrap_or_else(|p| p.into_inner());
    }
    GATED.fetch_add(1, Ordering::SeqCst);
}

/// Callbacks that block (on something outside the library) until the queue is full: the
/// next call is refused with `KVS_ERR_SYS_IO` and never calls back; once they go on, every
/// accepted call calls back once.
#[test]
fn a_full_queue_refuses_and_loses_nothing() {
    let (_rig, dev, ks) = setup("full");
    let key = b"fullkey1".to_vec();
    let mut k = key_of(&key);
    let mut opt = KvsOptionDelete {
        kvs_delete_error: 0,
    };
    let (mut accepted, mut refused) = (0usize, 0usize);
    while refused < 3 && accepted < 100_000 {
        // SAFETY: the key and option live until the close below waited for every call.
        let c = unsafe {
            kvs_delete_kvp_async(
                ptr(ks),
                &mut k,
                &mut opt,
                null_mut(),
                null_mut(),
                Some(gated),
            )
        };
        match c {
            0 => accepted += 1,
            code::SYS_IO => refused += 1,
            other => panic!("{other:#x}"),
        }
    }
    assert_eq!(refused, 3, "the queue never filled ({accepted} accepted)");
    *GATE.lock().unwrap() = true;
    GATE_CV.notify_all();
    assert_eq!(close_device(dev), 0);
    assert_eq!(GATED.load(Ordering::SeqCst), accepted);
}

struct Waits {
    second_done: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
    first_saw_second: std::sync::atomic::AtomicBool,
}

unsafe extern "C" fn first_waits(ctx: *mut KvsPostprocessContext) {
    // SAFETY: private1 is the test's Waits, alive until the test ends.
    let w = unsafe { &*(*ctx).private1.cast::<Waits>() };
    if unsafe { (*ctx).private2 }.is_null() {
        let mut done = w.second_done.lock().unwrap_or_else(|p| p.into_inner());
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while !*done && std::time::Instant::now() < deadline {
            done =
                w.cv.wait_timeout(done, Duration::from_millis(50))
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
        }
        w.first_saw_second.store(*done, Ordering::SeqCst);
    } else {
        *w.second_done.lock().unwrap_or_else(|p| p.into_inner()) = true;
        w.cv.notify_all();
    }
}

/// A callback that waits for a later call's callback. Calls queued together are taken by
/// one completion thread, which runs their callbacks in turn: the later callback waits
/// behind the first while the other threads idle (docs/kvs-api.md says not to wait).
#[test]
#[ignore = "known: a callback waiting for a later call's callback waits behind itself (job_queue/completion take calls in bursts)"]
fn a_callback_waiting_for_a_later_callback() {
    let (_rig, dev, ks) = setup("waits");
    let w = Waits {
        second_done: std::sync::Mutex::new(false),
        cv: std::sync::Condvar::new(),
        first_saw_second: std::sync::atomic::AtomicBool::new(false),
    };
    let me = (&w as *const Waits).cast_mut().cast::<c_void>();
    let (ka, kb) = (b"waits001".to_vec(), b"waits002".to_vec());
    let (mut a, mut b) = (key_of(&ka), key_of(&kb));
    let mut opt = KvsOptionDelete {
        kvs_delete_error: 0,
    };
    // SAFETY: all lives until the close below.
    unsafe {
        kvs_delete_kvp_async(ptr(ks), &mut a, &mut opt, me, null_mut(), Some(first_waits));
        kvs_delete_kvp_async(
            ptr(ks),
            &mut b,
            &mut opt,
            me,
            std::ptr::dangling_mut::<c_void>(),
            Some(first_waits),
        );
    }
    assert_eq!(close_device(dev), 0);
    assert!(
        w.first_saw_second.load(Ordering::SeqCst),
        "the second callback waited behind the first"
    );
}

/// A key space closed while another thread creates an iterator on it: the iterator is
/// closed with it (`kvs_create_iterator` answers `KVS_ERR_KS_NOT_OPEN`, or its iterator is
/// gone), never left holding one of the device handle's 16 slots.
#[test]
fn closing_a_key_space_while_an_iterator_is_created() {
    let (_rig, dev, ks) = setup("itclose");
    assert_eq!(close_key_space(ks), 0);
    for round in 0..60u64 {
        let ks = open_key_space(dev, "itclose").expect("reopen");
        let creator = std::thread::spawn(move || loop {
            let (c, it) = ffi::create_iterator(ks, b"none", false);
            match c {
                // Closed here, or by the key space's close (then `KVS_ERR_KS_NOT_OPEN`).
                0 => {
                    ffi::delete_iterator(ks, it);
                }
                code::KS_NOT_OPEN => return true,
                // Every slot taken by iterators of closed key spaces.
                code::ITERATOR_MAX => return false,
                other => panic!("create iterator: {other:#x}"),
            }
        });
        std::thread::sleep(Duration::from_micros(200 + round * 37 % 500));
        assert_eq!(close_key_space(ks), 0);
        let slots_left = creator.join().expect("creator");
        assert!(
            slots_left,
            "round {round}: iterators of closed key spaces hold every slot"
        );
    }
    // All 16 slots are free for another key space.
    create_key_space(dev, "itclose2", 0).expect("create");
    let other = open_key_space(dev, "itclose2").expect("open");
    for i in 0..16 {
        assert_eq!(
            ffi::create_iterator(other, b"none", false).0,
            0,
            "iterator {i}"
        );
    }
    assert_eq!(close_device(dev), 0);
}

/// A device closed while another thread opens key spaces on it: every key space handle
/// the open returned is closed with the device (`KVS_ERR_KS_NOT_OPEN` after), none left
/// working on the closed handle's connections.
#[test]
fn closing_a_device_while_key_spaces_open() {
    for round in 0..5u64 {
        let (_rig, dev, ks) = setup("opening");
        assert_eq!(close_key_space(ks), 0);
        let names: Vec<String> = (0..40).map(|i| format!("opening{i}")).collect();
        for n in &names {
            create_key_space(dev, n, 0).expect("create");
        }
        let opener = std::thread::spawn(move || {
            let mut opened = Vec::new();
            for n in &names {
                match open_key_space(dev, n) {
                    Ok(h) => opened.push(h),
                    Err(code::DEV_NOT_EXIST) => break,
                    Err(other) => panic!("open {n}: {other:#x}"),
                }
            }
            opened
        });
        std::thread::sleep(Duration::from_millis(2 + round * 3));
        assert_eq!(close_device(dev), 0);
        for h in opener.join().expect("opener") {
            assert_eq!(
                ffi::store(h, b"key1", b"v", None),
                code::KS_NOT_OPEN,
                "round {round}"
            );
        }
    }
}
