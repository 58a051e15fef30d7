//! The `cerberus` commands against a device started by `cerberus serve`.

use crate::common;

use common::{cli, errors, text};
use std::io::Write;

#[test]
fn namespace_and_key_commands() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let admin = [("CERBERUS_ADMIN_SECRET", s.admin.as_str())];

    // Without the admin credential: a clear error, exit code 2.
    let o = cli(&s, &[], &["ns", "create", "t"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("admin"));

    let o = cli(&s, &admin, &["ns", "create", "t", "--json"]);
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let nsid = v["nsid"].as_u64().unwrap().to_string();
    let secret = v["secret"].as_str().unwrap().to_string();
    let env = [
        ("CERBERUS_NS", nsid.as_str()),
        ("CERBERUS_SECRET", secret.as_str()),
    ];

    assert!(cli(&s, &env, &["put", "k1", "hello"]).status.success());
    assert!(cli(&s, &env, &["put", "k2", "world"]).status.success());
    // Not a terminal: the value exactly, no newline added.
    let o = cli(&s, &env, &["get", "k1"]);
    assert_eq!(text(&o), "hello");
    let o = cli(&s, &env, &["get", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(errors(&o).contains("not found"));
    let o = cli(&s, &env, &["put", "k1", "again", "--if-absent"]);
    assert_eq!(o.status.code(), Some(2));
    // As the README's quick start says.
    assert_eq!(errors(&o).trim_end(), "error: storing: key exists");
    assert_eq!(cli(&s, &env, &["exists", "k2"]).status.code(), Some(0));
    assert_eq!(cli(&s, &env, &["exists", "k3"]).status.code(), Some(1));
    assert_eq!(text(&cli(&s, &env, &["list"])), "k1\nk2\n");
    assert_eq!(text(&cli(&s, &env, &["list", "--start", "k2"])), "k2\n");
    assert!(cli(&s, &env, &["delete", "k2"]).status.success());
    assert_eq!(cli(&s, &env, &["delete", "k2"]).status.code(), Some(1));
    // Wrong credential: refused.
    let bad = [("CERBERUS_NS", nsid.as_str()), ("CERBERUS_SECRET", "wrong")];
    assert_eq!(cli(&s, &bad, &["get", "k1"]).status.code(), Some(2));

    let o = cli(&s, &env, &["stats", "--json"]);
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(st["puts"], 2);
    assert!(text(&cli(&s, &env, &["stats"])).contains("puts 2"));

    let o = cli(&s, &admin, &["ns", "list"]);
    assert!(text(&o).contains(&format!("{nsid}\tt")));
    assert!(cli(&s, &admin, &["ns", "destroy", &nsid]).status.success());
    assert_eq!(cli(&s, &env, &["get", "k1"]).status.code(), Some(2));
}

#[test]
fn load_json_lines_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(&dir.path().join("data"), &[]);
    let (nsid, secret) = common::tenant(&s, "bulk");
    let env = [
        ("CERBERUS_NS", nsid.as_str()),
        ("CERBERUS_SECRET", secret.as_str()),
    ];

    let jsonl = dir.path().join("recs.jsonl");
    let mut f = std::fs::File::create(&jsonl).unwrap();
    for i in 0..500 {
        writeln!(f, "{{\"user\": \"u{i:03}\", \"rating\": {}}}", i % 5).unwrap();
    }
    drop(f);
    let o = cli(
        &s,
        &env,
        &["load", jsonl.to_str().unwrap(), "--key-field", "user"],
    );
    assert!(o.status.success(), "{}", errors(&o));
    let o = cli(&s, &env, &["get", "u042"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["rating"], 2);

    let csv = dir.path().join("recs.csv");
    std::fs::write(&csv, "id,name,score\nc1,ann,3.5\nc2,bob,7\n").unwrap();
    let o = cli(&s, &env, &["load", csv.to_str().unwrap()]);
    assert!(o.status.success(), "{}", errors(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&cli(&s, &env, &["get", "c2"]).stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"id": "c2", "name": "bob", "score": 7})
    );

    // A record without the key field stops the load with its line number.
    let badf = dir.path().join("bad.jsonl");
    std::fs::write(&badf, "{\"id\": \"ok\"}\n{\"other\": 1}\n").unwrap();
    let o = cli(&s, &env, &["load", badf.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("line 2"));
}

#[test]
fn scan_prints_entries_in_order_with_escapes_bounds_and_keys_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let ns = common::tenant(&s, "scan");
    let env = [
        ("CERBERUS_NS", ns.0.as_str()),
        ("CERBERUS_SECRET", ns.1.as_str()),
    ];
    for (k, v) in [
        ("b", "two"),
        ("a", "one"),
        ("c\tx", "tab\nnewline"),
        ("ab", "été"),
    ] {
        assert!(cli(&s, &env, &["put", k, v]).status.success());
    }
    assert_eq!(
        text(&cli(&s, &env, &["scan"])),
        "a\tone\nab\tété\nb\ttwo\nc\\tx\ttab\\nnewline\n"
    );
    assert_eq!(
        text(&cli(&s, &env, &["scan", "--prefix", "a", "--keys-only"])),
        "a\nab\n"
    );
    assert_eq!(
        text(&cli(&s, &env, &["scan", "--start", "ab", "--limit", "2"])),
        "ab\tété\nb\ttwo\n"
    );
    assert_eq!(text(&cli(&s, &env, &["scan", "--limit", "0"])), "");
}

#[test]
fn namespace_capacity_and_shares_from_create_to_stats() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let admin = [("CERBERUS_ADMIN_SECRET", s.admin.as_str())];
    let o = cli(
        &s,
        &admin,
        &[
            "ns",
            "create",
            "q",
            "--json",
            "--capacity",
            "1K",
            "--weight",
            "4",
        ],
    );
    assert!(o.status.success(), "{}", errors(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let nsid = v["nsid"].as_u64().unwrap().to_string();
    let secret = v["secret"].as_str().unwrap().to_string();
    let env = [
        ("CERBERUS_NS", nsid.as_str()),
        ("CERBERUS_SECRET", secret.as_str()),
    ];
    let big = "v".repeat(600);
    assert!(cli(&s, &env, &["put", "a", &big]).status.success());
    let o = cli(&s, &env, &["put", "b", &big]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("capacity exceeded"), "{}", errors(&o));

    let st = text(&cli(&s, &env, &["stats"]));
    assert!(st.contains("capacity 1024"), "{st}");
    assert!(st.contains("shares: weight 4"), "{st}");

    // Configure changes what is given and keeps the rest.
    let o = cli(&s, &admin, &["ns", "configure", &nsid, "--capacity", "1M"]);
    assert!(o.status.success(), "{}", errors(&o));
    assert!(cli(&s, &env, &["put", "b", &big]).status.success());
    let o = cli(&s, &env, &["stats", "--json"]);
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(st["capacity"], 1 << 20);
    assert_eq!(st["shares"]["weight"], 4);
    assert!(st["used_bytes"].as_u64().unwrap() >= 601, "{st}");
    let o = cli(&s, &admin, &["ns", "configure", &nsid]);
    assert_eq!(o.status.code(), Some(2));
    let o = cli(&s, &admin, &["ns", "configure", &nsid, "--weight", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", errors(&o));
}
