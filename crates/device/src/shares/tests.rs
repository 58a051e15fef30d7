//! The tags on a virtual clock (exact ratios), and the gate on a single-threaded runtime.

use super::gate::pass;
use super::tags::{Book, Candidate, Choice, Phase};
use super::*;
use std::cell::Cell;
use std::rc::Rc;

const SEC: u64 = 1_000_000_000;

fn shares(r: u64, w: u32, l: u64) -> IoShares {
    IoShares {
        reservation_ops: r,
        weight: w,
        limit_ops: l,
        ..IoShares::default()
    }
}

/// A server that takes `cost_ns` per command, every namespace in `nss` always backlogged
/// with commands of `bytes`, run from 0 until `until`: the commands each got.
fn run(book: &mut Book, nss: &[u32], bytes: u64, cost_ns: u64, until: u64) -> Vec<u64> {
    let cands: Vec<Candidate> = nss.iter().map(|&ns| Candidate { ns, bytes }).collect();
    let mut got = vec![0u64; nss.len()];
    let mut now = 0;
    for &ns in nss {
        book.arrive(ns, now);
    }
    while now < until {
        match book.choose(&cands, now) {
            Choice::Serve(i, phase) => {
                book.serve(nss[i], bytes, phase, now, now);
                // Still backlogged: the next command is there at once.
                book.arrive(nss[i], now);
                got[i] += 1;
                now += cost_ns;
            }
            Choice::WaitUntil(t) => now = t,
            Choice::Empty => unreachable!(),
        }
    }
    got
}

#[test]
fn a_limit_caps_the_rate_and_saves_up_no_burst() {
    let mut book = Book::default();
    book.set(1, shares(0, 1, 200));
    // A fast server (1 us a command): the limit alone holds the namespace back.
    let got = run(&mut book, &[1], 0, 1_000, SEC);
    assert!((200..=201).contains(&got[0]), "{got:?}");
    // Idle for 10 s, then busy for 1 s more: still at most 201.
    let mut now = 11 * SEC;
    let mut n = 0;
    while now < 12 * SEC {
        let at = book.book_slot(1, 0, now);
        if at >= 12 * SEC {
            break;
        }
        n += 1;
        now = at;
    }
    assert!((200..=201).contains(&n), "{n}");
}

#[test]
fn a_bytes_limit_counts_bytes() {
    let mut book = Book::default();
    book.set(
        1,
        IoShares {
            limit_bytes: 1 << 20,
            ..IoShares::default()
        },
    );
    // 100 KiB a command against 1 MiB/s: about 10 a second.
    let got = run(&mut book, &[1], 100 << 10, 1_000, SEC);
    assert!((10..=11).contains(&got[0]), "{got:?}");
}

#[test]
fn weights_divide_the_server() {
    let mut book = Book::default();
    book.set(1, shares(0, 1, 0));
    book.set(2, shares(0, 3, 0));
    let got = run(&mut book, &[1, 2], 0, 1_000, 4_000_000);
    assert_eq!(got[0] + got[1], 4_000);
    assert!(got[0].abs_diff(1_000) <= 1, "{got:?}");
    // Bytes cost: a namespace moving 4 KiB a command pays two units per command.
    let mut book = Book::default();
    book.set(1, IoShares::default());
    book.set(2, IoShares::default());
    let cands = [
        Candidate { ns: 1, bytes: 0 },
        Candidate { ns: 2, bytes: 4096 },
    ];
    let (mut a, mut b) = (0, 0);
    book.arrive(1, 0);
    book.arrive(2, 0);
    for _ in 0..3_000 {
        let Choice::Serve(i, phase) = book.choose(&cands, 0) else {
            panic!("no choice");
        };
        book.serve(cands[i].ns, cands[i].bytes, phase, 0, 0);
        book.arrive(cands[i].ns, 0);
        if i == 0 {
            a += 1
        } else {
            b += 1
        }
    }
    assert!((a as i64 - 2 * b as i64).abs() <= 2, "{a} {b}");
}

#[test]
fn a_floor_holds_against_heavier_neighbours() {
    let mut book = Book::default();
    // The victim: 100 ops/s reserved, weight 1; seven neighbours of weight 100. The server
    // does 1000 commands a second.
    book.set(1, shares(100, 1, 0));
    for ns in 2..9 {
        book.set(ns, shares(0, 100, 0));
    }
    let nss: Vec<u32> = (1..9).collect();
    let got = run(&mut book, &nss, 0, SEC / 1000, SEC);
    // Its floor, and about its share (1/701) of the rest.
    assert!((100..=103).contains(&got[0]), "{got:?}");
    assert_eq!(book.stats(1).map(|s| s.reservation_ops), Some(100));
    // Without the floor, only its share.
    let mut book = Book::default();
    book.set(1, shares(0, 1, 0));
    for ns in 2..9 {
        book.set(ns, shares(0, 100, 0));
    }
    let got = run(&mut book, &nss, 0, SEC / 1000, SEC);
    assert!(got[0] <= 3, "{got:?}");
}

#[test]
fn an_idle_namespace_is_re_anchored() {
    let mut book = Book::default();
    book.set(1, shares(100, 1, 0));
    book.set(2, shares(0, 1, 0));
    // Namespace 2 alone for a while: its P tag runs ahead.
    let c2 = [Candidate { ns: 2, bytes: 0 }];
    book.arrive(2, 0);
    for _ in 0..1000 {
        book.serve(2, 0, Phase::Weight, 0, 0);
        book.arrive(2, 0);
    }
    // Namespace 1 arrives after 10 s idle: no 1000 reservations saved up, and in the
    // weight phase it catches up the lag kept (64 commands) rather than 1000 commands,
    // then alternates with 2.
    book.arrive(1, 10 * SEC);
    let both = [Candidate { ns: 1, bytes: 0 }, c2[0]];
    let mut seq = Vec::new();
    for _ in 0..71 {
        let Choice::Serve(i, phase) = book.choose(&both, 10 * SEC) else {
            panic!("no choice");
        };
        book.serve(both[i].ns, 0, phase, 10 * SEC, 10 * SEC);
        book.arrive(both[i].ns, 10 * SEC);
        seq.push((both[i].ns, phase));
    }
    let reserved = seq.iter().filter(|s| s.1 == Phase::Reservation).count();
    assert_eq!(reserved, 1, "{seq:?}");
    let first_two = seq.iter().position(|s| s.0 == 2).unwrap();
    assert!((64..=66).contains(&first_two), "{seq:?}");
    let after = &seq[first_two..];
    let ones = after.iter().filter(|s| s.0 == 1).count();
    assert!(ones.abs_diff(after.len() - ones) <= 1, "{seq:?}");
}

#[test]
fn background_charges_move_share_and_limit_not_floor() {
    let mut book = Book::default();
    book.set(1, shares(100, 1, 0));
    book.set(
        2,
        IoShares {
            limit_bytes: 1 << 20,
            ..IoShares::default()
        },
    );
    book.arrive(1, 0);
    let r_before = book.choose(&[Candidate { ns: 1, bytes: 0 }], 0);
    book.charge(1, 0, 64 << 20, 0);
    // Still owed its floor now.
    assert_eq!(r_before, Choice::Serve(0, Phase::Reservation));
    assert_eq!(
        book.choose(&[Candidate { ns: 1, bytes: 0 }], 0),
        Choice::Serve(0, Phase::Reservation)
    );
    // 2 MiB of compaction against 1 MiB/s: its commands wait 2 s.
    book.charge(2, 0, 2 << 20, 0);
    assert_eq!(book.limit_at(2), 2 * SEC);
    assert_eq!(
        book.choose(&[Candidate { ns: 2, bytes: 0 }], SEC),
        Choice::WaitUntil(2 * SEC)
    );
    assert_eq!(book.stats(2).map(|s| s.charged_bytes), Some(2 << 20));
    // In the weight phase the charged namespace comes after an uncharged one.
    let mut book = Book::default();
    book.set(1, IoShares::default());
    book.set(3, IoShares::default());
    book.arrive(1, 0);
    book.arrive(3, 0);
    book.charge(1, 0, 40960, 0);
    let c = [Candidate { ns: 1, bytes: 0 }, Candidate { ns: 3, bytes: 0 }];
    assert_eq!(book.choose(&c, 0), Choice::Serve(1, Phase::Weight));
}

#[test]
fn set_validates_and_tracks_limits() {
    let s = Shares::new(&SharesConfig::default());
    assert!(s.set(1, shares(10, 0, 0)).is_err());
    assert!(!s.any_limit.load(Relaxed));
    s.set(1, shares(0, 1, 50)).unwrap();
    assert!(s.any_limit.load(Relaxed));
    assert_eq!(s.get(1).limit_ops, 50);
    s.forget(1);
    assert!(!s.any_limit.load(Relaxed));
    assert_eq!(s.get(1), IoShares::default());
}

/// A single-threaded runtime, as a network thread runs the gate.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Two namespaces contend on one core, each with `conns` connections that pass the gate
/// in a loop; the commands each got once `total` ran, and the contended turns each won.
fn contend(w1: u32, w2: u32, total: u64) -> (u64, u64, [u64; 2]) {
    let rt = runtime();
    let s = Rc::new(Shares::new(&SharesConfig::default()));
    s.set(1, shares(0, w1, 0)).unwrap();
    s.set(2, shares(0, w2, 0)).unwrap();
    let counts = Rc::new([Cell::new(0u64), Cell::new(0u64)]);
    let local = tokio::task::LocalSet::new();
    for (i, ns) in [(0usize, 1u32), (1, 2)] {
        for _ in 0..2 {
            let (s, counts) = (s.clone(), counts.clone());
            local.spawn_local(async move {
                loop {
                    if counts[0].get() + counts[1].get() >= total {
                        break;
                    }
                    let turn = pass(&s, ns, 0).await;
                    counts[i].set(counts[i].get() + 1);
                    // A pipelining client: its next command is read at once.
                    drop(turn);
                }
            });
        }
    }
    rt.block_on(local);
    let turns = [1, 2].map(|ns| s.report(ns).stats.contended_turns);
    (counts[0].get(), counts[1].get(), turns)
}

#[test]
fn the_gate_serves_contending_namespaces_by_weight() {
    let (a, b, [ta, tb]) = contend(1, 3, 4000);
    let ratio = b as f64 / a as f64;
    assert!((2.5..=3.5).contains(&ratio), "{a} {b}");
    // Under a steady backlog every turn is contended, and they split as the commands do.
    assert!(ta + tb >= 3900, "{ta} {tb}");
    let ratio = tb as f64 / ta as f64;
    assert!((2.5..=3.5).contains(&ratio), "{ta} {tb}");
    // Equal weights other than the defaults (which leave the gate out, see `gate`).
    let (a, b, _) = contend(2, 2, 4000);
    let ratio = b as f64 / a as f64;
    assert!((0.8..=1.25).contains(&ratio), "{a} {b}");
}

#[test]
fn the_gate_is_free_for_one_namespace_or_when_off() {
    let rt = runtime();
    rt.block_on(async {
        let s = Shares::new(&SharesConfig::default());
        // The first change of namespace opens a window of contention; one namespace alone
        // closes it and goes through free.
        for _ in 0..=gate::MIX_WINDOW {
            let _ = pass(&s, 7, 0).await;
        }
        assert!(pass(&s, 7, 0).await.is_none());
        let off = Shares::new(&SharesConfig { enabled: false });
        assert!(pass(&off, 8, 0).await.is_none());
        assert!(pass(&off, 9, 0).await.is_none());
    });
}

#[test]
fn a_namespace_owed_its_floor_takes_the_turn_without_yielding() {
    use std::future::Future;
    use std::task::Poll;
    let rt = runtime();
    rt.block_on(async {
        let s = Shares::new(&SharesConfig::default());
        s.set(1, shares(100, 1, 0)).unwrap();
        s.set(2, shares(0, 2, 0)).unwrap();
        // Whether a pass is done on its first poll (a yield makes it wait for the loop).
        async fn at_once(s: &Shares, ns: u32) -> bool {
            let mut p = std::pin::pin!(pass(s, ns, 0));
            let first = std::future::poll_fn(|cx| Poll::Ready(p.as_mut().poll(cx))).await;
            match first {
                Poll::Ready(turn) => turn.is_some(),
                Poll::Pending => {
                    assert!(p.await.is_some());
                    false
                }
            }
        }
        // Its R tag is due: chosen first whoever registers, so it does not wait for them.
        assert!(at_once(&s, 1).await);
        // Served in the reservation phase, it is owed the next one 10 ms later only.
        assert!(!at_once(&s, 1).await);
        // Without a floor, alone, it lets the others register first.
        assert!(!at_once(&s, 2).await);
    });
}

/// A destroy's `forget` while a compaction's charging holds the charges' lock (and will
/// take the book's next) lets go of the book first: each held one and waited for the
/// other's, and the device froze (the kvs stress test's churn).
#[test]
fn forget_does_not_hold_the_book_while_it_waits_for_the_charges() {
    let s = std::sync::Arc::new(Shares::new(&SharesConfig::default()));
    s.set(7, shares(0, 2, 0)).unwrap();
    let charging = s.charges.state.lock();
    let destroy = {
        let s = s.clone();
        std::thread::spawn(move || s.forget(7))
    };
    // The destroy's part in the book ends, and the book is free while it waits for the
    // charges (before, it held the book: no look here ever got it).
    let start = std::time::Instant::now();
    loop {
        let free = s
            .book
            .try_lock_for(std::time::Duration::from_millis(10))
            .is_some_and(|b| !b.ids().contains(&7));
        if free {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the book stayed held while forget waited for the charges"
        );
    }
    drop(charging);
    destroy.join().unwrap();
    assert!(!s.charges.state.lock().seen.contains_key(&7));
}
