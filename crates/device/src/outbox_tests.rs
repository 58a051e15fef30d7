use super::*;
use bytes::Bytes;
use cerberus_proto::{split_frame, Reply};
use std::sync::atomic::AtomicUsize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Semaphore;

const LONG: Duration = Duration::from_secs(10);

fn unbounded() -> Arc<HeldBytes> {
    Arc::new(HeldBytes::new(usize::MAX))
}

fn value(cid: u32, v: &[u8]) -> Response {
    Response {
        cid,
        nsid: 1,
        opcode: 2,
        status: Status::Success,
        reply: Reply::Value(Bytes::copy_from_slice(v)),
    }
}

/// Reads replies until the writer shuts its side down.
async fn read_all(mut rd: impl AsyncRead + Unpin) -> Vec<Response> {
    let (mut buf, mut got) = (BytesMut::new(), Vec::new());
    loop {
        while let Some(f) = split_frame(&mut buf, u32::MAX).unwrap() {
            got.push(Response::decode(&f).unwrap());
        }
        let n = tokio::time::timeout(LONG, rd.read_buf(&mut buf))
            .await
            .expect("the writer neither wrote nor ended")
            .unwrap();
        if n == 0 {
            assert!(buf.is_empty(), "a reply cut short");
            return got;
        }
    }
}

/// Replies the reader encodes on its task and replies from other threads (a worker's, a
/// held put's) come out in the order they were sent, each permit goes back once written, and
/// the writer ends once the last outbox is gone.
#[tokio::test(flavor = "current_thread")]
async fn replies_keep_their_order_and_the_writer_ends_with_the_last_outbox() {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (tx, replies) = outbox(1 << 20, unbounded());
    let writer = tokio::spawn(write_replies(server, replies, LONG, || panic!("timed out")));
    let inflight = Arc::new(Semaphore::new(64));
    let mut sent = Vec::new();
    for cid in 0..40u32 {
        let permit = inflight.clone().try_acquire_owned().unwrap();
        let r = value(cid, &cid.to_le_bytes());
        if cid % 3 == 0 {
            // From elsewhere: the writer must be woken.
            let other = tx.clone();
            std::thread::spawn(move || other.send((r, Some(permit))).unwrap())
                .join()
                .unwrap();
        } else {
            tx.send_here(&r, permit).unwrap();
        }
        sent.push(cid);
        if cid % 10 == 9 {
            // Let the writer take what is there: the next replies go to the other buffer.
            tokio::task::yield_now().await;
        }
    }
    let late = tx.clone();
    drop(tx);
    tokio::task::yield_now().await;
    late.send((value(40, b"last"), None)).unwrap();
    sent.push(40);
    drop(late);
    let got = read_all(client).await;
    writer.await.unwrap();
    let cids: Vec<u32> = got.iter().map(|r| r.cid).collect();
    assert_eq!(cids, sent);
    assert_eq!(
        got[7].reply,
        Reply::Value(Bytes::copy_from_slice(&7u32.to_le_bytes()))
    );
    assert_eq!(
        inflight.available_permits(),
        64,
        "every permit back once written"
    );
}

/// A writer waiting for replies wakes for one sent from another thread.
#[tokio::test(flavor = "current_thread")]
async fn a_waiting_writer_wakes_for_a_reply_from_another_thread() {
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let (tx, replies) = outbox(1 << 20, unbounded());
    let _writer = tokio::spawn(write_replies(server, replies, LONG, || panic!("timed out")));
    // The writer runs and waits.
    tokio::task::yield_now().await;
    let other = tx.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        other.send((value(9, b"v"), None)).unwrap();
    });
    let mut buf = BytesMut::new();
    while split_frame(&mut buf, u32::MAX).unwrap().is_none() {
        tokio::time::timeout(LONG, client.read_buf(&mut buf))
            .await
            .expect("the writer was not woken")
            .unwrap();
    }
}

/// A client that does not read its replies: the write times out, the reader learns it
/// through `closed`, later replies are refused, and every permit goes back.
#[tokio::test(flavor = "current_thread")]
async fn a_client_that_does_not_read_is_cut_off_and_permits_go_back() {
    // The client's side holds 64 bytes and is never read.
    let (_client, server) = tokio::io::duplex(64);
    let (tx, replies) = outbox(1 << 20, unbounded());
    let timeouts = Arc::new(AtomicUsize::new(0));
    let counted = timeouts.clone();
    let on_timeout = move || {
        counted.fetch_add(1, Ordering::Relaxed);
    };
    let short = Duration::from_millis(50);
    let writer = tokio::spawn(write_replies(server, replies, short, on_timeout));
    let inflight = Arc::new(Semaphore::new(4));
    for cid in 0..4 {
        let permit = inflight.clone().try_acquire_owned().unwrap();
        tx.send_here(&value(cid, &[7; 4096]), permit).unwrap();
    }
    assert_eq!(inflight.available_permits(), 0);
    tokio::time::timeout(LONG, tx.closed())
        .await
        .expect("the reader was not told");
    writer.await.unwrap();
    assert_eq!(timeouts.load(Ordering::Relaxed), 1);
    assert_eq!(
        inflight.available_permits(),
        4,
        "unwritten replies' permits"
    );
    let permit = inflight.clone().try_acquire_owned().unwrap();
    assert!(tx.send_here(&value(5, b"v"), permit).is_err());
    assert_eq!(inflight.available_permits(), 4, "a refused reply's permit");
}

/// A reply past the device's `max_reply_bytes` is replaced by a `ReplyTooLarge` error.
#[tokio::test(flavor = "current_thread")]
async fn a_reply_too_large_becomes_an_error() {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (tx, replies) = outbox(100, unbounded());
    let writer = tokio::spawn(write_replies(server, replies, LONG, || panic!("timed out")));
    tx.send((value(1, &[1; 100]), None)).unwrap();
    tx.send((value(2, &[1; 101]), None)).unwrap();
    drop(tx);
    let got = read_all(client).await;
    writer.await.unwrap();
    assert_eq!(got[0].status, Status::Success);
    assert_eq!(got[1].status, Status::ReplyTooLarge);
    assert_eq!(got[1].cid, 2);
}

/// Large replies count in the device's held bytes until written; small ones never; a writer
/// that gives up gives everything back.
#[tokio::test(flavor = "current_thread")]
async fn large_replies_count_until_written() {
    let (client, server) = tokio::io::duplex(64);
    let held = Arc::new(HeldBytes::new(1 << 20));
    let (tx, replies) = outbox(1 << 20, held.clone());
    tx.send((value(1, &[1; 100]), None)).unwrap();
    assert_eq!(held.used(), 0, "a small reply is not counted");
    tx.send((value(3, &[3; 8000]), None)).unwrap();
    let big = held.used();
    assert!(big > 8000, "a large reply is counted: {big}");
    // The client reads everything: all of it comes back.
    let reader = tokio::spawn(read_all(client));
    let writer = tokio::spawn(write_replies(server, replies, LONG, || panic!("timed out")));
    drop(tx);
    assert_eq!(reader.await.unwrap().len(), 2);
    writer.await.unwrap();
    assert_eq!(held.used(), 0, "written replies give their bytes back");

    // A client that never reads: the writer gives up, and the bytes come back with it.
    let (_client, server) = tokio::io::duplex(64);
    let (tx, replies) = outbox(1 << 20, held.clone());
    tx.send((value(8, &[8; 9000]), None)).unwrap();
    assert!(held.used() > 9000);
    let writer = tokio::spawn(write_replies(
        server,
        replies,
        Duration::from_millis(50),
        || {},
    ));
    tokio::time::timeout(LONG, tx.closed())
        .await
        .expect("the writer gave up");
    writer.await.unwrap();
    assert_eq!(held.used(), 0, "nothing held past the writer");
}
