//! `cerberus serve`: the device on this machine, from a config file and flags.

use super::{ServeArgs, StorageArg};
use anyhow::{Context, Result};
use cerberus_device::{Device, DeviceConfig, StorageChoice, ADMIN_SECRET_FILE};
use std::io::{IsTerminal, Write};

/// The device's configuration: the TOML file's (or the default), with the data directory
/// and the storage given on the command line over it.
pub fn device_config(
    file: Option<&std::path::Path>,
    data_dir: Option<std::path::PathBuf>,
    storage: Option<StorageArg>,
) -> Result<DeviceConfig> {
    let mut config = match file {
        Some(path) => DeviceConfig::from_toml_file(path)?,
        None => DeviceConfig::default(),
    };
    if let Some(d) = data_dir {
        config.data_dir = d;
    }
    if let Some(s) = storage {
        config.storage = match s {
            StorageArg::Posix => StorageChoice::Posix,
            StorageArg::Nand => StorageChoice::Nand,
        };
    }
    Ok(config)
}

pub fn serve(args: ServeArgs) -> Result<()> {
    let mut config = device_config(args.config.as_deref(), args.data_dir, args.storage)?;
    if let Some(l) = args.listen {
        config.listen = l;
    }
    if let Some(m) = args.metrics {
        config.metrics_listen = Some(m);
    }
    if args.nvme_listen.is_some() {
        config.nvme_listen = args.nvme_listen;
    }
    if args.tls_cert.is_some() {
        config.tls_cert = args.tls_cert;
        config.tls_key = args.tls_key;
    }
    if args.sync {
        config.sync = true;
    }
    if let Some(p) = args.policy {
        config.scheduler.policy = p;
    }
    if args.dedup {
        config.dedup.enabled = true;
    }
    if args.admin_secret.is_some() {
        config.admin_secret = args.admin_secret;
    }
    if let Some(path) = &args.admin_secret_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the admin secret from {}", path.display()))?;
        let secret = text.lines().next().unwrap_or_default().trim().to_string();
        anyhow::ensure!(
            !secret.is_empty(),
            "{} holds no admin secret (its first line is empty)",
            path.display()
        );
        config.admin_secret = Some(secret);
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: a log redirected to a file stays plain text.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let given_admin = config.admin_secret.is_some();
    let data_dir = config.data_dir.clone();
    // The device checks ports and files before it creates its directory, and takes away
    // what it made when a start fails.
    let (listen, nvme_listen) = (config.listen.clone(), config.nvme_listen.clone());
    let device = Device::start(config).map_err(|e| match e {
        cerberus_device::DeviceError::Listen { addr, error }
            if error.kind() == std::io::ErrorKind::AddrInUse =>
        {
            // The bare "Address already in use" said nothing of what to do.
            let flag = if addr == listen {
                "--listen"
            } else if nvme_listen.as_deref() == Some(addr.as_str()) {
                "--nvme-listen"
            } else {
                "--metrics"
            };
            anyhow::anyhow!(
                "cannot listen on {addr}: {error}: another program holds it (a device \
                 already running?): stop it, or give another address with {flag}"
            )
        }
        e => e.into(),
    })?;
    if given_admin {
        eprintln!("admin credential: as given");
    } else {
        eprintln!(
            "admin credential: {}",
            data_dir.join(ADMIN_SECRET_FILE).display()
        );
    }
    // Scripts wait for this line to know the device is up.
    println!("listening on {}", device.local_addr());
    if let Some(n) = device.nvme_addr() {
        println!("NVMe/TCP on {n}");
    }
    if let Some(m) = device.metrics_addr() {
        println!("metrics on http://{m}/metrics");
    }
    std::io::stdout().flush()?;
    device.stop_on_signals()?;
    device.wait()?;
    Ok(())
}
