//! The README's device quick start, run as written: its shell block is read from README.md
//! (so the two cannot drift apart) and every line runs with bash against a device started
//! for the test, in a working directory laid out as the repository's (a `cerberus-data`
//! directory of the device and the `examples` folder). Each line must exit as its comment
//! says: `exit N` in the comment, else 0.
//!
//! The binary is this test's (its directory goes first on the PATH; the README's own PATH
//! line adds the release build's, which the test's working directory does not have). No
//! line may build anything: `cargo install` would build the whole CLI a second time, in a
//! target directory of its own (issue 65: the README's commands never rebuild).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The lines of the shell blocks under `heading`, up to the next `## ` heading.
fn shell_lines(readme: &str, heading: &str) -> Vec<String> {
    let start = readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README.md has no {heading:?}"));
    let section = &readme[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    let mut lines = Vec::new();
    let mut in_block = false;
    for line in section[..end].lines() {
        if line.starts_with("```") {
            in_block = !in_block && line == "```sh";
            continue;
        }
        // Blank and comment-only lines run nothing (and `{ # ...\n}` is no command).
        if in_block && !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            assert!(
                !line.ends_with('\\'),
                "a continued line is not supported: {line}"
            );
            lines.push(line.to_string());
        }
    }
    lines
}

/// The comment of a shell line: from the first `#` outside quotes that starts a word.
fn comment(line: &str) -> &str {
    let mut quote = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if prev.is_whitespace() => return &line[i + 1..],
            _ => {}
        }
        prev = c;
    }
    ""
}

/// The exit code a line's comment announces (`exit N`), else 0.
fn expected_exit(line: &str) -> i32 {
    let c = comment(line);
    c.match_indices("exit ")
        .filter_map(|(i, _)| c[i + 5..].chars().next()?.to_digit(10))
        .last()
        .map_or(0, |d| d as i32)
}

#[test]
fn comments_announce_exit_codes() {
    assert_eq!(expected_exit("cerberus get k   # absent, exit 1"), 1);
    assert_eq!(
        expected_exit("cerberus put k x # refused: \"key exists\", exit 2"),
        2
    );
    assert_eq!(expected_exit("cerberus find '{\"a#\": \"exit 1\"}'"), 0);
    assert_eq!(expected_exit("cerberus stats   # exit codes differ"), 0);
    assert_eq!(comment("a '#b' c # d"), " d");
}

#[test]
fn device_quick_start_runs_as_written() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let all = shell_lines(&readme, "## Quick start (device)");
    let lines = all;
    assert!(
        !lines.iter().any(|l| l.starts_with("cargo ")),
        "a quick start line builds: {lines:?}"
    );
    assert!(lines.len() > 20, "only {} lines found", lines.len());

    // The working directory: the device's data directory and the sample, as in the
    // repository, where the quick start runs.
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    std::os::unix::fs::symlink(repo_root().join("examples"), work.join("examples")).unwrap();
    let s = common::start(&work.join("cerberus-data"), &[]);

    // One bash runs every line, so exports carry over; each line's output and status go to
    // files of their own.
    let out = work.join("out");
    std::fs::create_dir(&out).unwrap();
    let mut script = String::new();
    for (i, line) in lines.iter().enumerate() {
        script.push_str(&format!(
            "{{ {line}\n}} >'{o}/{i}.out' 2>'{o}/{i}.err'; echo $? >'{o}/{i}.rc'\n",
            o = out.display()
        ));
    }
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_cerberus"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let status = Command::new("bash")
        .args(["--noprofile", "--norc", "-c", &script])
        .current_dir(work)
        .env("PATH", path)
        .env("CERBERUS_DEVICE", &s.addr)
        .env_remove("CERBERUS_NS")
        .env_remove("CERBERUS_SECRET")
        .env_remove("CERBERUS_ADMIN_SECRET")
        .env_remove("CERBERUS_TLS_CA")
        .status()
        .unwrap();
    assert!(status.success());

    let read = |i: usize, ext: &str| {
        std::fs::read_to_string(out.join(format!("{i}.{ext}"))).unwrap_or_default()
    };
    let mut failures = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let rc: i32 = read(i, "rc").trim().parse().unwrap_or(-1);
        let want = expected_exit(line);
        // A query that printed nothing would pass on its exit code alone.
        let silent_query = ["cerberus find", "cerberus top", "cerberus agg"]
            .iter()
            .any(|q| line.starts_with(q))
            && read(i, "out").trim().is_empty();
        if rc != want || silent_query {
            failures.push(format!(
                "{line}\n  exit {rc}, the README says {want}; stdout: {}; stderr: {}",
                read(i, "out"),
                read(i, "err")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The namespace the quick start made, and destroyed at its end, is gone.
    let o = common::cli(
        &s,
        &[("CERBERUS_ADMIN_SECRET", s.admin.as_str())],
        &["ns", "list"],
    );
    assert!(o.status.success(), "{}", common::errors(&o));
    assert_eq!(common::text(&o), "");
}

/// The README's layout table names every page of docs/.
#[test]
fn readme_lists_every_docs_page() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    for entry in std::fs::read_dir(repo_root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            assert!(
                readme.contains(&format!("(docs/{name})")),
                "README.md does not link docs/{name}"
            );
        }
    }
}

/// The shell block under `heading`, whole (heredocs included).
fn shell_block(readme: &str, heading: &str) -> String {
    let start = readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README.md has no {heading:?}"));
    let section = &readme[start..];
    let body = &section[section.find("```sh\n").expect("a shell block") + 6..];
    body[..body.find("\n```").expect("the block ends")].to_string()
}

/// Issue 65, point 3: the README had no NVMe/TCP configuration to copy, and a first try was
/// refused with "unknown namespace or wrong credential". Its NVMe/TCP quick start runs here
/// as pasted: the lines before `cerberus serve` (the key and the configuration file), the
/// device started on that file (the test's process, so it knows when it listens: on free
/// ports instead of 9420 and 4420), then the lines after it, every one to exit 0.
#[test]
fn nvme_quick_start_runs_as_pasted() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let block = shell_block(&readme, "## Quick start (NVMe/TCP)");
    let serve_at = block
        .find("\ncerberus serve --config nvme.toml")
        .expect("the block starts the device");
    let (before, rest) = block.split_at(serve_at + 1);
    let after = &rest[rest.find('\n').expect("lines after serve") + 1..];
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_cerberus"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let bash = |script: &str, device: Option<&str>| {
        let mut c = Command::new("bash");
        c.args(["--noprofile", "--norc", "-c", script])
            .current_dir(work)
            .env("PATH", &path);
        for v in [
            "CERBERUS_NS",
            "CERBERUS_SECRET",
            "CERBERUS_ADMIN_SECRET",
            "CERBERUS_WIRE",
            "CERBERUS_DEVICE",
        ] {
            c.env_remove(v);
        }
        if let Some(d) = device {
            c.env("CERBERUS_DEVICE", d);
        }
        c.output().unwrap()
    };
    let o = bash(&format!("set -e\n{before}\necho \"$key\" > key.txt"), None);
    assert!(o.status.success(), "{}", common::errors(&o));
    let toml = std::fs::read_to_string(work.join("nvme.toml")).unwrap();
    assert!(toml.contains("DHHC-1:01:"), "the key went in: {toml}");
    std::fs::write(
        work.join("nvme.toml"),
        toml.replace("127.0.0.1:4420", "127.0.0.1:0"),
    )
    .unwrap();
    let data = work.join("cerberus-data");
    let config = work.join("nvme.toml");
    let (child, mut printed) = common::serve_printing(
        &data,
        &["--config", config.to_str().unwrap()],
        &["listening on ", "NVMe/TCP on "],
    );
    let _serve = common::Serve {
        child,
        addr: printed.remove(0),
        admin: common::admin_secret(&data),
        dir: data.clone(),
    };
    let nvme = printed.remove(0);
    let o = bash(&format!("set -e\nkey=$(cat key.txt)\n{after}"), Some(&nvme));
    assert!(o.status.success(), "{}", common::errors(&o));
    let out = common::text(&o);
    assert!(out.contains("hello") && out.contains("nvme:1"), "{out}");
}
