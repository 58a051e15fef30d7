//! The async client: typed methods over one pipelined connection.

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::nvme_link::Wire;
use crate::reply::{expect_empty, ok_reply, unexpected};
use crate::tls::TlsOptions;
use bytes::Bytes;
use cerberus_proto::{
    Command, Identify, NamespaceEntry, NamespaceSettings, Reply, Request, Response, Status,
    DEVICE_NSID,
};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

/// How many commands the client keeps in flight at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InflightLimit {
    /// Ask the device (Identify) when connecting and stay within its `max_inflight`; if the
    /// device does not answer Identify with success, no bound.
    #[default]
    FromDevice,
    /// At most this many (0: no bound); no Identify at connect.
    Fixed(u32),
}

/// Where and how to connect.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// `host:port`.
    pub addr: String,
    /// TLS settings; `None` for plain TCP.
    pub tls: Option<TlsOptions>,
    /// Bounds the TCP connect, the TLS handshake and the initial Identify together.
    pub connect_timeout: Duration,
    /// Bounds each call (waiting for an in-flight slot included); `None`: wait as long as
    /// the connection lives. A command that timed out may still be in flight at the device:
    /// its id and in-flight slot stay taken until its completion arrives.
    pub request_timeout: Option<Duration>,
    /// Commands in flight on the connection at most.
    pub max_inflight: InflightLimit,
    /// The wire: the native protocol (default) or NVMe/TCP (`addr` is then the device's
    /// NVMe/TCP address; `tls` is not used on it).
    pub wire: Wire,
}

impl ClientConfig {
    /// Plain TCP to `addr`, 10 s to connect, no request timeout, in-flight bound from the
    /// device.
    pub fn new(addr: impl Into<String>) -> ClientConfig {
        ClientConfig {
            addr: addr.into(),
            tls: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: None,
            max_inflight: InflightLimit::FromDevice,
            wire: Wire::Native,
        }
    }

    /// Speaks NVMe/TCP to `addr` (the device's NVMe/TCP address) as host `hostnqn`.
    pub fn with_nvme(mut self, subnqn: impl Into<String>, hostnqn: impl Into<String>) -> Self {
        self.wire = Wire::Nvme {
            subnqn: subnqn.into(),
            hostnqn: hostnqn.into(),
            host_secret: None,
            ctrl_secret: None,
        };
        self
    }

    /// The DH-HMAC-CHAP secret (`DHHC-1:...`) the NVMe wire authenticates its queues with
    /// when the device asks; call after [`ClientConfig::with_nvme`] (no effect on the native
    /// wire).
    pub fn with_nvme_secret(mut self, secret: impl Into<String>) -> Self {
        if let Wire::Nvme { host_secret, .. } = &mut self.wire {
            *host_secret = Some(secret.into());
        }
        self
    }

    /// The controller secret (`DHHC-1:...`, the device's `[nvme.ctrl_secrets]` entry for this
    /// host) the NVMe wire asks the device to prove itself with, after its own secret
    /// (bidirectional DH-HMAC-CHAP); call after [`ClientConfig::with_nvme_secret`].
    pub fn with_nvme_ctrl_secret(mut self, secret: impl Into<String>) -> Self {
        if let Wire::Nvme { ctrl_secret, .. } = &mut self.wire {
            *ctrl_secret = Some(secret.into());
        }
        self
    }

    /// Connects over TLS.
    pub fn with_tls(mut self, tls: TlsOptions) -> ClientConfig {
        self.tls = Some(tls);
        self
    }

    /// Fails a command that has no answer after `timeout`.
    pub fn with_request_timeout(mut self, timeout: Duration) -> ClientConfig {
        self.request_timeout = Some(timeout);
        self
    }

    /// Bounds the commands in flight.
    pub fn with_max_inflight(mut self, limit: InflightLimit) -> ClientConfig {
        self.max_inflight = limit;
        self
    }
}

/// A connection to the device. Clones share the connection; calls from any number of tasks
/// are pipelined on it. Dropping the last clone closes it. The device's namespaces are
/// managed here; a namespace's data goes through its handle ([`Client::open_namespace`],
/// [`Client::namespace`]), which holds a clone.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Connection,
    request_timeout: Option<Duration>,
    device: Option<Identify>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("device", &self.inner.device)
            .field("closed", &self.close_reason())
            .finish()
    }
}

impl Client {
    /// Connects over plain TCP with the defaults of [`ClientConfig::new`].
    pub async fn connect(addr: &str) -> Result<Client> {
        Client::connect_with(ClientConfig::new(addr)).await
    }

    /// Connects with `config`.
    pub async fn connect_with(config: ClientConfig) -> Result<Client> {
        tokio::time::timeout(config.connect_timeout, connect_inner(&config, false))
            .await
            .map_err(|_| Error::Timeout)?
    }

    /// For [`crate::BlockingClient`]: over plain TCP or NVMe/TCP, a connection its callers
    /// drive from their own threads (every call blocks its thread until the completion is
    /// there).
    pub(crate) async fn connect_blocking(config: ClientConfig) -> Result<Client> {
        tokio::time::timeout(config.connect_timeout, connect_inner(&config, true))
            .await
            .map_err(|_| Error::Timeout)?
    }

    /// The device's limits as Identify reported them at connect (`None` with a fixed
    /// in-flight limit, or if the device refused Identify).
    pub fn device_info(&self) -> Option<Identify> {
        self.inner.device
    }

    /// Whether the connection is closed (every call would fail with `ConnectionClosed`).
    pub fn is_closed(&self) -> bool {
        self.close_reason().is_some()
    }

    /// Why the connection closed, if it has.
    pub fn close_reason(&self) -> Option<String> {
        self.inner.conn.shared().close_reason()
    }

    /// Sends any command and returns its completion as is, failure statuses included: only
    /// transport errors (and the request timeout) are errors here.
    pub async fn call(&self, nsid: u32, request: Request) -> Result<Response> {
        let command = Command {
            cid: 0,
            nsid,
            request,
        };
        with_timeout(self.inner.request_timeout, self.inner.conn.call(&command)).await
    }

    /// Calls and turns a failure status into its typed error.
    pub(crate) async fn run(&self, nsid: u32, request: Request) -> Result<Reply> {
        ok_reply(self.call(nsid, request).await?)
    }

    pub(crate) async fn authenticate(&self, nsid: u32, secret: &str) -> Result<()> {
        let request = Request::Authenticate {
            secret: Bytes::copy_from_slice(secret.as_bytes()),
        };
        expect_empty(self.run(nsid, request).await?, "authenticate")
    }

    /// Authenticates as the device's administrator.
    pub async fn authenticate_admin(&self, secret: &str) -> Result<()> {
        self.authenticate(DEVICE_NSID, secret).await
    }

    /// The device's limits (Identify).
    pub async fn identify(&self) -> Result<Identify> {
        match self.run(DEVICE_NSID, Request::Identify).await? {
            Reply::Identify(id) => Ok(id),
            other => Err(unexpected("identify", &other)),
        }
    }

    /// Creates a namespace (admin): its id and its secret, which the device shows only here.
    /// The admin's connection is not granted the namespace: open it with
    /// [`Client::open_namespace`] and the secret.
    pub async fn create_namespace(&self, name: &str) -> Result<(u32, String)> {
        self.create(name, None).await
    }

    /// [`create_namespace`](Self::create_namespace) with `settings`: its capacity and I/O
    /// shares (the device refuses invalid ones with `InvalidField`).
    pub async fn create_namespace_with(
        &self,
        name: &str,
        settings: &NamespaceSettings,
    ) -> Result<(u32, String)> {
        self.create(name, Some(*settings)).await
    }

    async fn create(
        &self,
        name: &str,
        settings: Option<NamespaceSettings>,
    ) -> Result<(u32, String)> {
        let request = Request::NamespaceCreate {
            name: name.to_string(),
            settings,
        };
        match self.run(DEVICE_NSID, request).await? {
            Reply::Created { nsid, secret } => Ok((nsid, secret)),
            other => Err(unexpected("create namespace", &other)),
        }
    }

    /// Gives namespace `nsid` new settings, all of them (admin): a capacity below what it
    /// holds refuses its growth only.
    pub async fn configure_namespace(&self, nsid: u32, settings: &NamespaceSettings) -> Result<()> {
        let request = Request::NamespaceConfigure {
            settings: Some(*settings),
            read_only: None,
        };
        expect_empty(self.run(nsid, request).await?, "configure namespace")
    }

    /// Makes namespace `nsid` read-only (`true`: every write refused with
    /// `NamespaceReadOnly`, reads served) or writable again (admin); its other settings stay.
    /// Once answered with `true`, no write of it is acknowledged on any wire, and every one
    /// acknowledged before is readable. Kept across restarts; setting it again is no error.
    pub async fn set_read_only(&self, nsid: u32, read_only: bool) -> Result<()> {
        let request = Request::NamespaceConfigure {
            settings: None,
            read_only: Some(read_only),
        };
        expect_empty(self.run(nsid, request).await?, "set namespace read-only")
    }

    /// Destroys a namespace and its data (admin).
    pub async fn destroy_namespace(&self, nsid: u32) -> Result<()> {
        expect_empty(
            self.run(nsid, Request::NamespaceDestroy).await?,
            "destroy namespace",
        )
    }

    /// Issues namespace `nsid` a new secret (admin) and returns it: from the answer on, the
    /// device refuses the old one, and connections that proved it lose the namespace.
    pub async fn rekey_namespace(&self, nsid: u32) -> Result<String> {
        match self.run(nsid, Request::NamespaceRekey).await? {
            Reply::Created { secret, .. } => Ok(secret),
            other => Err(unexpected("rekey namespace", &other)),
        }
    }

    /// Every namespace of the device (admin).
    pub async fn list_namespaces(&self) -> Result<Vec<NamespaceEntry>> {
        match self.run(DEVICE_NSID, Request::NamespaceList).await? {
            Reply::Namespaces(list) => Ok(list),
            other => Err(unexpected("list namespaces", &other)),
        }
    }

    /// Statistics of the device (admin); the document's shape is the device's. A
    /// namespace's are [`Namespace::stats`](crate::Namespace::stats).
    pub async fn stats(&self) -> Result<serde_json::Value> {
        self.stats_of(DEVICE_NSID).await
    }

    pub(crate) async fn stats_of(&self, nsid: u32) -> Result<serde_json::Value> {
        match self.run(nsid, Request::Stats).await? {
            Reply::Stats(body) => serde_json::from_slice(&body)
                .map_err(|e| Error::Protocol(format!("stats reply is not JSON: {e}"))),
            other => Err(unexpected("stats", &other)),
        }
    }

    /// Sends `commands` together, each without waiting for the one before; their outcomes
    /// in order, once all have completed.
    pub(crate) async fn call_many(&self, commands: &[Command]) -> Result<Vec<Result<Response>>> {
        with_timeout(self.inner.request_timeout, async {
            Ok(self.inner.conn.call_many(commands).await)
        })
        .await
    }
}

async fn connect_inner(config: &ClientConfig, blocking: bool) -> Result<Client> {
    let conn = match &config.wire {
        Wire::Native => connect_native(config, blocking).await?,
        Wire::Nvme {
            subnqn,
            hostnqn,
            host_secret,
            ctrl_secret,
        } => {
            let secrets = (host_secret.as_deref(), ctrl_secret.as_deref());
            let host = crate::nvme_link::connect(&config.addr, subnqn, hostnqn, secrets).await?;
            if blocking {
                Connection::nvme_direct(host, config.request_timeout)?
            } else {
                Connection::start_nvme(host)
            }
        }
    };
    let mut device = None;
    match config.max_inflight {
        InflightLimit::Fixed(n) => conn.shared().set_max_inflight(n),
        InflightLimit::FromDevice => {
            let command = Command {
                cid: 0,
                nsid: DEVICE_NSID,
                request: Request::Identify,
            };
            let response = conn.call(&command).await?;
            if let (Status::Success, Reply::Identify(id)) = (response.status, &response.reply) {
                conn.apply_identify(id);
                device = Some(*id);
            }
        }
    }
    Ok(Client {
        inner: Arc::new(Inner {
            conn,
            request_timeout: config.request_timeout,
            device,
        }),
    })
}

async fn connect_native(config: &ClientConfig, blocking: bool) -> Result<Connection> {
    let tcp = TcpStream::connect(&config.addr).await?;
    // Completions are small and latency-bound; the writer batches on its own.
    tcp.set_nodelay(true)?;
    Ok(match &config.tls {
        None if blocking => Connection::direct(tcp.into_std()?, config.request_timeout)?,
        None => {
            let (r, w) = tcp.into_split();
            Connection::start(r, w)
        }
        Some(tls) => {
            let (connector, name) = tls.connector()?;
            let stream = connector
                .connect(name, tcp)
                .await
                .map_err(|e| Error::Tls(format!("handshake with {}: {e}", config.addr)))?;
            let (r, w) = tokio::io::split(stream);
            Connection::start(r, w)
        }
    })
}

async fn with_timeout<T>(
    timeout: Option<Duration>,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    match timeout {
        Some(d) => tokio::time::timeout(d, fut)
            .await
            .map_err(|_| Error::Timeout)?,
        None => fut.await,
    }
}
