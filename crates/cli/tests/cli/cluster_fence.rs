//! The fence of a move (issue 61, point 7): from the freeze to the switch the devices refuse
//! writes to the old parts from any writer, not only from cluster clients. Before, a writer
//! holding a part's credential (not a cluster client) that wrote between the verification
//! and the switch was acknowledged, and its write went with the old namespaces. A move that
//! fails, and one aborted after its process died, leave the old parts writable again.

use crate::cluster::{key, value, Cluster};
use cerberus_host::cluster::{self, ClusterError};
use cerberus_host::proto::Status;
use cerberus_host::BlockingNamespace;

fn load(part: &BlockingNamespace, n: usize) {
    for i in 0..n {
        part.put(key(i), value(i)).unwrap();
    }
}

fn refused_as_read_only(what: &str, r: &cerberus_host::Result<()>) {
    match r {
        Err(e) => assert_eq!(e.status(), Some(Status::NamespaceReadOnly), "{what}: {e}"),
        Ok(()) => panic!("{what}: acknowledged by a part being moved"),
    }
}

#[test]
fn a_direct_writer_is_refused_between_the_verification_and_the_switch() {
    let c = Cluster::start(2);
    c.ok(&["create", "t", "--devices", "d0"]);
    // Opened with the part's own credential: a plain namespace client, which no
    // description change stops.
    let (_, parts) = c.parts("t");
    let old = &parts[0];
    load(old, 50);
    let mut in_window = None;
    let report = cluster::reshard_with_hook(&c.file, "t", &["d1".into()], 1000, &mut || {
        let read = old.get(key(7)).unwrap();
        assert_eq!(read.as_deref(), Some(&value(7)[..]), "reads go on");
        in_window = Some(old.put("late", "between verify and switch"));
        Ok(())
    })
    .unwrap();
    assert_eq!(report.records, 50);
    let (devices, new) = c.parts("t");
    assert_eq!(devices, ["d1"]);
    let write = in_window.expect("the hook ran");
    let kept = new[0].get("late").unwrap().is_some();
    assert!(
        write.is_err() || kept,
        "a write acknowledged between the verification and the switch is not in the new \
         placement: lost"
    );
    refused_as_read_only("a write between the verification and the switch", &write);
    assert_eq!(
        new[0].get(key(49)).unwrap().as_deref(),
        Some(&value(49)[..])
    );
    // The old namespace is gone with its fence; the new one takes writes.
    assert_eq!(c.namespaces(0), Vec::<String>::new());
    new[0].put("after", "the move").unwrap();
}

#[test]
fn a_failed_or_aborted_move_leaves_the_old_part_writable() {
    let c = Cluster::start(2);
    c.ok(&["create", "t", "--devices", "d0"]);
    let (_, parts) = c.parts("t");
    let old = &parts[0];
    load(old, 10);
    // A move that fails after the copy (here: told to by the hook).
    let mut in_window = None;
    let err = cluster::reshard_with_hook(&c.file, "t", &["d1".into()], 1000, &mut || {
        in_window = Some(old.put("late", "x"));
        Err(ClusterError::Refused("stopped by the test".into()))
    })
    .unwrap_err();
    assert!(err.to_string().contains("stopped by the test"), "{err}");
    refused_as_read_only("a write while the move ran", &in_window.expect("hook ran"));
    let desc = c.desc();
    assert!(desc.tenants["t"].moving_to.is_none());
    assert_eq!(desc.tenants["t"].devices, ["d0"]);
    assert!(!c.namespaces(1).contains(&"t.g2".to_string()));
    old.put("late", "written once the move failed").unwrap();
    assert_eq!(old.stats().unwrap()["read_only"], false);

    // A move whose process died after its fence: its part on d1 and its record stay, and
    // the old part refuses writes, until --abort.
    let d1 = cluster::connect_admin(&c.desc(), c.base(), "d1").unwrap();
    let (nsid, secret) = d1.create_namespace("t.g2").unwrap();
    c.record_a_move_to_d1(nsid, &secret);
    let d0 = cluster::connect_admin(&c.desc(), c.base(), "d0").unwrap();
    d0.set_read_only(old.nsid(), true).unwrap();
    refused_as_read_only("a write to a fenced part", &old.put("k", "v"));
    c.ok(&["reshard", "t", "--abort"]);
    assert!(c.desc().tenants["t"].moving_to.is_none());
    old.put("k", "written once the move was aborted").unwrap();
    assert_eq!(old.get(key(3)).unwrap().as_deref(), Some(&value(3)[..]));
}
