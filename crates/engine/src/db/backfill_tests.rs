//! A backfill racing its own index's drop (found by an adversarial review, session 103).

use crate::error::Error;
use crate::index::IndexKind;
use crate::storage::wrap_open::WrapOpen;
use crate::storage::{MemStorage, StorageRef};
use crate::{Db, Options};
use std::sync::Arc;
use std::time::Duration;

/// A file whose value reads run `hook` first (to pause one thread mid-scan).
struct GatedFile {
    f: Arc<dyn crate::storage::RandomAccessFile>,
    hook: Arc<dyn Fn() + Send + Sync>,
}

impl crate::storage::RandomAccessFile for GatedFile {
    fn read_at(
        &self,
        offset: u64,
        len: usize,
        purpose: crate::storage::IoPurpose,
    ) -> std::io::Result<Vec<u8>> {
        if purpose == crate::storage::IoPurpose::Value {
            (self.hook)();
        }
        self.f.read_at(offset, len, purpose)
    }
    fn read_bytes(
        &self,
        offset: u64,
        len: usize,
        purpose: crate::storage::IoPurpose,
    ) -> std::io::Result<bytes::Bytes> {
        if purpose == crate::storage::IoPurpose::Value {
            (self.hook)();
        }
        self.f.read_bytes(offset, len, purpose)
    }
    fn len(&self) -> std::io::Result<u64> {
        self.f.len()
    }
}

/// A backfill checked, under the writer lock, only that its namespace was live, never that its
/// index still was. `drop_index` of the index being backfilled between two chunks: the
/// index's id joins the destroyed set, a flush drops the first chunk's entries and forgets the
/// id; the next chunks then inserted entries of an id nothing owned (`verify`: "table 6: 1976
/// entries of id 2, which no namespace or index owns"). A chunk is now refused once its
/// index has left the set (`insert_chunk`), and the backfill ends with `UnknownIndex`.
#[test]
fn drop_index_during_its_backfill_leaves_no_unowned_entries() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::{mpsc, Mutex, Weak};
    let weak: Arc<Mutex<Weak<super::super::inner::Inner>>> = Arc::new(Mutex::new(Weak::new()));
    let ns_id = Arc::new(AtomicU32::new(u32::MAX));
    let fired = Arc::new(AtomicBool::new(false));
    let (paused_tx, paused_rx) = mpsc::channel::<crate::key::Nsid>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = Mutex::new(go_rx);
    let paused_tx = Mutex::new(paused_tx);
    let hook: Arc<dyn Fn() + Send + Sync> = {
        let (weak, ns_id, fired) = (weak.clone(), ns_id.clone(), fired.clone());
        Arc::new(move || {
            if fired.load(Ordering::SeqCst) || std::thread::current().name() != Some("creator") {
                return;
            }
            let Some(inner) = weak.lock().unwrap().upgrade() else {
                return;
            };
            let ns = ns_id.load(Ordering::SeqCst);
            let idx = inner
                .versions
                .lock()
                .namespaces
                .indexes_of(ns)
                .next()
                .map(|d| d.id);
            let Some(idx) = idx else { return };
            // Past the first chunk: its entries are in the memtable.
            if inner.versions.super_version().mem.entries_of(idx) == 0 {
                return;
            }
            if fired.swap(true, Ordering::SeqCst) {
                return;
            }
            paused_tx.lock().unwrap().send(idx).unwrap();
            go_rx.lock().unwrap().recv().unwrap();
        })
    };
    let storage: StorageRef = Arc::new(WrapOpen {
        inner: MemStorage::new(),
        wrap: Box::new(move |f| {
            let hook = hook.clone();
            Arc::new(GatedFile { f, hook })
        }),
    });
    let opts = Options {
        background_threads: 1,
        inline_value_threshold: 0,
        ..Options::default()
    };
    let db = Arc::new(
        Db::builder(opts.clone())
            .open_storage(storage.clone())
            .unwrap(),
    );
    *weak.lock().unwrap() = Arc::downgrade(&db.inner);
    let ns = db.create_namespace("a").unwrap();
    ns_id.store(ns.id(), Ordering::SeqCst);
    for i in 0..3000u32 {
        let v = format!("{{\"n\": {i}}}");
        ns.put(format!("k{i:05}").as_bytes(), v.as_bytes()).unwrap();
    }
    db.flush().unwrap();
    let creator = {
        let ns = ns.clone();
        std::thread::Builder::new()
            .name("creator".into())
            .spawn(move || ns.create_index("n", IndexKind::Classic))
            .unwrap()
    };
    let idx = paused_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the backfill never paused after its first chunk");
    // Between two chunks: the index dropped, its first entries flushed away, its id forgotten.
    ns.drop_index("n").unwrap();
    db.flush().unwrap();
    let forgotten = !db.inner.namespaces.read().destroyed.contains(&idx)
        && !db.inner.versions.lock().namespaces.destroyed.contains(&idx);
    assert!(
        forgotten,
        "the window: the id is forgotten before the backfill goes on"
    );
    go_tx.send(()).unwrap();
    let created = creator.join().unwrap();
    assert!(
        matches!(created, Err(Error::UnknownIndex(_))),
        "{created:?}"
    );
    db.flush().unwrap();
    db.compact_all().unwrap();
    let sv = db.inner.versions.super_version();
    let mut left = 0;
    for t in sv.version.levels.iter().flatten().chain(&sv.version.runs) {
        left += t.entries_of(idx).unwrap();
    }
    left += sv.mem.entries_of(idx);
    drop(sv);
    let report = db.verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(left, 0);
}
