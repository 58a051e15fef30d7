//! The blocking face of a [`Namespace`] handle.

use crate::blocking::BlockingClient;
use crate::error::Result;
use crate::namespace::{Namespace, WriteOptions};
use crate::scan_options::ScanOptions;
use crate::write_batch::WriteBatch;
use bytes::Bytes;
use cerberus_proto::{NamespaceSettings, StoreMode};

/// [`Namespace`] with blocking methods, on a [`BlockingClient`]'s connection: cheap to make
/// and to clone (no I/O).
#[derive(Clone, Debug)]
pub struct BlockingNamespace {
    client: BlockingClient,
    ns: Namespace,
}

impl BlockingClient {
    /// [`Client::open_namespace`](crate::Client::open_namespace), waiting for the answer: authenticates the connection for
    /// namespace `nsid` and returns its blocking handle.
    pub fn open_namespace(&self, nsid: u32, secret: &str) -> Result<BlockingNamespace> {
        self.wait(self.client().open_namespace(nsid, secret))
            .map(|_| self.namespace(nsid))
    }

    /// [`Client::open_namespace_named`](crate::Client::open_namespace_named), waiting for
    /// the answer.
    pub fn open_namespace_named(&self, name: &str, secret: &str) -> Result<BlockingNamespace> {
        let ns = self.wait(self.client().open_namespace_named(name, secret))?;
        Ok(self.namespace(ns.nsid()))
    }

    /// The blocking handle of namespace `nsid` ([`Client::namespace`](crate::Client::namespace)): no I/O.
    pub fn namespace(&self, nsid: u32) -> BlockingNamespace {
        BlockingNamespace::new(self.clone(), nsid)
    }
}

impl BlockingNamespace {
    pub(crate) fn new(client: BlockingClient, nsid: u32) -> BlockingNamespace {
        let ns = client.client().namespace(nsid);
        BlockingNamespace { client, ns }
    }

    /// The namespace's id.
    pub fn nsid(&self) -> u32 {
        self.ns.nsid()
    }

    /// The client (connection) the handle calls through.
    pub fn client(&self) -> &BlockingClient {
        &self.client
    }

    /// The async handle underneath (for use inside async code of the same program).
    pub fn namespace(&self) -> &Namespace {
        &self.ns
    }

    /// [`Namespace::with_write_options`].
    pub fn with_write_options(&self, options: WriteOptions) -> BlockingNamespace {
        BlockingNamespace {
            client: self.client.clone(),
            ns: self.ns.with_write_options(options),
        }
    }

    /// [`Namespace::put`], waiting for the answer.
    pub fn put(&self, key: impl Into<Bytes>, value: impl Into<Bytes>) -> Result<()> {
        self.client.wait(self.ns.put(key, value))
    }

    /// [`Namespace::store`], waiting for the answer.
    pub fn store(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        mode: StoreMode,
    ) -> Result<()> {
        self.client.wait(self.ns.store(key, value, mode))
    }

    /// [`Namespace::get`], waiting for the answer.
    pub fn get(&self, key: impl Into<Bytes>) -> Result<Option<Bytes>> {
        self.client.wait(self.ns.get(key))
    }

    /// [`Namespace::write`], waiting for the answer.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.client.wait(self.ns.write(batch))
    }

    /// [`Namespace::put_many`], waiting for every answer.
    pub fn put_many(&self, pairs: Vec<(Bytes, Bytes)>) -> Result<()> {
        self.client.wait(self.ns.put_many(pairs))
    }

    /// [`Namespace::get_many`], waiting for every answer.
    pub fn get_many(&self, keys: Vec<Bytes>) -> Result<Vec<Option<Bytes>>> {
        self.client.wait(self.ns.get_many(keys))
    }

    /// [`Namespace::delete`], waiting for the answer.
    pub fn delete(&self, key: impl Into<Bytes>) -> Result<bool> {
        self.client.wait(self.ns.delete(key))
    }

    /// [`Namespace::contains`], waiting for the answer.
    pub fn contains(&self, key: impl Into<Bytes>) -> Result<bool> {
        self.client.wait(self.ns.contains(key))
    }

    /// [`Namespace::list`], waiting for the answer.
    pub fn list(
        &self,
        start: impl Into<Bytes>,
        start_exclusive: bool,
        max_keys: u32,
    ) -> Result<(Vec<Bytes>, bool)> {
        self.client
            .wait(self.ns.list(start, start_exclusive, max_keys))
    }

    /// [`Namespace::list_all`], waiting for the answers.
    pub fn list_all(&self, start: impl Into<Bytes>, page_size: u32) -> Result<Vec<Bytes>> {
        self.client.wait(self.ns.list_all(start, page_size))
    }

    /// [`Namespace::iter_open`], waiting for the answer.
    pub fn iter_open(&self, opts: &ScanOptions) -> Result<u32> {
        self.client.wait(self.ns.iter_open(opts))
    }

    /// [`Namespace::iter_next`], waiting for the answer.
    pub fn iter_next(
        &self,
        iter: u32,
        max_entries: u32,
        max_bytes: u32,
    ) -> Result<(Vec<(Bytes, Bytes)>, bool)> {
        self.client
            .wait(self.ns.iter_next(iter, max_entries, max_bytes))
    }

    /// [`Namespace::iter_close`], waiting for the answer.
    pub fn iter_close(&self, iter: u32) -> Result<()> {
        self.client.wait(self.ns.iter_close(iter))
    }

    /// [`Namespace::configure`], waiting for the answer.
    pub fn configure(&self, settings: &NamespaceSettings) -> Result<()> {
        self.client.wait(self.ns.configure(settings))
    }

    /// [`Namespace::stats`], waiting for the answer.
    pub fn stats(&self) -> Result<serde_json::Value> {
        self.client.wait(self.ns.stats())
    }
}
