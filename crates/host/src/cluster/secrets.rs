//! The credential files of a cluster's parts: where each is kept (one path per device and
//! namespace id), written once, readable by their owner only, in folders only the owner may
//! enter.

use super::error::ClusterError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the credential of namespace `namespace` (id `nsid`) on `device` is kept, relative
/// to the description's folder: `secrets/{device}/{namespace}.{nsid}`. A folder per device
/// (device names hold no `/` and do not start with a dot) and the id (never reused by a
/// device) make two parts' paths differ, whatever the names.
pub fn secret_path(device: &str, namespace: &str, nsid: u32) -> PathBuf {
    PathBuf::from("secrets")
        .join(device)
        .join(format!("{namespace}.{nsid}"))
}

/// Whether `dir` is a real folder (not a link) that only its owner, this user, may enter.
fn private_folder(dir: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    let refuse = |why: String| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{}: {why}", dir.display()),
        ))
    };
    if !meta.file_type().is_dir() {
        return refuse("not a folder (a link?): credentials are not written through it".into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid takes nothing and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return refuse(format!("owned by uid {}, not this user ({me})", meta.uid()));
        }
        if meta.mode() & 0o077 != 0 {
            return refuse(format!(
                "open to others (mode {:o}): chmod 700 it",
                meta.mode() & 0o777
            ));
        }
    }
    Ok(())
}

/// Writes a new credential file readable by its owner only (mode 0600 from the start, not
/// after; its folders 0700). A file that exists is never replaced: the create fails.
pub(crate) fn write_secret(path: &Path, secret: &str, what: &str) -> Result<(), ClusterError> {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            let mut b = std::fs::DirBuilder::new();
            b.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b.create(dir)?;
            // Folders made before, or by someone else, must be ours and closed to others:
            // else a secret written there could be read, or its path redirected by a link.
            for d in [Some(dir), dir.parent()].into_iter().flatten() {
                if !d.as_os_str().is_empty() {
                    private_folder(d)?;
                }
            }
        }
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let mut f = opts.open(path)?;
        f.write_all(secret.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()
    };
    write().map_err(ClusterError::file(what, path))
}

/// Reads a credential file (surrounding whitespace left out).
pub(crate) fn read_secret(path: &Path, what: &str) -> Result<String, ClusterError> {
    let text = std::fs::read_to_string(path).map_err(ClusterError::file(what, path))?;
    Ok(text.trim().to_string())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn credentials_go_only_into_private_folders() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = dir.path().join("secrets");
        // A folder others may enter (made by hand, or by an older tool): refused.
        std::fs::create_dir(&secrets).unwrap();
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o755)).unwrap();
        let p = dir.path().join(secret_path("a", "x", 7));
        let e = write_secret(&p, "abc", "credential").unwrap_err();
        assert!(e.to_string().contains("chmod 700"), "{e}");
        assert!(!p.exists());
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o700)).unwrap();
        write_secret(&p, "abc", "credential").unwrap();
        // A device folder that is a link elsewhere: never written through.
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), secrets.join("b")).unwrap();
        let q = dir.path().join(secret_path("b", "x", 8));
        let e = write_secret(&q, "abc", "credential").unwrap_err();
        assert!(e.to_string().contains("not a folder"), "{e}");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
