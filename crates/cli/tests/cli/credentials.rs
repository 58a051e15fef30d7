//! Credentials and names a new user can recover from (issue 65, point 2).

use crate::common;

use common::{command, errors, text};

/// Issue 65, point 2: `eval "$(cerberus ns create app --export)"` a second time printed
/// "namespace exists" and nothing on stdout, so the eval succeeded with the variables unset
/// and the next command said "no namespace". Now the output is a failing command, and the
/// error says what to do.
#[test]
fn export_of_an_existing_name_fails_the_eval() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let admin = [("CERBERUS_ADMIN_SECRET", s.admin.as_str())];
    let eval = |name: &str| {
        let cerberus = env!("CARGO_BIN_EXE_cerberus");
        let script = format!(
            "set -e; eval \"$({cerberus} ns create {name} --export)\"; echo \"$CERBERUS_NS\""
        );
        let c = command(&s, &admin, &[]);
        std::process::Command::new("bash")
            .arg("-c")
            .arg(script)
            .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env_remove("CERBERUS_NS")
            .output()
            .unwrap()
    };
    let first = eval("app");
    assert!(first.status.success(), "{}", errors(&first));
    assert!(!text(&first).trim().is_empty(), "CERBERUS_NS set");
    let again = eval("app");
    assert!(
        !again.status.success(),
        "the eval of a failed create must fail"
    );
    assert!(
        text(&again).trim().is_empty(),
        "nothing set: {}",
        text(&again)
    );
    let e = errors(&again);
    assert!(
        e.contains("namespace \"app\" exists") && e.contains("ns rekey app"),
        "{e}"
    );
}

/// Issue 65, point 2: a lost credential was lost for good (only destroy), and `--ns` took
/// ids only ("invalid digit found in string"). Now `ns rekey` issues a new secret, the old
/// one refused at once, and every command names a namespace by id or by name.
#[test]
fn a_lost_secret_is_rekeyed_and_namespaces_go_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let admin = [("CERBERUS_ADMIN_SECRET", s.admin.as_str())];
    let (nsid, old) = common::tenant(&s, "shop");
    let as_tenant = |ns: &str, secret: &str, args: &[&str]| {
        common::cli(
            &s,
            &[("CERBERUS_NS", ns), ("CERBERUS_SECRET", secret)],
            args,
        )
    };
    let put = as_tenant("shop", &old, &["put", "k", "v"]);
    assert!(put.status.success(), "by name: {}", errors(&put));
    let out = common::cli(&s, &admin, &["ns", "rekey", "shop", "--json"]);
    assert!(out.status.success(), "{}", errors(&out));
    let doc: serde_json::Value = serde_json::from_str(text(&out).trim()).unwrap();
    assert_eq!(doc["nsid"].as_u64(), Some(nsid.parse().unwrap()));
    let new = doc["secret"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    let refused = as_tenant(&nsid, &old, &["get", "k"]);
    assert_eq!(refused.status.code(), Some(2), "{}", errors(&refused));
    assert!(
        errors(&refused).contains("wrong credential"),
        "{}",
        errors(&refused)
    );
    for ns in [nsid.as_str(), "shop"] {
        let got = as_tenant(ns, &new, &["get", "k"]);
        assert!(got.status.success(), "{ns}: {}", errors(&got));
        assert_eq!(text(&got), "v");
    }
    // Admin commands by name too; an unknown name says so.
    let out = common::cli(&s, &admin, &["ns", "configure", "shop", "--weight", "3"]);
    assert!(out.status.success(), "{}", errors(&out));
    let out = common::cli(&s, &admin, &["ns", "rekey", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        errors(&out).contains("no namespace named \"nosuch\""),
        "{}",
        errors(&out)
    );
    let out = common::cli(&s, &admin, &["ns", "destroy", "shop"]);
    assert!(out.status.success(), "{}", errors(&out));
    let list = common::cli(&s, &admin, &["ns", "list"]);
    assert!(!text(&list).contains("shop"), "{}", text(&list));
}

/// A name of digits reads as an id (`--ns 12`): the CLI does not make one, and an admin
/// command by id refuses when another namespace has that id for its name (review of issue 65:
/// `ns destroy 2` would otherwise destroy namespace 2 when namespace "2" was meant).
#[test]
fn names_of_digits_are_refused_and_never_mistaken_for_ids() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let admin = [("CERBERUS_ADMIN_SECRET", s.admin.as_str())];
    let o = common::cli(&s, &admin, &["ns", "create", "12"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("digits only"), "{}", errors(&o));
    // Another client may make such a name: namespace 1 "a", namespace 2 "1".
    let (first, _) = common::tenant(&s, "a");
    let client = cerberus_host::BlockingClient::connect(s.addr.as_str()).unwrap();
    client.authenticate_admin(&s.admin).unwrap();
    let (second, _) = client.create_namespace(&first).unwrap();
    assert_ne!(second.to_string(), first);
    let o = common::cli(&s, &admin, &["ns", "destroy", &first]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("ambiguous"), "{}", errors(&o));
    let list = text(&common::cli(&s, &admin, &["ns", "list"]));
    assert_eq!(list.lines().count(), 2, "nothing destroyed: {list}");
}
