//! Where a command goes: the device's address and wire, and the namespace or admin
//! credential it speaks with (the flags every command but `serve` and `verify` shares).

use crate::tenant;
use clap::ValueEnum;
use std::path::PathBuf;

/// Where the device is (every command but `serve`).
#[derive(clap::Args, Clone)]
#[command(next_help_heading = "Connection")]
pub(crate) struct Conn {
    /// Address of the device, host:port [default: 127.0.0.1:9420, or 127.0.0.1:4420 (the
    /// IANA NVMe/TCP port) with --wire nvme].
    #[arg(long, env = "CERBERUS_DEVICE")]
    pub(crate) device: Option<String>,
    /// Connect with TLS, trusting this CA (or self-signed) certificate, PEM.
    #[arg(long, env = "CERBERUS_TLS_CA")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// Server name to check the certificate against (default: the host of --device).
    #[arg(long, requires = "tls_ca")]
    pub(crate) tls_name: Option<String>,
    /// The wire: the native protocol, or NVMe/TCP (then --device is the device's NVMe/TCP
    /// address, 127.0.0.1:4420 unless given, and --hostnqn is needed).
    #[arg(long, env = "CERBERUS_WIRE", value_enum, default_value = "native")]
    pub(crate) wire: WireArg,
    /// NVMe/TCP: the subsystem NQN (default: the device's default).
    #[arg(long, env = "CERBERUS_SUBNQN")]
    pub(crate) subnqn: Option<String>,
    /// NVMe/TCP: this host's NQN, as the device's [nvme.hosts] grants name it.
    #[arg(long, env = "CERBERUS_HOSTNQN")]
    pub(crate) hostnqn: Option<String>,
    /// NVMe/TCP: this host's DH-HMAC-CHAP secret (`DHHC-1:..:`, as the device's
    /// [nvme.host_secrets] holds it), for a device that asks the host to authenticate.
    /// Prefer the environment variable: a command line is visible to other users.
    #[arg(long, env = "CERBERUS_DHCHAP_SECRET", hide_env_values = true)]
    pub(crate) dhchap_secret: Option<String>,
    /// NVMe/TCP: the controller secret (`DHHC-1:..:`, the device's [nvme.ctrl_secrets]
    /// entry for this host) the device must prove itself with (bidirectional
    /// authentication; needs --dhchap-secret). Prefer the environment variable.
    #[arg(
        long,
        env = "CERBERUS_DHCHAP_CTRL_SECRET",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub(crate) dhchap_ctrl_secret: Option<String>,
}

/// The wire a command speaks (`--wire`).
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum WireArg {
    /// The device's own framing (docs/protocol.md).
    Native,
    /// NVMe/TCP, native commands through the vendor pair (docs/nvme-tcp.md).
    Nvme,
}

/// The namespace a data command addresses, and its credential.
#[derive(clap::Args)]
#[command(next_help_heading = "Namespace")]
pub(crate) struct NsAuth {
    /// Namespace: its id (as printed by `ns create`) or its name (a name of digits only is
    /// taken as an id).
    #[arg(long, env = "CERBERUS_NS")]
    pub(crate) ns: Option<String>,
    /// Credential of that namespace (as printed, once, by `ns create`).
    #[arg(long, env = "CERBERUS_SECRET", hide_env_values = true)]
    pub(crate) secret: Option<String>,
}

#[derive(clap::Args)]
#[command(next_help_heading = "Admin")]
pub(crate) struct AdminAuth {
    /// Admin credential (the device keeps it in DATA_DIR/admin.secret).
    #[arg(long, env = "CERBERUS_ADMIN_SECRET", hide_env_values = true)]
    pub(crate) admin_secret: Option<String>,
}

/// Connection and namespace of a data command.
#[derive(clap::Args)]
pub(crate) struct DataTarget {
    #[command(flatten)]
    pub(crate) conn: Conn,
    #[command(flatten)]
    pub(crate) auth: NsAuth,
    #[command(flatten)]
    pub(crate) tenant: tenant::TenantArgs,
}

/// Connection and admin credential of a namespace command.
#[derive(clap::Args)]
pub(crate) struct AdminTarget {
    #[command(flatten)]
    pub(crate) conn: Conn,
    #[command(flatten)]
    pub(crate) auth: AdminAuth,
}
