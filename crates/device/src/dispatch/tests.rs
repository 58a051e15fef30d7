use super::Shared;
use crate::auth::Credentials;
use crate::config::DeviceConfig;
use crate::iterators::ConnIterators;
use bytes::Bytes;
use cerberus_engine::Db;
use cerberus_proto::{Command, Reply, Request, Response, Status, StoreMode};

fn shared(dir: &std::path::Path) -> Shared {
    let config = DeviceConfig {
        data_dir: dir.to_path_buf(),
        max_key_len: 16,
        max_value_len: 100,
        ..DeviceConfig::default()
    };
    let db = Db::builder(config.engine_options())
        .storage(config.engine_storage())
        .open(dir.join("db"))
        .unwrap();
    let creds = Credentials::open(dir, None).unwrap();
    Shared::new(db, creds, config)
}

fn store(s: &Shared, nsid: u32, key: &[u8], value_len: usize) -> Response {
    let iters = ConnIterators::new(1, std::time::Duration::from_secs(1));
    s.execute(
        Command {
            cid: 1,
            nsid,
            request: Request::Store {
                key: Bytes::copy_from_slice(key),
                value: Bytes::from(vec![7u8; value_len]),
                mode: StoreMode::Always,
                sync: false,
            },
        },
        &iters,
    )
}

fn message(r: &Response) -> String {
    match &r.reply {
        Reply::Error(m) => m.clone(),
        other => panic!("not an error reply: {other:?}"),
    }
}

#[test]
fn size_errors_name_the_size_given_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let s = shared(dir.path());
    let nsid = s.db.create_namespace("t").unwrap().id();
    assert!(store(&s, nsid, b"k", 100).status.is_success());

    let r = store(&s, nsid, b"k", 101);
    assert_eq!(r.status, Status::InvalidValueSize);
    assert_eq!(
        message(&r),
        "value is 101 bytes; this device accepts values up to 100 bytes (max_value_len)"
    );
    let r = store(&s, nsid, &[b'k'; 17], 1);
    assert_eq!(r.status, Status::InvalidKeySize);
    assert_eq!(
        message(&r),
        "key is 17 bytes; this device accepts keys of 1 to 16 bytes (max_key_len)"
    );
    let r = store(&s, nsid, b"", 1);
    assert_eq!(r.status, Status::InvalidKeySize);
    assert!(message(&r).starts_with("key is 0 bytes;"));
}

fn command(nsid: u32, request: Request) -> Command {
    Command {
        cid: 1,
        nsid,
        request,
    }
}

/// The sweep closes an iterator whose snapshot expired even if it was used just now (the
/// idle limit here is an hour): it held its slot, and the entry read ahead, until the idle
/// sweep, which a client touching it kept away forever.
#[test]
fn the_sweep_closes_expired_iterators_however_recently_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DeviceConfig {
        data_dir: dir.path().to_path_buf(),
        ..DeviceConfig::default()
    };
    config.engine.snapshot_max_age_ms = 100;
    let db = Db::builder(config.engine_options())
        .storage(config.engine_storage())
        .open(dir.path().join("db"))
        .unwrap();
    let creds = Credentials::open(dir.path(), None).unwrap();
    let s = Shared::new(db, creds, config);
    let nsid = s.db.create_namespace("t").unwrap().id();
    let iters = ConnIterators::new(4, std::time::Duration::from_secs(3600));
    for k in [b"a", b"b"] {
        assert!(store(&s, nsid, k, 10).status.is_success());
    }
    let open = || {
        let r = s.execute(
            command(
                nsid,
                Request::IterOpen {
                    start: Bytes::new(),
                    upper_bound: Bytes::new(),
                    prefix: Bytes::new(),
                    keys_only: false,
                },
            ),
            &iters,
        );
        match r.reply {
            Reply::Iter(id) => id,
            other => panic!("{other:?}"),
        }
    };
    let next = |iter| {
        let request = Request::IterNext {
            iter,
            max_entries: 1,
            max_bytes: 1 << 20,
        };
        s.execute(command(nsid, request), &iters)
    };
    let ids = [open(), open()];
    for &id in &ids {
        assert!(next(id).status.is_success());
    }
    assert_eq!(iters.sweep(), 0);
    assert_eq!(s.metrics.iterators_open.get(), 2);
    std::thread::sleep(std::time::Duration::from_millis(150));
    assert_eq!(iters.sweep(), 2);
    assert_eq!(s.metrics.iterators_open.get(), 0);
    for id in ids {
        assert_eq!(next(id).status, Status::IteratorNotFound);
    }
}

/// A namespace destroyed while a command that found it uncached ran: its handle is not kept
/// (it was, for good, when the handle went into the cache after the destroy removed it).
#[test]
fn a_handle_found_while_its_namespace_is_destroyed_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let s = shared(dir.path());
    let nsid = s.db.create_namespace("t").unwrap().id();
    let destroyed = s
        .with_namespace(nsid, |_| Ok(s.namespace_destroy(nsid).is_ok()))
        .unwrap();
    assert!(destroyed);
    assert!(!s.handles.load().contains_key(&nsid));
    // A live one is kept.
    let kept = s.db.create_namespace("u").unwrap().id();
    s.with_namespace(kept, |_| Ok(())).unwrap();
    assert!(s.handles.load().contains_key(&kept));
}
