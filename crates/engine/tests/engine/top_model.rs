//! Top-K against a model: every ranked walk's answer equals a reference sort of the
//! records meeting the filter.

use crate::common;

use cerberus_engine::storage::{MemStorage, NandConfig, NandStorage, StorageRef};
use cerberus_engine::{Db, Filter, IndexKind, Readable, TopOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

fn rank_of(v: &Value) -> Option<(u8, Value)> {
    match v {
        Value::Null | Value::Array(_) | Value::Object(_) => None,
        Value::Bool(_) => Some((1, v.clone())),
        Value::Number(_) => Some((2, v.clone())),
        Value::String(_) => Some((3, v.clone())),
    }
}

fn cmp_keys(a: &Value, b: &Value) -> std::cmp::Ordering {
    let (ta, a) = rank_of(a).unwrap();
    let (tb, b) = rank_of(b).unwrap();
    ta.cmp(&tb).then_with(|| match (&a, &b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => x.as_i64().unwrap().cmp(&y.as_i64().unwrap()),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => unreachable!(),
    })
}

fn reference(
    model: &BTreeMap<Vec<u8>, Value>,
    filter: &Filter,
    desc: bool,
    k: usize,
    proj: bool,
) -> Vec<(Vec<u8>, Value, Option<Value>)> {
    let mut all: Vec<(Vec<u8>, Value, Option<Value>)> = model
        .iter()
        .filter(|(_, v)| filter.matches(v))
        .filter_map(|(p, v)| {
            let key = v.get("v")?;
            rank_of(key)?;
            let pr = proj.then(|| json!({ "g": v.get("g").cloned().unwrap_or(Value::Null) }));
            Some((p.clone(), key.clone(), pr))
        })
        .collect();
    all.sort_by(|a, b| {
        let by = cmp_keys(&a.1, &b.1);
        let by = if desc { by.reverse() } else { by };
        by.then(a.0.cmp(&b.0))
    });
    all.truncate(k);
    all
}

/// Ranked walks (largest first from each piece's top, smallest first forward) against a
/// reference: ties, nulls, missing and composite values, mixed types, filters on `v` and on
/// `g`, projections, rewrites and deletes left in the memtable, a snapshot, a work limit;
/// on memory and on the modeled NAND device (which reads values ahead).
#[test]
fn ranked_walks_equal_a_reference() {
    for seed in 0..4u64 {
        let kind = match seed % 2 {
            0 => IndexKind::Vas,
            _ => IndexKind::Classic,
        };
        let mut rng = StdRng::seed_from_u64(seed);
        let storage: StorageRef = match seed >= 2 {
            false => Arc::new(MemStorage::new()),
            true => {
                let cfg = NandConfig {
                    t_read: std::time::Duration::from_micros(1),
                    t_prog: std::time::Duration::from_micros(1),
                    ..NandConfig::default()
                };
                Arc::new(NandStorage::new(Arc::new(MemStorage::new()), cfg))
            }
        };
        let mut o = common::small_options();
        o.cache_bytes = 0;
        let db = Db::builder(o).open_storage(storage).unwrap();
        let ns = db.create_namespace("r").unwrap();
        ns.create_index("v", kind).unwrap();
        ns.create_index("g", kind).unwrap();
        let mut model: BTreeMap<Vec<u8>, Value> = BTreeMap::new();
        let gen = |rng: &mut StdRng| -> Value {
            let v = match rng.gen_range(0..20) {
                0 => Value::Null,
                1 => json!([1, 2]),
                2 => json!(rng.gen_bool(0.5)),
                3 => json!(format!("s{}", rng.gen_range(0..30))),
                4 => return json!({ "g": rng.gen_range(0..3) }),
                _ => json!(rng.gen_range(0..200)),
            };
            json!({ "v": v, "g": rng.gen_range(0..3), "pad": "y".repeat(20) })
        };
        let n = 3_000;
        // A put of a random record, or one time in `deletes` a delete, of a random key.
        let write = |rng: &mut StdRng, model: &mut BTreeMap<Vec<u8>, Value>, deletes| {
            let p = format!("p{:05}", rng.gen_range(0..n)).into_bytes();
            if rng.gen_range(0..deletes) == 0 {
                ns.delete(&p).unwrap();
                model.remove(&p);
            } else {
                let v = gen(rng);
                ns.put(&p, &serde_json::to_vec(&v).unwrap()).unwrap();
                model.insert(p, v);
            }
        };
        for i in 0..n {
            write(&mut rng, &mut model, 10);
            if i % 700 == 699 {
                db.flush().unwrap();
            }
        }
        let snap = ns.snapshot();
        let snap_model = model.clone();
        // Rewrites and deletes the memtable holds when the queries run.
        for _ in 0..300 {
            write(&mut rng, &mut model, 4);
        }
        let filters = [
            json!({}),
            json!({"g": 1}),
            json!({"v": {"$lt": 150}}),
            json!({"v": {"$gte": 20}, "g": 2}),
            json!({"v": {"$in": [3, 7, 199, "s3", true]}}),
            json!({"v": {"$prefix": "s1"}}),
        ];
        for f in &filters {
            let filter = Filter::parse(f).unwrap();
            for desc in [true, false] {
                for k in [1, 3, 17, 60, 400] {
                    for proj in [false, true] {
                        let opts = TopOptions {
                            by: "v".into(),
                            desc,
                            k,
                            projection: proj.then(|| vec!["g".to_string()]),
                        };
                        let check = |r: &dyn Readable, m: &BTreeMap<Vec<u8>, Value>, what: &str| {
                            let res = r.top(&filter, &opts).unwrap();
                            let got: Vec<(Vec<u8>, Value, Option<Value>)> = res
                                .value
                                .iter()
                                .map(|r| (r.pk.to_vec(), r.key.clone(), r.projection.clone()))
                                .collect();
                            let want = reference(m, &filter, desc, k, proj);
                            assert_eq!(
                                got, want,
                                "seed {seed} {kind:?} {what} {f} desc {desc} k {k} proj {proj}: {}",
                                res.stats.plan
                            );
                        };
                        check(&ns, &model, "latest");
                        check(&snap, &snap_model, "snapshot");
                        check(&ns.with_query_work_limit(u64::MAX / 2), &model, "limited");
                    }
                }
            }
        }
    }
}
