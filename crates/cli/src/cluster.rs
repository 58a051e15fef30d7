//! `cerberus cluster`: the cluster description (docs/cluster.md) and the tenants spread over
//! its devices: init, add-device, create, list, destroy, reshard, digest.

use anyhow::{Context, Result};
use cerberus_host::cluster::{self, ClusterDescription, DeviceEntry, Digest};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct ClusterArgs {
    /// The cluster description (TOML); paths in it are relative to its folder.
    #[arg(long, env = "CERBERUS_CLUSTER")]
    file: PathBuf,
    #[command(subcommand)]
    cmd: ClusterCmd,
}

#[derive(Subcommand)]
enum ClusterCmd {
    /// Writes an empty description (refuses to replace a file that exists).
    Init,
    /// Adds a device to the description (no connection is made).
    AddDevice {
        /// Its name in the cluster (letters, digits, '_', '-', '.').
        name: String,
        /// Its native protocol address, host:port.
        address: String,
        /// Connect with TLS, trusting this CA (or self-signed) certificate, PEM.
        #[arg(long)]
        tls_ca: Option<PathBuf>,
        /// Name to check the certificate against (default: the host of ADDRESS).
        #[arg(long, requires = "tls_ca")]
        server_name: Option<String>,
        /// Environment variable holding the device's admin credential.
        #[arg(long, conflicts_with = "admin_secret_file")]
        admin_secret_env: Option<String>,
        /// File holding the device's admin credential (its DATA_DIR/admin.secret, or a copy).
        #[arg(long)]
        admin_secret_file: Option<PathBuf>,
    },
    /// Creates a tenant: one namespace per device, credentials under secrets/.
    Create {
        /// The tenant's name (letters, digits, '_', '-').
        tenant: String,
        /// The devices its keys are spread over, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        devices: Vec<String>,
    },
    /// Lists the tenants: name, generation, devices, and a move under way.
    List {
        /// Print a JSON array of {"tenant", "generation", "devices", "moving"}.
        #[arg(long)]
        json: bool,
    },
    /// Destroys a tenant: its namespaces on every device, its credential files.
    Destroy {
        /// The tenant.
        tenant: String,
    },
    /// Moves a tenant to other devices by copy; reads go on, cluster clients' writes wait.
    ///
    /// Creates the tenant's next generation of namespaces on the new devices, records the
    /// move in the description (cluster clients then refuse writes, to be retried), copies
    /// every record, verifies counts and digests, switches the description and destroys the
    /// old namespaces. A failure before the switch leaves the tenant where it was. Writers
    /// that are not cluster clients (a namespace's credential used directly) are not
    /// refused by the devices: stop them first.
    Reshard {
        /// The tenant.
        tenant: String,
        /// The devices to move it to, comma-separated.
        #[arg(long, value_delimiter = ',', required_unless_present = "abort")]
        devices: Vec<String>,
        /// Records per put batch (at most 16384).
        #[arg(long, default_value_t = 1000)]
        batch: usize,
        /// End an interrupted move: destroy the namespaces it was filling, clear its record.
        #[arg(long, conflicts_with_all = ["devices", "batch"])]
        abort: bool,
    },
    /// Records each namespace's id in a description written before ids were recorded (as
    /// admin, once): clients then need no admin credential.
    RecordIds,
    /// Records, bytes and the order-independent digest of a tenant's records (all parts).
    Digest {
        /// The tenant.
        tenant: String,
        /// Print {"records", "bytes", "digest"}.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: ClusterArgs) -> Result<()> {
    let path = args.file.as_path();
    let base = cluster::base_dir(path).to_path_buf();
    match args.cmd {
        ClusterCmd::Init => {
            ClusterDescription::create(path)?;
            eprintln!("empty cluster description written to {}", path.display());
        }
        ClusterCmd::AddDevice {
            name,
            address,
            tls_ca,
            server_name,
            admin_secret_env,
            admin_secret_file,
        } => {
            let entry = DeviceEntry {
                address,
                tls_ca: tls_ca.map(|p| relative_to(&base, &p)),
                server_name,
                admin_secret_env,
                admin_secret_file: admin_secret_file.map(|p| relative_to(&base, &p)),
            };
            ClusterDescription::update(path, |desc| {
                if desc.devices.contains_key(&name) {
                    return Err(cluster::ClusterError::Refused(format!(
                        "device {name} is in the cluster already"
                    )));
                }
                desc.devices.insert(name.clone(), entry);
                Ok(())
            })?;
            eprintln!("device {name} added");
        }
        ClusterCmd::Create { tenant, devices } => {
            let mut desc = ClusterDescription::load(path)?;
            cluster::create_tenant(&mut desc, &base, &tenant, &devices)?;
            if let Err(e) = desc.save(path) {
                // Without the description nobody finds the namespaces: take them back.
                let undone = cluster::destroy_tenant(&mut desc, &base, &tenant);
                let e = anyhow::Error::new(e);
                return Err(match undone {
                    Ok(()) => e,
                    Err(u) => e.context(format!("and undoing the namespaces failed: {u}")),
                });
            }
            eprintln!("tenant {tenant} created on {}", devices.join(","));
        }
        ClusterCmd::List { json } => list(&ClusterDescription::load(path)?, json),
        ClusterCmd::RecordIds => {
            let n = ClusterDescription::update(path, |desc| cluster::record_ids(desc, &base))?;
            eprintln!("{n} namespace ids recorded");
        }
        ClusterCmd::Destroy { tenant } => {
            let mut desc = ClusterDescription::load(path)?;
            cluster::destroy_tenant(&mut desc, &base, &tenant)?;
            desc.save(path)?;
            eprintln!("tenant {tenant} destroyed");
        }
        ClusterCmd::Reshard {
            tenant,
            devices,
            batch,
            abort,
        } => {
            if abort {
                cluster::abort_move(path, &tenant)?;
                eprintln!("move of tenant {tenant} aborted");
                return Ok(());
            }
            let r = cluster::reshard(path, &tenant, &devices, batch)?;
            println!("tenant: {tenant}");
            println!("devices: {}", devices.join(","));
            println!("records: {}", r.records);
            println!("bytes: {}", r.bytes);
            println!("digest: {:016x}", r.digest);
            println!("seconds: {:.3}", r.seconds);
        }
        ClusterCmd::Digest { tenant, json } => {
            let desc = ClusterDescription::load(path)?;
            let d = digest(&desc, &base, &tenant)?;
            if json {
                let v = serde_json::json!({
                    "records": d.records,
                    "bytes": d.bytes,
                    "digest": format!("{:016x}", d.sum),
                });
                println!("{v}");
            } else {
                println!("records: {}", d.records);
                println!("bytes: {}", d.bytes);
                println!("digest: {:016x}", d.sum);
            }
        }
    }
    Ok(())
}

fn list(desc: &ClusterDescription, json: bool) {
    let tenants = cluster::list(desc);
    if json {
        let v: Vec<_> = tenants
            .iter()
            .map(|t| {
                serde_json::json!({
                    "tenant": t.tenant,
                    "generation": t.generation,
                    "devices": t.devices,
                    "moving": t.moving,
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(v));
        return;
    }
    let rows: Vec<[String; 4]> = tenants
        .into_iter()
        .map(|t| {
            [
                t.tenant,
                t.generation.to_string(),
                t.devices.join(","),
                t.moving.map_or_else(|| "-".into(), |m| m.join(",")),
            ]
        })
        .collect();
    let head = ["TENANT", "GENERATION", "DEVICES", "MOVING TO"].map(String::from);
    let mut widths = head.clone().map(|h| h.len());
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    for r in std::iter::once(&head).chain(&rows) {
        let cells: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
}

/// The digest of every record of `tenant`, over its current parts.
fn digest(desc: &ClusterDescription, base: &Path, tenant: &str) -> Result<Digest> {
    let t = desc.tenant(tenant)?;
    let mut total = Digest::default();
    for (d, p) in &t.parts {
        let ns = cluster::open_part(desc, base, d, p)?;
        let part = Digest::of_namespace(&ns)
            .with_context(|| format!("device {d}: reading namespace {}", p.namespace))?;
        total.merge(part);
    }
    Ok(total)
}

/// `p` (given relative to the working directory) as the description stores it: relative to
/// the description's folder when inside it, so the folder can move as one; else absolute.
fn relative_to(base: &Path, p: &Path) -> PathBuf {
    let abs = |q: &Path| {
        std::fs::canonicalize(q).unwrap_or_else(|_| {
            std::env::current_dir()
                .map(|cwd| cwd.join(q))
                .unwrap_or_else(|_| q.to_path_buf())
        })
    };
    let (base, p) = (abs(base), abs(p));
    match p.strip_prefix(&base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => p,
    }
}

#[cfg(test)]
mod tests {
    use super::relative_to;
    use std::path::Path;

    #[test]
    fn paths_inside_the_folder_become_relative() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("admin.secret");
        std::fs::write(&f, "x").unwrap();
        assert_eq!(relative_to(dir.path(), &f), Path::new("admin.secret"));
        let outside = relative_to(&dir.path().join("sub"), &f);
        assert!(outside.is_absolute(), "{}", outside.display());
    }
}
