//! Checks of single answers against the model (reads, writes, indexes) and small helpers.

use super::config::cov;
use super::model::NsModel;
use super::ops::{short, FaultKind, IdxKind, Op, ATTRS, NS_SLOTS};
use cerberus_engine::storage::IoKind;
use cerberus_engine::{Error, IndexKind};

pub(crate) fn err_name(e: &Error) -> &'static str {
    match e {
        Error::Io { .. } => "Io",
        Error::Corruption { .. } => "Corruption",
        Error::NoSpace { .. } => "NoSpace",
        Error::KeyTooLarge { .. } => "KeyTooLarge",
        Error::ValueTooLarge { .. } => "ValueTooLarge",
        Error::InvalidArgument(_) => "InvalidArgument",
        Error::UnknownNamespace(_) => "UnknownNamespace",
        Error::NamespaceExists(_) => "NamespaceExists",
        Error::IndexExists { .. } => "IndexExists",
        Error::UnknownIndex(_) => "UnknownIndex",
        Error::InvalidQuery(_) => "InvalidQuery",
        Error::Closed => "Closed",
        Error::Background(_) => "Background",
        Error::CapacityExceeded { .. } => "CapacityExceeded",
        #[allow(unreachable_patterns)]
        _ => "Other",
    }
}

fn hash(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// A trace entry: short text plus a hash of the whole answer.
pub(crate) fn tr(s: String) -> String {
    if s.len() > 160 {
        let cut = (0..=160)
            .rev()
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(0);
        format!("{}… #{:016x}", &s[..cut], hash(&s))
    } else {
        s
    }
}

pub(crate) type Check = Result<String, String>;

pub(crate) fn show(v: &Option<impl AsRef<[u8]>>) -> String {
    match v {
        Some(v) => short(v.as_ref()),
        None => "None".into(),
    }
}

pub(crate) fn kind_of(k: IdxKind) -> IndexKind {
    match k {
        IdxKind::Classic => IndexKind::Classic,
        IdxKind::Vas => IndexKind::Vas,
    }
}

pub(crate) fn io_kind(k: FaultKind) -> IoKind {
    match k {
        FaultKind::Append => IoKind::Append,
        FaultKind::Sync => IoKind::Sync,
        FaultKind::Create => IoKind::Create,
        FaultKind::Rename => IoKind::Rename,
        FaultKind::Read => IoKind::Read,
        FaultKind::Open => IoKind::Open,
        FaultKind::Delete => IoKind::Delete,
    }
}

/// With `CERBERUS_STRESS_TRACE` set, prints every operation as it runs and every error a
/// check accepted, on stderr: the story of a failure that depends on timing.
pub(crate) fn trace(what: impl FnOnce() -> String) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("CERBERUS_STRESS_TRACE").is_some()) {
        eprintln!("trace: {}", what());
    }
}

pub(crate) fn stale(r: cerberus_engine::Result<()>, what: &str) -> Check {
    match r {
        Err(_) => Ok("Err(stale)".into()),
        Ok(()) => Err(format!("{what} after the database was closed succeeded")),
    }
}

pub(crate) fn bg(faulty: bool, call: &'static str, r: cerberus_engine::Result<()>) -> Check {
    cov(call);
    match r {
        Ok(()) => Ok("ok".into()),
        Err(e) if faulty && !e.is_corruption() => Ok("Err".into()),
        Err(e) => Err(format!("{call}: {e}")),
    }
}

pub(crate) fn check_indexes(got: &[cerberus_engine::IndexInfo], m: &NsModel) -> Result<(), String> {
    let mut g: Vec<(String, String, bool)> = got
        .iter()
        .map(|i| (i.attr.clone(), i.kind.to_string(), i.ready))
        .collect();
    g.sort();
    let mut w: Vec<(String, String, bool)> = m
        .indexes
        .iter()
        .map(|(a, k)| {
            (
                ATTRS[*a as usize].to_string(),
                kind_of(*k).to_string(),
                true,
            )
        })
        .collect();
    w.sort();
    if g != w {
        return Err(format!("list_indexes: {g:?}, expected {w:?}"));
    }
    Ok(())
}

pub(crate) fn write_result(
    m: &mut NsModel,
    faulty: bool,
    r: cerberus_engine::Result<()>,
    writes: &[(Vec<u8>, Option<Vec<u8>>)],
) -> Check {
    match r {
        Ok(()) => {
            for (k, v) in writes {
                m.write(k, v.clone());
            }
            Ok("ok".into())
        }
        // Refused whole, before anything was written: the model stays.
        Err(Error::CapacityExceeded {
            used,
            pending,
            write,
            capacity,
            ..
        }) => {
            if !m.may_refuse {
                return Err("CapacityExceeded without a capacity".into());
            }
            if write == 0 || used + pending + write <= capacity {
                return Err(format!(
                    "CapacityExceeded: used {used} + pending {pending} + write {write} \
                     within capacity {capacity}"
                ));
            }
            Ok("Err(CapacityExceeded)".into())
        }
        // An injected fault may fail a write, never make it report corruption.
        Err(e) if faulty && !e.is_corruption() => {
            // A batch is all or nothing; per key that is one of old or new.
            let mut staged = NsModel {
                data: m.data.clone(),
                ..Default::default()
            };
            for (k, v) in writes {
                let cands_before = m.uncertain.get(k).cloned();
                let old = staged.data.get(k).cloned();
                m.write_failed(k, v.clone());
                if let Some(c) = cands_before {
                    for x in c {
                        if !m.uncertain[k].contains(&x) {
                            m.uncertain.get_mut(k).unwrap().push(x);
                        }
                    }
                }
                let _ = old;
                staged.write(k, v.clone());
            }
            Ok(format!("Err({})", err_name(&e)))
        }
        Err(e) => Err(format!("write failed: {e}")),
    }
}

pub(crate) fn check_read(
    m: &NsModel,
    faulty: bool,
    k: &[u8],
    r: cerberus_engine::Result<Option<Vec<u8>>>,
    get: bool,
) -> Check {
    let want = m.data.get(k);
    match r {
        Err(e) if faulty && !e.is_corruption() => Ok("Err".into()),
        Err(e) => Err(format!("read of {}: {e}", short(k))),
        Ok(g) => {
            if let Some(c) = m.uncertain.get(k) {
                let ok = c.iter().any(|x| {
                    if get {
                        x == &g
                    } else {
                        x.is_some() == g.is_some()
                    }
                });
                if !ok {
                    return Err(format!(
                        "read of {}: {} is none of the values a failed write may have left",
                        short(k),
                        show(&g)
                    ));
                }
                return Ok("uncertain".into());
            }
            let ok = if get {
                g.as_ref() == want
            } else {
                g.is_some() == want.is_some()
            };
            if ok {
                Ok(if get {
                    tr(show(&g))
                } else {
                    format!("{}", g.is_some())
                })
            } else if get {
                Err(format!(
                    "get {}: got {}, expected {}",
                    short(k),
                    show(&g),
                    show(&want)
                ))
            } else {
                Err(format!(
                    "contains {}: got {}, expected {}",
                    short(k),
                    g.is_some(),
                    want.is_some()
                ))
            }
        }
    }
}

/// The model's live bytes of records: keys and values (what a namespace's usage counts,
/// its index entries aside).
pub(crate) fn model_bytes(m: &NsModel) -> u64 {
    m.data.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum()
}

impl super::run::Session {
    /// After a step that changes namespaces' bytes, alone on the database and with no fault:
    /// the kept figures bound the model's bytes from above (pending bytes count new writes
    /// as new), equal them after a flush, and a put accepted under a capacity stays within it.
    pub(crate) fn check_space_after(&mut self, op: &Op, outcome: &str) -> Result<(), String> {
        if !self.exclusive || self.faulty {
            return Ok(());
        }
        let (slots, exact): (Vec<u8>, bool) = match op {
            Op::Put { ns, .. } | Op::Delete { ns, .. } | Op::Batch { ns, .. } => (vec![*ns], false),
            Op::DeleteRange { ns, .. } | Op::DeletePrefix { ns, .. } => (vec![*ns], false),
            Op::Configure { ns, .. } => (vec![*ns], false),
            Op::Flush | Op::Reopen => ((0..NS_SLOTS).collect(), true),
            Op::Gc => ((0..NS_SLOTS).collect(), false),
            _ => return Ok(()),
        };
        let collected_all = matches!(op, Op::Gc)
            && outcome == "ok"
            && self.snaps.iter().all(Option::is_none)
            && self.iters.iter().all(Option::is_none)
            && self.cursors.iter().all(Option::is_none);
        let put = outcome == "ok"
            && match op {
                Op::Put { .. } => true,
                Op::Batch { writes, .. } => writes.iter().any(|(_, v)| v.is_some()),
                _ => false,
            };
        for slot in slots {
            let Some((h, m)) = self.live(slot) else {
                continue;
            };
            if !m.uncertain.is_empty() || m.indexes_uncertain {
                continue;
            }
            cov("Namespace::space");
            let s = h.space().map_err(|e| format!("slot {slot}: space: {e}"))?;
            let want = model_bytes(m);
            if s.used_bytes + s.pending_bytes < want {
                return Err(format!(
                    "slot {slot}: used {} + pending {} below the model's {want} bytes",
                    s.used_bytes, s.pending_bytes
                ));
            }
            // Nothing was written since the flush: nothing is pending.
            if matches!(op, Op::Flush) && s.pending_bytes != 0 {
                return Err(format!(
                    "slot {slot}: {} bytes pending right after a flush",
                    s.pending_bytes
                ));
            }
            if exact && s.pending_bytes == 0 && s.used_bytes.saturating_sub(s.index_bytes) != want {
                return Err(format!(
                    "slot {slot}: after a flush, used {} (index {}), the model's {want}",
                    s.used_bytes, s.index_bytes
                ));
            }
            // A collection with nothing open that reads old versions (no segment deferred)
            // took every segment with garbage: none is left, none counted on a segment gone.
            if collected_all {
                cov("garbage checked after a whole collection");
            }
            if collected_all && s.garbage_bytes != 0 {
                return Err(format!(
                    "slot {slot}: {} bytes of garbage after a whole collection",
                    s.garbage_bytes
                ));
            }
            if let Some(c) = m.capacity.filter(|_| put) {
                if want > c {
                    return Err(format!(
                        "slot {slot}: a put accepted at {want} bytes, capacity {c}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Bytes a value-log record adds to its key and value, with room to spare (its header is
/// 29 bytes): the most `get_many` may count for a value it read from the log.
const RECORD_SLACK: u64 = 64;

/// Checks a `get_many` of `keys` against the model: each value as a get's, and the byte
/// bound (`Options::get_many_bytes`, `limit` when known) decided by what the answer holds:
/// the engine counts each value found (repeats too) at its value's length at least and its
/// record's at most, so an answer at or below the bound at the least is never refused, and
/// one past it at the least is never given. The trace is the same in every configuration
/// (their bounds differ).
pub(crate) fn check_get_many(
    m: &NsModel,
    faulty: bool,
    keys: &[Vec<u8>],
    r: cerberus_engine::Result<Vec<Option<bytes::Bytes>>>,
    limit: Option<u64>,
) -> Check {
    let (mut least, mut most) = (0u64, 0u64);
    for k in keys {
        let cands: Vec<Option<&Vec<u8>>> = match m.uncertain.get(k) {
            Some(c) => c.iter().map(Option::as_ref).collect(),
            None => vec![m.data.get(k)],
        };
        let len = |v: &Option<&Vec<u8>>| v.map_or(0, |v| v.len() as u64);
        least += cands.iter().map(len).min().unwrap_or(0);
        let record =
            |v: &Option<&Vec<u8>>| v.map_or(0, |v| (v.len() + k.len()) as u64 + RECORD_SLACK);
        most += cands.iter().map(record).max().unwrap_or(0);
    }
    let answer = format!("get_many of {} keys", keys.len());
    match r {
        Err(e) if faulty && !e.is_corruption() => Ok("Err".into()),
        Err(Error::TooManyBytes { bytes, limit }) => {
            cov("get_many refused past its byte bound");
            if bytes <= limit || bytes < least || bytes > most {
                return Err(format!(
                    "get_many refused: {bytes} bytes over {limit}, for an answer of {least}-{most}"
                ));
            }
            Ok(answer)
        }
        Err(e) => Err(format!("get_many: {e}")),
        Ok(values) => {
            if let Some(limit) = limit.filter(|l| least > *l) {
                return Err(format!(
                    "get_many answered {least} bytes or more, past its bound {limit}"
                ));
            }
            if values.len() != keys.len() {
                return Err(format!(
                    "get_many: {} answers to {} keys",
                    values.len(),
                    keys.len()
                ));
            }
            for (k, v) in keys.iter().zip(values) {
                check_read(m, faulty, k, Ok(v.map(|v| v.to_vec())), true)?;
            }
            Ok(answer)
        }
    }
}
