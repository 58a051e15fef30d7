//! Admin operations over a cluster's devices: connecting as admin, creating and destroying a
//! tenant's namespaces (one per device it spans), opening a part. Each operation connects to
//! every device it needs before changing any, so a device that is down fails it early, with
//! its name, and nothing to undo.

use super::description::{
    check_tenant_name, namespace_name, ClusterDescription, DeviceEntry, Part, TenantPlacement,
};
use super::error::ClusterError;
use super::secrets::{read_secret, secret_path, write_secret};
use crate::blocking::BlockingClient;
use crate::blocking_namespace::BlockingNamespace;
use crate::client::ClientConfig;
use crate::tls::TlsOptions;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Admin connections by device name.
pub(crate) type Clients = BTreeMap<String, BlockingClient>;

/// A tenant as [`list`] shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantSummary {
    /// Its name.
    pub tenant: String,
    /// The devices its keys are on.
    pub devices: Vec<String>,
    /// Its generation (1 at creation, +1 per move).
    pub generation: u32,
    /// The devices of a move under way (or interrupted), if one is recorded.
    pub moving: Option<Vec<String>>,
}

/// The admin credential of `device`: from its environment variable if set, else its file.
fn admin_secret(
    entry: &DeviceEntry,
    base_dir: &Path,
    device: &str,
) -> Result<String, ClusterError> {
    if let Some(var) = &entry.admin_secret_env {
        match std::env::var(var) {
            Ok(s) if !s.trim().is_empty() => return Ok(s.trim().to_string()),
            _ if entry.admin_secret_file.is_some() => {}
            _ => {
                return Err(ClusterError::Credential {
                    device: device.into(),
                    message: format!(
                        "the environment variable {var} (its admin_secret_env) is not set"
                    ),
                })
            }
        }
    }
    match &entry.admin_secret_file {
        Some(f) => {
            let path = base_dir.join(f);
            read_secret(&path, &format!("admin credential of device {device}"))
        }
        None => Err(ClusterError::Credential {
            device: device.into(),
            message: "no admin credential: give admin_secret_env or admin_secret_file".into(),
        }),
    }
}

/// Connects to `device` of `desc` and authenticates as its admin; paths are taken under
/// `base_dir` (the description's folder). Only admin commands need this: clients open
/// their parts with [`open_part`], which needs no admin credential.
pub fn connect_admin(
    desc: &ClusterDescription,
    base_dir: &Path,
    device: &str,
) -> Result<BlockingClient, ClusterError> {
    let secret = admin_secret(desc.device(device)?, base_dir, device)?;
    let client = connect_device(desc, base_dir, device)?;
    client
        .authenticate_admin(&secret)
        .map_err(ClusterError::device(device, "authenticating as admin"))?;
    Ok(client)
}

/// Connects to `device` of `desc` with no credential yet (TLS as its entry says).
pub fn connect_device(
    desc: &ClusterDescription,
    base_dir: &Path,
    device: &str,
) -> Result<BlockingClient, ClusterError> {
    let entry = desc.device(device)?;
    let mut config =
        ClientConfig::new(entry.address.clone()).with_request_timeout(Duration::from_secs(60));
    config.connect_timeout = Duration::from_secs(5);
    if let Some(ca) = &entry.tls_ca {
        let path = desc.resolve(base_dir, ca);
        let pem = std::fs::read(&path).map_err(ClusterError::file(
            format!("TLS CA of device {device}"),
            &path,
        ))?;
        let name = entry
            .server_name
            .clone()
            .unwrap_or_else(|| TlsOptions::server_name_of(&entry.address).to_string());
        config = config.with_tls(TlsOptions::new(pem, name));
    }
    BlockingClient::connect_with(config).map_err(|source| ClusterError::Unreachable {
        device: device.into(),
        address: entry.address.clone(),
        source,
    })
}

/// Admin connections to each of `devices` (each once), failing at the first that cannot be
/// reached.
pub(crate) fn connect_all<'a>(
    desc: &ClusterDescription,
    base_dir: &Path,
    devices: impl IntoIterator<Item = &'a String>,
) -> Result<Clients, ClusterError> {
    let mut clients = Clients::new();
    for d in devices {
        if !clients.contains_key(d) {
            clients.insert(d.clone(), connect_admin(desc, base_dir, d)?);
        }
    }
    Ok(clients)
}

/// The admin connection to `device` among `clients`.
pub(crate) fn client<'a>(
    clients: &'a Clients,
    device: &str,
) -> Result<&'a BlockingClient, ClusterError> {
    clients
        .get(device)
        .ok_or_else(|| ClusterError::Refused(format!("no connection to device {device}")))
}

/// The id of namespace `name` on `device`, if it has one.
fn find_nsid(
    client: &BlockingClient,
    device: &str,
    name: &str,
) -> Result<Option<u32>, ClusterError> {
    let list = client
        .list_namespaces()
        .map_err(ClusterError::device(device, "listing namespaces"))?;
    Ok(list.into_iter().find(|e| e.name == name).map(|e| e.nsid))
}

/// Opens `part` on `device` with its credential file alone when the description records
/// its id (no admin credential read). A part recorded before ids were (no `nsid`) is
/// looked up by name, which needs the device's admin credential.
pub fn open_part(
    desc: &ClusterDescription,
    base_dir: &Path,
    device: &str,
    part: &Part,
) -> Result<BlockingNamespace, ClusterError> {
    let client = match part.nsid {
        Some(_) => connect_device(desc, base_dir, device)?,
        None => connect_admin(desc, base_dir, device).map_err(|e| match e {
            // A device that is down is said as such; a missing or refused admin credential
            // with what to do about it.
            ClusterError::Unreachable { .. } => e,
            e => ClusterError::Refused(format!(
                "device {device}: the description records no id for namespace {} (written \
                 before ids were recorded), so it is looked up by name as admin, which \
                 failed: {e}; `cerberus cluster record-ids` (as admin, once) records the ids",
                part.namespace
            )),
        })?,
    };
    open_part_on(&client, base_dir, device, part)
}

/// [`open_part`] over a connection to the device (an admin one if the part has no `nsid`).
pub(crate) fn open_part_on(
    client: &BlockingClient,
    base_dir: &Path,
    device: &str,
    part: &Part,
) -> Result<BlockingNamespace, ClusterError> {
    let ns = &part.namespace;
    let nsid = match part.nsid {
        Some(id) => id,
        None => find_nsid(client, device, ns)?.ok_or_else(|| {
            ClusterError::Refused(format!("device {device} has no namespace {ns}"))
        })?,
    };
    let path = base_dir.join(&part.secret_file);
    let secret = read_secret(
        &path,
        &format!("credential of namespace {ns} on device {device}"),
    )?;
    client
        .open_namespace(nsid, &secret)
        .map_err(ClusterError::device(
            device,
            format!("opening namespace {ns}"),
        ))
}

/// The id of `part` on `device` if the device still has it: its recorded id (if the device
/// lists that id under the part's name), else the id of the name.
fn live_nsid(
    client: &BlockingClient,
    device: &str,
    part: &Part,
) -> Result<Option<u32>, ClusterError> {
    let list = client
        .list_namespaces()
        .map_err(ClusterError::device(device, "listing namespaces"))?;
    Ok(list
        .into_iter()
        .find(|e| e.name == part.namespace && part.nsid.is_none_or(|id| id == e.nsid))
        .map(|e| e.nsid))
}

/// Records the id of every part that has none (descriptions written before ids were),
/// looked up by name as admin on its device; how many it recorded. The caller saves.
pub fn record_ids(desc: &mut ClusterDescription, base_dir: &Path) -> Result<usize, ClusterError> {
    let devices: Vec<String> = desc
        .tenants
        .values()
        .flat_map(|t| t.parts.iter().chain(&t.moving_parts))
        .filter(|(_, p)| p.nsid.is_none())
        .map(|(d, _)| d.clone())
        .collect();
    let clients = connect_all(desc, base_dir, &devices)?;
    let mut n = 0;
    for (name, t) in &mut desc.tenants {
        for (d, p) in t.parts.iter_mut().chain(t.moving_parts.iter_mut()) {
            if p.nsid.is_some() {
                continue;
            }
            let id = find_nsid(client(&clients, d)?, d, &p.namespace)?.ok_or_else(|| {
                ClusterError::Refused(format!(
                    "tenant {name}: device {d} has no namespace {}",
                    p.namespace
                ))
            })?;
            p.nsid = Some(id);
            n += 1;
        }
    }
    Ok(n)
}

/// A namespace made by [`create_parts`], to destroy if what follows fails.
struct Made {
    device: String,
    nsid: u32,
    namespace: String,
    /// Its credential file, once this call has created it (only then is it removed).
    secret_path: Option<PathBuf>,
}

/// Creates namespace `{tenant}` at `generation` on each of `devices`, its credential in a
/// new file at [`secret_path`] under `base_dir` (mode 0600; an existing file is never
/// replaced). On a failure part-way, destroys what it made and removes only the files it
/// created.
pub(crate) fn create_parts(
    clients: &Clients,
    base_dir: &Path,
    tenant: &str,
    generation: u32,
    devices: &[String],
) -> Result<BTreeMap<String, Part>, ClusterError> {
    let namespace = namespace_name(tenant, generation);
    let mut made: Vec<Made> = Vec::new();
    let mut parts = BTreeMap::new();
    for d in devices {
        let step: Result<Part, ClusterError> =
            (|| {
                let (nsid, secret) = client(clients, d)?.create_namespace(&namespace).map_err(
                    ClusterError::device(d, format!("creating namespace {namespace}")),
                )?;
                made.push(Made {
                    device: d.clone(),
                    nsid,
                    namespace: namespace.clone(),
                    secret_path: None,
                });
                let rel = secret_path(d, &namespace, nsid);
                let path = base_dir.join(&rel);
                let what = format!("credential of namespace {namespace} on device {d}");
                write_secret(&path, &secret, &what)?;
                if let Some(m) = made.last_mut() {
                    m.secret_path = Some(path);
                }
                Ok(Part {
                    namespace: namespace.clone(),
                    nsid: Some(nsid),
                    secret_file: rel,
                })
            })();
        match step {
            Ok(part) => {
                parts.insert(d.clone(), part);
            }
            Err(e) => return Err(e.with_leftovers(undo(clients, &made))),
        }
    }
    Ok(parts)
}

/// Destroys the namespaces `made` and removes the credential files this call created;
/// what it could not remove, named.
fn undo(clients: &Clients, made: &[Made]) -> Vec<String> {
    let mut left = Vec::new();
    for m in made {
        let gone = clients
            .get(&m.device)
            .is_some_and(|c| c.destroy_namespace(m.nsid).is_ok());
        if !gone {
            left.push(format!("namespace {} on device {}", m.namespace, m.device));
        }
        let Some(path) = &m.secret_path else {
            continue;
        };
        if let Err(e) = std::fs::remove_file(path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                left.push(format!("file {}", path.display()));
            }
        }
    }
    left
}

/// Destroys `part` on `device` (if the device still has it) and removes its credential file:
/// running it again after a failure finishes the job.
pub(crate) fn destroy_part(
    clients: &Clients,
    base_dir: &Path,
    device: &str,
    part: &Part,
) -> Result<(), ClusterError> {
    let c = client(clients, device)?;
    let ns = &part.namespace;
    if let Some(nsid) = live_nsid(c, device, part)? {
        c.destroy_namespace(nsid).map_err(ClusterError::device(
            device,
            format!("destroying namespace {ns}"),
        ))?;
    }
    let path = base_dir.join(&part.secret_file);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ClusterError::file(
            format!("credential of namespace {ns} on device {device}"),
            &path,
        )(e)),
        _ => Ok(()),
    }
}

/// Makes `part` on `device` read-only (`true`: the device refuses every write to it, from
/// any client) or writable again. A part the device no longer has is refused when fencing,
/// and nothing to do when clearing.
pub(crate) fn set_part_read_only(
    clients: &Clients,
    device: &str,
    part: &Part,
    read_only: bool,
) -> Result<(), ClusterError> {
    let c = client(clients, device)?;
    let ns = &part.namespace;
    match live_nsid(c, device, part)? {
        Some(nsid) => c
            .set_read_only(nsid, read_only)
            .map_err(ClusterError::device(
                device,
                match read_only {
                    true => format!("making namespace {ns} read-only"),
                    false => format!("making namespace {ns} writable again"),
                },
            )),
        None if read_only => Err(ClusterError::Refused(format!(
            "device {device} has no namespace {ns}"
        ))),
        None => Ok(()),
    }
}

/// Creates tenant `tenant` over `devices`: one namespace per device, named as the tenant,
/// each credential in a new file at [`secret_path`] under `base_dir`. Changes `desc` in
/// memory only once every namespace exists (the caller saves it); on a failure part-way,
/// destroys the namespaces it made and leaves `desc` as it was.
pub fn create_tenant(
    desc: &mut ClusterDescription,
    base_dir: &Path,
    tenant: &str,
    devices: &[String],
) -> Result<(), ClusterError> {
    check_tenant_name(tenant)?;
    if desc.tenants.contains_key(tenant) {
        return Err(ClusterError::Refused(format!("tenant {tenant} exists")));
    }
    desc.check_devices(tenant, "devices", devices)?;
    let clients = connect_all(desc, base_dir, devices)?;
    let parts = create_parts(&clients, base_dir, tenant, 1, devices)?;
    desc.tenants.insert(
        tenant.to_string(),
        TenantPlacement {
            devices: devices.to_vec(),
            generation: 1,
            parts,
            moving_to: None,
            moving_parts: BTreeMap::new(),
        },
    );
    Ok(())
}

/// Destroys tenant `tenant`: its namespaces (those of a recorded move too) and credential
/// files, then removes it from `desc` (the caller saves it). A device that is down fails it
/// before anything is destroyed; a failure part-way leaves `desc` as it was, and running it
/// again finishes the job.
pub fn destroy_tenant(
    desc: &mut ClusterDescription,
    base_dir: &Path,
    tenant: &str,
) -> Result<(), ClusterError> {
    let t = desc.tenant(tenant)?;
    let parts: Vec<(&String, &Part)> = t.parts.iter().chain(&t.moving_parts).collect();
    let clients = connect_all(desc, base_dir, parts.iter().map(|(d, _)| *d))?;
    for (d, p) in parts {
        destroy_part(&clients, base_dir, d, p)?;
    }
    desc.tenants.remove(tenant);
    Ok(())
}

/// The tenants of `desc`, by name.
pub fn list(desc: &ClusterDescription) -> Vec<TenantSummary> {
    desc.tenants
        .iter()
        .map(|(name, t)| TenantSummary {
            tenant: name.clone(),
            devices: t.devices.clone(),
            generation: t.generation,
            moving: t.moving_to.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(env: Option<&str>, file: Option<&str>) -> DeviceEntry {
        DeviceEntry {
            address: "127.0.0.1:1".into(),
            tls_ca: None,
            server_name: None,
            admin_secret_env: env.map(Into::into),
            admin_secret_file: file.map(Into::into),
        }
    }

    #[test]
    fn admin_credential_sources() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("admin"), "s3cret\n").unwrap();
        let e = admin_secret(&entry(None, Some("admin")), dir.path(), "d").unwrap();
        assert_eq!(e, "s3cret");
        let var = "CERBERUS_CLUSTER_TEST_UNSET_VARIABLE";
        let e = admin_secret(&entry(Some(var), None), dir.path(), "d1").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("d1") && msg.contains(var), "{msg}");
        // An unset variable falls back to the file.
        let e = admin_secret(&entry(Some(var), Some("admin")), dir.path(), "d").unwrap();
        assert_eq!(e, "s3cret");
        let msg = admin_secret(&entry(None, None), dir.path(), "d2")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("d2"), "{msg}");
        let msg = admin_secret(&entry(None, Some("missing")), dir.path(), "d3")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("d3") && msg.contains("missing"), "{msg}");
    }

    #[test]
    fn a_device_down_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("admin"), "s3cret").unwrap();
        // A port nothing listens on: bound, then released.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut desc = ClusterDescription::default();
        let mut e = entry(None, Some("admin"));
        e.address = format!("127.0.0.1:{port}");
        desc.devices.insert("gone".into(), e);
        let msg = connect_admin(&desc, dir.path(), "gone")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("device gone") && msg.contains(&port.to_string()),
            "{msg}"
        );
        let before = desc.clone();
        let err = create_tenant(&mut desc, dir.path(), "t", &["gone".into()]).unwrap_err();
        assert!(err.to_string().contains("gone"), "{err}");
        assert_eq!(desc, before);
    }
}
