//! `cerberus index`, `find`, `top` and `agg` against a device started by the test.

use crate::common;

use common::{cli, errors, text};

#[test]
fn indexes_and_queries_through_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let ns = common::tenant(&s, "glaciers");
    let env = [
        ("CERBERUS_NS", ns.0.as_str()),
        ("CERBERUS_SECRET", ns.1.as_str()),
    ];
    let file = dir.path().join("g.jsonl");
    let mut lines = String::new();
    for i in 0..60 {
        let unit = ["AUST", "FRAN", "BOLI"][i % 3];
        lines.push_str(&format!(
            "{{\"id\": \"g{i:03}\", \"political_unit\": \"{unit}\", \"max_elev\": {}, \"basin\": \"b{}\"}}\n",
            1000 + i * 10,
            i % 7
        ));
    }
    std::fs::write(&file, lines).unwrap();
    let load = cli(
        &s,
        &env,
        &["load", file.to_str().unwrap(), "--key-field", "id"],
    );
    assert!(load.status.success(), "{}", errors(&load));

    // Before any index the query scans, and says so.
    let o = cli(
        &s,
        &env,
        &["find", r#"{"political_unit": "FRAN"}"#, "--stats"],
    );
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(text(&o).lines().count(), 20);
    assert!(errors(&o).contains("scan"), "{}", errors(&o));

    for (attr, kind) in [("political_unit", "vas"), ("max_elev", "classic")] {
        let o = cli(&s, &env, &["index", "create", attr, "--kind", kind]);
        assert!(o.status.success(), "{}", errors(&o));
    }
    let list = text(&cli(&s, &env, &["index", "list"]));
    assert!(list.contains("political_unit\tvas\tready"), "{list}");
    assert!(list.contains("max_elev\tclassic\tready"), "{list}");
    let again = cli(&s, &env, &["index", "create", "max_elev"]);
    assert!(!again.status.success());
    assert!(
        errors(&again).contains("index exists"),
        "{}",
        errors(&again)
    );

    // Through the index, projected, limited.
    let o = cli(
        &s,
        &env,
        &[
            "find",
            r#"{"political_unit": "FRAN"}"#,
            "--project",
            "basin",
            "--limit",
            "5",
            "--stats",
        ],
    );
    assert!(o.status.success(), "{}", errors(&o));
    let out = text(&o);
    assert_eq!(out.lines().count(), 5);
    assert!(out.lines().all(|l| l.contains("{\"basin\":\"b")), "{out}");
    assert!(
        errors(&o).contains("vas index on political_unit"),
        "{}",
        errors(&o)
    );

    // Top 3 by height among AUST (ids 0, 3, 6, ...; heights grow with the id).
    let o = cli(
        &s,
        &env,
        &[
            "top",
            r#"{"political_unit": "AUST"}"#,
            "--by",
            "max_elev",
            "--desc",
            "-k",
            "3",
        ],
    );
    assert!(o.status.success(), "{}", errors(&o));
    let out = text(&o);
    assert_eq!(
        out.lines()
            .map(|l| l.split('\t').next().unwrap())
            .collect::<Vec<_>>(),
        ["g057", "g054", "g051"],
        "{out}"
    );

    let count = text(&cli(
        &s,
        &env,
        &["agg", r#"{"max_elev": {"$gte": 1500}}"#, "--count"],
    ));
    assert_eq!(count.trim(), "10");
    let max = text(&cli(
        &s,
        &env,
        &["agg", r#"{"political_unit": "BOLI"}"#, "--max", "max_elev"],
    ));
    assert_eq!(max.trim(), "1590");

    // Bad input: a malformed filter, a dropped index.
    let o = cli(&s, &env, &["find", r#"{"x": {"$regex": "a"}}"#]);
    assert!(!o.status.success());
    assert!(errors(&o).contains("$regex"), "{}", errors(&o));
    assert!(cli(&s, &env, &["index", "drop", "max_elev"])
        .status
        .success());
    let o = cli(&s, &env, &["index", "drop", "max_elev"]);
    assert!(!o.status.success());
    assert!(errors(&o).contains("no such index"), "{}", errors(&o));

    // A k of 10^15 (the device once allocated for it and aborted): every match, and the
    // device still answers.
    let o = cli(
        &s,
        &env,
        &["top", "--by", "max_elev", "-k", "1000000000000000", "{}"],
    );
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(text(&o).lines().count(), 60, "{}", text(&o));
    assert!(cli(&s, &env, &["index", "list"]).status.success());
}

#[test]
fn answers_past_the_device_bound_are_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let conf_dir = tempfile::tempdir().unwrap();
    let config = conf_dir.path().join("device.toml");
    std::fs::write(&config, "max_query_results = 5\n").unwrap();
    let s = common::start(dir.path(), &["--config", config.to_str().unwrap()]);
    let ns = common::tenant(&s, "many");
    let env = [
        ("CERBERUS_NS", ns.0.as_str()),
        ("CERBERUS_SECRET", ns.1.as_str()),
    ];
    for i in 0..8 {
        let v = format!("{{\"n\": {i}}}");
        let o = cli(&s, &env, &["put", &format!("k{i}"), &v]);
        assert!(o.status.success(), "{}", errors(&o));
    }
    let o = cli(
        &s,
        &env,
        &["top", "--by", "n", "-k", "1000000000000000", "{}"],
    );
    assert!(!o.status.success());
    assert!(errors(&o).contains("reply too large"), "{}", errors(&o));
    assert!(errors(&o).contains("max_query_results"), "{}", errors(&o));
    let o = cli(&s, &env, &["top", "--by", "n", "-k", "5", "{}"]);
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(text(&o).lines().count(), 5);
}
