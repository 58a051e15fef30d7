//! `stats --exact` (issue 65, point 5): `stats` gave only an estimated key count, and nothing
//! gave an exact one.

use crate::common;

use common::{cli, errors, text};

#[test]
fn stats_exact_counts_the_keys_that_are_there() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let (ns, secret) = common::tenant(&s, "counted");
    let env = [
        ("CERBERUS_NS", ns.as_str()),
        ("CERBERUS_SECRET", secret.as_str()),
    ];
    for k in ["a", "b", "c", "d", "e", "a", "b"] {
        let o = cli(&s, &env, &["put", k, "not json, still a key"]);
        assert!(o.status.success(), "{}", errors(&o));
    }
    assert!(cli(&s, &env, &["delete", "c"]).status.success());
    let o = cli(&s, &env, &["stats", "--exact"]);
    assert!(o.status.success(), "{}", errors(&o));
    assert!(text(&o).contains("keys 4 (counted)"), "{}", text(&o));
    let o = cli(&s, &env, &["stats", "--exact", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&text(&o)).unwrap();
    assert_eq!(doc["keys"], 4, "{doc}");
    // Without it, the estimate says how to get the count.
    let o = cli(&s, &env, &["stats"]);
    assert!(text(&o).contains("--exact counts them"), "{}", text(&o));
}
