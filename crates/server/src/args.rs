//! The device's flags: `cerberus-server`'s, and `cerberus serve`'s in the CLI.

use clap::ValueEnum;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum StorageArg {
    /// Real files.
    Posix,
    /// Real files behind the NAND-flash timing model.
    Nand,
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Limits (max_key_len, max_value_len, max_inflight, ...), workers and engine \
                  sizes are fields of the --config file."
)]
pub struct ServeArgs {
    /// Device directory (engine files, credentials). Default: the config file's, else
    /// ./cerberus-data.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Address to serve on (default 127.0.0.1:9420).
    #[arg(long)]
    pub listen: Option<String>,
    /// What the engine stores its files on (default: the config file's, else posix).
    #[arg(long, value_enum)]
    pub storage: Option<StorageArg>,
    /// TOML file with any DeviceConfig field; flags given here win.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Prometheus endpoint address, e.g. 127.0.0.1:9464.
    #[arg(long)]
    pub metrics: Option<String>,
    /// Also serve the NVMe/TCP target (KV command set; docs/nvme-tcp.md) on this address;
    /// given alone, on 127.0.0.1:4420 (the IANA port). Host NQN grants are the config
    /// file's [nvme.hosts].
    #[arg(long, num_args = 0..=1, default_missing_value = cerberus_device::DEFAULT_NVME_LISTEN)]
    pub nvme_listen: Option<String>,
    /// TLS certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) of that certificate; needs --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Make every write durable before acknowledging it.
    #[arg(long)]
    pub sync: bool,
    /// Where background tasks run: off (no background service), inline (on the core of the
    /// command that made them), bts (on idle cores, below the load threshold; the default).
    #[arg(long)]
    pub policy: Option<cerberus_device::Policy>,
    /// Run the deduplication service (a chunking task per write; stats in `cerberus stats
    /// --device-wide`).
    #[arg(long)]
    pub dedup: bool,
    /// Admin credential to use (16 to 256 bytes). Default: DATA_DIR/admin.secret, generated
    /// there at first start. Not read from CERBERUS_ADMIN_SECRET, the clients' variable: a
    /// device started from a shell that exported it for another device would take that
    /// device's credential and write no admin.secret. A command line is visible to every
    /// user of the machine (`ps`): prefer --admin-secret-file.
    #[arg(long, conflicts_with = "admin_secret_file")]
    pub admin_secret: Option<String>,
    /// Read the admin credential from this file (its first line), as an orchestrator's
    /// secret mount provides it.
    #[arg(long, value_name = "FILE")]
    pub admin_secret_file: Option<PathBuf>,
}
