//! Writes acknowledged by a `--sync` device survive SIGKILL: the process is killed while
//! writers are busy, restarted on the same directory, and every acknowledged write is found.

use crate::common;

use cerberus_host::BlockingClient;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn serve(dir: &Path) -> (Child, String) {
    common::serve(dir, &["--sync"])
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = serve(dir.path());
    let admin = BlockingClient::connect(&addr).unwrap();
    admin
        .authenticate_admin(&common::admin_secret(dir.path()))
        .unwrap();
    let (ns, secret) = admin.create_namespace("durable").unwrap();

    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut writers = Vec::new();
    for t in 0..4u32 {
        let (addr, secret, acked) = (addr.clone(), secret.clone(), acked.clone());
        writers.push(std::thread::spawn(move || {
            let c = BlockingClient::connect(&addr)
                .unwrap()
                .open_namespace(ns, &secret)
                .unwrap();
            for i in 0.. {
                let k = format!("w{t}-{i:06}");
                let v = format!("value {t} {i} {}", "y".repeat(i % 300));
                // After the kill every call fails; what was acknowledged before must survive.
                if c.put(k.clone().into_bytes(), v.clone().into_bytes())
                    .is_err()
                {
                    break;
                }
                acked.lock().unwrap().push((k, v));
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > 100,
        "only {} writes before the kill",
        acked.len()
    );

    let (mut child, addr) = serve(dir.path());
    let c = BlockingClient::connect(&addr)
        .unwrap()
        .open_namespace(ns, &secret)
        .unwrap();
    for (k, v) in &acked {
        let got = c.get(k.clone().into_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(v.as_bytes()), "lost {k}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn sigterm_stops_cleanly_and_keeps_unsynced_writes() {
    let dir = tempfile::tempdir().unwrap();
    // Without --sync: a clean stop must still flush what was acknowledged.
    let (mut child, addr) = common::serve(dir.path(), &[]);
    let admin = BlockingClient::connect(&addr).unwrap();
    admin
        .authenticate_admin(&common::admin_secret(dir.path()))
        .unwrap();
    let (ns, secret) = admin.create_namespace("t").unwrap();
    let c = BlockingClient::connect(&addr)
        .unwrap()
        .open_namespace(ns, &secret)
        .unwrap();
    for i in 0..1000u32 {
        c.put(format!("k{i}").into_bytes(), b"v".to_vec()).unwrap();
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "serve exited with {exit:?} on SIGTERM");
    // Clients of the stopped device get errors, not hangs.
    assert!(c.get(b"k1".to_vec()).is_err());

    let (mut child, addr) = serve(dir.path());
    let c = BlockingClient::connect(&addr)
        .unwrap()
        .open_namespace(ns, &secret)
        .unwrap();
    for i in 0..1000u32 {
        assert!(
            c.contains(format!("k{i}").into_bytes()).unwrap(),
            "lost k{i}"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
