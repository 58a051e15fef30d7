//! `ns export` then `ns import` into an empty device (issue 65, point 5): the same records,
//! indexes and query answers; a cut-off or altered export is refused with what was stored.

use crate::common;

use common::{cli, errors, text, Serve};
use std::path::Path;

fn repo_file(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(p)
        .to_string_lossy()
        .into_owned()
}

/// What a tenant sees of its namespace: every record, the indexes, and query answers.
fn state(s: &Serve, env: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    for args in [
        vec!["scan"],
        vec!["index", "list"],
        vec![
            "find",
            r#"{"city": "Oslo", "stars": {"$gte": 4}}"#,
            "--project",
            "stars",
        ],
        vec![
            "top",
            r#"{"city": "Lima"}"#,
            "--by",
            "useful",
            "--desc",
            "-k",
            "3",
        ],
        vec!["agg", r#"{"city": "Oslo"}"#, "--avg", "stars"],
        vec!["agg", "{}", "--count"],
    ] {
        let o = cli(s, env, &args);
        assert!(o.status.success(), "{args:?}: {}", errors(&o));
        out.push(text(&o));
    }
    out
}

#[test]
fn export_then_import_into_an_empty_device_gives_the_same_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let a = common::start(&dir.path().join("a"), &[]);
    let (ns, secret) = common::tenant(&a, "reviews");
    let env_a = [
        ("CERBERUS_NS", ns.as_str()),
        ("CERBERUS_SECRET", secret.as_str()),
    ];
    let reviews = repo_file("examples/reviews.jsonl");
    for args in [
        vec!["load", reviews.as_str(), "--key-field", "review_id"],
        vec!["index", "create", "city"],
        vec!["index", "create", "user.id", "--kind", "classic"],
        vec!["put", "tab\tkey", "line one\nline two"],
    ] {
        let o = cli(&a, &env_a, &args);
        assert!(o.status.success(), "{args:?}: {}", errors(&o));
    }
    // A binary value: not UTF-8, so base64 in the export.
    let bin = dir.path().join("bin");
    std::fs::write(&bin, [0xffu8, 0, 0x80, 7]).unwrap();
    let o = common::command(&a, &env_a, &["put", "bin"])
        .stdin(std::fs::File::open(&bin).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", errors(&o));
    let before = state(&a, &env_a);

    let file = dir.path().join("reviews.jsonl");
    let f = file.to_str().unwrap();
    let o = cli(&a, &env_a, &["ns", "export", "reviews", "--output", f]);
    assert!(o.status.success(), "{}", errors(&o));
    assert!(errors(&o).contains("302 records"), "{}", errors(&o));

    let b = common::start(&dir.path().join("b"), &[]);
    let (ns_b, secret_b) = common::tenant(&b, "copy");
    let env_b = [
        ("CERBERUS_NS", ns_b.as_str()),
        ("CERBERUS_SECRET", secret_b.as_str()),
    ];
    let o = cli(&b, &env_b, &["ns", "import", "copy", f]);
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(state(&b, &env_b), before);
    let got = cli(&b, &env_b, &["get", "bin"]);
    assert_eq!(got.stdout, [0xffu8, 0, 0x80, 7]);

    // Imported again: the same keys replaced, the indexes found; the same state.
    let o = cli(&b, &env_b, &["ns", "import", "copy", f]);
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(state(&b, &env_b), before);

    // A cut-off export: what was read is stored, and the import fails saying so.
    let whole = std::fs::read_to_string(&file).unwrap();
    let cut = dir.path().join("cut.jsonl");
    let lines: Vec<&str> = whole.lines().collect();
    std::fs::write(&cut, lines[..100].join("\n") + "\n").unwrap();
    let (ns_c, secret_c) = common::tenant(&b, "cut");
    let env_c = [
        ("CERBERUS_NS", ns_c.as_str()),
        ("CERBERUS_SECRET", secret_c.as_str()),
    ];
    let o = cli(&b, &env_c, &["ns", "import", "cut", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        errors(&o).contains("without its end line"),
        "{}",
        errors(&o)
    );
    // An altered record: the digest differs.
    let changed = whole.replacen("\"v\":\"{", "\"v\":\"{\\\"x\\\":1,", 1);
    assert_ne!(changed, whole);
    let alt = dir.path().join("alt.jsonl");
    std::fs::write(&alt, changed).unwrap();
    let o = cli(&b, &env_c, &["ns", "import", "cut", alt.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        errors(&o).contains("not those the export wrote"),
        "{}",
        errors(&o)
    );
    // A line longer than any record the device takes: refused before it is all read.
    let long = dir.path().join("long.jsonl");
    let mut body = lines[0].to_string() + "\n";
    body.push_str(&"x".repeat(14 << 20));
    std::fs::write(&long, body).unwrap();
    let o = cli(&b, &env_c, &["ns", "import", "cut", long.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        errors(&o).contains("longer than any record"),
        "{}",
        errors(&o)
    );
    // Not an export at all.
    let o = cli(&b, &env_c, &["ns", "import", "cut", reviews.as_str()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("header"), "{}", errors(&o));
}
