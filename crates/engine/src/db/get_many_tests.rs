use crate::storage::MemStorage;
use crate::{Db, Error, Options, Readable};
use std::sync::Arc;

/// A batch is bounded by the bytes of its values too, not only by its keys: past the
/// bound it fails with a typed error (nothing read) and the caller splits it.
#[test]
fn get_many_is_bounded_by_bytes() {
    let opts = Options {
        get_many_bytes: 10_000,
        inline_value_threshold: 16,
        ..Options::default()
    };
    let db = Db::builder(opts)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    for i in 0..8u8 {
        ns.put(&[i], &vec![i; 2000]).unwrap();
    }
    let keys: Vec<[u8; 1]> = (0..8u8).map(|i| [i]).collect();
    let eight: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    // In the memtable, then in a table with the values in the log.
    for flushed in [false, true] {
        if flushed {
            db.flush().unwrap();
        }
        let got = ns.get_many(&eight[..4]).unwrap();
        assert!(got
            .iter()
            .all(|v| v.as_ref().is_some_and(|v| v.len() == 2000)));
        match ns.get_many(&eight) {
            Err(Error::TooManyBytes { bytes, limit }) => {
                assert_eq!(limit, 10_000);
                assert!(bytes >= 16_000, "{bytes}");
            }
            other => panic!("{:?}", other.map(|v| v.len())),
        }
        // A key asked six times is answered six times: it counts six times.
        let same: Vec<&[u8]> = vec![&[1u8][..]; 6];
        assert!(matches!(
            ns.get_many(&same),
            Err(Error::TooManyBytes { .. })
        ));
        // Split, the batch is answered.
        for half in eight.chunks(4) {
            assert_eq!(ns.get_many(half).unwrap().len(), 4);
        }
    }
}
