//! Handles misused: a closed iterator's handle, one kind of handle for another, one
//! iterator from two threads, closes racing the opening of iterators and key spaces.

use crate::common::setup;
use crate::device::{close_device, close_key_space, create_key_space, open_key_space};
use crate::ffi;
use cerberus_kvs::code;
use std::time::Duration;

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

/// The codes of `close` called by two threads at once.
fn closed_by_two(close: impl Fn() -> i32 + Sync) -> Vec<i32> {
    let barrier = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        let closers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    close()
                })
            })
            .collect();
        closers.into_iter().map(|c| c.join().unwrap()).collect()
    })
}

/// Two threads closing one handle at once: exactly one close succeeds, for key spaces and
/// for devices (the second device close must not return before the first ran the queued
/// callbacks, so it is refused).
#[test]
fn two_threads_closing_one_handle_close_it_once() {
    let (rig, dev, _ks) = setup("twice");
    for round in 0..50 {
        let name = format!("twice{round}");
        create_key_space(dev, &name, 0).expect("create");
        let ks = open_key_space(dev, &name).expect("open");
        let codes = closed_by_two(|| close_key_space(ks));
        assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 1, "{codes:?}");
    }
    for _ in 0..20 {
        let other = rig.open(true).expect("open");
        let codes = closed_by_two(|| close_device(other));
        assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 1, "{codes:?}");
    }
    assert_eq!(close_device(dev), 0);
}
