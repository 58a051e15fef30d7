#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Starts `cerberus serve` on a free loopback port over `dir` with `extra` flags; returns the
/// process and the address it printed.
pub fn serve(dir: &Path, extra: &[&str]) -> (Child, String) {
    let (child, mut printed) = serve_printing(dir, extra, &["listening on "]);
    (child, printed.remove(0))
}

/// [`serve`], reading what the device prints until a line starts with each of `prefixes`;
/// returns the rest of those lines, in the order of `prefixes`.
pub fn serve_printing(dir: &Path, extra: &[&str], prefixes: &[&str]) -> (Child, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cerberus"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .args(extra)
        .env_remove("CERBERUS_ADMIN_SECRET")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("cerberus serve starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed: Vec<Option<String>> = vec![None; prefixes.len()];
    while printed.iter().any(Option::is_none) {
        let line = lines.next().expect("serve printed its addresses").unwrap();
        for (p, found) in prefixes.iter().zip(printed.iter_mut()) {
            if let Some(rest) = line.strip_prefix(p) {
                *found = Some(rest.to_string());
            }
        }
    }
    (child, printed.into_iter().flatten().collect())
}

/// The admin secret the device wrote at first start.
pub fn admin_secret(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("admin.secret"))
        .unwrap()
        .trim()
        .to_string()
}

/// A `cerberus serve` that is killed when dropped.
pub struct Serve {
    pub child: Child,
    pub addr: String,
    pub admin: String,
    pub dir: PathBuf,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start(dir: &Path, extra: &[&str]) -> Serve {
    let (child, addr) = serve(dir, extra);
    let admin = admin_secret(dir);
    Serve {
        child,
        addr,
        admin,
        dir: dir.to_path_buf(),
    }
}

/// `cerberus ARGS` against `s`, with only the environment given (none inherited from the
/// shell running the tests).
pub fn command(s: &Serve, env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cerberus"));
    c.env("CERBERUS_DEVICE", &s.addr)
        .env_remove("CERBERUS_NS")
        .env_remove("CERBERUS_SECRET")
        .env_remove("CERBERUS_ADMIN_SECRET")
        .env_remove("CERBERUS_TLS_CA");
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args);
    c
}

pub fn cli(s: &Serve, env: &[(&str, &str)], args: &[&str]) -> Output {
    command(s, env, args).output().unwrap()
}

pub fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn errors(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Creates a namespace through the CLI; returns its `CERBERUS_NS` and `CERBERUS_SECRET`.
pub fn tenant(s: &Serve, name: &str) -> (String, String) {
    let o = cli(
        s,
        &[("CERBERUS_ADMIN_SECRET", s.admin.as_str())],
        &["ns", "create", name, "--json"],
    );
    assert!(o.status.success(), "{}", errors(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    (
        v["nsid"].as_u64().unwrap().to_string(),
        v["secret"].as_str().unwrap().to_string(),
    )
}

/// Runs a command expected to exit by itself; kills it and fails after `limit`, so a command
/// that unexpectedly keeps running (a serve that started) cannot hang the test.
pub fn output_within(mut c: Command, limit: Duration) -> Output {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("still running after {limit:?}: {}", errors(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}
