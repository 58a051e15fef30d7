use super::*;
use crate::storage::MemStorage;

fn setup() -> (StorageRef, VlogReader) {
    let storage: StorageRef = Arc::new(MemStorage::new());
    for seg in 1..=3 {
        storage.create(&segment_name(seg)).unwrap();
    }
    (storage.clone(), VlogReader::new(storage))
}

#[test]
fn unpinned_retirement_deletes_at_once() {
    let (storage, r) = setup();
    r.retire(1);
    assert!(!storage.exists(&segment_name(1)).unwrap());
    assert!(!r.is_retired(1));
}

#[test]
fn a_pin_keeps_what_is_retired_after_it() {
    let (storage, r) = setup();
    let old = r.pin();
    r.retire(1);
    let newer = r.pin();
    r.retire(2);
    assert!(storage.exists(&segment_name(1)).unwrap());
    assert!(storage.exists(&segment_name(2)).unwrap());
    // The newer pin alone keeps only what was retired after it, but the older one
    // holds the whole chain.
    drop(newer);
    assert!(storage.exists(&segment_name(1)).unwrap());
    assert!(storage.exists(&segment_name(2)).unwrap());
    assert!(r.is_retired(1) && r.is_retired(2));
    drop(old);
    assert!(!storage.exists(&segment_name(1)).unwrap());
    assert!(!storage.exists(&segment_name(2)).unwrap());
    assert!(storage.exists(&segment_name(3)).unwrap());
}

#[test]
fn older_pin_outliving_newer_one_releases_in_order() {
    let (storage, r) = setup();
    let old = r.pin();
    r.retire(1);
    let newer = r.pin();
    r.retire(2);
    drop(old);
    // Segment 1 was retired before `newer` was taken: no reader can reach it now.
    assert!(!storage.exists(&segment_name(1)).unwrap());
    assert!(storage.exists(&segment_name(2)).unwrap());
    drop(newer);
    assert!(!storage.exists(&segment_name(2)).unwrap());
}

#[test]
fn long_chains_drop_without_recursion() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let r = VlogReader::new(storage.clone());
    let pin = r.pin();
    for seg in 0..100_000 {
        r.retire(seg);
    }
    drop(pin);
    assert!(!r.is_retired(99_999));
}

struct CountedFile {
    file: Arc<dyn RandomAccessFile>,
    open: Arc<std::sync::atomic::AtomicUsize>,
}

impl Drop for CountedFile {
    fn drop(&mut self) {
        self.open.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl RandomAccessFile for CountedFile {
    fn read_at(
        &self,
        offset: u64,
        len: usize,
        purpose: crate::storage::IoPurpose,
    ) -> std::io::Result<Vec<u8>> {
        self.file.read_at(offset, len, purpose)
    }
    fn len(&self) -> std::io::Result<u64> {
        self.file.len()
    }
}

/// Value-log segments used to stay open once read, all of them (89 segments read with
/// `max_open_files` 16 held 99 descriptors): they now share the tables' bound.
#[test]
fn segments_share_the_bound_of_open_files() {
    use crate::storage::Storage;
    use crate::{Db, Options, Readable};
    use std::sync::atomic::Ordering::SeqCst;
    let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // Counts the read handles open at once (tables' and segments').
    let storage = Arc::new(crate::storage::wrap_open::WrapOpen {
        inner: MemStorage::new(),
        wrap: Box::new({
            let (open, peak) = (open.clone(), peak.clone());
            move |file| {
                let now = open.fetch_add(1, SeqCst) + 1;
                peak.fetch_max(now, SeqCst);
                let open = open.clone();
                Arc::new(CountedFile { file, open })
            }
        }),
    });
    let opts = Options {
        max_open_files: 16,
        vlog_segment_bytes: 16 << 10,
        auto_compaction: false,
        ..Options::default()
    };
    let db = Db::builder(opts).open_storage(storage.clone()).unwrap();
    let ns = db.create_namespace("t").unwrap();
    let keys = 1500u32;
    for i in 0..keys {
        ns.put(&i.to_be_bytes(), &[i as u8; 1000]).unwrap();
    }
    db.flush().unwrap();
    let segments = storage
        .list()
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".vlog"))
        .count();
    assert!(segments >= 80, "{segments} segments");
    peak.store(open.load(SeqCst), SeqCst);
    for _ in 0..2 {
        for i in 0..keys {
            let v = ns.get(&i.to_be_bytes()).unwrap().unwrap();
            assert_eq!(v.len(), 1000);
        }
    }
    let peak = peak.load(SeqCst);
    // The cache rounds its bound up to a multiple of its shards: a few over 16 at most.
    assert!(
        peak <= 24,
        "{peak} files open at once reading {segments} segments"
    );
}
