//! Checks of single answers against the model (reads, writes, indexes) and small helpers.

use super::config::cov;
use super::model::NsModel;
use super::ops::{short, FaultKind, IdxKind, ATTRS};
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
