//! Credentials that forgive (issue 65): an admin issues a namespace a new secret, the old
//! one refused at once, connections that proved it included; a tenant opens its namespace by
//! name as well as by id; an NVMe/TCP host told why the admin credential is not taken.

use crate::common;
use cerberus_host::Error;

both_wires!(
    a_rekey_refuses_the_old_secret_at_once,
    a_namespace_opens_by_name_and_an_unknown_name_is_a_wrong_credential,
);

fn a_rekey_refuses_the_old_secret_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let (old_conn, nsid, old) = common::tenant(&dev, "app");
    let (other, other_id, other_secret) = common::tenant(&dev, "other");
    old_conn
        .namespace(nsid)
        .put(b"k".to_vec(), b"v".to_vec())
        .unwrap();
    let admin = common::admin(&dev);
    let new = admin.rekey_namespace(nsid).unwrap();
    assert_ne!(new, old);
    // A new connection with the old secret: refused, as a wrong one is.
    let c = common::connect(&dev);
    assert!(matches!(
        c.open_namespace(nsid, &old),
        Err(Error::AccessDenied(_))
    ));
    // The new secret opens it, with its data.
    let c = common::connect(&dev);
    let ns = c.open_namespace(nsid, &new).unwrap();
    assert_eq!(ns.get(b"k".to_vec()).unwrap().unwrap(), b"v".as_slice());
    // The connection that proved the old secret lost the namespace (on NVMe/TCP the host's
    // grant is its credential for the KV command set, so only the tunnel's session ends).
    if common::wire() == common::Wire::Native {
        assert!(matches!(
            old_conn.namespace(nsid).get(b"k".to_vec()),
            Err(Error::AccessDenied(_))
        ));
    }
    // Another namespace's connections and secret are untouched.
    assert!(other
        .namespace(other_id)
        .get(b"k".to_vec())
        .unwrap()
        .is_none());
    common::connect(&dev)
        .open_namespace(other_id, &other_secret)
        .unwrap();
    // The new secret holds across a restart; the old one stays refused.
    dev.shutdown().unwrap();
    let dev = common::start(dir.path(), |_| {});
    assert!(matches!(
        common::connect(&dev).open_namespace(nsid, &old),
        Err(Error::AccessDenied(_))
    ));
    common::connect(&dev).open_namespace(nsid, &new).unwrap();
    // A tenant cannot rekey, and an unknown namespace is no rekey.
    let other = common::connect(&dev);
    other.open_namespace(other_id, &other_secret).unwrap();
    assert!(matches!(
        other.rekey_namespace(nsid),
        Err(Error::AccessDenied(_))
    ));
    assert!(common::admin(&dev).rekey_namespace(999).is_err());
    dev.shutdown().unwrap();
}

fn a_namespace_opens_by_name_and_an_unknown_name_is_a_wrong_credential() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let (_, nsid, secret) = common::tenant(&dev, "reviews");
    let (_, other_id, other_secret) = common::tenant(&dev, "photos");
    let c = common::connect(&dev);
    let ns = c.open_namespace_named("reviews", &secret).unwrap();
    assert_eq!(ns.nsid(), nsid);
    ns.put(b"k".to_vec(), b"v".to_vec()).unwrap();
    assert_eq!(ns.get(b"k".to_vec()).unwrap().unwrap(), b"v".as_slice());
    // Another namespace's secret under this name, a wrong secret, an unknown name: one
    // refusal for all, so names cannot be probed.
    let mut answers = Vec::new();
    for (name, s) in [
        ("reviews", other_secret.as_str()),
        ("reviews", "not-the-secret"),
        ("nosuch", secret.as_str()),
    ] {
        let c = common::connect(&dev);
        let failures = common::metric(&dev, "cerberus_auth_failures_total");
        match c.open_namespace_named(name, s) {
            Err(Error::AccessDenied(msg)) => answers.push(msg),
            other => panic!("{name}: {other:?}"),
        }
        // An unknown name is counted as a wrong secret is (name guessing shows).
        assert_eq!(
            common::metric(&dev, "cerberus_auth_failures_total"),
            failures + 1,
            "{name}"
        );
        // Nothing was granted by the refusal.
        assert!(c.namespace(nsid).get(b"k".to_vec()).is_err());
    }
    let c = common::connect(&dev);
    assert_eq!(
        c.open_namespace_named("photos", &other_secret)
            .unwrap()
            .nsid(),
        other_id
    );
    dev.shutdown().unwrap();
}

/// Issue 65, point 3: a host not in `nvme.admin_hosts` that proves the admin secret was
/// told "unknown namespace or wrong credential"; the answer now names the missing setting.
#[test]
fn nvme_admin_from_a_host_not_in_admin_hosts_names_the_setting() {
    common::over(common::Wire::Nvme, || {
        let dir = tempfile::tempdir().unwrap();
        let dev = common::start(dir.path(), |c| c.nvme.admin_hosts.clear());
        let c = common::connect(&dev);
        match c.authenticate_admin(dev.admin_secret()) {
            Err(Error::AccessDenied(msg)) => assert!(msg.contains("admin_hosts"), "{msg}"),
            other => panic!("{other:?}"),
        }
        dev.shutdown().unwrap();
    });
}
