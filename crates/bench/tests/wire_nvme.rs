//! `cerberus-bench --device local --wire nvme`: the device engine's clients over NVMe/TCP
//! (the vendor commands) store and find every key, as over the native wire.

use std::process::Command;

fn run(wire: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cerberus-bench"))
        .args(["--device", "local", "--wire", wire, "--num", "300", "--db"])
        .arg(dir.path().join("db"))
        .arg("fillseq,readrandom")
        .output()
        .expect("cerberus-bench runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_local_device_is_driven_over_either_wire() {
    for wire in ["native", "nvme"] {
        let report = run(wire);
        assert!(report.contains("(300 of 300 found)"), "{wire}: {report}");
    }
}

#[test]
fn nvme_needs_a_local_device() {
    let out = Command::new(env!("CARGO_BIN_EXE_cerberus-bench"))
        .args([
            "--device",
            "127.0.0.1:1",
            "--admin-secret",
            "x",
            "--wire",
            "nvme",
        ])
        .args(["--num", "10", "fillseq"])
        .output()
        .expect("cerberus-bench runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--device local"), "{err}");
}
