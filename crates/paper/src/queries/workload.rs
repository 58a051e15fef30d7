//! The queries of a run: the paper's Table 5 for glacier and tweets (plus an aggregate), or a
//! user's filter documents for their own file, and how each runs on the engine.

use anyhow::{Context, Result};
use cerberus_engine::QueryResult;
use cerberus_engine::Readable;
use cerberus_engine::{Aggregate, Filter, FindOptions, Namespace, QueryStats, TopOptions};
use serde_json::{json, Value};

/// One run of a query: results, the engine's statistics, bytes returned.
pub type QueryRun = (usize, RunStats, u64);

/// What a query returns.
#[derive(Clone, Debug)]
pub enum Shape {
    /// pks only, at most `limit` (Get() with a secondary key).
    Pks { limit: Option<usize> },
    /// Records (Find()), whole or projected.
    Find {
        project: Option<Vec<String>>,
        limit: Option<u64>,
    },
    /// Top-K pks by an attribute, largest first (AnalyticOp()).
    Top { by: String, k: usize },
    /// The mean of an attribute.
    Avg { attr: String },
}

#[derive(Clone, Debug)]
pub struct Query {
    pub name: String,
    /// The secondary key (an equality on the indexed attribute), or `None` for a user filter.
    pub sk: Option<Value>,
    pub filter: Value,
    pub shape: Shape,
}

impl Query {
    pub fn sk_label(&self) -> String {
        match &self.sk {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => self.filter.to_string(),
        }
    }
}

pub struct QuerySet {
    /// The attribute indexed.
    pub attr: String,
    pub queries: Vec<Query>,
}

impl QuerySet {
    /// Table 5 of the paper for `dataset` (glacier: Q1-Q3 and Q7, and an average; tweets:
    /// Q4-Q6).
    pub fn paper(dataset: &str) -> QuerySet {
        let (attr, sks, shapes): (&str, Vec<Value>, Vec<(&str, Shape)>) = if dataset == "glacier" {
            (
                "political_unit",
                ["FRAN", "BHUT", "AUST", "BOLI"].map(Value::from).to_vec(),
                vec![
                    ("Q1", Shape::Pks { limit: Some(50) }),
                    (
                        "Q2",
                        Shape::Find {
                            project: None,
                            limit: Some(50),
                        },
                    ),
                    (
                        "Q3",
                        Shape::Find {
                            project: Some(vec!["basin_code".into()]),
                            limit: Some(50),
                        },
                    ),
                    (
                        "Q7",
                        Shape::Top {
                            by: "max_elev".into(),
                            k: 50,
                        },
                    ),
                    // Q7 as host analysis: every record of the unit to the host, sorted there.
                    (
                        "Q7-host",
                        Shape::Find {
                            project: None,
                            limit: None,
                        },
                    ),
                    (
                        "avg",
                        Shape::Avg {
                            attr: "max_elev".into(),
                        },
                    ),
                ],
            )
        } else {
            (
                "user_id",
                [2517, 3161, 1153].map(Value::from).to_vec(),
                vec![
                    ("Q4", Shape::Pks { limit: None }),
                    (
                        "Q5",
                        Shape::Find {
                            project: None,
                            limit: None,
                        },
                    ),
                    (
                        "Q6",
                        Shape::Find {
                            project: Some(vec!["text".into()]),
                            limit: None,
                        },
                    ),
                ],
            )
        };
        let mut queries = Vec::new();
        for (name, shape) in shapes {
            // The paper runs Q7 for FRAN only.
            let sks = if name.starts_with("Q7") {
                &sks[..1]
            } else {
                &sks[..]
            };
            for sk in sks {
                queries.push(Query {
                    name: name.to_string(),
                    sk: Some(sk.clone()),
                    filter: json!({ attr: sk }),
                    shape: shape.clone(),
                });
            }
        }
        QuerySet {
            attr: attr.to_string(),
            queries,
        }
    }

    /// A user's filters, each run as a find of whole records.
    pub fn custom(attr: String, filters: &[String], limit: Option<u64>) -> Result<QuerySet> {
        let mut queries = Vec::new();
        for (i, f) in filters.iter().enumerate() {
            let filter: Value = serde_json::from_str(f).with_context(|| format!("--query {f}"))?;
            Filter::parse(&filter).map_err(anyhow::Error::msg)?;
            queries.push(Query {
                name: format!("q{}", i + 1),
                sk: None,
                filter,
                shape: Shape::Find {
                    project: None,
                    limit,
                },
            });
        }
        Ok(QuerySet { attr, queries })
    }
}

/// The statistics of one run of a query: the engine's own (one per page of a find, turned
/// into JSON once the run is timed), or the JSON a device sent.
pub enum RunStats {
    Engine(Vec<QueryStats>),
    Json(Value),
}

impl RunStats {
    /// As JSON, a find's pages added up.
    pub fn to_json(&self) -> Result<Value> {
        Ok(match self {
            RunStats::Json(v) => v.clone(),
            RunStats::Engine(pages) => {
                let mut total = Value::Null;
                for p in pages {
                    let v = serde_json::to_value(p)?;
                    if total.is_null() {
                        total = v;
                    } else {
                        add_stats(&mut total, &v);
                    }
                }
                if pages.len() > 1 {
                    total["pages_returned"] = json!(pages.len());
                }
                total
            }
        })
    }
}

/// Runs `q` (its filter parsed as `filter`) on the engine: how many results, and the
/// statistics of the query (one per page of a find).
pub fn run_engine(ns: &Namespace, q: &Query, filter: &Filter) -> Result<(usize, RunStats)> {
    let one = |s: QueryStats| RunStats::Engine(vec![s]);
    Ok(match &q.shape {
        Shape::Pks { limit } => {
            let sk = q.sk.clone().unwrap_or(Value::Null);
            let attr = filter
                .conditions
                .first()
                .map(|(p, _)| p.as_str().to_string())
                .unwrap_or_default();
            match ns.get_by_secondary(&attr, &sk, *limit) {
                Ok(QueryResult {
                    value: pks, stats, ..
                }) => (pks.len(), one(stats)),
                // Without an index, the pks come from a scan inside the engine.
                Err(cerberus_engine::Error::UnknownIndex(_)) => {
                    let opts = FindOptions {
                        projection: Some(vec![attr]),
                        limit: limit.map(|l| l as u64),
                        ..FindOptions::default()
                    };
                    let page = ns.find(filter, &opts)?;
                    (page.value.len(), one(page.stats))
                }
                Err(e) => return Err(e.into()),
            }
        }
        Shape::Find { project, limit } => {
            let mut opts = FindOptions {
                projection: project.clone(),
                limit: *limit,
                ..FindOptions::default()
            };
            let (mut n, mut pages) = (0, Vec::new());
            loop {
                let page = ns.find(filter, &opts)?;
                n += page.value.len();
                pages.push(page.stats);
                match page.continuation {
                    Some(c) => opts.continuation = Some(c),
                    None => break,
                }
            }
            (n, RunStats::Engine(pages))
        }
        Shape::Top { by, k } => {
            let opts = TopOptions {
                by: by.clone(),
                desc: true,
                k: *k,
                projection: None,
            };
            let QueryResult {
                value: ranked,
                stats,
                ..
            } = ns.top(filter, &opts)?;
            (ranked.len(), one(stats))
        }
        Shape::Avg { attr } => {
            let op = Aggregate::parse("avg", Some(attr))?;
            let QueryResult { stats, .. } = ns.aggregate(filter, &op)?;
            (1, one(stats))
        }
    })
}

/// Adds the numbers of `b` into `a`, field by field (arrays element-wise).
pub fn add_stats(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(x) => add_stats(x, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (x, y) in a.iter_mut().zip(b) {
                add_stats(x, y);
            }
        }
        (x @ Value::Number(_), Value::Number(y)) => {
            let sum = x.as_f64().unwrap_or(0.0) + y.as_f64().unwrap_or(0.0);
            *x = json!(sum);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_queries() {
        let g = QuerySet::paper("glacier");
        assert_eq!(g.attr, "political_unit");
        // Q1-Q3 and avg for four units, Q7 in the device and on the host for FRAN only.
        assert_eq!(g.queries.len(), 4 * 4 + 2);
        let t = QuerySet::paper("tweets");
        assert_eq!(t.queries.len(), 3 * 3);
        assert!(QuerySet::custom("a".into(), &["{\"a\": 1}".into()], None).is_ok());
        assert!(QuerySet::custom("a".into(), &["{\"a\": {\"$bad\": 1}}".into()], None).is_err());
    }

    #[test]
    fn stats_add_up() {
        let mut a = json!({"x": 1, "r": [1, 2], "plan": "p"});
        add_stats(&mut a, &json!({"x": 2, "r": [3, 4], "plan": "p"}));
        assert_eq!(a, json!({"x": 3.0, "r": [4.0, 6.0], "plan": "p"}));
    }
}
