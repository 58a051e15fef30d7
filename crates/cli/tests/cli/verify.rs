//! `cerberus verify` on a stopped device's directory: clean, then with a flipped byte.

use std::process::Command;

fn verify(dir: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cerberus"))
        .args(["verify", "--data-dir"])
        .arg(dir)
        .output()
        .unwrap()
}

#[test]
fn verify_reports_a_clean_directory_then_names_the_damaged_file() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let db = cerberus_engine::Db::open(&db_dir, cerberus_engine::Options::default()).unwrap();
    for k in 0..500u32 {
        let value = format!("{{\"k\": {k}, \"pad\": \"{}\"}}", "v".repeat(100));
        db.default_namespace()
            .put(format!("key{k:05}").as_bytes(), value.as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    drop(db);

    let out = verify(dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("no damage found"), "{text}");

    let seg = db_dir.join("000001.vlog");
    let mut data = std::fs::read(&seg).unwrap();
    let at = data.len() / 2;
    data[at] ^= 0x10;
    std::fs::write(&seg, &data).unwrap();
    let out = verify(dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("damaged: ") && text.contains("000001.vlog"),
        "{text}"
    );

    // No engine files: a clear error, not a new empty database.
    let empty = tempfile::tempdir().unwrap();
    let out = verify(empty.path());
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no engine files"),
        "{out:?}"
    );
    assert!(!empty.path().join("db").exists());
}
