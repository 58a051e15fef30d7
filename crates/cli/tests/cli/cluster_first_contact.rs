//! A cluster as a new user meets it (issue 65, point 4): `init` makes its folder, closed to
//! others, with the credentials git-ignored; a move keeps the tenant's secondary indexes.

use crate::cluster::{key, Cluster};
use crate::common;

use cerberus_host::{IndexKind, WriteBatch};
use common::errors;
use std::process::Command;

/// `init` failed when the description's folder did not exist (init is what makes the
/// file), and `secrets/` inside a working tree was one `git add .` from a commit.
#[test]
fn init_makes_its_folder_private_and_ignores_the_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("new/cluster/cluster.toml");
    let init = |file: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_cerberus"))
            .args(["cluster", "--file"])
            .arg(file)
            .arg("init")
            .env_remove("CERBERUS_CLUSTER")
            .output()
            .unwrap()
    };
    let o = init(&file);
    assert!(o.status.success(), "{}", errors(&o));
    let folder = file.parent().unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(folder).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    let ignore = std::fs::read_to_string(folder.join(".gitignore")).unwrap();
    assert!(
        ignore.lines().any(|l| l == "/secrets/") && ignore.contains("/cluster.toml.lock"),
        "{ignore}"
    );
    // A folder with a .gitignore of its own: kept, the missing lines appended once.
    let mine = dir.path().join("repo");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join(".gitignore"), "target/").unwrap();
    let o = init(&mine.join("c.toml"));
    assert!(o.status.success(), "{}", errors(&o));
    let ignore = std::fs::read_to_string(mine.join(".gitignore")).unwrap();
    assert!(ignore.starts_with("target/\n"), "{ignore}");
    assert_eq!(ignore.matches("/secrets/").count(), 1, "{ignore}");
    // The user's folder keeps its own mode.
    let mode = std::fs::metadata(&mine).unwrap().permissions().mode();
    assert_ne!(mode & 0o777, 0o700);
}

/// A reshard silently dropped the tenant's secondary indexes (`list_indexes()` before:
/// `[c vas]`, after: `[]`; queries quietly became scans). Now they are created on the new
/// parts before the copy and checked after it.
#[test]
fn a_reshard_keeps_every_index() {
    let c = Cluster::start(2);
    c.ok(&["create", "t", "--devices", "d0"]);
    let (_, old) = c.parts("t");
    let old = old.into_iter().next().unwrap();
    old.create_index("c", IndexKind::Vas).unwrap();
    old.create_index("n.x", IndexKind::Classic).unwrap();
    let mut b = WriteBatch::new();
    for i in 0..300 {
        let v = serde_json::json!({"c": format!("c{}", i % 7), "n": {"x": i}});
        b.put(key(i), v.to_string().into_bytes());
    }
    old.write(b).unwrap();
    c.ok(&["reshard", "t", "--devices", "d0,d1"]);
    let (devices, parts) = c.parts("t");
    assert_eq!(devices.len(), 2);
    let mut found = 0;
    for p in &parts {
        let list = p.list_indexes().unwrap();
        let kinds: Vec<(String, String)> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["attr"].as_str().unwrap().to_string(),
                    e["kind"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            vec![("c".into(), "vas".into()), ("n.x".into(), "classic".into())],
            "{list}"
        );
        // The query goes through the index, and finds this part's records of c3.
        let reply = p
            .query(&serde_json::json!({"op": "find", "filter": {"c": "c3"}}))
            .unwrap();
        let plan = reply
            .stats()
            .and_then(|s| s["plan"].as_str())
            .unwrap_or_default();
        assert_eq!(plan, "vas index on c", "not through the index");
        found += reply.records.len();
    }
    assert_eq!(found, (0..300).filter(|i| i % 7 == 3).count());
}

/// The CLI could not read or write a cluster tenant (Python only, and not said). Now the key
/// commands take `--cluster FILE --tenant NAME`: each key on its owner's part, listings and
/// scans merged in key order, writes refused while a move is recorded, and the commands
/// that reach one namespace only refuse a tenant rather than answer from one part.
#[test]
fn the_key_commands_reach_a_cluster_tenant() {
    let c = Cluster::start(2);
    c.ok(&["create", "t", "--devices", "d0,d1"]);
    let file = c.file.to_str().unwrap().to_string();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cerberus"))
            .args(args)
            .args(["--cluster", &file, "--tenant", "t"])
            .env_remove("CERBERUS_NS")
            .env_remove("CERBERUS_SECRET")
            .output()
            .unwrap()
    };
    let keys: Vec<String> = (0..40).map(|i| format!("k{i:02}")).collect();
    for k in &keys {
        let o = run(&["put", k, &format!("v-{k}")]);
        assert!(o.status.success(), "{}", errors(&o));
    }
    // Each key is on the part its owner holds, and only there.
    let (devices, parts) = c.parts("t");
    let mut on = [0, 0];
    for k in &keys {
        let i = cerberus_host::cluster::owner(k.as_bytes(), &devices).unwrap();
        assert!(
            parts[i].get(k.clone().into_bytes()).unwrap().is_some(),
            "{k}"
        );
        assert!(
            parts[1 - i].get(k.clone().into_bytes()).unwrap().is_none(),
            "{k}"
        );
        on[i] += 1;
    }
    assert!(on[0] > 0 && on[1] > 0, "spread over both: {on:?}");
    let o = run(&["get", "k07"]);
    assert_eq!(common::text(&o), "v-k07");
    let o = run(&["get", "k03", "k31", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(common::text(&o), "k03\tv-k03\nk31\tv-k31\n");
    assert_eq!(run(&["exists", "k39"]).status.code(), Some(0));
    let listed = common::text(&run(&["list"]));
    assert_eq!(listed, keys.join("\n") + "\n", "merged in key order");
    let o = run(&["list", "--prefix", "k1", "--limit", "3"]);
    assert_eq!(common::text(&o), "k10\nk11\nk12\n");
    let o = run(&["scan", "--start", "k38"]);
    assert_eq!(common::text(&o), "k38\tv-k38\nk39\tv-k39\n");
    let o = run(&["delete", "--prefix", "k2"]);
    assert!(errors(&o).contains("deleted 10 keys"), "{}", errors(&o));
    assert_eq!(common::text(&run(&["list"])).lines().count(), 30);
    // One namespace's commands refuse a tenant.
    let o = run(&["find", "{}"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("connect_cluster"), "{}", errors(&o));
    // A recorded move freezes writes; reads go on.
    let mut desc = c.desc();
    let t = desc.tenants.get_mut("t").unwrap();
    t.moving_to = Some(vec!["d1".into()]);
    t.moving_parts.insert(
        "d1".into(),
        cerberus_host::cluster::Part {
            namespace: "t.g2".into(),
            nsid: Some(99),
            secret_file: "secrets/d1/t.g2.99".into(),
        },
    );
    desc.save(&c.file).unwrap();
    let o = run(&["put", "k00", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("being moved"), "{}", errors(&o));
    assert_eq!(common::text(&run(&["get", "k00"])), "v-k00");
}
