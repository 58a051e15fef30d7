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
