//! Backup (admin): the device writes a consistent copy of its data directory to a directory
//! on its own machine; `cerberus serve --data-dir DIR` serves it as it was.

use crate::blocking::BlockingClient;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::reply::unexpected;
use cerberus_proto::{Reply, Request, DEVICE_NSID};

/// What a backup wrote, as the device reports it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct BackupInfo {
    /// The backup's directory on the device's machine, as the device resolved it.
    pub dir: String,
    /// The backup holds every write at or below this sequence number, and none above.
    pub sequence: u64,
    /// Files hard-linked from the device's data (tables, sealed value-log segments).
    pub files_linked: u64,
    /// Bytes of those files.
    pub bytes_linked: u64,
    /// Files copied or written (the live value-log segment up to the point, the manifest).
    pub files_copied: u64,
    /// Bytes of those files.
    pub bytes_copied: u64,
    /// Namespaces in the backup.
    pub namespaces: u64,
}

impl Client {
    /// Backs the device up into `dir` on the device's machine (admin): absolute, or relative
    /// to the parent of the device's data directory; it must not exist. Writes go on
    /// meanwhile; the backup holds every write acknowledged before the call. A second backup
    /// while one runs fails with a "busy" message.
    pub async fn backup(&self, dir: &str) -> Result<BackupInfo> {
        let request = Request::Backup {
            dir: dir.to_string(),
        };
        match self.run(DEVICE_NSID, request).await? {
            Reply::Json(body) => serde_json::from_slice(&body)
                .map_err(|e| Error::Protocol(format!("backup reply: {e}"))),
            other => Err(unexpected("backup", &other)),
        }
    }
}

impl BlockingClient {
    /// [`Client::backup`], waiting for the answer.
    pub fn backup(&self, dir: &str) -> Result<BackupInfo> {
        self.wait(self.client().backup(dir))
    }
}
