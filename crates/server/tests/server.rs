//! `cerberus-server`, the binary a new user starts first: it serves on its flags, says where,
//! stops on a signal, and refuses what it cannot do with a message that says what to change.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

fn server(dir: &std::path::Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cerberus-server"));
    c.arg("--data-dir")
        .arg(dir)
        .args(extra)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The address of the `listening on` line.
fn listening(child: &mut Child) -> String {
    let out = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).expect("a line");
    line.trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("not the listening line: {line:?}"))
        .to_string()
}

#[test]
fn serves_on_its_flags_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut child = server(&data, &["--listen", "127.0.0.1:0"]).spawn().unwrap();
    let addr = listening(&mut child);
    let secret = std::fs::read_to_string(data.join("admin.secret")).unwrap();
    let client = cerberus_host::BlockingClient::connect(&addr).unwrap();
    client.authenticate_admin(secret.trim()).unwrap();
    assert!(client.list_namespaces().unwrap().is_empty());
    drop(client);
    // SAFETY: kill(2) on the pid of a child this test started and has not waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_held_port_names_the_flag_to_change() {
    let dir = tempfile::tempdir().unwrap();
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let out = server(&dir.path().join("data"), &["--listen", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a device already running?") && err.contains("--listen"),
        "{err}"
    );
    // Nothing left behind by a start that failed.
    assert!(!dir.path().join("data").exists());
}

#[test]
fn a_log_filter_it_cannot_read_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out = server(&dir.path().join("data"), &["--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "cerberus_device=loud")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("RUST_LOG=\"cerberus_device=loud\""), "{err}");
    assert!(!dir.path().join("data").exists());
}

#[test]
fn a_bad_flag_is_refused_with_the_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_cerberus-server"))
        .arg("--lisen")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--listen"), "{err}");
}

#[test]
fn an_endless_admin_secret_file_is_read_no_further_than_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let out = server(
        &dir.path().join("data"),
        &[
            "--listen",
            "127.0.0.1:0",
            "--admin-secret-file",
            "/dev/zero",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("admin"), "{err}");
    assert!(!dir.path().join("data").exists());
}
