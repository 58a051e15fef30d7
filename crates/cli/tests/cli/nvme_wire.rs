//! The `cerberus` commands over NVMe/TCP (`--wire nvme`): namespaces, keys longer than the
//! KV command set's 16 bytes, and grants, against a device started by `cerberus serve`.

use crate::common;

use common::{cli, errors, text, Serve};
use std::path::Path;

const HOST: &str = "nqn.2014-08.org.example:cli";

/// `cerberus serve` with its NVMe/TCP target on a free port, HOST granted every namespace
/// and listed as an admin host (`extra`: more of the `[nvme]` table); the device and its
/// NVMe/TCP address.
fn serve(dir: &Path) -> (Serve, String) {
    // Not about authentication: the host is taken at its word.
    serve_with(dir, "require_host_auth = false\n")
}

fn serve_with(dir: &Path, extra: &str) -> (Serve, String) {
    let config = dir.join("device.toml");
    let toml = format!(
        "nvme_listen = \"127.0.0.1:0\"\n[nvme]\nadmin_hosts = [\"{HOST}\"]\n{extra}\
         [nvme.hosts]\n\"{HOST}\" = [\"*\"]\n"
    );
    std::fs::write(&config, toml).unwrap();
    let data = dir.join("data");
    let (child, mut printed) = common::serve_printing(
        &data,
        &["--config", config.to_str().unwrap()],
        &["listening on ", "NVMe/TCP on "],
    );
    let nvme = printed.pop().unwrap_or_default();
    let s = Serve {
        child,
        addr: printed.pop().unwrap_or_default(),
        admin: common::admin_secret(&data),
        dir: data,
    };
    (s, nvme)
}

#[test]
fn commands_work_over_nvme_as_over_the_native_wire() {
    let dir = tempfile::tempdir().unwrap();
    let (s, nvme) = serve(dir.path());
    let wire = [
        ("CERBERUS_DEVICE", nvme.as_str()),
        ("CERBERUS_WIRE", "nvme"),
        ("CERBERUS_HOSTNQN", HOST),
    ];
    let admin: Vec<(&str, &str)> = wire
        .iter()
        .copied()
        .chain([("CERBERUS_ADMIN_SECRET", s.admin.as_str())])
        .collect();
    let o = cli(&s, &admin, &["ns", "create", "t", "--json"]);
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let nsid = v["nsid"].as_u64().unwrap().to_string();
    let secret = v["secret"].as_str().unwrap().to_string();
    let env: Vec<(&str, &str)> = wire
        .iter()
        .copied()
        .chain([
            ("CERBERUS_NS", nsid.as_str()),
            ("CERBERUS_SECRET", secret.as_str()),
        ])
        .collect();
    let long = "a-key-longer-than-the-kv-command-sets-sixteen-bytes";
    assert!(cli(&s, &env, &["put", long, "hello"]).status.success());
    assert_eq!(text(&cli(&s, &env, &["get", long])), "hello");
    assert_eq!(text(&cli(&s, &env, &["list"])), format!("{long}\n"));
    assert_eq!(cli(&s, &env, &["get", "nope"]).status.code(), Some(1));
    // What was stored over NVMe/TCP reads back over the native wire.
    let native = [
        ("CERBERUS_NS", nsid.as_str()),
        ("CERBERUS_SECRET", secret.as_str()),
    ];
    assert_eq!(text(&cli(&s, &native, &["get", long])), "hello");
    // A host NQN without a grant is refused, with the credential right.
    let stranger: Vec<(&str, &str)> = env
        .iter()
        .map(|&(k, v)| match k {
            "CERBERUS_HOSTNQN" => (k, "nqn.2014-08.org.example:stranger"),
            _ => (k, v),
        })
        .collect();
    let o = cli(&s, &stranger, &["get", long]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("access denied"), "{}", errors(&o));
    // Without a host NQN: said before connecting.
    let o = cli(&s, &env[..2], &["get", long]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("--hostnqn"), "{}", errors(&o));
}

/// HOST's DH-HMAC-CHAP secret (a 32-byte key of 7s, SHA-256 transformed; the CRC computed
/// with Python's zlib.crc32), and another key's.
const SECRET: &str = "DHHC-1:01:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwfLJNij:";
const WRONG: &str = "DHHC-1:01:CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgnCjZ2:";

#[test]
fn a_host_with_a_secret_authenticates_with_dhchap_secret() {
    let dir = tempfile::tempdir().unwrap();
    // WRONG is also the controller secret the device proves itself with to HOST.
    let extra = format!(
        "require_host_auth = true\n[nvme.host_secrets]\n\"{HOST}\" = \"{SECRET}\"\n\
         [nvme.ctrl_secrets]\n\"{HOST}\" = \"{WRONG}\"\n"
    );
    let (s, nvme) = serve_with(dir.path(), &extra);
    let wire = [
        ("CERBERUS_DEVICE", nvme.as_str()),
        ("CERBERUS_WIRE", "nvme"),
        ("CERBERUS_HOSTNQN", HOST),
        ("CERBERUS_ADMIN_SECRET", s.admin.as_str()),
    ];
    let with = |secret: &'static str| -> Vec<(&str, &str)> {
        wire.iter()
            .copied()
            .chain([("CERBERUS_DHCHAP_SECRET", secret)])
            .collect()
    };
    let o = cli(&s, &with(SECRET), &["ns", "create", "t", "--json"]);
    assert!(o.status.success(), "{}", errors(&o));
    // The wrong key, or none, is refused before any command.
    for env in [with(WRONG), wire.to_vec()] {
        let o = cli(&s, &env, &["ns", "list"]);
        assert_eq!(o.status.code(), Some(2), "{}", errors(&o));
        assert!(
            errors(&o).contains("access denied: NVMe/TCP: authentication failed"),
            "{}",
            errors(&o)
        );
    }
    // Bidirectional: the device proves itself with the controller secret it holds for HOST;
    // a host expecting another one stops before any command.
    let both = |ctrl: &'static str| -> Vec<(&str, &str)> {
        with(SECRET)
            .into_iter()
            .chain([("CERBERUS_DHCHAP_CTRL_SECRET", ctrl)])
            .collect()
    };
    let o = cli(&s, &both(WRONG), &["ns", "list"]);
    assert!(o.status.success(), "{}", errors(&o));
    let o = cli(&s, &both(SECRET), &["ns", "list"]);
    assert_eq!(o.status.code(), Some(2), "{}", errors(&o));
    assert!(errors(&o).contains("did not prove"), "{}", errors(&o));
    // On the native wire the flag means nothing: said, not ignored.
    let native = [
        ("CERBERUS_DHCHAP_SECRET", SECRET),
        ("CERBERUS_ADMIN_SECRET", s.admin.as_str()),
    ];
    let o = cli(&s, &native, &["ns", "list"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(errors(&o).contains("--dhchap-secret"), "{}", errors(&o));
}
