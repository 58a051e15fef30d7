//! What a new user meets first: values through stdin and stdout, the device's limits in help
//! and errors, bulk loads that stop or skip with line numbers, honest statistics, errors
//! that say their cause once, a `serve` that fails without leaving anything behind, help per
//! command, `list --prefix`, one answer for an unknown namespace and a wrong credential.

use crate::common;

use common::{cli, command, errors, text, Serve};
use rand::{Rng, SeedableRng};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn ns_env(ns: &(String, String)) -> [(&'static str, &str); 2] {
    [("CERBERUS_NS", &ns.0), ("CERBERUS_SECRET", &ns.1)]
}

/// Starts a device whose `--config` file holds `toml`.
fn start_with_config(dir: &Path, toml: &str) -> Serve {
    let config = dir.join("device.toml");
    std::fs::write(&config, toml).unwrap();
    common::start(&dir.join("data"), &["--config", config.to_str().unwrap()])
}

#[test]
fn put_from_stdin_and_get_to_a_file_round_trip_binary_values() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(&dir.path().join("data"), &[]);
    let ns = common::tenant(&s, "bin");
    let env = ns_env(&ns);

    // Every byte value, NULs and newlines included, ending in neither.
    let mut value = vec![0u8; 1_500_000];
    rand::rngs::StdRng::seed_from_u64(16).fill(&mut value[..]);
    value.extend_from_slice(&(0..=255u8).collect::<Vec<_>>());
    value.push(b'x');
    let input = dir.path().join("in.bin");
    std::fs::write(&input, &value).unwrap();
    let o = command(&s, &env, &["put", "blob"])
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", errors(&o));
    let output = dir.path().join("out.bin");
    let o = command(&s, &env, &["get", "blob"])
        .stdout(std::fs::File::create(&output).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", errors(&o));
    assert!(std::fs::read(&output).unwrap() == value, "bytes differ");

    // Text keeps its own final newline, and gets none added.
    let mut c = command(&s, &env, &["put", "text"]);
    let mut child = c.stdin(Stdio::piped()).spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"two\nlines\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(text(&cli(&s, &env, &["get", "text"])), "two\nlines\n");

    // An empty stdin is an empty value.
    let o = command(&s, &env, &["put", "empty"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", errors(&o));
    let o = cli(&s, &env, &["get", "empty"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty());
}

#[test]
fn limits_are_in_help_and_errors_name_the_limit_and_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(&dir.path().join("data"), &[]);
    let ns = common::tenant(&s, "limits");
    let env = ns_env(&ns);

    for cmd in ["put", "load"] {
        let help = text(&cli(&s, &[], &[cmd, "--help"]));
        assert!(
            help.contains("keys of 1 to 255 bytes (max_key_len)")
                && help.contains("values up to 2 MiB = 2097152 bytes (max_value_len)"),
            "{cmd} --help: {help}"
        );
    }

    // Far over the frame size: the client checks it, with the device's limit.
    let big = dir.path().join("big.bin");
    std::fs::write(&big, vec![b'v'; 10 << 20]).unwrap();
    let o = command(&s, &env, &["put", "big"])
        .stdin(std::fs::File::open(&big).unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        errors(&o).contains(
            "value is 10485760 bytes; this device accepts values up to 2097152 bytes \
             (max_value_len)"
        ),
        "{}",
        errors(&o)
    );
    assert_eq!(cli(&s, &env, &["exists", "big"]).status.code(), Some(1));
    let key = "k".repeat(256);
    let o = cli(&s, &env, &["put", &key, "v"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        errors(&o).contains("key is 256 bytes; this device accepts keys of 1 to 255 bytes"),
        "{}",
        errors(&o)
    );

    // Just over: the device itself refuses it, in the same terms.
    let c = cerberus_host::BlockingClient::connect(&s.addr)
        .unwrap()
        .open_namespace(ns.0.parse().unwrap(), &ns.1)
        .unwrap();
    let e = c.put("k", vec![0u8; (2 << 20) + 1]).unwrap_err();
    assert!(
        matches!(&e, cerberus_host::Error::InvalidValueSize(m) if m ==
            "value is 2097153 bytes; this device accepts values up to 2097152 bytes (max_value_len)"),
        "{e:?}"
    );

    // The limits checked are the device's, not the defaults.
    let small = tempfile::tempdir().unwrap();
    let s = start_with_config(small.path(), "max_value_len = 1000\nmax_key_len = 8\n");
    let ns = common::tenant(&s, "small");
    let env = ns_env(&ns);
    assert!(cli(&s, &env, &["put", "k", &"v".repeat(1000)])
        .status
        .success());
    let o = cli(&s, &env, &["put", "k", &"v".repeat(1001)]);
    assert!(
        errors(&o).contains("value is 1001 bytes; this device accepts values up to 1000 bytes"),
        "{}",
        errors(&o)
    );
    let o = cli(&s, &env, &["get", "123456789"]);
    assert!(
        errors(&o).contains("key is 9 bytes; this device accepts keys of 1 to 8 bytes"),
        "{}",
        errors(&o)
    );
}

#[test]
fn load_says_where_it_stopped_and_skip_bad_stores_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let s = start_with_config(dir.path(), "max_value_len = 1000\n");
    let ns = common::tenant(&s, "load");
    let env = ns_env(&ns);
    let file = dir.path().join("recs.jsonl");
    let too_long = format!("{{\"id\": \"d\", \"pad\": \"{}\"}}", "x".repeat(1000));
    std::fs::write(
        &file,
        format!(
            "{{\"id\": \"a\"}}\n{{\"id\": \"b\"}}\n{{\"name\": \"no id\"}}\n{{\"id\": \"c\"}}\n\
             not json\n{too_long}\n{{\"id\": \"e\"}}\n"
        ),
    )
    .unwrap();
    let path = file.to_str().unwrap();

    let o = cli(&s, &env, &["load", path]);
    assert_eq!(o.status.code(), Some(2));
    let e = errors(&o);
    assert!(e.contains("line 3: no field \"id\""), "{e}");
    assert!(e.contains("with 2 records stored"), "{e}");
    assert!(e.contains("--skip-bad"), "{e}");
    assert_eq!(text(&cli(&s, &env, &["list"])), "a\nb\n");

    let o = cli(&s, &env, &["load", path, "--skip-bad"]);
    assert!(o.status.success(), "{}", errors(&o));
    let e = errors(&o);
    assert!(
        e.contains("loaded 4 records into namespace") && e.contains("skipped 3 bad lines:"),
        "{e}"
    );
    assert!(e.contains("  line 3: no field \"id\"\n"), "{e}");
    assert!(e.contains("  line 5: not JSON"), "{e}");
    let line6 = format!(
        "  line 6: value is {} bytes; this device accepts values up to 1000 bytes",
        too_long.len()
    );
    assert!(e.contains(&line6), "{e}");
    assert_eq!(text(&cli(&s, &env, &["list"])), "a\nb\nc\ne\n");

    // Many bad lines: all counted, the first ten listed.
    let many = dir.path().join("many.jsonl");
    let mut body = String::from("{\"id\": \"good\"}\n");
    for _ in 0..15 {
        body.push_str("{}\n");
    }
    std::fs::write(&many, body).unwrap();
    let o = cli(&s, &env, &["load", many.to_str().unwrap(), "--skip-bad"]);
    assert!(o.status.success(), "{}", errors(&o));
    let e = errors(&o);
    assert!(e.contains("loaded 1 record into"), "{e}");
    assert!(e.contains("skipped 15 bad lines:"), "{e}");
    assert_eq!(e.lines().filter(|l| l.starts_with("  line ")).count(), 10);
    assert!(
        e.contains("  line 2: no field") && e.contains("  line 11: no field"),
        "{e}"
    );
    assert!(e.contains("  ... and 5 more"), "{e}");

    // CSV rows are numbered by the line they start on.
    let csv = dir.path().join("recs.csv");
    std::fs::write(&csv, "id,n\nr1,1\nshort\nr2,2\n").unwrap();
    let o = cli(&s, &env, &["load", csv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        errors(&o).contains("line 3: 1 fields where the header has 2"),
        "{}",
        errors(&o)
    );
    let o = cli(&s, &env, &["load", csv.to_str().unwrap(), "--skip-bad"]);
    assert!(o.status.success(), "{}", errors(&o));
    assert_eq!(cli(&s, &env, &["exists", "r2"]).status.code(), Some(0));

    // Issue 65, point 5: a CSV file not named .csv is read as JSON lines; the error says
    // how to read it as CSV, and with --skip-bad a file with no good line fails (it exited
    // 0 before, every line skipped, nothing stored).
    let unnamed = dir.path().join("recs.txt");
    std::fs::write(&unnamed, "id,n\nr1,1\nr2,2\n").unwrap();
    let o = cli(&s, &env, &["load", unnamed.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("give --format csv"), "{}", errors(&o));
    let o = cli(&s, &env, &["load", unnamed.to_str().unwrap(), "--skip-bad"]);
    assert_eq!(o.status.code(), Some(2), "{}", errors(&o));
    let e = errors(&o);
    assert!(e.contains("every line was bad: nothing stored"), "{e}");
    assert!(e.contains("give --format csv"), "{e}");
    let o = cli(
        &s,
        &env,
        &["load", unnamed.to_str().unwrap(), "--format", "csv"],
    );
    assert!(o.status.success(), "{}", errors(&o));
}

#[test]
fn stats_give_per_lookup_figures_from_lookups_only() {
    let dir = tempfile::tempdir().unwrap();
    // A small memtable, so the load reaches tables that lookups and listings read.
    let s = start_with_config(dir.path(), "[engine]\nmemtable_bytes = 65536\n");
    let ns = common::tenant(&s, "stats");
    let env = ns_env(&ns);
    let file = dir.path().join("recs.jsonl");
    let mut f = std::fs::File::create(&file).unwrap();
    for i in 0..3000 {
        writeln!(
            f,
            "{{\"id\": \"r{i:05}\", \"pad\": \"{}\"}}",
            "p".repeat(60)
        )
        .unwrap();
    }
    drop(f);
    let o = cli(&s, &env, &["load", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", errors(&o));
    let json = |s: &Serve| -> serde_json::Value {
        serde_json::from_slice(&cli(s, &env, &["stats", "--json"]).stdout).unwrap()
    };
    let t = Instant::now();
    while json(&s)["levels"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["tables"] == 0)
    {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no table was written"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(cli(&s, &env, &["get", "r00010"]).status.code(), Some(0));
    assert_eq!(cli(&s, &env, &["get", "absent"]).status.code(), Some(1));

    let before = text(&cli(&s, &env, &["stats"]));
    assert!(before.contains("lookups 2  not found 1\n"), "{before}");
    let per_lookup = |t: &str| -> String {
        t.lines()
            .find(|l| l.starts_with("per lookup: "))
            .unwrap_or_else(|| panic!("no per-lookup line: {t}"))
            .to_string()
    };
    assert!(per_lookup(&before).contains("data pages "), "{before}");
    assert!(before.contains("keys ~3000 (estimate"), "{before}");
    let listing_pages = || json(&s)["listings"]["pages"]["data"].as_u64().unwrap();
    let lookup_pages = || json(&s)["pages"]["data"].as_u64().unwrap();
    let (listed_before, looked_before) = (listing_pages(), lookup_pages());

    // A listing reads data pages: its own counters grow, the lookups' and the per-lookup
    // figures stay.
    assert_eq!(text(&cli(&s, &env, &["list"])).lines().count(), 3000);
    assert!(
        listing_pages() > listed_before,
        "the listing read no data page"
    );
    assert_eq!(lookup_pages(), looked_before);
    let after = text(&cli(&s, &env, &["stats"]));
    assert_eq!(per_lookup(&before), per_lookup(&after));
    // Three pages of 1,000 keys; the first two read one key past themselves.
    assert!(
        after.contains("key listings 3, keys listed 3002, page reads: "),
        "{after}"
    );
}

#[test]
fn errors_say_their_cause_once_and_a_failed_serve_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let serve = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cerberus"));
        c.arg("serve")
            .args(args)
            .env_remove("CERBERUS_ADMIN_SECRET");
        common::output_within(c, Duration::from_secs(20))
    };

    let afile = dir.path().join("afile");
    std::fs::write(&afile, "x").unwrap();
    let o = serve(&[
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        afile.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = errors(&o);
    assert_eq!(
        e.trim_end(),
        format!(
            "error: data directory {} is a file, not a directory",
            afile.display()
        )
    );

    // A port in use is found before the data directory is made.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let fresh = dir.path().join("fresh");
    let data = fresh.join("data");
    let o = serve(&["--listen", &addr, "--data-dir", data.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = errors(&o);
    assert!(e.contains(&format!("cannot listen on {addr}: ")), "{e}");
    assert_eq!(e.matches("os error").count(), 1, "{e}");
    // Issue 65, point 5: it says what to do, not only "Address already in use".
    assert!(
        e.contains("a device already running?") && e.contains("with --listen"),
        "{e}"
    );
    assert!(!fresh.exists(), "serve left {} behind", fresh.display());

    // A failure inside the start (a TLS file missing) takes away what the start made.
    let missing = dir.path().join("missing.pem");
    let m = missing.to_str().unwrap();
    let o = serve(&[
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--tls-cert",
        m,
        "--tls-key",
        m,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("missing.pem"), "{}", errors(&o));
    assert!(!fresh.exists(), "serve left {} behind", fresh.display());
}

#[test]
fn each_command_shows_its_own_flags_with_help() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let help = |args: &[&str]| {
        let o = cli(&s, &[], args);
        assert!(o.status.success(), "{args:?}: {}", errors(&o));
        text(&o)
    };

    let serve = help(&["serve", "--help"]);
    for flag in [
        "--ns ",
        "--secret ",
        "--device ",
        "--tls-ca ",
        "--tls-name ",
    ] {
        assert!(!serve.contains(flag), "serve --help lists {flag}: {serve}");
    }
    assert!(
        serve.contains("--storage <STORAGE>\n          What the engine stores"),
        "{serve}"
    );
    assert!(
        serve.contains("--tls-key <TLS_KEY>\n          TLS private key"),
        "{serve}"
    );
    assert!(!help(&["get", "--help"]).contains("--admin-secret"));
    let create = help(&["ns", "create", "--help"]);
    assert!(
        create.contains("--admin-secret") && !create.contains("--ns "),
        "{create}"
    );

    // Short help puts each flag and its help on one line: none may stand alone.
    let commands: [&[&str]; 13] = [
        &["serve"],
        &["ns", "create"],
        &["ns", "configure"],
        &["ns", "destroy"],
        &["ns", "list"],
        &["put"],
        &["get"],
        &["delete"],
        &["exists"],
        &["list"],
        &["stats"],
        &["load"],
        &[],
    ];
    for cmd in commands {
        let out = help(&[cmd, &["-h"]].concat());
        for line in out.lines().filter(|l| l.trim_start().starts_with('-')) {
            let columns = line.trim().split("  ").filter(|c| !c.is_empty()).count();
            assert!(columns >= 2, "{cmd:?}: no help for `{}`", line.trim());
        }
    }
}

#[test]
fn list_prefix_takes_only_keys_that_begin_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(&dir.path().join("data"), &[]);
    let ns = common::tenant(&s, "prefix");
    let env = ns_env(&ns);
    // Over a page of keys under the prefix, and keys on both sides of it.
    let file = dir.path().join("keys.jsonl");
    let mut f = std::fs::File::create(&file).unwrap();
    for k in ["a", "b", "b1", "ba", "bz", "c"] {
        writeln!(f, "{{\"id\": \"{k}\"}}").unwrap();
    }
    for i in 0..1200 {
        writeln!(f, "{{\"id\": \"p:{i:04}\"}}").unwrap();
    }
    drop(f);
    assert!(cli(&s, &env, &["load", file.to_str().unwrap()])
        .status
        .success());

    let list = |args: &[&str]| text(&cli(&s, &env, &[&["list"], args].concat()));
    assert_eq!(list(&["--prefix", "b"]), "b\nb1\nba\nbz\n");
    assert_eq!(list(&["--prefix", "b", "--start", "b2"]), "ba\nbz\n");
    assert_eq!(list(&["--prefix", "b", "--start", "a"]), "b\nb1\nba\nbz\n");
    assert_eq!(list(&["--prefix", "b", "--start", "c"]), "");
    assert_eq!(list(&["--prefix", "b", "--limit", "2"]), "b\nb1\n");
    assert_eq!(list(&["--prefix", "nothing"]), "");
    let p = list(&["--prefix", "p:"]);
    assert_eq!(p.lines().count(), 1200);
    assert!(p.lines().all(|k| k.starts_with("p:")));
    assert_eq!(
        list(&["--prefix", "p:", "--start", "p:0999", "--limit", "3"]),
        "p:0999\np:1000\np:1001\n"
    );
    // --start alone is a start key, not a prefix.
    assert_eq!(list(&["--start", "bz", "--limit", "3"]), "bz\nc\np:0000\n");
}

#[test]
fn unknown_namespace_and_wrong_credential_get_one_answer() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let ns = common::tenant(&s, "t");
    let answer = |nsid: &str, secret: &str| {
        let o = cli(
            &s,
            &[("CERBERUS_NS", nsid), ("CERBERUS_SECRET", secret)],
            &["get", "k"],
        );
        assert_eq!(o.status.code(), Some(2));
        let e = errors(&o);
        // The rest of the line must not tell the two cases apart.
        e.replace(&format!("namespace {nsid}:"), "namespace N:")
    };
    let wrong = answer(&ns.0, "not-the-secret");
    assert!(
        wrong.contains("access denied: unknown namespace or wrong credential"),
        "{wrong}"
    );
    assert_eq!(wrong, answer("999", "not-the-secret"));
}

#[test]
fn repository_hygiene_for_new_users() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        !readme.contains("../"),
        "README.md points outside the repository"
    );
    let gitignore = std::fs::read_to_string(root.join(".gitignore")).unwrap();
    assert!(
        gitignore.lines().any(|l| l.trim() == "cerberus-data/"),
        ".gitignore does not ignore cerberus-data/"
    );
}

/// A second device started from the quick start's shell (which exported the first device's
/// `CERBERUS_ADMIN_SECRET`) makes its own credential, and its log, written to a file, holds
/// no terminal colour codes.
#[test]
fn serve_ignores_the_clients_admin_variable_and_logs_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = std::fs::File::create(dir.path().join("serve.log")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cerberus"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env(
            "CERBERUS_ADMIN_SECRET",
            "the-other-devices-admin-secret-0123",
        )
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let up = lines.any(|l| l.is_ok_and(|l| l.starts_with("listening on ")));
    let _ = child.kill();
    let _ = child.wait();
    assert!(up, "serve did not start");
    let secret = common::admin_secret(&data);
    assert!(secret.len() >= 16 && secret != "the-other-devices-admin-secret-0123");
    let text = std::fs::read_to_string(dir.path().join("serve.log")).unwrap();
    assert!(text.contains("admin credential: "), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in the log file: {text:?}"
    );
}

/// `serve --admin-secret-file` takes the credential from a file (never on the command line,
/// which `ps` shows every user): the device answers it, and an empty file is refused.
#[test]
fn serve_reads_the_admin_secret_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admin.key");
    std::fs::write(&file, "secret-from-a-file-0123456789\n").unwrap();
    let data = dir.path().join("data");
    let (mut child, printed) = common::serve_printing(
        &data,
        &["--admin-secret-file", file.to_str().unwrap()],
        &["listening on "],
    );
    let c = cerberus_host::BlockingClient::connect(&printed[0]).unwrap();
    let admin = c.authenticate_admin("secret-from-a-file-0123456789");
    let _ = child.kill();
    let _ = child.wait();
    admin.expect("the file's credential is the device's");
    std::fs::write(&file, "\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cerberus"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("other"))
        .args(["--admin-secret-file", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no admin secret"));
}
