//! Where the secrets of key spaces `kvs_create_key_space` made are kept, so that
//! `kvs_open_key_space` finds them: `CERBERUS_KVS_SECRETS`, else
//! `$XDG_CONFIG_HOME/cerberus/kvs`, else `~/.config/cerberus/kvs`; one directory per device
//! address, one file per key space (`<name>.secret`), the directories 0700 and the files
//! 0600, each written whole to a temporary file and renamed into place.

use crate::credentials::Env;
use crate::result::KvsError;
use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Longest key space name kept here (a file name has 255 bytes, with room for the suffix).
const MAX_NAME: usize = 200;

/// The secrets directory of one device.
#[derive(Clone, Debug)]
pub struct SecretStore {
    dir: PathBuf,
}

/// Whether `name` can be a key space's here: 1 to 200 of `A-Z a-z 0-9 . _ -`, not starting
/// with a dot (so it is a plain file name, and no path).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// The directory under `root` that keeps the secrets of the device at `addr`: the address
/// with every character but letters, digits, `.` and `-` made `_`.
pub fn device_dir(root: &Path, addr: &str) -> PathBuf {
    let name: String = addr
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    root.join(name)
}

impl SecretStore {
    /// The store of the device at `addr`, under the directory `env` names.
    pub fn for_device(addr: &str, env: Env) -> Result<SecretStore, KvsError> {
        let root = match env("CERBERUS_KVS_SECRETS") {
            Some(d) => PathBuf::from(d),
            None => match env("XDG_CONFIG_HOME") {
                Some(d) => PathBuf::from(d).join("cerberus").join("kvs"),
                None => match env("HOME") {
                    Some(h) => PathBuf::from(h)
                        .join(".config")
                        .join("cerberus")
                        .join("kvs"),
                    None => {
                        return Err(KvsError::Credentials(
                            "no CERBERUS_KVS_SECRETS, XDG_CONFIG_HOME or HOME".into(),
                        ))
                    }
                },
            },
        };
        Ok(SecretStore {
            dir: device_dir(&root, addr),
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.secret"))
    }

    /// Keeps `secret` as key space `name`'s (replacing an older one).
    pub fn save(&self, name: &str, secret: &str) -> Result<(), KvsError> {
        if !valid_name(name) {
            return Err(KvsError::KeySpaceName);
        }
        let io = |what: &str, e: std::io::Error| {
            KvsError::Credentials(format!("{what} {}: {e}", self.dir.display()))
        };
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| io("creating", e))?;
        let tmp = self.dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(secret.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, self.path(name))
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io("writing a secret in", e)
        })
    }

    /// Key space `name`'s secret, if this store keeps one.
    pub fn load(&self, name: &str) -> Option<String> {
        if !valid_name(name) {
            return None;
        }
        let text = std::fs::read_to_string(self.path(name)).ok()?;
        Some(text.trim().to_string())
    }

    /// Forgets key space `name`'s secret (best effort: it no longer opens anything).
    pub fn remove(&self, name: &str) {
        if valid_name(name) {
            let _ = std::fs::remove_file(self.path(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn names_are_plain_file_names() {
        assert!(valid_name("keyspace_test"));
        assert!(valid_name("a-b.c"));
        assert!(!valid_name(""));
        assert!(!valid_name(".hidden"));
        assert!(!valid_name("../x"));
        assert!(!valid_name("a/b"));
        assert!(!valid_name(&"x".repeat(201)));
    }

    #[test]
    fn secrets_are_kept_0600_per_device() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap().to_string();
        let env = move |k: &str| (k == "CERBERUS_KVS_SECRETS").then(|| root.clone());
        let a = SecretStore::for_device("127.0.0.1:9420", &env).unwrap();
        let b = SecretStore::for_device("127.0.0.1:9421", &env).unwrap();
        a.save("ks1", "secret-1").unwrap();
        assert_eq!(a.load("ks1").as_deref(), Some("secret-1"));
        assert_eq!(b.load("ks1"), None);
        let mode = std::fs::metadata(a.path("ks1"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        a.save("ks1", "secret-2").unwrap();
        assert_eq!(a.load("ks1").as_deref(), Some("secret-2"));
        a.remove("ks1");
        assert_eq!(a.load("ks1"), None);
        assert!(a.save("../evil", "x").is_err());
    }
}
