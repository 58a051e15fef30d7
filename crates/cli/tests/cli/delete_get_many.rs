//! `cerberus get K1 K2 ...`, `cerberus delete` of several keys, of a prefix and of a range,
//! and `cerberus load -` (issue 65), through the binary.

use crate::common;

use common::{cli, errors, text, Serve};
use std::io::Write;
use std::process::{Output, Stdio};

fn tenant(s: &Serve) -> [(&'static str, String); 2] {
    let (nsid, secret) = common::tenant(s, "t");
    [("CERBERUS_NS", nsid), ("CERBERUS_SECRET", secret)]
}

fn env<'a>(e: &'a [(&'static str, String); 2]) -> [(&'static str, &'a str); 2] {
    [(e[0].0, e[0].1.as_str()), (e[1].0, e[1].1.as_str())]
}

fn with_stdin(s: &Serve, env: &[(&str, &str)], args: &[&str], input: &str) -> Output {
    let mut child = common::command(s, env, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn get_of_several_keys_prints_escaped_lines_and_names_the_missing() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let owned = tenant(&s);
    let env = env(&owned);
    assert!(cli(&s, &env, &["put", "a", "one"]).status.success());
    assert!(cli(&s, &env, &["put", "b", "x\ty\nz"]).status.success());
    let o = cli(&s, &env, &["get", "b", "missing", "a"]);
    assert_eq!(o.status.code(), Some(1), "{}", errors(&o));
    assert_eq!(text(&o), "b\tx\\ty\\nz\na\tone\n");
    assert_eq!(errors(&o).trim_end(), "key not found: missing");
    let o = cli(&s, &env, &["get", "a", "b"]);
    assert_eq!(o.status.code(), Some(0), "{}", errors(&o));
    // One key: the value as stored, as before.
    assert_eq!(text(&cli(&s, &env, &["get", "b"])), "x\ty\nz");
}

#[test]
fn delete_of_keys_of_a_prefix_and_of_a_range() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let owned = tenant(&s);
    let env = env(&owned);
    for k in [
        "k1", "k2", "k3", "k4", "k5", "user:1", "user:2", "user:3", "users",
    ] {
        assert!(cli(&s, &env, &["put", k, "v"]).status.success());
    }
    // Several keys: one missing makes the exit code 1, the others are deleted.
    let o = cli(&s, &env, &["delete", "k1", "nope", "k5"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(errors(&o).trim_end(), "key not found: nope");
    let o = cli(&s, &env, &["delete", "--prefix", "user:"]);
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(errors(&o).trim_end(), "deleted 3 keys");
    // End exclusive.
    let o = cli(&s, &env, &["delete", "--start", "k2", "--end", "k4"]);
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(errors(&o).trim_end(), "deleted 2 keys");
    assert_eq!(text(&cli(&s, &env, &["list"])), "k4\nusers\n");
    let o = cli(&s, &env, &["delete", "--start", "k"]);
    assert_eq!(errors(&o).trim_end(), "deleted 2 keys");
    assert_eq!(text(&cli(&s, &env, &["list"])), "");
    // One spelling per operation: keys and a prefix together are refused.
    let o = cli(&s, &env, &["delete", "k1", "--prefix", "k"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(cli(&s, &env, &["delete"]).status.code(), Some(2));
}

#[test]
fn load_dash_reads_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let owned = tenant(&s);
    let env = env(&owned);
    let lines = "{\"id\": \"r1\", \"n\": 1}\n{\"id\": \"r2\", \"n\": 2}\n";
    let o = with_stdin(&s, &env, &["load", "-"], lines);
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(
        text(&cli(&s, &env, &["get", "r2"])),
        "{\"id\": \"r2\", \"n\": 2}"
    );
    let csv = "id,n\nc1,7\n";
    let o = with_stdin(&s, &env, &["load", "-", "--format", "csv"], csv);
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(
        text(&cli(&s, &env, &["get", "c1"])),
        "{\"id\":\"c1\",\"n\":7}"
    );
    // CSV read as JSON lines: the hint names --format.
    let o = with_stdin(&s, &env, &["load", "-"], csv);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("--format csv"), "{}", errors(&o));
}

#[test]
fn deleting_every_key_takes_all_said_outright() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let owned = tenant(&s);
    let env = env(&owned);
    for k in ["a", "b", "c"] {
        assert!(cli(&s, &env, &["put", k, "v"]).status.success());
    }
    // An empty prefix, or a range without bounds, would delete everything: refused.
    for args in [
        &["delete", "--prefix", ""][..],
        &["delete", "--start", ""],
        &["delete", "--start", "", "--end", ""],
    ] {
        let o = cli(&s, &env, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(errors(&o).contains("say --all"), "{}", errors(&o));
    }
    assert_eq!(text(&cli(&s, &env, &["list"])), "a\nb\nc\n");
    let o = cli(&s, &env, &["delete", "--all", "--prefix", "a"]);
    assert_eq!(o.status.code(), Some(2), "--all with a prefix is refused");
    let o = cli(&s, &env, &["delete", "--all"]);
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(errors(&o).trim_end(), "deleted 3 keys");
    assert_eq!(text(&cli(&s, &env, &["list"])), "");
}
