//! Opening a database: one spelling per storage (`Db::open`, `Db::builder(..).storage(..)
//! .open(..)`, `Db::builder(..).open_storage(..)`).

use crate::common;

use cerberus_engine::storage::{MemStorage, NandConfig, NandStorage, StorageRef};
use cerberus_engine::{Db, ErrorKind, Readable, StorageKind};
use std::sync::Arc;

#[test]
fn the_nand_kind_puts_the_timing_model_over_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(common::small_options())
        .storage(StorageKind::Nand(NandConfig::default()))
        .open(dir.path())
        .unwrap();
    db.default_namespace().put(b"k", b"v").unwrap();
    db.flush().unwrap();
    assert!(db.stats().nand.is_some());
    db.close().unwrap();
    drop(db);
    // Reopened on plain files: the same data, no timing model.
    let db = Db::open(dir.path(), common::small_options()).unwrap();
    assert_eq!(
        db.default_namespace().get(b"k").unwrap().unwrap(),
        &b"v"[..]
    );
    assert!(db.stats().nand.is_none());
}

#[test]
fn a_caller_built_storage_is_taken_as_built_and_a_kind_beside_it_is_refused() {
    let mem: StorageRef = Arc::new(MemStorage::new());
    let refused = Db::builder(common::small_options())
        .storage(StorageKind::Nand(NandConfig::default()))
        .open_storage(mem.clone());
    assert_eq!(refused.err().unwrap().kind(), ErrorKind::InvalidArgument);
    let nand: StorageRef = Arc::new(NandStorage::new(mem, NandConfig::default()));
    let db = Db::builder(common::small_options())
        .open_storage(nand)
        .unwrap();
    db.default_namespace().put(b"k", b"v").unwrap();
    assert!(db.stats().nand.is_some());
}
