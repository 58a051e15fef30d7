//! The cluster description: the devices and where each tenant's keys live, a TOML file that
//! every cluster client loads. Paths in it are relative to the file's folder, so a folder of
//! description and credentials can be moved as one.

use super::error::ClusterError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The devices of a cluster and the placement of its tenants.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ClusterDescription {
    /// Bumped by every save: a save checks the file still holds the revision it was read
    /// at, so two admin commands never silently overwrite each other (0: never saved).
    #[serde(default)]
    pub revision: u64,
    /// The devices, by name.
    #[serde(default)]
    pub devices: BTreeMap<String, DeviceEntry>,
    /// The tenants, by name.
    #[serde(default)]
    pub tenants: BTreeMap<String, TenantPlacement>,
}

/// How to reach a device as its administrator.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DeviceEntry {
    /// The device's native protocol address, `host:port`.
    pub address: String,
    /// Connect with TLS, trusting this CA (or self-signed) certificate, PEM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ca: Option<PathBuf>,
    /// The name the device's certificate must carry (default: the host of `address`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// The environment variable holding the admin credential (tried first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_secret_env: Option<String>,
    /// The file holding the admin credential (the device's `admin.secret`, or a copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_secret_file: Option<PathBuf>,
}

/// Where a tenant's keys live.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TenantPlacement {
    /// The devices its keys are spread over by [`owner`](super::owner) (one device: all
    /// there). The order does not matter to placement.
    pub devices: Vec<String>,
    /// 1 at creation, +1 at each completed move; names the namespaces ([`namespace_name`]).
    pub generation: u32,
    /// The tenant's namespace on each device of `devices`, by device name.
    pub parts: BTreeMap<String, Part>,
    /// Present only while a move runs: the devices being filled. Cluster clients refuse
    /// writes meanwhile and read from `parts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moving_to: Option<Vec<String>>,
    /// The namespaces being filled, by device name (those of `moving_to`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub moving_parts: BTreeMap<String, Part>,
}

/// A tenant's namespace on one device.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// The namespace's name on the device.
    pub namespace: String,
    /// Its id on the device (ids differ from device to device), recorded when the admin
    /// command made it: clients open it with its credential alone. Absent in descriptions
    /// written before ids were recorded: then looked up by name, which needs the device's
    /// admin credential (`cerberus cluster record-ids` records them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsid: Option<u32>,
    /// The file holding the namespace's credential.
    pub secret_file: PathBuf,
}

/// The namespace name of a tenant's parts at `generation`: the tenant's name at 1, then
/// `{tenant}.g{N}`, so the parts of a move never collide with those they replace.
pub fn namespace_name(tenant: &str, generation: u32) -> String {
    if generation <= 1 {
        tenant.to_string()
    } else {
        format!("{tenant}.g{generation}")
    }
}

/// Longest tenant name: its namespaces' names (`{tenant}.g{N}`) stay within the device's 255.
const MAX_NAME: usize = 200;

/// Checks a tenant's name: letters, digits, `_` and `-` (it names namespaces and files; a
/// dot is kept for the generation suffix).
pub(crate) fn check_tenant_name(name: &str) -> Result<(), ClusterError> {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > MAX_NAME || !name.chars().all(ok) {
        return Err(ClusterError::Invalid(format!(
            "tenant name {name:?}: 1 to {MAX_NAME} letters, digits, '_' or '-'"
        )));
    }
    Ok(())
}

/// Checks a device's name: letters, digits, `_`, `-` and `.`, not starting with a dot (it
/// names credential files).
pub(crate) fn check_device_name(name: &str) -> Result<(), ClusterError> {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
    if name.is_empty() || name.len() > MAX_NAME || name.starts_with('.') || !name.chars().all(ok) {
        return Err(ClusterError::Invalid(format!(
            "device name {name:?}: 1 to {MAX_NAME} letters, digits, '_', '-' or '.', not \
             starting with '.'"
        )));
    }
    Ok(())
}

impl ClusterDescription {
    /// Reads and validates the description at `path`.
    pub fn load(path: &Path) -> Result<ClusterDescription, ClusterError> {
        let text = std::fs::read_to_string(path)
            .map_err(ClusterError::file("cluster description", path))?;
        let desc: ClusterDescription = toml::from_str(&text).map_err(|e| ClusterError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        desc.validate()?;
        Ok(desc)
    }

    /// Validates and writes the description to `path`, under its lock file, if the file
    /// still holds the revision this one was read at (else [`ClusterError::Changed`]: another
    /// command saved meanwhile, and writing would undo what it did). The revision goes up by
    /// one. A missing file counts as revision 0.
    pub fn save(&mut self, path: &Path) -> Result<(), ClusterError> {
        self.validate()?;
        let _lock = DescriptionLock::take(path)?;
        let now = revision_on_disk(path)?.unwrap_or(0);
        if now != self.revision {
            return Err(ClusterError::Changed {
                path: path.to_path_buf(),
                read: self.revision,
                now,
            });
        }
        self.write_locked(path)
    }

    /// Writes a new, empty description at `path`; refuses to replace a file that exists.
    /// Its folder is made if missing (mode 0700: the credentials go under it), and its
    /// `.gitignore` made or given the lines that keep `secrets/` and the lock out of a
    /// repository.
    pub fn create(path: &Path) -> Result<ClusterDescription, ClusterError> {
        let base = base_dir(path);
        let mut dirs = std::fs::DirBuilder::new();
        dirs.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut dirs, 0o700);
        dirs.create(base).map_err(ClusterError::file(
            "folder of the cluster description",
            base,
        ))?;
        ignore_credentials(base, path)?;
        let _lock = DescriptionLock::take(path)?;
        if revision_on_disk(path)?.is_some() {
            return Err(ClusterError::Refused(format!(
                "{} exists: not replaced",
                path.display()
            )));
        }
        let mut desc = ClusterDescription::default();
        desc.write_locked(path)?;
        Ok(desc)
    }

    /// Reads the description at `path`, applies `change` and writes it back, all under the
    /// lock: nobody that takes the lock saves in between. Nothing is written if `change`
    /// fails or changes nothing.
    pub fn update<T>(
        path: &Path,
        change: impl FnOnce(&mut ClusterDescription) -> Result<T, ClusterError>,
    ) -> Result<T, ClusterError> {
        let _lock = DescriptionLock::take(path)?;
        let mut desc = ClusterDescription::load(path)?;
        let before = desc.clone();
        let out = change(&mut desc)?;
        if desc != before {
            desc.validate()?;
            desc.write_locked(path)?;
        }
        Ok(out)
    }

    /// Writes the description with the next revision: to a temporary file of the same
    /// folder first, then renamed over it, so a crash leaves the old file or the new one,
    /// never half of one. The caller holds the lock.
    fn write_locked(&mut self, path: &Path) -> Result<(), ClusterError> {
        let mut next = self.clone();
        next.revision = self.revision.saturating_add(1);
        let text = toml::to_string(&next).map_err(|e| ClusterError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let dir = base_dir(path);
        let name = path
            .file_name()
            .map_or_else(|| "cluster".into(), |n| n.to_string_lossy().into_owned());
        // A name nobody can guess, created exclusively: in a folder others may write to, a
        // file or link planted under a predictable name is never written through.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = dir.join(format!(".{name}.{}.{nanos:09}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)?;
            // The rename is durable once the folder is.
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(())
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            ClusterError::file("cluster description", path)(e)
        })?;
        self.revision = next.revision;
        Ok(())
    }

    /// `p` as given if absolute, else under `base_dir` (the description's folder).
    pub fn resolve(&self, base_dir: &Path, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base_dir.join(p)
        }
    }

    /// The entry of device `name`.
    pub fn device(&self, name: &str) -> Result<&DeviceEntry, ClusterError> {
        self.devices
            .get(name)
            .ok_or_else(|| ClusterError::Refused(format!("no device {name:?} in the cluster")))
    }

    /// The placement of tenant `name`.
    pub fn tenant(&self, name: &str) -> Result<&TenantPlacement, ClusterError> {
        self.tenants
            .get(name)
            .ok_or_else(|| ClusterError::Refused(format!("no tenant {name:?} in the cluster")))
    }

    /// Checks the rules of a description: names, every device a tenant names is known, each
    /// tenant's device list non-empty and without duplicates, and its parts those devices.
    pub fn validate(&self) -> Result<(), ClusterError> {
        for (name, d) in &self.devices {
            check_device_name(name)?;
            if d.address.is_empty() {
                return Err(ClusterError::Invalid(format!(
                    "device {name}: empty address"
                )));
            }
        }
        for (name, t) in &self.tenants {
            check_tenant_name(name)?;
            if t.generation == 0 {
                return Err(ClusterError::Invalid(format!(
                    "tenant {name}: generation 0 (the first is 1)"
                )));
            }
            self.check_devices(name, "devices", &t.devices)?;
            check_parts(name, "parts", &t.devices, &t.parts)?;
            match &t.moving_to {
                Some(to) => {
                    self.check_devices(name, "moving_to", to)?;
                    check_parts(name, "moving_parts", to, &t.moving_parts)?;
                }
                None if !t.moving_parts.is_empty() => {
                    return Err(ClusterError::Invalid(format!(
                        "tenant {name}: moving_parts without moving_to"
                    )));
                }
                None => {}
            }
        }
        Ok(())
    }

    /// `devices` of tenant `tenant` (its field `field`): non-empty, no duplicates, all known.
    pub(crate) fn check_devices<S: AsRef<str>>(
        &self,
        tenant: &str,
        field: &str,
        devices: &[S],
    ) -> Result<(), ClusterError> {
        if devices.is_empty() {
            return Err(ClusterError::Invalid(format!(
                "tenant {tenant}: {field} is empty"
            )));
        }
        let mut seen = BTreeSet::new();
        for d in devices {
            let d = d.as_ref();
            if !seen.insert(d) {
                return Err(ClusterError::Invalid(format!(
                    "tenant {tenant}: device {d} twice in {field}"
                )));
            }
            if !self.devices.contains_key(d) {
                return Err(ClusterError::Invalid(format!(
                    "tenant {tenant}: {field} names device {d}, which the cluster does not list"
                )));
            }
        }
        Ok(())
    }
}

/// The parts of a tenant are exactly its devices, each with a namespace name.
fn check_parts(
    tenant: &str,
    field: &str,
    devices: &[String],
    parts: &BTreeMap<String, Part>,
) -> Result<(), ClusterError> {
    for d in devices {
        if !parts.contains_key(d) {
            return Err(ClusterError::Invalid(format!(
                "tenant {tenant}: no {field} entry for device {d}"
            )));
        }
    }
    for (d, p) in parts {
        if !devices.contains(d) {
            return Err(ClusterError::Invalid(format!(
                "tenant {tenant}: {field} has device {d}, which its device list does not name"
            )));
        }
        if p.namespace.is_empty() {
            return Err(ClusterError::Invalid(format!(
                "tenant {tenant}: {field}.{d} has an empty namespace name"
            )));
        }
    }
    Ok(())
}

/// The revision of the description at `path`, `None` if there is no file (a file written
/// before revisions were kept has revision 0).
fn revision_on_disk(path: &Path) -> Result<Option<u64>, ClusterError> {
    #[derive(Deserialize)]
    struct Revision {
        #[serde(default)]
        revision: u64,
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ClusterError::file("cluster description", path)(e)),
    };
    let r: Revision = toml::from_str(&text).map_err(|e| ClusterError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(Some(r.revision))
}

/// The lock of a description: an exclusive `flock` of `<description>.lock` (created if
/// missing, kept afterwards), held while a save checks the revision and writes. The kernel
/// drops it when the process dies, so a crash leaves no stale lock.
struct DescriptionLock {
    _file: std::fs::File,
}

impl DescriptionLock {
    fn take(path: &Path) -> Result<DescriptionLock, ClusterError> {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        let lock = path.with_file_name(name);
        let open = || -> std::io::Result<std::fs::File> {
            let mut opts = std::fs::OpenOptions::new();
            opts.read(true).write(true).create(true).truncate(false);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let f = opts.open(&lock)?;
            f.lock()?;
            Ok(f)
        };
        let file = open().map_err(ClusterError::file("lock of the cluster description", &lock))?;
        Ok(DescriptionLock { _file: file })
    }
}

/// Makes `base/.gitignore` hold `/secrets/` and the lock file of `path`, the credentials
/// being one `git add .` away from a commit otherwise: a file that exists gets the lines it
/// lacks appended, nothing else of it changed.
fn ignore_credentials(base: &Path, path: &Path) -> Result<(), ClusterError> {
    let file = base.join(".gitignore");
    // Appended to as a file of the folder, never through a link to somewhere else.
    if std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(ClusterError::Refused(format!(
            "{} is a symbolic link: add /secrets/ to the file it names yourself",
            file.display()
        )));
    }
    let mut lock = path.file_name().unwrap_or_default().to_os_string();
    lock.push(".lock");
    let wanted = [
        "/secrets/".to_string(),
        format!("/{}", lock.to_string_lossy()),
    ];
    let had = match std::fs::read_to_string(&file) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(ClusterError::file("the folder's .gitignore", &file)(e)),
    };
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|w| !had.lines().any(|l| l.trim() == w.as_str()))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut add = String::new();
    if !had.is_empty() && !had.ends_with('\n') {
        add.push('\n');
    }
    add.push_str("# cerberus cluster: namespace credentials and the lock stay out of git\n");
    for w in missing {
        add.push_str(w);
        add.push('\n');
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .and_then(|mut f| f.write_all(add.as_bytes()))
        .map_err(ClusterError::file("the folder's .gitignore", &file))
}

/// The folder relative paths of the description at `path` are taken from.
pub fn base_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::super::secrets::{read_secret, secret_path, write_secret};
    use super::*;

    fn part(ns: &str, dev: &str) -> Part {
        Part {
            namespace: ns.into(),
            nsid: Some(1),
            secret_file: secret_path(dev, ns, 1),
        }
    }

    fn sample() -> ClusterDescription {
        let mut d = ClusterDescription::default();
        for (name, port) in [("a", 1), ("b", 2)] {
            d.devices.insert(
                name.into(),
                DeviceEntry {
                    address: format!("127.0.0.1:{port}"),
                    tls_ca: None,
                    server_name: None,
                    admin_secret_env: None,
                    admin_secret_file: Some(format!("{name}.admin").into()),
                },
            );
        }
        d.tenants.insert(
            "t".into(),
            TenantPlacement {
                devices: vec!["a".into(), "b".into()],
                generation: 1,
                parts: [("a".into(), part("t", "a")), ("b".into(), part("t", "b"))].into(),
                moving_to: None,
                moving_parts: BTreeMap::new(),
            },
        );
        d
    }

    #[test]
    fn saves_and_loads_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster.toml");
        let mut d = sample();
        d.save(&path).unwrap();
        assert_eq!(d.revision, 1);
        assert_eq!(ClusterDescription::load(&path).unwrap(), d);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("moving"), "{text}");
        // No temporary file left behind: the description and its lock file.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_save_from_a_stale_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster.toml");
        let mut first = ClusterDescription::create(&path).unwrap();
        let e = ClusterDescription::create(&path).unwrap_err().to_string();
        assert!(e.contains("exists"), "{e}");
        let mut stale = ClusterDescription::load(&path).unwrap();
        first.devices = sample().devices;
        first.save(&path).unwrap();
        stale.devices = sample().devices;
        stale.tenants = sample().tenants;
        let before = std::fs::read(&path).unwrap();
        let e = stale.save(&path).unwrap_err();
        assert!(
            matches!(
                e,
                ClusterError::Changed {
                    read: 1,
                    now: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), before, "nothing written");
        // An update reads under the lock: it sees the other's change.
        ClusterDescription::update(&path, |d| {
            d.tenants = sample().tenants;
            Ok(())
        })
        .unwrap();
        let now = ClusterDescription::load(&path).unwrap();
        assert_eq!((now.revision, now.tenants.len()), (3, 1));
        // A file from before revisions were kept reads as revision 0.
        std::fs::write(&path, "[devices.a]\naddress = \"x:1\"\n").unwrap();
        let mut old = ClusterDescription::load(&path).unwrap();
        assert_eq!(old.revision, 0);
        old.save(&path).unwrap();
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let mut d = sample();
        d.tenants.get_mut("t").unwrap().devices.push("c".into());
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("tenant t") && e.contains("device c"), "{e}");

        let mut d = sample();
        d.tenants.get_mut("t").unwrap().parts.remove("b");
        assert!(d.validate().unwrap_err().to_string().contains("device b"));

        let mut d = sample();
        d.tenants.get_mut("t").unwrap().devices.push("a".into());
        assert!(d.validate().unwrap_err().to_string().contains("twice"));

        let mut d = sample();
        let t = d.tenants.get_mut("t").unwrap();
        t.moving_to = Some(vec!["b".into()]);
        assert!(d
            .validate()
            .unwrap_err()
            .to_string()
            .contains("moving_parts"));
        let t = d.tenants.get_mut("t").unwrap();
        t.moving_parts.insert("b".into(), part("t.g2", "b"));
        d.validate().unwrap();

        let e = toml::from_str::<ClusterDescription>("[devices.a]\naddress = \"x\"\nport = 1\n");
        assert!(e.is_err(), "unknown fields are refused");
    }

    #[test]
    fn names_and_paths() {
        assert_eq!(namespace_name("t", 1), "t");
        assert_eq!(namespace_name("t", 3), "t.g3");
        assert!(check_tenant_name("a.b").is_err());
        assert!(check_tenant_name("").is_err());
        assert!(check_device_name(".x").is_err());
        check_device_name("dev-1.local").unwrap();
        let d = ClusterDescription::default();
        assert_eq!(
            d.resolve(Path::new("/c"), Path::new("s/x")),
            Path::new("/c/s/x")
        );
        assert_eq!(
            d.resolve(Path::new("/c"), Path::new("/abs")),
            Path::new("/abs")
        );
        assert_eq!(base_dir(Path::new("cluster.toml")), Path::new("."));
    }

    #[cfg(unix)]
    #[test]
    fn secrets_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(secret_path("a", "x", 7));
        write_secret(&p, "abc", "credential").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(read_secret(&p, "credential").unwrap(), "abc");
        // Never replaced.
        assert!(write_secret(&p, "other", "credential").is_err());
        assert_eq!(read_secret(&p, "credential").unwrap(), "abc");
    }

    #[test]
    fn secret_paths_of_different_parts_differ() {
        // The old layout `secrets/{namespace}.{device}` gave both secrets/a.g2.x.
        assert_ne!(secret_path("x", "a.g2", 1), secret_path("g2.x", "a", 1));
        assert_eq!(secret_path("x", "a.g2", 4), Path::new("secrets/x/a.g2.4"));
    }
}
