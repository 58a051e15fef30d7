#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use cerberus_engine::*;
use serde_json::json;
use std::io::BufRead;
use std::time::Instant;
fn main() {
    let dir = std::path::Path::new("/tmp/qprof-db");
    let reuse = std::env::var("REUSE").is_ok();
    if !reuse {
        let _ = std::fs::remove_dir_all(dir);
    }
    let mut opts = Options::default();
    if std::env::var("NAND").is_ok() {
        opts.storage = StorageKind::Nand(cerberus_engine::storage::NandConfig::default());
        opts.cache_bytes = 0;
    }
    let noindex = std::env::var("NOINDEX").is_ok();
    let db = Db::open(dir, opts).unwrap();
    let ns = if reuse {
        {
            let id = db
                .list_namespaces()
                .into_iter()
                .find(|n| n.name == "data")
                .unwrap()
                .nsid;
            db.namespace(id).unwrap()
        }
    } else {
        db.create_namespace("data").unwrap()
    };
    if !reuse {
        let kind = if std::env::args().nth(1).as_deref() == Some("classic") {
            IndexKind::Classic
        } else {
            IndexKind::Vas
        };
        if !noindex {
            ns.create_index("political_unit", kind).unwrap();
        }
        let lines: Vec<(String, String)> =
            std::io::BufReader::new(std::fs::File::open("/tmp/g.jsonl").unwrap())
                .lines()
                .map(|l| {
                    let l = l.unwrap();
                    let v: serde_json::Value = serde_json::from_str(&l).unwrap();
                    (v["id"].as_str().unwrap().to_string(), l)
                })
                .collect();
        let t = Instant::now();
        for (k, line) in &lines {
            ns.put(k.as_bytes(), line.as_bytes()).unwrap();
        }
        let puts = t.elapsed();
        db.flush().unwrap();
        eprintln!("load {:?} (puts {:?})", t.elapsed(), puts);
        db.wait_for_compactions().unwrap();
    }
    let which = std::env::args().nth(2).unwrap_or("q1".into());
    let n: usize = std::env::args()
        .nth(3)
        .map(|s| s.parse().unwrap())
        .unwrap_or(20000);
    let filter = Filter::parse(&json!({"political_unit": "FRAN"})).unwrap();
    let t = Instant::now();
    for _ in 0..n {
        match which.as_str() {
            "q1" => {
                let r = ns
                    .get_by_secondary("political_unit", &json!("FRAN"), Some(50))
                    .unwrap();
                assert_eq!(r.0.len(), 50);
            }
            "q2" => {
                let p = ns
                    .find(
                        &filter,
                        &FindOptions {
                            limit: Some(50),
                            ..Default::default()
                        },
                    )
                    .unwrap();
                assert_eq!(p.records.len(), 50);
            }
            "q3" => {
                let p = ns
                    .find(
                        &filter,
                        &FindOptions {
                            limit: Some(50),
                            projection: Some(vec!["basin_code".into()]),
                            ..Default::default()
                        },
                    )
                    .unwrap();
                assert_eq!(p.records.len(), 50);
            }
            "q7" => {
                let r = ns
                    .top(
                        &filter,
                        &TopOptions {
                            by: "max_elev".into(),
                            desc: true,
                            k: 50,
                            projection: None,
                        },
                    )
                    .unwrap();
                assert_eq!(r.0.len(), 50);
            }
            "avg" => {
                ns.aggregate(
                    &filter,
                    &Aggregate::Avg(AttrPath::parse("max_elev").unwrap()),
                )
                .unwrap();
            }
            _ => panic!(),
        }
    }
    db.close().unwrap();
    eprintln!(
        "{which}: {:.1} us/query",
        t.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}
