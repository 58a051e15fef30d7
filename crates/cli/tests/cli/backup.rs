//! `cerberus backup DIR` through the binary: it prints what it wrote, refuses a directory
//! that exists and a missing admin credential, and `serve --data-dir DIR` serves the backup
//! with the same credentials.

use crate::common;

use common::{cli, errors, text};

#[test]
fn backup_writes_a_directory_serve_restores() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(&dir.path().join("data"), &[]);
    let admin = [("CERBERUS_ADMIN_SECRET", s.admin.as_str())];
    let (ns, secret) = common::tenant(&s, "app");
    let tenant = [
        ("CERBERUS_NS", ns.as_str()),
        ("CERBERUS_SECRET", secret.as_str()),
    ];
    for i in 0..20 {
        let o = cli(&s, &tenant, &["put", &format!("k{i}"), &format!("v{i}")]);
        assert!(o.status.success(), "{}", errors(&o));
    }

    let o = cli(&s, &[], &["backup", "bk"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("admin credential"), "{}", errors(&o));

    let o = cli(&s, &admin, &["backup", "bk"]);
    assert!(o.status.success(), "{}", errors(&o));
    let out = text(&o);
    for want in [
        "backup: ",
        "/bk\n",
        "sequence: ",
        "linked: ",
        "copied: ",
        "namespaces: 1",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }
    let o = cli(&s, &admin, &["backup", "bk", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("exists"), "{}", errors(&o));
    drop(s);

    let copy = common::start(&dir.path().join("bk"), &[]);
    assert_eq!(copy.admin, common::admin_secret(&dir.path().join("data")));
    let o = cli(&copy, &tenant, &["get", "k7"]);
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(text(&o).trim(), "v7");
}
