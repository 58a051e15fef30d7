//! Credentials: one secret per namespace, issued at creation, and an admin secret. The device
//! keeps only SHA-256 hashes of namespace secrets (in `credentials.json`) and compares in
//! constant time. Secrets are 256 random bits, so a plain hash is enough: there is nothing to
//! guess that a slow hash would protect.

use crate::error::DeviceError;
use parking_lot::Mutex;
use rand::RngCore;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use subtle::ConstantTimeEq;

type Hash = [u8; 32];

/// The file in the data directory that holds the admin secret when none is configured.
pub const ADMIN_SECRET_FILE: &str = "admin.secret";
const CREDENTIALS_FILE: &str = "credentials.json";

fn hash(secret: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update(b"cerberus-credential-v1\0");
    h.update(secret);
    h.finalize().into()
}

/// A new secret: 32 random bytes from the OS, as 64 hex digits.
pub(crate) fn generate_secret() -> String {
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn to_hex(h: &Hash) -> String {
    h.iter().map(|x| format!("{x:02x}")).collect()
}

fn from_hex(s: &str) -> Option<Hash> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut h = [0u8; 32];
    for (i, b) in h.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(h)
}

#[derive(serde::Serialize, serde::Deserialize)]
struct CredentialsFile {
    version: u32,
    /// nsid -> hex SHA-256 of its secret.
    namespaces: BTreeMap<u32, String>,
}

pub struct Credentials {
    dir: PathBuf,
    admin: Hash,
    /// The admin secret itself when the device generated or read it (printed by `serve`).
    admin_plain: String,
    /// Each namespace's secret hash and the epoch it was issued in.
    namespaces: Mutex<BTreeMap<u32, (Hash, u64)>>,
    /// One change of the credentials at a time (held across the file's syncs).
    writer: Mutex<()>,
    /// Bumped by every rekey: a connection that proved a namespace checks its
    /// proof again only when this has moved (one load per command otherwise).
    epoch: AtomicU64,
}

impl Credentials {
    /// Loads the credentials of the device in `dir`. Without `admin_secret`, the admin secret
    /// is read from `dir/admin.secret`, or generated and written there with mode 0600.
    pub fn open(dir: &Path, admin_secret: Option<&str>) -> Result<Credentials, DeviceError> {
        let admin_plain = match admin_secret {
            Some(s) => s.to_string(),
            None => load_or_create_admin_secret(dir)?,
        };
        let path = dir.join(CREDENTIALS_FILE);
        let mut namespaces = BTreeMap::new();
        match std::fs::read(&path) {
            Ok(bytes) => {
                let f: CredentialsFile = serde_json::from_slice(&bytes).map_err(|e| {
                    DeviceError::Config(format!("{} is malformed: {e}", path.display()))
                })?;
                if f.version != 1 {
                    return Err(DeviceError::Config(format!(
                        "{} has version {}, this build reads 1",
                        path.display(),
                        f.version
                    )));
                }
                for (ns, h) in f.namespaces {
                    let h = from_hex(&h).ok_or_else(|| {
                        DeviceError::Config(format!("{}: bad hash for {ns}", path.display()))
                    })?;
                    namespaces.insert(ns, (h, 0));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(DeviceError::io(&path, e)),
        }
        Ok(Credentials {
            dir: dir.to_path_buf(),
            admin: hash(admin_plain.as_bytes()),
            admin_plain,
            namespaces: Mutex::new(namespaces),
            epoch: AtomicU64::new(0),
            writer: Mutex::new(()),
        })
    }

    pub fn admin_secret(&self) -> &str {
        &self.admin_plain
    }

    pub fn verify_admin(&self, secret: &[u8]) -> bool {
        bool::from(hash(secret).ct_eq(&self.admin))
    }

    /// Whether `secret` is the credential of `nsid`: the epoch of that credential if so.
    /// Takes the same time whether or not the namespace has a credential, so a failure does
    /// not tell which.
    pub fn verify(&self, nsid: u32, secret: &[u8]) -> Option<u64> {
        let given = hash(secret);
        let stored = self.namespaces.lock().get(&nsid).copied();
        let (target, epoch, exists) = match stored {
            Some((h, e)) => (h, e, true),
            None => ([0u8; 32], 0, false),
        };
        (bool::from(given.ct_eq(&target)) && exists).then_some(epoch)
    }

    /// The epoch of the last rekey of any namespace.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Whether a proof of `nsid` made in `epoch` still holds: no rekey since. A destroyed
    /// namespace's proof is kept (ids are never reused), so its commands are answered as
    /// those of a namespace that is gone, not as unauthenticated ones.
    pub fn still_holds(&self, nsid: u32, epoch: u64) -> bool {
        match self.namespaces.lock().get(&nsid) {
            Some((_, e)) => *e == epoch,
            None => true,
        }
    }

    /// Issues a new secret for `nsid` and persists its hash before returning it.
    pub fn issue(&self, nsid: u32) -> Result<String, DeviceError> {
        let secret = generate_secret();
        let hash = hash(secret.as_bytes());
        self.change(|map, epoch| {
            map.insert(nsid, (hash, epoch));
            false
        })?;
        Ok(secret)
    }

    /// Issues `nsid` a new secret in place of its own (`None` if it has none): once this
    /// returns, the old secret is refused, and connections that proved it lose the namespace.
    pub fn rekey(&self, nsid: u32) -> Result<Option<String>, DeviceError> {
        let secret = generate_secret();
        let hash = hash(secret.as_bytes());
        let rekeyed = self.change(|map, epoch| match map.get_mut(&nsid) {
            Some(entry) => {
                *entry = (hash, epoch + 1);
                true
            }
            None => false,
        })?;
        Ok(rekeyed.then_some(secret))
    }

    /// Forgets the credential of a destroyed namespace.
    pub fn revoke(&self, nsid: u32) -> Result<(), DeviceError> {
        self.change(|map, _| {
            map.remove(&nsid);
            false
        })
        .map(|_| ())
    }

    /// Applies `f` to a copy of the credentials (given the current epoch; `true` from it
    /// moves the epoch on), persists the copy and puts it in place. The map's lock is held
    /// only to copy and to swap, never across the file's syncs: every command of every
    /// connection takes it after a rekey (`still_holds`). Changes are one at a time.
    fn change(
        &self,
        f: impl FnOnce(&mut BTreeMap<u32, (Hash, u64)>, u64) -> bool,
    ) -> Result<bool, DeviceError> {
        let _one = self.writer.lock();
        let mut next = self.namespaces.lock().clone();
        let epoch = self.epoch.load(Ordering::Acquire);
        let moved = f(&mut next, epoch);
        self.persist(&next)?;
        *self.namespaces.lock() = next;
        if moved {
            // After the swap: a connection that sees the new epoch finds the new map.
            self.epoch.store(epoch + 1, Ordering::Release);
        }
        Ok(moved)
    }

    /// Writes, into backup directory `dir`, `credentials.json` with the credentials of the
    /// namespaces `keep` names (those the backup holds), and `admin.secret` if this device
    /// keeps one in its data directory: both mode 0600, synced.
    pub(crate) fn write_backup(
        &self,
        dir: &Path,
        keep: impl Fn(u32) -> bool,
    ) -> Result<(), DeviceError> {
        let kept: BTreeMap<u32, Hash> = self
            .namespaces
            .lock()
            .iter()
            .filter(|(ns, _)| keep(**ns))
            .map(|(ns, (h, _))| (*ns, *h))
            .collect();
        let f = CredentialsFile {
            version: 1,
            namespaces: kept.iter().map(|(k, v)| (*k, to_hex(v))).collect(),
        };
        let bytes = serde_json::to_vec_pretty(&f)
            .map_err(|e| DeviceError::Config(format!("encoding credentials: {e}")))?;
        write_private(&dir.join(CREDENTIALS_FILE), &bytes, true)?;
        let admin = self.dir.join(ADMIN_SECRET_FILE);
        match std::fs::read(&admin) {
            Ok(secret) => write_private(&dir.join(ADMIN_SECRET_FILE), &secret, true)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(DeviceError::io(&admin, e)),
        }
        sync_dir(dir)
    }

    /// Writes the file whole under a temporary name, syncs it and renames it over the old one,
    /// so a crash leaves either version.
    fn persist(&self, map: &BTreeMap<u32, (Hash, u64)>) -> Result<(), DeviceError> {
        let f = CredentialsFile {
            version: 1,
            namespaces: map.iter().map(|(k, (v, _))| (*k, to_hex(v))).collect(),
        };
        let bytes = serde_json::to_vec_pretty(&f)
            .map_err(|e| DeviceError::Config(format!("encoding credentials: {e}")))?;
        let path = self.dir.join(CREDENTIALS_FILE);
        let tmp = self.dir.join(format!("{CREDENTIALS_FILE}.tmp"));
        write_private(&tmp, &bytes, false)?;
        std::fs::rename(&tmp, &path).map_err(|e| DeviceError::io(&path, e))?;
        // The new file is in place: it is what the device now holds, and what a restart
        // reads unless the rename itself is lost. A failed sync of the directory is told,
        // not returned, so memory and file never disagree (a rekey whose answer was an error
        // would leave the old secret in memory and a new, unseen one on disk).
        if let Err(e) = sync_dir(&self.dir) {
            tracing::warn!(error = %e, "credentials written but their directory not synced");
        }
        Ok(())
    }
}

fn load_or_create_admin_secret(dir: &Path) -> Result<String, DeviceError> {
    let path = dir.join(ADMIN_SECRET_FILE);
    match std::fs::read_to_string(&path) {
        Ok(s) => {
            let s = s.trim().to_string();
            if s.len() < 16 {
                return Err(DeviceError::Config(format!(
                    "{} holds no usable secret",
                    path.display()
                )));
            }
            Ok(s)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let s = generate_secret();
            write_private(&path, format!("{s}\n").as_bytes(), true)?;
            sync_dir(dir)?;
            Ok(s)
        }
        Err(e) => Err(DeviceError::io(&path, e)),
    }
}

/// Writes a file only its owner can read (mode 0600 from creation, not chmod after).
fn write_private(path: &Path, bytes: &[u8], exclusive: bool) -> Result<(), DeviceError> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true);
    if exclusive {
        o.create_new(true);
    } else {
        o.create(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(path).map_err(|e| DeviceError::io(path, e))?;
    f.write_all(bytes).map_err(|e| DeviceError::io(path, e))?;
    f.sync_all().map_err(|e| DeviceError::io(path, e))
}

fn sync_dir(dir: &Path) -> Result<(), DeviceError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| DeviceError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_secrets_verify_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let c = Credentials::open(dir.path(), None).unwrap();
        let admin = c.admin_secret().to_string();
        assert_eq!(admin.len(), 64);
        let s = c.issue(3).unwrap();
        assert!(c.verify(3, s.as_bytes()).is_some());
        assert!(c.verify(3, b"wrong").is_none());
        assert!(c.verify(4, s.as_bytes()).is_none());
        drop(c);
        let c = Credentials::open(dir.path(), None).unwrap();
        assert_eq!(c.admin_secret(), admin);
        assert!(c.verify_admin(admin.as_bytes()));
        assert!(c.verify(3, s.as_bytes()).is_some());
        c.revoke(3).unwrap();
        assert!(c.verify(3, s.as_bytes()).is_none());
        // Only hashes on disk.
        let on_disk = std::fs::read_to_string(dir.path().join(CREDENTIALS_FILE)).unwrap();
        assert!(!on_disk.contains(&s));
    }

    #[test]
    fn a_rekey_refuses_the_old_secret_and_ends_its_proofs() {
        let dir = tempfile::tempdir().unwrap();
        let c = Credentials::open(dir.path(), None).unwrap();
        let old = c.issue(5).unwrap();
        let other = c.issue(6).unwrap();
        let proof = c.verify(5, old.as_bytes()).unwrap();
        let other_proof = c.verify(6, other.as_bytes()).unwrap();
        let before = c.epoch();
        let new = c.rekey(5).unwrap().unwrap();
        assert_ne!(c.epoch(), before, "open connections would not look again");
        assert!(c.verify(5, old.as_bytes()).is_none());
        assert!(!c.still_holds(5, proof));
        assert!(
            c.still_holds(6, other_proof),
            "another namespace's proof is untouched"
        );
        let renewed = c.verify(5, new.as_bytes()).unwrap();
        assert!(c.still_holds(5, renewed));
        assert_eq!(c.rekey(99).unwrap(), None, "no credential, nothing issued");
        drop(c);
        let c = Credentials::open(dir.path(), None).unwrap();
        assert!(
            c.verify(5, old.as_bytes()).is_none(),
            "the rekey was persisted"
        );
        assert!(c.verify(5, new.as_bytes()).is_some());
    }

    #[cfg(unix)]
    #[test]
    fn admin_secret_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        Credentials::open(dir.path(), None).unwrap();
        let mode = std::fs::metadata(dir.path().join(ADMIN_SECRET_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn given_admin_secret_writes_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let c = Credentials::open(dir.path(), Some("operator-chosen-secret")).unwrap();
        assert!(c.verify_admin(b"operator-chosen-secret"));
        assert!(!dir.path().join(ADMIN_SECRET_FILE).exists());
    }
}
