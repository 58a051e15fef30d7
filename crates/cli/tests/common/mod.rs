#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Starts `cerberus serve` on a free loopback port over `dir` with `extra` flags; returns the
/// process and the address it printed.
pub fn serve(dir: &Path, extra: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cerberus"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("cerberus serve starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("serve printed its address").unwrap();
        if let Some(a) = line.strip_prefix("listening on ") {
            break a.to_string();
        }
    };
    (child, addr)
}

/// The admin secret the device wrote at first start.
pub fn admin_secret(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("admin.secret"))
        .unwrap()
        .trim()
        .to_string()
}
