//! The device on this machine, from a config file and flags, until a signal stops it.

use crate::args::{ServeArgs, StorageArg};
use crate::error::ServeError;
use cerberus_device::{Device, DeviceConfig, DeviceError, StorageChoice, ADMIN_SECRET_FILE};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

/// The device's configuration: the TOML file's (or the default), with the data directory
/// and the storage given on the command line over it.
pub fn device_config(
    file: Option<&Path>,
    data_dir: Option<PathBuf>,
    storage: Option<StorageArg>,
) -> Result<DeviceConfig, DeviceError> {
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

/// Starts the device, prints where it listens (scripts wait for the `listening on` line) and
/// serves until SIGINT or SIGTERM.
pub fn serve(args: ServeArgs) -> Result<(), ServeError> {
    let config = configure(args)?;
    init_log()?;
    let given_admin = config.admin_secret.is_some();
    let data_dir = config.data_dir.clone();
    // The device checks ports and files before it creates its directory, and takes away
    // what it made when a start fails.
    let (listen, nvme_listen) = (config.listen.clone(), config.nvme_listen.clone());
    let device = Device::start(config).map_err(|e| match e {
        DeviceError::Listen { addr, error } if error.kind() == std::io::ErrorKind::AddrInUse => {
            // The bare "Address already in use" said nothing of what to do.
            let flag = if addr == listen {
                "--listen"
            } else if nvme_listen.as_deref() == Some(addr.as_str()) {
                "--nvme-listen"
            } else {
                "--metrics"
            };
            ServeError::AddressInUse { addr, error, flag }
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
    let mut out = std::io::stdout().lock();
    let mut say = || -> std::io::Result<()> {
        writeln!(out, "listening on {}", device.local_addr())?;
        if let Some(n) = device.nvme_addr() {
            writeln!(out, "NVMe/TCP on {n}")?;
        }
        if let Some(m) = device.metrics_addr() {
            writeln!(out, "metrics on http://{m}/metrics")?;
        }
        out.flush()
    };
    say().map_err(ServeError::Stdout)?;
    device.stop_on_signals()?;
    device.wait()?;
    Ok(())
}

/// The configuration file's settings with the flags over them.
fn configure(args: ServeArgs) -> Result<DeviceConfig, ServeError> {
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
    if let Some(path) = args.admin_secret_file {
        // Its first line only, from at most 4 KiB (a secret is at most 256 bytes): a path
        // such as /dev/zero is not read until memory runs out.
        let mut head = Vec::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(4096).read_to_end(&mut head))
            .map_err(|error| ServeError::AdminSecretFile {
                path: path.clone(),
                error,
            })?;
        let text = String::from_utf8_lossy(&head);
        let secret = text.lines().next().unwrap_or_default().trim().to_string();
        if secret.is_empty() {
            return Err(ServeError::EmptyAdminSecret { path });
        }
        config.admin_secret = Some(secret);
    }
    Ok(config)
}

/// The log on stderr, filtered by `RUST_LOG` (`info`, `warn,cerberus_device=debug`, ...: a
/// level, or target=level pairs). `Targets` rather than `EnvFilter`: the latter's regex
/// engine was a tenth of the first build's compile time, for span filters nobody used.
fn init_log() -> Result<(), ServeError> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let spec = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "info".to_string());
    let filter: tracing_subscriber::filter::Targets =
        spec.parse().map_err(|e| ServeError::LogFilter {
            reason: format!("{e}"),
            spec,
        })?;
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: a log redirected to a file stays plain text.
        .with_ansi(std::io::stderr().is_terminal());
    // A second start in one process (a test) keeps the first's log.
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .try_init();
    Ok(())
}
