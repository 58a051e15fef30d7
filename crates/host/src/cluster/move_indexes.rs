//! The secondary indexes a move carries: read from the old parts, created on the new parts
//! before the copy (so the copy's writes are indexed as they land), and checked after it. A
//! move that dropped them would leave every query a silent scan.

use super::error::ClusterError;
use crate::blocking_namespace::BlockingNamespace;
use crate::query::IndexKind;
use std::collections::BTreeMap;

/// Attribute -> kind of every index of the old parts (the union: a part made by hand may
/// lack one). Two parts with one attribute under two kinds are refused: which to keep is
/// the tenant's call.
pub(super) fn of_parts(
    parts: &[(String, BlockingNamespace)],
) -> Result<BTreeMap<String, IndexKind>, ClusterError> {
    let mut all = BTreeMap::new();
    for (device, ns) in parts {
        let list = ns.list_indexes().map_err(ClusterError::device(
            device,
            "listing the old part's indexes",
        ))?;
        for (attr, kind) in parse(&list)? {
            match all.insert(attr.clone(), kind) {
                Some(k) if k != kind => {
                    return Err(ClusterError::Refused(format!(
                        "index {attr} is {k:?} on one old part and {kind:?} on another \
                         (device {device}): drop one before moving"
                    )))
                }
                _ => {}
            }
        }
    }
    Ok(all)
}

/// Creates every index of `indexes` on a new part (it is empty: each completes at once).
pub(super) fn create_on(
    device: &str,
    ns: &BlockingNamespace,
    indexes: &BTreeMap<String, IndexKind>,
) -> Result<(), ClusterError> {
    for (attr, kind) in indexes {
        ns.create_index(attr, *kind).map_err(ClusterError::device(
            device,
            format!("creating index {attr} on the new part"),
        ))?;
    }
    Ok(())
}

/// Whether a new part lists every index of `indexes`, of its kind.
pub(super) fn check_on(
    device: &str,
    ns: &BlockingNamespace,
    indexes: &BTreeMap<String, IndexKind>,
) -> Result<(), String> {
    let list = ns
        .list_indexes()
        .map_err(|e| format!("listing the indexes of the new part on {device}: {e}"))?;
    // Each was made on an empty part, so its backfill is done when its create returns:
    // one still filling is a part that was not empty.
    if let Some(e) = list
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e.get("ready") == Some(&serde_json::Value::Bool(false)))
    {
        return Err(format!(
            "the new part on {device} has index {} still filling: it was not empty",
            e["attr"]
        ));
    }
    let have: BTreeMap<String, IndexKind> = parse(&list)
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect();
    for (attr, kind) in indexes {
        if have.get(attr) != Some(kind) {
            return Err(format!(
                "the new part on {device} lacks index {attr} ({kind:?})"
            ));
        }
    }
    Ok(())
}

/// `(attr, kind)` of a device's index list (`[{"attr", "kind", "ready"}]`).
fn parse(list: &serde_json::Value) -> Result<Vec<(String, IndexKind)>, ClusterError> {
    let bad = || {
        ClusterError::Refused(format!(
            "an index list the device sent is malformed: {list}"
        ))
    };
    let mut out = Vec::new();
    for e in list.as_array().ok_or_else(bad)? {
        let attr = e.get("attr").and_then(|a| a.as_str()).ok_or_else(bad)?;
        let kind = match e.get("kind").and_then(|k| k.as_str()) {
            Some("vas") => IndexKind::Vas,
            Some("classic") => IndexKind::Classic,
            _ => return Err(bad()),
        };
        out.push((attr.to_string(), kind));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse;
    use crate::query::IndexKind;
    use serde_json::json;

    #[test]
    fn index_lists_parse_and_malformed_ones_are_refused() {
        let list = json!([{"attr": "c", "kind": "vas", "ready": true},
                          {"attr": "n.x", "kind": "classic", "ready": false}]);
        assert_eq!(
            parse(&list).unwrap(),
            vec![
                ("c".to_string(), IndexKind::Vas),
                ("n.x".to_string(), IndexKind::Classic)
            ]
        );
        assert!(parse(&json!([{"attr": "c", "kind": "btree"}])).is_err());
        assert!(parse(&json!({"attr": "c"})).is_err());
    }
}
