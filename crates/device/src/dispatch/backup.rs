//! Backup (admin): a consistent copy of the device's data directory, written on the device's
//! machine, that `cerberus serve --data-dir DIR` serves as it was: the engine's checkpoint in
//! `DIR/db`, the credentials of the namespaces it holds, and `admin.secret` if the device
//! keeps one. Runs on a worker thread, one backup at a time.

use super::engine_error::engine;
use super::{Outcome, Shared};
use crate::error::DeviceError;
use bytes::Bytes;
use cerberus_engine::CheckpointInfo;
use cerberus_proto::{Reply, Status};
use std::path::{Path, PathBuf};

/// The suffix of the directory a backup is built in, beside its destination, until it is
/// complete and renamed into place.
const STAGING_SUFFIX: &str = ".backup-tmp";

fn parent_of(dir: &Path) -> &Path {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn io_failure(e: DeviceError) -> (Status, String) {
    (Status::InternalError, e.to_string())
}

impl Shared {
    /// Backs the device up into `dir` (absolute, or relative to the parent of the data
    /// directory), which must not exist.
    pub(super) fn backup(&self, dir: &str) -> Outcome {
        let Some(_running) = self.backup.enter() else {
            return Err((
                Status::InternalError,
                "busy: a backup is under way; try again once it is done".into(),
            ));
        };
        let dir = match Path::new(dir).is_absolute() {
            true => PathBuf::from(dir),
            false => parent_of(&self.config.data_dir).join(dir),
        };
        let name = dir.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            let msg = format!("backup directory {} names no directory", dir.display());
            (Status::InvalidField, msg)
        })?;
        if dir.symlink_metadata().is_ok() {
            let msg = format!(
                "backup directory {} exists; a backup makes a new one",
                dir.display()
            );
            return Err((Status::InvalidField, msg));
        }
        let stage = parent_of(&dir).join(format!(".{name}{STAGING_SUFFIX}"));
        let written = self.write_backup(&stage).and_then(|info| {
            publish(&stage, &dir).map_err(io_failure)?;
            Ok(info)
        });
        let info = match written {
            Ok(info) => info,
            Err(e) => {
                // Nothing is left behind but what an error could not remove.
                let _ = std::fs::remove_dir_all(&stage);
                return Err(e);
            }
        };
        let shown = std::fs::canonicalize(&dir).unwrap_or(dir);
        tracing::info!(dir = %shown.display(), ?info, "backup written");
        let doc = serde_json::json!({
            "dir": shown.display().to_string(),
            "sequence": info.sequence,
            "files_linked": info.files_linked,
            "bytes_linked": info.bytes_linked,
            "files_copied": info.files_copied,
            "bytes_copied": info.bytes_copied,
            "namespaces": info.namespaces.iter().filter(|n| **n != 0).count(),
        });
        Ok(Reply::Json(Bytes::from(doc.to_string())))
    }

    /// Writes the backup into `stage` (made here, mode 0700; one a crash left is replaced).
    fn write_backup(&self, stage: &Path) -> Result<CheckpointInfo, (Status, String)> {
        use std::os::unix::fs::DirBuilderExt;
        match std::fs::remove_dir_all(stage) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_failure(DeviceError::io(stage, e)))
            }
            _ => {}
        }
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(stage)
            .map_err(|e| io_failure(DeviceError::io(stage, e)))?;
        let info = self.db.checkpoint(stage.join("db")).map_err(engine)?;
        self.creds
            .write_backup(stage, |ns| info.namespaces.contains(&ns))
            .map_err(io_failure)?;
        Ok(info)
    }
}

/// Renames the complete backup into place and makes the rename durable.
fn publish(stage: &Path, dir: &Path) -> Result<(), DeviceError> {
    std::fs::rename(stage, dir).map_err(|e| DeviceError::io(dir, e))?;
    let parent = parent_of(dir);
    std::fs::File::open(parent)
        .and_then(|f| f.sync_all())
        .map_err(|e| DeviceError::io(parent, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Credentials;
    use crate::config::DeviceConfig;
    use cerberus_engine::Db;

    fn shared(dir: &Path) -> Shared {
        let config = DeviceConfig {
            data_dir: dir.to_path_buf(),
            ..DeviceConfig::default()
        };
        let db = Db::builder(config.engine_options())
            .open(dir.join("db"))
            .unwrap();
        let creds = Credentials::open(dir, None).unwrap();
        Shared::new(db, creds, config)
    }

    #[test]
    fn one_backup_at_a_time_relative_to_the_data_dirs_parent_never_over_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let s = shared(&tmp.path().join("data"));
        let running = s.backup.enter().unwrap();
        let (status, msg) = s.backup("bk").unwrap_err();
        assert_eq!(status, Status::InternalError);
        assert!(msg.starts_with("busy"), "{msg}");
        assert!(!tmp.path().join("bk").exists());
        drop(running);
        let Reply::Json(doc) = s.backup("bk").unwrap() else {
            panic!("a backup answers JSON");
        };
        let doc: serde_json::Value = serde_json::from_slice(&doc).unwrap();
        assert!(doc["dir"].as_str().unwrap().ends_with("/bk"), "{doc}");
        for f in ["db/CURRENT", "credentials.json", "admin.secret"] {
            assert!(tmp.path().join("bk").join(f).exists(), "{f}");
        }
        assert!(!tmp.path().join(".bk.backup-tmp").exists());
        let (status, msg) = s.backup("bk").unwrap_err();
        assert_eq!(status, Status::InvalidField);
        assert!(msg.contains("exists"), "{msg}");
    }
}
