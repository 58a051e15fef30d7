//! The async client: typed methods over one pipelined connection.

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::scan_options::ScanOptions;
use crate::tls::TlsOptions;
use bytes::Bytes;
use cerberus_proto::{
    Command, Identify, NamespaceEntry, Reply, Request, Response, Status, StoreMode, DEVICE_NSID,
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
        }
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
/// are pipelined on it. Dropping the last clone closes it.
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

    /// For [`crate::BlockingClient`]: over plain TCP, a connection its callers drive from
    /// their own threads (every call blocks its thread until the completion is there).
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

    /// Proves this connection holds the namespace's secret (remembered by the device for the
    /// connection, so for every clone of this client).
    pub async fn authenticate(&self, nsid: u32, secret: &str) -> Result<()> {
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

    /// Stores unconditionally, without waiting for durability.
    pub async fn put(
        &self,
        nsid: u32,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Result<()> {
        self.store(nsid, key, value, StoreMode::Always, false).await
    }

    /// Stores under a condition (`KeyExists` / `KeyNotExist` when it does not hold); with
    /// `sync`, the completion waits until the write is durable.
    pub async fn store(
        &self,
        nsid: u32,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        mode: StoreMode,
        sync: bool,
    ) -> Result<()> {
        let request = Request::Store {
            key: key.into(),
            value: value.into(),
            mode,
            sync,
        };
        expect_empty(self.run(nsid, request).await?, "store")
    }

    /// The value, or `None` if the key does not exist.
    pub async fn get(&self, nsid: u32, key: impl Into<Bytes>) -> Result<Option<Bytes>> {
        value_or_absent(self.run(nsid, Request::Retrieve { key: key.into() }).await)
    }

    /// Puts sent together, each without waiting for the one before (pipelined on this
    /// connection); the first failure, once all have completed.
    pub async fn put_many(&self, nsid: u32, pairs: Vec<(Bytes, Bytes)>) -> Result<()> {
        let commands: Vec<Command> = pairs
            .into_iter()
            .map(|(key, value)| Command {
                cid: 0,
                nsid,
                request: Request::Store {
                    key,
                    value,
                    mode: StoreMode::Always,
                    sync: false,
                },
            })
            .collect();
        let done = with_timeout(self.inner.request_timeout, async {
            Ok(self.inner.conn.call_many(&commands).await)
        })
        .await?;
        let mut first_err = None;
        for r in done {
            if let Err(e) = r.and_then(ok_reply).and_then(|r| expect_empty(r, "store")) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Gets sent together (pipelined), their values in the order of `keys`.
    pub async fn get_many(&self, nsid: u32, keys: Vec<Bytes>) -> Result<Vec<Option<Bytes>>> {
        let commands: Vec<Command> = keys
            .into_iter()
            .map(|key| Command {
                cid: 0,
                nsid,
                request: Request::Retrieve { key },
            })
            .collect();
        let done = with_timeout(self.inner.request_timeout, async {
            Ok(self.inner.conn.call_many(&commands).await)
        })
        .await?;
        done.into_iter()
            .map(|r| value_or_absent(r.and_then(ok_reply)))
            .collect()
    }

    /// Deletes the key; `false` if it did not exist.
    pub async fn delete(&self, nsid: u32, key: impl Into<Bytes>) -> Result<bool> {
        present(
            self.run(nsid, Request::Delete { key: key.into() }).await,
            "delete",
        )
    }

    /// Whether `key` exists in namespace `nsid`, without reading its value.
    pub async fn exists(&self, nsid: u32, key: impl Into<Bytes>) -> Result<bool> {
        present(
            self.run(nsid, Request::Exist { key: key.into() }).await,
            "exist",
        )
    }

    /// One page of keys in byte order from `start` (empty: the first key), at most
    /// `max_keys` (and at most the device's `max_list_keys`); `more` says keys remain after
    /// the last one returned.
    pub async fn list(
        &self,
        nsid: u32,
        start: impl Into<Bytes>,
        start_exclusive: bool,
        max_keys: u32,
    ) -> Result<(Vec<Bytes>, bool)> {
        let request = Request::List {
            start: start.into(),
            start_exclusive,
            max_keys,
        };
        match self.run(nsid, request).await? {
            Reply::Keys { keys, more } => Ok((keys, more)),
            other => Err(unexpected("list", &other)),
        }
    }

    /// Every key from `start` (inclusive) on, paging `page_size` keys at a time. Not a
    /// snapshot: keys written meanwhile may or may not appear.
    pub async fn list_all(
        &self,
        nsid: u32,
        start: impl Into<Bytes>,
        page_size: u32,
    ) -> Result<Vec<Bytes>> {
        let page_size = page_size.max(1);
        let mut all = Vec::new();
        let (mut keys, mut more) = self.list(nsid, start, false, page_size).await?;
        loop {
            let last = keys.last().cloned();
            all.append(&mut keys);
            if !more {
                return Ok(all);
            }
            let Some(last) = last else {
                // Would page from the same place forever.
                return Err(Error::Protocol(
                    "list reported more keys but returned none".into(),
                ));
            };
            (keys, more) = self.list(nsid, last, true, page_size).await?;
        }
    }

    /// Opens an iterator over namespace `nsid` at a snapshot the device takes now; returns
    /// its id on this connection. Read it with [`Client::iter_next`], and close it with
    /// [`Client::iter_close`] (the device also closes it after `iterator_idle_secs` unused).
    pub async fn iter_open(&self, nsid: u32, opts: &ScanOptions) -> Result<u32> {
        let request = Request::IterOpen {
            start: opts.start.clone(),
            upper_bound: opts.upper_bound.clone().unwrap_or_default(),
            prefix: opts.prefix.clone().unwrap_or_default(),
            keys_only: opts.keys_only,
        };
        match self.run(nsid, request).await? {
            Reply::Iter(id) => Ok(id),
            other => Err(unexpected("iterator open", &other)),
        }
    }

    /// The next entries of iterator `iter`: at most `max_entries` and about `max_bytes` (at
    /// least one entry); `true` once the iterator has nothing after them.
    pub async fn iter_next(
        &self,
        nsid: u32,
        iter: u32,
        max_entries: u32,
        max_bytes: u32,
    ) -> Result<(Vec<(Bytes, Bytes)>, bool)> {
        let request = Request::IterNext {
            iter,
            max_entries,
            max_bytes,
        };
        match self.run(nsid, request).await? {
            Reply::Entries { entries, done } => Ok((entries, done)),
            other => Err(unexpected("iterator next", &other)),
        }
    }

    /// Closes iterator `iter` of namespace `nsid`.
    pub async fn iter_close(&self, nsid: u32, iter: u32) -> Result<()> {
        expect_empty(
            self.run(nsid, Request::IterClose { iter }).await?,
            "iterator close",
        )
    }

    /// Creates a namespace (admin): its id and its secret, which the device shows only here.
    pub async fn ns_create(&self, name: &str) -> Result<(u32, String)> {
        let request = Request::NamespaceCreate {
            name: name.to_string(),
        };
        match self.run(DEVICE_NSID, request).await? {
            Reply::Created { nsid, secret } => Ok((nsid, secret)),
            other => Err(unexpected("ns_create", &other)),
        }
    }

    /// Destroys a namespace and its data (admin).
    pub async fn ns_destroy(&self, nsid: u32) -> Result<()> {
        expect_empty(
            self.run(nsid, Request::NamespaceDestroy).await?,
            "ns_destroy",
        )
    }

    /// Every namespace of the device (admin).
    pub async fn ns_list(&self) -> Result<Vec<NamespaceEntry>> {
        match self.run(DEVICE_NSID, Request::NamespaceList).await? {
            Reply::Namespaces(list) => Ok(list),
            other => Err(unexpected("ns_list", &other)),
        }
    }

    /// Statistics of a namespace, or of the device with `DEVICE_NSID` (admin); the document's
    /// shape is the device's.
    pub async fn stats(&self, nsid: u32) -> Result<serde_json::Value> {
        match self.run(nsid, Request::Stats).await? {
            Reply::Stats(body) => serde_json::from_slice(&body)
                .map_err(|e| Error::Protocol(format!("stats reply is not JSON: {e}"))),
            other => Err(unexpected("stats", &other)),
        }
    }
}

async fn connect_inner(config: &ClientConfig, blocking: bool) -> Result<Client> {
    let tcp = TcpStream::connect(&config.addr).await?;
    // Completions are small and latency-bound; the writer batches on its own.
    tcp.set_nodelay(true)?;
    let conn = match &config.tls {
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

/// A Retrieve's value, `None` for an absent key.
fn value_or_absent(reply: Result<Reply>) -> Result<Option<Bytes>> {
    match reply {
        Ok(Reply::Value(v)) => Ok(Some(v)),
        Ok(other) => Err(unexpected("retrieve", &other)),
        Err(Error::KeyNotExist) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The reply of a successful completion, or the typed error of a failed one.
fn ok_reply(response: Response) -> Result<Reply> {
    if response.status.is_success() {
        return Ok(response.reply);
    }
    let message = match response.reply {
        Reply::Error(m) => m,
        _ => String::new(),
    };
    Err(Error::from_status(response.status, message))
}

pub(crate) fn expect_empty(reply: Reply, what: &str) -> Result<()> {
    match reply {
        Reply::Empty => Ok(()),
        other => Err(unexpected(what, &other)),
    }
}

/// Success means present; `KeyNotExist` means absent.
fn present(result: Result<Reply>, what: &str) -> Result<bool> {
    match result {
        Ok(Reply::Empty) => Ok(true),
        Ok(other) => Err(unexpected(what, &other)),
        Err(Error::KeyNotExist) => Ok(false),
        Err(e) => Err(e),
    }
}

pub(crate) fn unexpected(what: &str, reply: &Reply) -> Error {
    let kind = match reply {
        Reply::Empty => "an empty reply",
        Reply::Error(_) => "an error message",
        Reply::Value(_) => "a value",
        Reply::Keys { .. } => "a key list",
        Reply::Created { .. } => "a namespace creation",
        Reply::Namespaces(_) => "a namespace list",
        Reply::Identify(_) => "an identify reply",
        Reply::Stats(_) => "stats",
        Reply::Iter(_) => "an iterator id",
        Reply::Entries { .. } => "iterator entries",
        Reply::Json(_) => "a JSON document",
        Reply::Found { .. } => "query results",
    };
    Error::Protocol(format!("{what} was answered with {kind}"))
}
