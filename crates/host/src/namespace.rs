//! A namespace handle: the data calls of one namespace on a connection, named as the
//! engine's `Namespace` names them.

use crate::client::Client;
use crate::error::{Error, Result};
use crate::reply::{expect_empty, ok_reply, present, unexpected, value_or_absent};
use crate::scan_options::ScanOptions;
use crate::write_batch::WriteBatch;
use bytes::Bytes;
use cerberus_proto::{Command, NamespaceSettings, Reply, Request, StoreMode};

/// How a handle's writes are sent (the engine's `WriteOptions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// The completion waits until the write is durable.
    pub sync: bool,
}

/// One namespace on a [`Client`]'s connection: cheap to make and to clone (no I/O; it holds
/// a clone of the client and the namespace's id). The connection must be authenticated for
/// the namespace ([`Client::open_namespace`]); otherwise every call fails with
/// `AccessDenied`.
#[derive(Clone, Debug)]
pub struct Namespace {
    client: Client,
    nsid: u32,
    write: WriteOptions,
}

impl Client {
    /// Proves this connection holds namespace `nsid`'s secret, and returns the namespace's
    /// handle. The device remembers the grant for the connection, so [`Client::namespace`]
    /// on any clone of this client reaches the namespace too.
    pub async fn open_namespace(&self, nsid: u32, secret: &str) -> Result<Namespace> {
        self.authenticate(nsid, secret).await?;
        Ok(self.namespace(nsid))
    }

    /// [`open_namespace`](Self::open_namespace) by the namespace's name: the device finds
    /// the id (the handle's [`Namespace::nsid`]). An unknown name is refused as a wrong
    /// secret is, with `AccessDenied`.
    pub async fn open_namespace_named(&self, name: &str, secret: &str) -> Result<Namespace> {
        let request = Request::AuthenticateByName {
            name: name.to_string(),
            secret: Bytes::copy_from_slice(secret.as_bytes()),
        };
        // The header's nsid is not read; the answer's is the namespace's.
        let response = self.call(0, request).await?;
        let nsid = response.nsid;
        expect_empty(ok_reply(response)?, "authenticate")?;
        Ok(self.namespace(nsid))
    }

    /// The handle of namespace `nsid` on this connection: no I/O; its calls fail with
    /// `AccessDenied` unless the connection is authenticated for the namespace
    /// ([`Client::open_namespace`]).
    pub fn namespace(&self, nsid: u32) -> Namespace {
        Namespace::new(self.clone(), nsid)
    }
}

impl Namespace {
    pub(crate) fn new(client: Client, nsid: u32) -> Namespace {
        Namespace {
            client,
            nsid,
            write: WriteOptions::default(),
        }
    }

    /// The namespace's id.
    pub fn nsid(&self) -> u32 {
        self.nsid
    }

    /// The client (connection) the handle calls through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// This handle with other options for its writes (for example `sync`); the original
    /// keeps its own.
    pub fn with_write_options(&self, options: WriteOptions) -> Namespace {
        Namespace {
            write: options,
            ..self.clone()
        }
    }

    pub(crate) async fn run(&self, request: Request) -> Result<Reply> {
        self.client.run(self.nsid, request).await
    }

    /// Stores unconditionally.
    pub async fn put(&self, key: impl Into<Bytes>, value: impl Into<Bytes>) -> Result<()> {
        self.store(key, value, StoreMode::Always).await
    }

    /// Stores under a condition: `KeyExists` / `KeyNotExist` when it does not hold.
    pub async fn store(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        mode: StoreMode,
    ) -> Result<()> {
        let request = Request::Store {
            key: key.into(),
            value: value.into(),
            mode,
            sync: self.write.sync,
        };
        expect_empty(self.run(request).await?, "store")
    }

    /// The value, or `None` if the key does not exist.
    pub async fn get(&self, key: impl Into<Bytes>) -> Result<Option<Bytes>> {
        value_or_absent(self.run(Request::Retrieve { key: key.into() }).await)
    }

    /// Applies `batch` all together or not at all, in one command (`WriteBatch`); with the
    /// handle's `sync`, answered once durable. An empty batch sends nothing.
    pub async fn write(&self, batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let request = Request::WriteBatch {
            writes: batch.writes,
            sync: self.write.sync,
        };
        expect_empty(self.run(request).await?, "write_batch")
    }

    /// Puts sent together, each without waiting for the one before (pipelined on the
    /// connection, each its own command: not atomic, see [`Namespace::write`]); the first
    /// failure, once all have completed.
    pub async fn put_many(&self, pairs: Vec<(Bytes, Bytes)>) -> Result<()> {
        let commands: Vec<Command> = pairs
            .into_iter()
            .map(|(key, value)| {
                self.command(Request::Store {
                    key,
                    value,
                    mode: StoreMode::Always,
                    sync: self.write.sync,
                })
            })
            .collect();
        let mut first_err = None;
        for r in self.client.call_many(&commands).await? {
            if let Err(e) = r.and_then(ok_reply).and_then(|r| expect_empty(r, "store")) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Gets sent together (pipelined), their values in the order of `keys`.
    pub async fn get_many(&self, keys: Vec<Bytes>) -> Result<Vec<Option<Bytes>>> {
        let commands: Vec<Command> = keys
            .into_iter()
            .map(|key| self.command(Request::Retrieve { key }))
            .collect();
        self.client
            .call_many(&commands)
            .await?
            .into_iter()
            .map(|r| value_or_absent(r.and_then(ok_reply)))
            .collect()
    }

    fn command(&self, request: Request) -> Command {
        Command {
            cid: 0,
            nsid: self.nsid,
            request,
        }
    }

    /// Deletes the key; `false` if it did not exist.
    pub async fn delete(&self, key: impl Into<Bytes>) -> Result<bool> {
        present(
            self.run(Request::Delete { key: key.into() }).await,
            "delete",
        )
    }

    /// Whether `key` has a value, without reading the value.
    pub async fn contains(&self, key: impl Into<Bytes>) -> Result<bool> {
        present(self.run(Request::Exist { key: key.into() }).await, "exist")
    }

    /// One page of keys in byte order from `start` (empty: the first key), at most
    /// `max_keys` (and at most the device's `max_list_keys`); `more` says keys remain after
    /// the last one returned.
    pub async fn list(
        &self,
        start: impl Into<Bytes>,
        start_exclusive: bool,
        max_keys: u32,
    ) -> Result<(Vec<Bytes>, bool)> {
        let request = Request::List {
            start: start.into(),
            start_exclusive,
            max_keys,
        };
        match self.run(request).await? {
            Reply::Keys { keys, more } => Ok((keys, more)),
            other => Err(unexpected("list", &other)),
        }
    }

    /// Every key from `start` (inclusive) on, paging `page_size` keys at a time. Not a
    /// snapshot: keys written meanwhile may or may not appear.
    pub async fn list_all(&self, start: impl Into<Bytes>, page_size: u32) -> Result<Vec<Bytes>> {
        let page_size = page_size.max(1);
        let mut all = Vec::new();
        let (mut keys, mut more) = self.list(start, false, page_size).await?;
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
            (keys, more) = self.list(last, true, page_size).await?;
        }
    }

    /// Opens a device iterator over the namespace at a snapshot the device takes now; returns
    /// its id on this connection. The low-level calls under
    /// [`BlockingNamespace::scan`](crate::BlockingNamespace::scan): read it with
    /// [`Namespace::iter_next`], and close it with [`Namespace::iter_close`] (the device
    /// also closes it after `iterator_idle_secs` unused).
    pub async fn iter_open(&self, opts: &ScanOptions) -> Result<u32> {
        let request = Request::IterOpen {
            start: opts.start.clone(),
            upper_bound: opts.upper_bound.clone().unwrap_or_default(),
            prefix: opts.prefix.clone().unwrap_or_default(),
            keys_only: opts.keys_only,
        };
        match self.run(request).await? {
            Reply::Iter(id) => Ok(id),
            other => Err(unexpected("iterator open", &other)),
        }
    }

    /// The next entries of iterator `iter`: at most `max_entries` and about `max_bytes` (at
    /// least one entry); `true` once the iterator has nothing after them.
    pub async fn iter_next(
        &self,
        iter: u32,
        max_entries: u32,
        max_bytes: u32,
    ) -> Result<(Vec<(Bytes, Bytes)>, bool)> {
        let request = Request::IterNext {
            iter,
            max_entries,
            max_bytes,
        };
        match self.run(request).await? {
            Reply::Entries { entries, done } => Ok((entries, done)),
            other => Err(unexpected("iterator next", &other)),
        }
    }

    /// Closes iterator `iter`.
    pub async fn iter_close(&self, iter: u32) -> Result<()> {
        expect_empty(
            self.run(Request::IterClose { iter }).await?,
            "iterator close",
        )
    }

    /// Gives the namespace new settings (capacity, I/O shares): the client must be the
    /// admin's ([`Client::configure_namespace`]).
    pub async fn configure(&self, settings: &NamespaceSettings) -> Result<()> {
        self.client.configure_namespace(self.nsid, settings).await
    }

    /// Statistics of the namespace; the document's shape is the device's.
    pub async fn stats(&self) -> Result<serde_json::Value> {
        self.client.stats_of(self.nsid).await
    }
}
