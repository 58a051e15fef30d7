//! The session's writes, database maintenance calls and lifecycle (reopen, crash, faults).

use super::checks::{bg, io_kind, kind_of, write_result, Check};
use super::config::{cov, cov_add, GC_BY_CALL};
use super::model::NsModel;
use super::ops::{key_bytes, Op, ATTRS};
use super::run::{DbRef, Session, Slot};
use cerberus_engine::storage::{Fault, FaultError};
use cerberus_engine::{Error, NamespaceOptions, WriteBatch, WriteOptions};

impl Session {
    /// Runs a write, maintenance or lifecycle operation.
    pub(crate) fn exec_write(&mut self, host: &mut DbRef<'_>, op: &Op) -> Check {
        let faulty = self.faulty;
        if let Some(refused) = self.refused_read_only(op) {
            return refused;
        }
        match op {
            Op::ReadOnly { ns, on } => self.exec_read_only(*ns, *on),
            Op::DeleteRange { .. } | Op::DeletePrefix { .. } => self.exec_range_delete(op),
            Op::Put {
                ns,
                key,
                value,
                sync,
            } => {
                let k = key_bytes(*key);
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_write(*ns, |h| {
                        cov("Namespace::put");
                        h.put(&k, value)
                    });
                };
                cov("Namespace::put");
                let r = if *sync {
                    cov("Namespace::with_write_options");
                    h.with_write_options(WriteOptions { sync: true })
                        .put(&k, value)
                } else {
                    h.put(&k, value)
                };
                let r = settle_refusal(host, r, || h.put(&k, value));
                let r = write_result(m, faulty, r, &[(k, Some(value.clone()))]);
                if *sync && r.as_deref() == Ok("ok") {
                    // The log is one sequence: its sync makes every earlier write durable.
                    self.sync_point();
                }
                r
            }
            Op::Delete { ns, key } => {
                let k = key_bytes(*key);
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_write(*ns, |h| {
                        cov("Namespace::delete");
                        h.delete(&k)
                    });
                };
                cov("Namespace::delete");
                let r = h.delete(&k);
                write_result(m, faulty, r, &[(k, None)])
            }
            Op::Batch { ns, writes } => {
                let mut b = WriteBatch::new();
                let mut ws = Vec::new();
                for (k, v) in writes {
                    let k = key_bytes(*k);
                    match v {
                        Some(v) => b.put(k.clone(), v.clone()),
                        None => b.delete(k.clone()),
                    };
                    ws.push((k, v.clone()));
                }
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_write(*ns, |h| {
                        cov("Namespace::write");
                        h.write(b)
                    });
                };
                cov("Namespace::write");
                let r = h.write(b.clone());
                let r = settle_refusal(host, r, || h.write(b));
                write_result(m, faulty, r, &ws)
            }
            Op::CreateNs { ns } => {
                if faulty || !matches!(self.slots[*ns as usize], Slot::Empty | Slot::Ghost(_)) {
                    return Ok("skip".into());
                }
                if *ns == 0 && self.default_slot0 {
                    return Ok("skip".into());
                }
                self.created += 1;
                let name = format!("{}s{ns}g{}", self.prefix, self.created);
                cov("Db::create_namespace");
                let h = host
                    .db()
                    .create_namespace(&name)
                    .map_err(|e| format!("create_namespace {name}: {e}"))?;
                let id = h.id();
                if h.name() != name {
                    return Err(format!("create_namespace: name {} != {name}", h.name()));
                }
                self.slots[*ns as usize] = Slot::Live {
                    ns: h,
                    id,
                    m: NsModel::default(),
                };
                Ok("created".into())
            }
            Op::DestroyNs { ns } => {
                if faulty || (*ns == 0 && self.default_slot0) {
                    return Ok("skip".into());
                }
                let Slot::Live { ns: h, id, .. } = &self.slots[*ns as usize] else {
                    return Ok("skip".into());
                };
                let (h, id) = (h.clone(), *id);
                cov("Db::destroy_namespace");
                host.db()
                    .destroy_namespace(id)
                    .map_err(|e| format!("destroy_namespace {id}: {e}"))?;
                self.slots[*ns as usize] = Slot::Ghost(h);
                Ok("destroyed".into())
            }
            Op::CreateIndex { ns, attr, kind } => {
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_read(*ns, |h| {
                        h.create_index(ATTRS[*attr as usize], kind_of(*kind))
                    });
                };
                if m.may_refuse {
                    // Capacities stay on namespaces without indexes (see `Op::Configure`):
                    // the create is tried, and an index it made is dropped at once.
                    return capped_create_index(h, m, *attr, *kind, faulty);
                }
                cov("Namespace::create_index");
                let r = h.create_index(ATTRS[*attr as usize], kind_of(*kind));
                match r {
                    Ok(()) if m.indexes.contains_key(attr) && !m.indexes_uncertain => {
                        Err("create_index of an attribute already indexed succeeded".into())
                    }
                    Ok(()) => {
                        m.indexes.insert(*attr, *kind);
                        Ok("ok".into())
                    }
                    Err(Error::IndexExists { .. }) if m.indexes.contains_key(attr) => {
                        Ok("Err(IndexExists)".into())
                    }
                    Err(e) if faulty && !e.is_corruption() => {
                        m.indexes_uncertain = true;
                        Ok("Err".into())
                    }
                    Err(e) => Err(format!("create_index: {e}")),
                }
            }
            Op::DropIndex { ns, attr } => {
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_read(*ns, |h| h.drop_index(ATTRS[*attr as usize]));
                };
                cov("Namespace::drop_index");
                match h.drop_index(ATTRS[*attr as usize]) {
                    Ok(()) if !m.indexes.contains_key(attr) && !m.indexes_uncertain => {
                        Err("drop_index of an attribute with no index succeeded".into())
                    }
                    Ok(()) => {
                        m.indexes.remove(attr);
                        Ok("ok".into())
                    }
                    Err(Error::UnknownIndex(_)) if !m.indexes.contains_key(attr) => {
                        Ok("Err(UnknownIndex)".into())
                    }
                    Err(e) if faulty && !e.is_corruption() => {
                        m.indexes_uncertain = true;
                        Ok("Err".into())
                    }
                    Err(e) => Err(format!("drop_index: {e}")),
                }
            }
            Op::Checkpoint => self.checkpoint(host),
            Op::Flush => bg(faulty, "Db::flush", host.db().flush()),
            Op::WaitForCompactions => bg(
                faulty,
                "Db::wait_for_compactions",
                host.db().wait_for_compactions(),
            ),
            Op::CompactRange { ns, start, end } => {
                let (s, e) = (start.map(key_bytes), end.map(key_bytes));
                match ns {
                    Some(n) => {
                        let Slot::Live { ns: h, .. } = &self.slots[*n as usize] else {
                            return Ok("skip".into());
                        };
                        bg(
                            faulty,
                            "Namespace::compact_range",
                            h.compact_range(s.as_deref(), e.as_deref()),
                        )
                    }
                    None => bg(
                        faulty,
                        "Db::compact_range",
                        host.db().compact_range(s.as_deref(), e.as_deref()),
                    ),
                }
            }
            Op::CompactAll => bg(faulty, "Db::compact_all", host.db().compact_all()),
            Op::Gc => bg(
                faulty,
                "Db::gc_value_log",
                host.db()
                    .gc_value_log()
                    .map(|s| cov_add(GC_BY_CALL, s.segments_deleted as u64)),
            ),
            Op::SyncLog => {
                let r = bg(faulty, "Db::sync_log", host.db().sync_log());
                if r.as_deref() == Ok("ok") {
                    self.sync_point();
                }
                r
            }
            Op::Configure { ns, capacity } => {
                let capacity = capacity.map(u64::from);
                let Some((h, m)) = self.live(*ns) else {
                    return Ok("skip".into());
                };
                // Only on namespaces without indexes: the index part of the usage differs
                // between configurations (seed 2 of stress_metamorphic: a put refused in one
                // and accepted in another after a flush), so a refusal there would split the
                // metamorphic comparison. Records alone are counted alike everywhere.
                if !m.indexes.is_empty() || m.indexes_uncertain {
                    return Ok("skip".into());
                }
                cov("Namespace::configure");
                let options = NamespaceOptions {
                    capacity,
                    ..Default::default()
                };
                match h.configure(options) {
                    Ok(()) => {
                        m.capacity = capacity;
                        m.may_refuse = capacity.is_some();
                        Ok("ok".into())
                    }
                    Err(e) if faulty => {
                        // Either setting may hold: the larger bound, and refusals allowed.
                        m.capacity = m.capacity.zip(capacity).map(|(a, b)| a.max(b));
                        m.may_refuse |= capacity.is_some();
                        Ok(format!("Err({})", super::checks::err_name(&e)))
                    }
                    Err(e) => Err(format!("configure: {e}")),
                }
            }
            Op::Stats => {
                cov("Db::stats");
                let s = host.db().stats();
                if host.db().compaction_slot_overlaps() != 0 {
                    return Err("two compactions shared a slot".into());
                }
                for (i, slot) in self.slots.iter().enumerate() {
                    if let Slot::Live { ns, .. } = slot {
                        cov("Namespace::stats");
                        if let Err(e) = ns.stats() {
                            if !faulty {
                                return Err(format!("slot {i}: stats: {e}"));
                            }
                        }
                    }
                }
                let _ = s;
                Ok("stats".into())
            }
            Op::Reopen | Op::Crash | Op::Heal => {
                let Some(h) = host.host() else {
                    return Ok("skip".into());
                };
                let crash = !matches!(op, Op::Reopen) || self.faulty;
                if matches!(op, Op::Heal) && h.fault.is_none() {
                    return Ok("skip".into());
                }
                // After a fault the writes in doubt make prefixes ambiguous: per key only.
                let window = (crash && self.unsynced && !self.faulty)
                    .then(|| super::prefix::Window::take(&self.slots));
                if crash && self.unsynced {
                    for s in &mut self.slots {
                        if let Slot::Live { m, .. } = s {
                            m.crash_unsynced();
                        }
                    }
                }
                h.reopen(crash).map_err(|e| format!("{op}: {e}"))?;
                self.faulty = false;
                self.sync_point();
                let db = h.db.as_ref().unwrap();
                self.rebind(db)?;
                self.settle()?;
                self.verify_all(db)?;
                if let Some(w) = window {
                    w.check(&self.slots)?;
                }
                Ok("reopened".into())
            }
            Op::Inject { kind, nth, sticky } => {
                let Some(h) = host.host() else {
                    return Ok("skip".into());
                };
                let Some(fs) = &h.fault else {
                    return Ok("skip".into());
                };
                cov("FaultStorage::inject");
                fs.inject(Some(Fault {
                    kind: io_kind(*kind),
                    nth: u64::from(*nth),
                    error: if *nth % 5 == 4 {
                        FaultError::NoSpace
                    } else {
                        FaultError::Eio
                    },
                    sticky: *sticky,
                    partial: *nth % 2 == 1,
                }));
                self.faulty = true;
                Ok("armed".into())
            }
            _ => unreachable!("not a write operation: {op}"),
        }
    }
}

/// A write refused for its capacity is tried again after a flush: a refusal counts the bytes
/// not flushed yet as an upper bound, and whether that bound is reached depends on when the
/// configuration flushed; after the flush the figures are exact, so the outcome is the same
/// in every configuration (the metamorphic comparison needs that), and a write that does fit
/// must then be accepted.
fn settle_refusal(
    host: &mut DbRef<'_>,
    r: cerberus_engine::Result<()>,
    again: impl FnOnce() -> cerberus_engine::Result<()>,
) -> cerberus_engine::Result<()> {
    match r {
        Err(Error::CapacityExceeded { .. }) => {
            host.db().flush()?;
            again()
        }
        r => r,
    }
}

/// An index create on a namespace that may have a capacity: the backfill may be refused
/// (`CapacityExceeded`, leaving no index) or go; an index made is dropped at once, so the
/// namespace keeps the indexes it had. Whether the capacity refuses depends on the figures
/// pending at that moment (flush timing differs between configurations): both outcomes
/// answer alike. It had none, unless a drop failed under an injected fault: whether that
/// index outlived the crash after it is learned at the reopen (`indexes_uncertain`), and it
/// stays listed (seed 55353472768983 under load: the check expected an empty list there).
/// While the indexes are uncertain (an earlier create or drop failed under an injected
/// fault: its index may be listed, not ready), the list is not checked, as by every other
/// check of the indexes, and an index that exists is no surprise (seed 141300078374178: a
/// create failed on an injected sync, and the next capped create found its index listed).
fn capped_create_index(
    h: &cerberus_engine::Namespace,
    m: &mut NsModel,
    attr: u8,
    kind: super::ops::IdxKind,
    faulty: bool,
) -> Result<String, String> {
    cov("Namespace::create_index (capped)");
    let name = ATTRS[attr as usize];
    let had: std::collections::BTreeSet<&str> =
        m.indexes.keys().map(|&a| ATTRS[a as usize]).collect();
    let uncertain = m.indexes_uncertain;
    let made = match h.create_index(name, kind_of(kind)) {
        Ok(()) => true,
        Err(Error::IndexExists { .. }) if had.contains(name) || uncertain => false,
        Err(Error::CapacityExceeded { .. }) => {
            cov("create_index refused by the capacity");
            false
        }
        Err(e) if faulty && !e.is_corruption() => {
            m.indexes_uncertain = true;
            return Ok("capped create_index".into());
        }
        Err(e) => return Err(format!("capped create_index: {e}")),
    };
    if made {
        if let Err(e) = h.drop_index(name) {
            if faulty && !e.is_corruption() {
                m.indexes_uncertain = true;
                return Ok("capped create_index".into());
            }
            return Err(format!("capped drop_index: {e}"));
        }
    }
    match h.list_indexes() {
        Ok(_) if uncertain => Ok("capped create_index (indexes uncertain)".into()),
        Ok(l)
            if l.iter()
                .map(|i| i.attr.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                == had =>
        {
            Ok("capped create_index".into())
        }
        Ok(l) => Err(format!(
            "a refused or dropped index is listed, or a kept one is not: {l:?} (kept: {had:?})"
        )),
        Err(e) if faulty => {
            m.indexes_uncertain = true;
            Ok(format!("Err({})", super::checks::err_name(&e)))
        }
        Err(e) => Err(format!("list_indexes: {e}")),
    }
}
