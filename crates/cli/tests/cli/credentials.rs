//! Credentials and names a new user can recover from (issue 65, point 2).

use crate::common;

use common::{command, errors, text};

/// Issue 65, point 2: `eval "$(cerberus ns create app --export)"` a second time printed
/// "namespace exists" and nothing on stdout, so the eval succeeded with the variables unset
/// and the next command said "no namespace". Now the output is a failing command, and the
/// error says what to do.
#[test]
fn export_of_an_existing_name_fails_the_eval() {
    let dir = tempfile::tempdir().unwrap();
    let s = common::start(dir.path(), &[]);
    let admin = [("CERBERUS_ADMIN_SECRET", s.admin.as_str())];
    let eval = |name: &str| {
        let cerberus = env!("CARGO_BIN_EXE_cerberus");
        let script = format!(
            "set -e; eval \"$({cerberus} ns create {name} --export)\"; echo \"$CERBERUS_NS\""
        );
        let c = command(&s, &admin, &[]);
        std::process::Command::new("bash")
            .arg("-c")
            .arg(script)
            .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env_remove("CERBERUS_NS")
            .output()
            .unwrap()
    };
    let first = eval("app");
    assert!(first.status.success(), "{}", errors(&first));
    assert!(!text(&first).trim().is_empty(), "CERBERUS_NS set");
    let again = eval("app");
    assert!(
        !again.status.success(),
        "the eval of a failed create must fail"
    );
    assert!(
        text(&again).trim().is_empty(),
        "nothing set: {}",
        text(&again)
    );
    let e = errors(&again);
    assert!(
        e.contains("namespace \"app\" exists") && e.contains("ns destroy"),
        "{e}"
    );
}
