//! `cerberus-paper --quick`: every experiment runs at its smoke scale and leaves its
//! JSON document, every figure the document names as a PNG, and the report naming them all.

use std::path::Path;
use std::process::Command;

fn paper() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cerberus-paper"))
}

/// The experiments' names, from `--list`.
fn experiments() -> Vec<String> {
    let out = paper()
        .args(["--list", "--out"])
        .arg(std::env::temp_dir())
        .output();
    let out = out.expect("cerberus-paper runs");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

fn is_png(p: &Path) -> bool {
    std::fs::read(p).is_ok_and(|b| b.len() > 1000 && b.starts_with(b"\x89PNG\r\n\x1a\n"))
}

#[test]
fn the_quick_run_writes_every_document_figure_and_the_report() {
    let names = experiments();
    assert!(!names.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("paper");
    let doc = dir.path().join("docs").join("paper-results.md");
    let run = paper()
        .args(["--quick", "--out"])
        .arg(&out)
        .arg("--doc")
        .arg(&doc)
        .output()
        .expect("cerberus-paper runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = std::fs::read_to_string(out.join("paper-results.md")).unwrap();
    let copied = std::fs::read_to_string(&doc).unwrap();
    for name in &names {
        let text = std::fs::read_to_string(out.join(format!("{name}.json")))
            .unwrap_or_else(|e| panic!("{name}.json: {e}"));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["name"], name.as_str());
        assert_eq!(v["scale"], "quick");
        let figures = v["figures"].as_array().unwrap();
        assert!(!figures.is_empty(), "{name}: no figure");
        for f in figures {
            let file = f["file"].as_str().unwrap();
            assert!(is_png(&out.join(file)), "{name}: {file} is not a PNG");
            assert!(is_png(
                &doc.parent().unwrap().join("plots/paper").join(file)
            ));
            assert!(
                report.contains(&format!("(./{file})")),
                "{file} not in the report"
            );
            assert!(copied.contains(&format!("(plots/paper/{file})")));
            // Every series has a value per category.
            let n = f["categories"].as_array().unwrap().len();
            for s in f["series"].as_array().unwrap() {
                assert_eq!(s["values"].as_array().unwrap().len(), n, "{name}: {file}");
            }
        }
        for h in v["headlines"].as_array().unwrap() {
            let claim = h["claim"].as_str().unwrap();
            assert!(h["ours"].as_f64().is_some_and(f64::is_finite), "{claim}");
            assert!(report.contains(claim), "{claim} not in the report");
        }
        assert!(
            report.contains(&format!("## {name}:")),
            "{name} not in the report"
        );
    }
    // Asked again with nothing to run, the report is the same.
    let again = paper()
        .args(["--report-only", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(
        std::fs::read_to_string(out.join("paper-results.md")).unwrap(),
        report
    );
}

#[test]
fn unknown_experiments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = paper()
        .args(["--quick", "--only", "nope", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no experiment nope"));
}
