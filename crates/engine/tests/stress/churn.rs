//! Namespaces created and destroyed all along while another thread writes to each through
//! its handle and indexes it: every write and index creation succeeds or fails with
//! `UnknownNamespace`, and nothing of a destroyed namespace outlives it (`Db::verify` finds no table entry that no namespace or
//! index owns). Two defects left such entries, kept by every flush and compaction: a put
//! that passed its liveness check before a destroy and was queued after it landed once the
//! destroy had forgotten the id (`db::namespaces::tests` holds that window open); and a
//! background flush could forget the id between the destroy's joining it to the destroyed
//! set and its refusing writes (this churn failed 4 seeds of 4 with only the first fixed).

use super::config::cov;
use cerberus_engine::{Db, Error, IndexKind, Namespace};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The namespace the writer writes to now, replaced by the destroyer.
pub type Current = Mutex<Option<Namespace>>;

/// Creates a namespace, lets the writer at it, destroys it; until `stop`. Returns the
/// namespaces destroyed.
pub fn destroyer(db: &Db, current: &Current, tag: &str, stop: &AtomicBool) -> Result<u64, String> {
    let mut rounds = 0u64;
    while !stop.load(Ordering::Relaxed) || rounds == 0 {
        let name = format!("churn_{tag}_{rounds}");
        cov("Db::create_namespace (churn)");
        let ns = db
            .create_namespace(&name)
            .map_err(|e| format!("churn: create_namespace {name}: {e}"))?;
        let id = ns.id();
        *current.lock().unwrap() = Some(ns);
        std::thread::sleep(Duration::from_millis(1 + rounds % 3));
        // Taken from the writer first: its puts that fail are those under way.
        current.lock().unwrap().take();
        cov("Db::destroy_namespace (churn)");
        db.destroy_namespace(id)
            .map_err(|e| format!("churn: destroy_namespace {name}: {e}"))?;
        rounds += 1;
    }
    *current.lock().unwrap() = None;
    Ok(rounds)
}

/// Puts into the current namespace until `stop`: each put succeeds, or fails because the
/// namespace is gone. Returns the puts acknowledged.
pub fn writer(current: &Current, stop: &AtomicBool) -> Result<u64, String> {
    let mut acked = 0u64;
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Some(ns) = current.lock().unwrap().clone() else {
            std::thread::sleep(Duration::from_micros(50));
            continue;
        };
        i += 1;
        cov("Namespace::put (churn)");
        let value = format!(r#"{{"c": {i}, "pad": "{}"}}"#, "p".repeat(40));
        match ns.put(format!("c{:04}", i % 512).as_bytes(), value.as_bytes()) {
            Ok(()) => acked += 1,
            Err(Error::UnknownNamespace(_)) => {}
            Err(e) => return Err(format!("churn: put to {}: {e}", ns.id())),
        }
        if i.is_multiple_of(128) {
            // An index made (its backfill too) while the destroy may come.
            cov("Namespace::create_index (churn)");
            match ns.create_index("c", IndexKind::Classic) {
                Ok(()) | Err(Error::UnknownNamespace(_) | Error::IndexExists { .. }) => {}
                Err(e) => return Err(format!("churn: create_index on {}: {e}", ns.id())),
            }
        }
    }
    Ok(acked)
}

/// `Db::verify`, clean: no damage, and every table entry owned.
pub fn verify(db: &Db, when: &str) -> Result<(), String> {
    cov("Db::verify");
    let report = db.verify().map_err(|e| format!("{when}: verify: {e}"))?;
    match report.is_clean() {
        true => Ok(()),
        false => Err(format!("{when}: verify found {:?}", report.problems)),
    }
}
