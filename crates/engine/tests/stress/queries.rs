//! Queries: running them on the engine, their expected answers from the model, and the comparison.

use super::checks::{err_name, tr, Check};
use super::config::cov;
use super::model::{self, norm, record_json, NsModel};
use super::ops::{short, AggFn, Query, ATTRS};
use cerberus_engine::QueryResult;
use cerberus_engine::Readable;
use cerberus_engine::{
    Aggregate, Error, ErrorKind, Filter, FindOptions, Namespace, Snapshot, TopOptions,
};
use serde_json::{json, Value};

/// The answer of a query, normalized (independent of plan and configuration where the
/// query's semantics leave the order or the choice open).
#[derive(Debug, PartialEq)]
pub(crate) enum Answer {
    /// Complete result of a find: records by pk.
    Records(Vec<(Vec<u8>, Value)>),
    /// A find cut by its limit: the records are some `n` of the matches.
    Some(Vec<(Vec<u8>, Value)>),
    Pks(Vec<Vec<u8>>),
    Ranked(Vec<(Vec<u8>, Value, Option<Value>)>),
    Value(Value),
}

pub(crate) fn filter_of(f: &super::ops::FilterSpec) -> Result<Filter, String> {
    Filter::parse(&f.doc()).map_err(|e| format!("filter {} refused: {e}", f.doc()))
}

pub(crate) fn agg_of(f: &AggFn) -> (&'static str, Option<&'static str>) {
    let a = |x: &u8| Some(ATTRS[*x as usize]);
    match f {
        AggFn::Count => ("count", None),
        AggFn::CountOf(x) => ("count", a(x)),
        AggFn::Sum(x) => ("sum", a(x)),
        AggFn::Avg(x) => ("avg", a(x)),
        AggFn::Min(x) => ("min", a(x)),
        AggFn::Max(x) => ("max", a(x)),
    }
}

pub(crate) fn parse_json(b: &[u8], what: &str) -> Result<Value, String> {
    serde_json::from_slice(b).map_err(|e| format!("{what} is not JSON ({e}): {}", short(b)))
}

/// Runs query `q` on a snapshot or namespace (through `run_query` when `doc`).
pub(crate) fn run_engine_query(
    target: Result<&Snapshot, &Namespace>,
    q: &Query,
    doc: bool,
) -> Result<Result<Answer, Error>, String> {
    macro_rules! call {
        ($name:literal, $e:expr) => {{
            cov($name);
            match $e {
                Ok(x) => x,
                Err(e) => return Ok(Err(e)),
            }
        }};
    }
    if doc {
        let Err(ns) = target else {
            return Err("run_query is a namespace call".into());
        };
        let body = match q {
            Query::Find {
                filter,
                projection,
                limit,
                page_bytes,
            } => json!({"op": "find", "filter": filter.doc(),
                "project": projection.as_ref().map(|p| p.iter().map(|a| ATTRS[*a as usize]).collect::<Vec<_>>()),
                "limit": limit, "page_bytes": page_bytes}),
            Query::BySecondary { attr, value, limit } => {
                json!({"op": "get_by_secondary", "attr": ATTRS[*attr as usize], "value": value, "limit": limit})
            }
            Query::Top {
                filter,
                by,
                desc,
                k,
                projection,
            } => {
                json!({"op": "top", "filter": filter.doc(), "by": ATTRS[*by as usize], "desc": desc, "k": k,
                "project": projection.as_ref().map(|p| p.iter().map(|a| ATTRS[*a as usize]).collect::<Vec<_>>())})
            }
            Query::Aggregate { filter, f } => {
                let (func, attr) = agg_of(f);
                json!({"op": "aggregate", "filter": filter.doc(), "fn": func, "attr": attr})
            }
        };
        let body = serde_json::to_vec(&body).unwrap();
        let out = call!("Namespace::run_query", ns.run_query(&body, 1 << 20));
        return Ok(Ok(match q {
            Query::Find { limit, .. } => {
                let mut recs = Vec::new();
                let mut out = out;
                let mut pages = 0;
                loop {
                    for (pk, v) in &out.records {
                        recs.push((pk.to_vec(), record_json(v)));
                    }
                    let Some(c) = out.summary["continuation"].as_str() else {
                        break;
                    };
                    pages += 1;
                    if pages > 10_000 {
                        return Err("run_query find: more than 10,000 pages".into());
                    }
                    let mut b: Value = serde_json::from_slice(&body).unwrap();
                    b["continuation"] = json!(c);
                    let b = serde_json::to_vec(&b).unwrap();
                    out = call!("Namespace::run_query", ns.run_query(&b, 1 << 20));
                }
                finish_find(recs, *limit)?
            }
            Query::BySecondary { .. } => {
                Answer::Pks(out.records.iter().map(|(p, _)| p.to_vec()).collect())
            }
            Query::Top { projection, .. } => {
                let keys = out.summary["keys"]
                    .as_array()
                    .ok_or("run_query top: no keys")?;
                if keys.len() != out.records.len() {
                    return Err("run_query top: keys and records differ in number".into());
                }
                let mut v = Vec::new();
                for ((pk, p), key) in out.records.iter().zip(keys) {
                    let proj = match projection {
                        Some(_) => Some(norm(&parse_json(p, "projection")?)),
                        None if p.is_empty() => None,
                        None => return Err("run_query top: a projection not asked for".into()),
                    };
                    v.push((pk.to_vec(), norm(key), proj));
                }
                Answer::Ranked(v)
            }
            Query::Aggregate { .. } => Answer::Value(norm(&out.summary["value"])),
        }));
    }
    let snap_owned;
    let snap = match target {
        Ok(s) => s,
        Err(ns) => {
            cov("Namespace::snapshot");
            snap_owned = ns.snapshot();
            &snap_owned
        }
    };
    Ok(Ok(match q {
        Query::Find {
            filter,
            projection,
            limit,
            page_bytes,
        } => {
            let filter = filter_of(filter)?;
            let mut opts = FindOptions {
                projection: projection
                    .as_ref()
                    .map(|p| p.iter().map(|a| ATTRS[*a as usize].to_string()).collect()),
                limit: *limit,
                page_bytes: *page_bytes,
                continuation: None,
                keys_only: false,
            };
            let mut recs = Vec::new();
            let mut pages = 0;
            loop {
                let page = call!("Snapshot::find", snap.find(&filter, &opts));
                let mut bytes = 0;
                for r in &page.value {
                    bytes += r.pk.len() + r.value.len();
                    recs.push((r.pk.to_vec(), record_json(&r.value)));
                }
                if page.value.len() > 1 && bytes > *page_bytes {
                    return Err(format!(
                        "find page of {} records holds {bytes} bytes, over page_bytes {page_bytes}",
                        page.value.len()
                    ));
                }
                if page.value.is_empty() && page.continuation.is_some() {
                    return Err("find: an empty page with a continuation".into());
                }
                match page.continuation {
                    Some(c) => opts.continuation = Some(c),
                    None => break,
                }
                pages += 1;
                if pages > 10_000 {
                    return Err("find: more than 10,000 pages".into());
                }
            }
            finish_find(recs, *limit)?
        }
        Query::BySecondary { attr, value, limit } => {
            let QueryResult { value: pks, .. } = call!(
                "Snapshot::get_by_secondary",
                snap.get_by_secondary(ATTRS[*attr as usize], value, *limit)
            );
            Answer::Pks(pks.iter().map(|p| p.to_vec()).collect())
        }
        Query::Top {
            filter,
            by,
            desc,
            k,
            projection,
        } => {
            let filter = filter_of(filter)?;
            let opts = TopOptions {
                by: ATTRS[*by as usize].to_string(),
                desc: *desc,
                k: *k,
                projection: projection
                    .as_ref()
                    .map(|p| p.iter().map(|a| ATTRS[*a as usize].to_string()).collect()),
            };
            let QueryResult { value: ranked, .. } =
                call!("Snapshot::top", snap.top(&filter, &opts));
            Answer::Ranked(
                ranked
                    .into_iter()
                    .map(|r| (r.pk.to_vec(), norm(&r.key), r.projection.map(|p| norm(&p))))
                    .collect(),
            )
        }
        Query::Aggregate { filter, f } => {
            let filter = filter_of(filter)?;
            let (func, attr) = agg_of(f);
            let op = Aggregate::parse(func, attr).map_err(|e| e.to_string())?;
            let QueryResult { value: v, .. } =
                call!("Snapshot::aggregate", snap.aggregate(&filter, &op));
            Answer::Value(norm(&v))
        }
    }))
}

pub(crate) fn finish_find(
    mut recs: Vec<(Vec<u8>, Value)>,
    limit: Option<u64>,
) -> Result<Answer, String> {
    let n = recs.len();
    recs.sort_by(|a, b| a.0.cmp(&b.0));
    recs.dedup_by(|a, b| a.0 == b.0);
    if recs.len() != n {
        return Err(format!(
            "find returned a record twice ({n} records, {} distinct)",
            recs.len()
        ));
    }
    Ok(match limit {
        Some(l) if l as usize <= n => Answer::Some(recs),
        _ => Answer::Records(recs),
    })
}

/// The expected answer of `q` over a model.
pub(crate) fn expect_query(m: &NsModel, q: &Query) -> Result<Answer, &'static str> {
    Ok(match q {
        Query::Find {
            filter,
            projection,
            limit,
            ..
        } => {
            let all = model::find(&m.data, filter, projection.as_deref());
            match limit {
                Some(l) if (*l as usize) <= all.len() => Answer::Some(all),
                _ => Answer::Records(all),
            }
        }
        Query::BySecondary { attr, value, limit } => {
            if !m.indexes.contains_key(attr) {
                return Err("UnknownIndex");
            }
            Answer::Pks(model::by_secondary(&m.data, *attr, value, *limit))
        }
        Query::Top {
            filter,
            by,
            desc,
            k,
            projection,
        } => Answer::Ranked(model::top(
            &m.data,
            filter,
            *by,
            *desc,
            *k,
            projection.as_deref(),
        )),
        Query::Aggregate { filter, f } => Answer::Value(model::aggregate(&m.data, filter, f)),
    })
}

/// The work a query under a limit is charged, where the model counts it exactly: a lookup by
/// secondary key examines one live index entry for each pk it returns (up to its limit; with
/// a limit of 0, the first) and reads no record (docs/queries.md, Work limits).
pub(crate) fn expected_work(m: &NsModel, q: &Query) -> Option<u64> {
    match q {
        Query::BySecondary { attr, value, limit }
            if m.certain() && !m.indexes_uncertain && m.indexes.contains_key(attr) =>
        {
            let at_least_one = limit.map(|l| l.max(1));
            Some(model::by_secondary(&m.data, *attr, value, at_least_one).len() as u64)
        }
        _ => None,
    }
}

/// Where the model counts the work of `q` (run under a limit of `work` on `ns`, `stopped` or
/// not), the limit decides exactly, whatever the tree's shape: an answer within it, a stop
/// past it; and the same query answers under a limit of exactly that work and stops under one
/// unit less (docs/queries.md, Work limits).
pub(crate) fn check_work(
    ns: &Namespace,
    m: &NsModel,
    q: &Query,
    doc: bool,
    work: u64,
    stopped: bool,
) -> Result<(), String> {
    let Some(need) = expected_work(m, q) else {
        return Ok(());
    };
    // A stop exactly when the limit is less than the work.
    let check = |limit: u64, stop: bool| match stop == (need <= limit) {
        false => Ok(()),
        true => Err(format!(
            "{q}: the model counts {need} units of work, yet under a limit of {limit} it {}",
            if stop { "stopped" } else { "answered" }
        )),
    };
    check(work, stopped)?;
    for limit in [Some(need), need.checked_sub(1)].into_iter().flatten() {
        let stop = match run_engine_query(Err(&ns.with_query_work_limit(limit)), q, doc)? {
            Ok(_) => false,
            Err(e) if e.kind() == ErrorKind::WorkLimit => true,
            Err(e) => return Err(format!("{q} under a limit of {limit}: {e}")),
        };
        check(limit, stop)?;
    }
    Ok(())
}

/// Compares a query's answer with the model's; the trace gets the normalized answer.
pub(crate) fn check_answer(
    got: Result<Answer, Error>,
    want: Result<Answer, &'static str>,
    q: &Query,
    lenient: bool,
) -> Check {
    let with_norm = |a: &Answer| -> Answer {
        match a {
            Answer::Records(r) => {
                Answer::Records(r.iter().map(|(k, v)| (k.clone(), norm(v))).collect())
            }
            Answer::Some(r) => Answer::Some(r.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
            Answer::Pks(p) => Answer::Pks(p.clone()),
            Answer::Ranked(r) => Answer::Ranked(r.clone()),
            Answer::Value(v) => Answer::Value(v.clone()),
        }
    };
    match (got, want) {
        (Err(e), _) if lenient => Ok(format!("Err({})", err_name(&e))),
        (Err(e), Err(w)) if err_name(&e) == w => Ok(format!("Err({w})")),
        (Err(e), w) => Err(format!(
            "{q}: got error {e}, expected {:?}",
            w.map(|a| tr(format!("{a:?}")))
        )),
        (Ok(a), Err(w)) => Err(format!(
            "{q}: expected error {w}, got {}",
            tr(format!("{a:?}"))
        )),
        (Ok(a), Ok(w)) => {
            let (a, w) = (with_norm(&a), with_norm(&w));
            match (&a, &w) {
                (Answer::Some(got), Answer::Some(all)) => {
                    let Query::Find { limit: Some(l), .. } = q else {
                        unreachable!()
                    };
                    if got.len() as u64 != *l {
                        return Err(format!(
                            "{q}: {} records, expected the limit {l}",
                            got.len()
                        ));
                    }
                    for r in got {
                        if !all.contains(r) {
                            return Err(format!(
                                "{q}: record {} = {} is not among the {} matches",
                                short(&r.0),
                                tr(r.1.to_string()),
                                all.len()
                            ));
                        }
                    }
                    Ok(format!("some {l} of {}", all.len()))
                }
                _ if a == w => Ok(tr(format!("{a:?}"))),
                _ => Err(format!(
                    "{q}:\n      got      {}\n      expected {}",
                    tr(format!("{a:?}")),
                    tr(format!("{w:?}"))
                )),
            }
        }
    }
}
