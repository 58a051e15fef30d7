//! `cerberus`: runs the device (`serve`) and talks to one (namespaces, keys, stats, bulk load).

mod load;
mod stats;

use anyhow::{Context, Result};
use cerberus_device::{Device, DeviceConfig, StorageChoice, ADMIN_SECRET_FILE, DEFAULT_LISTEN};
use cerberus_host::{BlockingClient, ClientConfig, TlsOptions};
use cerberus_proto::StoreMode;
use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "cerberus",
    version,
    about = "Cerberus multi-tenant key-value device"
)]
struct Cli {
    /// Address of the device.
    #[arg(long, global = true, env = "CERBERUS_DEVICE", default_value = DEFAULT_LISTEN)]
    device: String,
    /// Namespace id the data commands address.
    #[arg(long, global = true, env = "CERBERUS_NS")]
    ns: Option<u32>,
    /// Credential of that namespace.
    #[arg(long, global = true, env = "CERBERUS_SECRET", hide_env_values = true)]
    secret: Option<String>,
    /// Admin credential (namespace create, destroy, list; device-wide stats).
    #[arg(
        long,
        global = true,
        env = "CERBERUS_ADMIN_SECRET",
        hide_env_values = true
    )]
    admin_secret: Option<String>,
    /// Connect with TLS, trusting this CA (or self-signed) certificate, PEM.
    #[arg(long, global = true, env = "CERBERUS_TLS_CA")]
    tls_ca: Option<PathBuf>,
    /// Server name to check the certificate against (default: the host of --device).
    #[arg(long, global = true)]
    tls_name: Option<String>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Runs the device until SIGINT or SIGTERM.
    Serve(ServeArgs),
    /// Namespaces (admin).
    #[command(subcommand)]
    Ns(NsCmd),
    /// Stores a value.
    Put {
        key: String,
        value: String,
        /// Only if the key does not exist yet.
        #[arg(long, conflicts_with = "if_present")]
        if_absent: bool,
        /// Only if the key exists.
        #[arg(long)]
        if_present: bool,
        /// Acknowledge only once durable.
        #[arg(long)]
        sync: bool,
    },
    /// Prints a value; exit code 1 if the key does not exist.
    Get { key: String },
    /// Deletes a key; exit code 1 if it did not exist.
    Delete { key: String },
    /// Exit code 0 if the key exists, 1 if not.
    Exists { key: String },
    /// Lists keys in order.
    List {
        /// First key (inclusive).
        #[arg(long)]
        start: Option<String>,
        /// Stop after this many keys (default: all).
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Statistics of the namespace (or, with --device-wide, of the device; admin).
    Stats {
        #[arg(long)]
        json: bool,
        #[arg(long)]
        device_wide: bool,
    },
    /// Bulk load of JSON lines or CSV, with a progress bar.
    Load(load::LoadArgs),
}

#[derive(Subcommand)]
enum NsCmd {
    /// Creates a namespace; prints its id and credential (shown only once).
    Create {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Destroys a namespace and all its data.
    Destroy { nsid: u32 },
    /// Lists namespaces.
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum StorageArg {
    Posix,
    Nand,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Device directory (engine files, credentials). Default: the config file's, else
    /// ./cerberus-data.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Address to serve on (default 127.0.0.1:4420).
    #[arg(long)]
    listen: Option<String>,
    #[arg(long, value_enum)]
    storage: Option<StorageArg>,
    /// TOML file with any DeviceConfig field; flags given here win.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Prometheus endpoint address, e.g. 127.0.0.1:9464.
    #[arg(long)]
    metrics: Option<String>,
    /// TLS certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Make every write durable before acknowledging it.
    #[arg(long)]
    sync: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    if let Cmd::Serve(args) = &cli.cmd {
        serve(args, cli.admin_secret.clone())?;
        return Ok(ExitCode::SUCCESS);
    }
    let client = connect(&cli)?;
    match &cli.cmd {
        Cmd::Serve(_) => unreachable!("handled above"),
        Cmd::Ns(cmd) => {
            let secret = cli.admin_secret.as_deref().with_context(|| {
                format!(
                    "namespace commands need the admin credential: --admin-secret or \
                     CERBERUS_ADMIN_SECRET (the device writes it to DATA_DIR/{ADMIN_SECRET_FILE})"
                )
            })?;
            client
                .authenticate_admin(secret)
                .context("authenticating as admin")?;
            match cmd {
                NsCmd::Create { name, json } => {
                    let (nsid, secret) = client.ns_create(name.as_str())?;
                    if *json {
                        println!("{}", serde_json::json!({"nsid": nsid, "secret": secret}));
                    } else {
                        println!("nsid: {nsid}");
                        println!("secret: {secret}");
                    }
                }
                NsCmd::Destroy { nsid } => {
                    client.ns_destroy(*nsid)?;
                    eprintln!("namespace {nsid} destroyed");
                }
                NsCmd::List { json } => {
                    let list = client.ns_list()?;
                    if *json {
                        let v: Vec<_> = list
                            .iter()
                            .map(|e| serde_json::json!({"nsid": e.nsid, "name": e.name}))
                            .collect();
                        println!("{}", serde_json::Value::Array(v));
                    } else {
                        for e in list {
                            println!("{}\t{}", e.nsid, e.name);
                        }
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Stats { json, device_wide } if *device_wide => {
            let secret = cli
                .admin_secret
                .as_deref()
                .context("--device-wide needs the admin credential")?;
            client.authenticate_admin(secret)?;
            let doc = client.stats(cerberus_proto::DEVICE_NSID)?;
            stats::print(&doc, *json)?;
            Ok(ExitCode::SUCCESS)
        }
        cmd => {
            let nsid = namespace(&cli, &client)?;
            data_command(&client, nsid, cmd)
        }
    }
}

/// Authenticates for `--ns` with `--secret` and returns the namespace id.
fn namespace(cli: &Cli, client: &BlockingClient) -> Result<u32> {
    let nsid = cli
        .ns
        .context("no namespace: give --ns NSID or set CERBERUS_NS")?;
    let secret = cli
        .secret
        .as_deref()
        .context("no credential: give --secret or set CERBERUS_SECRET")?;
    client
        .authenticate(nsid, secret)
        .with_context(|| format!("authenticating for namespace {nsid}"))?;
    Ok(nsid)
}

fn data_command(client: &BlockingClient, nsid: u32, cmd: &Cmd) -> Result<ExitCode> {
    match cmd {
        Cmd::Put {
            key,
            value,
            if_absent,
            if_present,
            sync,
        } => {
            let mode = if *if_absent {
                StoreMode::OnlyIfAbsent
            } else if *if_present {
                StoreMode::OnlyIfPresent
            } else {
                StoreMode::Always
            };
            client.store(
                nsid,
                key.clone().into_bytes(),
                value.clone().into_bytes(),
                mode,
                *sync,
            )?;
        }
        Cmd::Get { key } => match client.get(nsid, key.clone().into_bytes())? {
            Some(v) => {
                let mut out = std::io::stdout().lock();
                out.write_all(&v)?;
                if !v.ends_with(b"\n") {
                    out.write_all(b"\n")?;
                }
            }
            None => {
                eprintln!("key not found: {key}");
                return Ok(ExitCode::from(1));
            }
        },
        Cmd::Delete { key } => {
            if !client.delete(nsid, key.clone().into_bytes())? {
                eprintln!("key not found: {key}");
                return Ok(ExitCode::from(1));
            }
        }
        Cmd::Exists { key } => {
            if client.exists(nsid, key.clone().into_bytes())? {
                println!("yes");
            } else {
                println!("no");
                return Ok(ExitCode::from(1));
            }
        }
        Cmd::List { start, limit } => {
            let mut start = start.clone().unwrap_or_default().into_bytes();
            let mut exclusive = false;
            let mut left = limit.unwrap_or(u64::MAX);
            let mut out = std::io::stdout().lock();
            while left > 0 {
                let page = left.min(1000) as u32;
                let (keys, more) = client.list(nsid, start.clone(), exclusive, page)?;
                for k in &keys {
                    out.write_all(k)?;
                    out.write_all(b"\n")?;
                }
                left -= keys.len() as u64;
                match keys.last() {
                    Some(k) if more => {
                        start = k.to_vec();
                        exclusive = true;
                    }
                    _ => break,
                }
            }
        }
        Cmd::Stats { json, .. } => {
            let doc = client.stats(nsid)?;
            stats::print(&doc, *json)?;
        }
        Cmd::Load(args) => load::run(client, nsid, args)?,
        Cmd::Serve(_) | Cmd::Ns(_) => unreachable!("not a data command"),
    }
    Ok(ExitCode::SUCCESS)
}

fn connect(cli: &Cli) -> Result<BlockingClient> {
    let tls = match &cli.tls_ca {
        Some(ca) => {
            let name = match &cli.tls_name {
                Some(n) => n.clone(),
                None => cli
                    .device
                    .rsplit_once(':')
                    .map_or(cli.device.as_str(), |(h, _)| h)
                    .trim_matches(|c| c == '[' || c == ']')
                    .to_string(),
            };
            Some(TlsOptions {
                ca_cert_pem: std::fs::read(ca)
                    .with_context(|| format!("reading {}", ca.display()))?,
                server_name: name,
            })
        }
        None => None,
    };
    let mut config =
        ClientConfig::new(cli.device.clone()).with_request_timeout(Duration::from_secs(60));
    if let Some(t) = tls {
        config = config.with_tls(t);
    }
    BlockingClient::connect_with(config)
        .with_context(|| format!("connecting to the device at {}", cli.device))
}

fn serve(args: &ServeArgs, admin_secret: Option<String>) -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut config = match &args.config {
        Some(path) => DeviceConfig::from_toml_file(path)?,
        None => DeviceConfig::default(),
    };
    if let Some(d) = &args.data_dir {
        config.data_dir = d.clone();
    }
    if let Some(l) = &args.listen {
        config.listen = l.clone();
    }
    if let Some(s) = args.storage {
        config.storage = match s {
            StorageArg::Posix => StorageChoice::Posix,
            StorageArg::Nand => StorageChoice::Nand,
        };
    }
    if let Some(m) = &args.metrics {
        config.metrics_listen = Some(m.clone());
    }
    if args.tls_cert.is_some() {
        config.tls_cert = args.tls_cert.clone();
        config.tls_key = args.tls_key.clone();
    }
    if args.sync {
        config.sync = true;
    }
    if admin_secret.is_some() {
        config.admin_secret = admin_secret;
    }
    let given_admin = config.admin_secret.is_some();
    let data_dir = config.data_dir.clone();
    let device = Device::start(config)?;
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
    if let Some(m) = device.metrics_addr() {
        println!("metrics on http://{m}/metrics");
    }
    std::io::stdout().flush()?;
    device.stop_on_signals()?;
    device.wait()?;
    Ok(())
}
