//! The write path against `close`.

use crate::error::Error;
use crate::key::Kind;
use crate::storage::MemStorage;
use crate::vlog::EncodedWrite;
use crate::{Db, Options};
use std::sync::Arc;

/// A write checks that the database is open before it takes the writer lock, and `close`
/// sets its flag and then syncs the log under that lock. A write that passed the first check
/// while `close` ran, and took the lock after close's sync, was acknowledged without being
/// synced (found by a review, session 108). Here the write reaches the lock after the whole
/// close: it is refused on both paths (alone under the lock, and through the queue).
#[test]
fn a_write_that_reaches_the_writer_lock_after_close_is_refused() {
    for sync in [false, true] {
        let db = Db::builder(Options::default())
            .open_storage(Arc::new(MemStorage::new()))
            .unwrap();
        let ns = db.create_namespace("a").unwrap();
        let e = &ns.entry;
        let ops: &[(Kind, &[u8], &[u8])] = &[(Kind::Put, b"k", b"v")];
        db.close().unwrap();
        let r = db
            .inner
            .write_path()
            .commit(EncodedWrite::new(e.id, ops), sync, e);
        assert!(matches!(r, Err(Error::Closed)), "sync {sync}: {r:?}");
    }
}
