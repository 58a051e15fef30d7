//! A device handle: its connections to the device (a few, each thread of the program using
//! one of them, so threads do not queue behind one socket), the credentials they proved, the
//! device's limits, the secrets store of its address, its iterator slots and its completion
//! threads.

use crate::completion::CompletionPool;
use crate::credentials::{client_config, Credentials, Env};
use crate::iterator::KvsIterator;
use crate::iterator_slots::IteratorSlots;
use crate::locks::lock;
use crate::pending::Pending;
use crate::result::KvsError;
use crate::secrets::SecretStore;
use crate::uri::DeviceUri;
use cerberus_host::{BlockingClient, Error as HostError};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Connections per device handle unless `CERBERUS_KVS_CONNECTIONS` says otherwise.
const DEFAULT_CONNECTIONS: usize = 4;
const MAX_CONNECTIONS: usize = 64;

/// Threads numbered in the order they first call: thread `n` uses connection `n % count`.
static THREADS: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    static THREAD_NO: usize = THREADS.fetch_add(1, Ordering::Relaxed);
}

/// The device's limits, as its Identify reports them.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Longest key (at most 65,535: `kvs_key.length` is 16 bits).
    pub max_key: u32,
    pub max_value: u32,
}

/// A tenant's namespace, proved at open.
#[derive(Clone, Debug)]
pub struct Tenant {
    /// The name it was given as (`CERBERUS_NS`).
    pub name: String,
    pub nsid: u32,
}

/// An open device.
pub struct Device {
    /// The first connection: admin commands, listings, statistics.
    pub client: BlockingClient,
    /// Every connection (the first included), for the key-value commands.
    pub connections: Vec<BlockingClient>,
    pub limits: Limits,
    pub admin: bool,
    pub tenant: Option<Tenant>,
    pub secrets: SecretStore,
    /// Names of the key spaces open on this handle.
    open: Mutex<HashSet<String>>,
    /// Open iterators, by handle number and key space.
    iterators: IteratorSlots<KvsIterator>,
    pub pool: CompletionPool<Pending>,
}

impl Device {
    /// Connects to `uri` with the credentials `env` gives; its completion threads hand the
    /// `_async` calls they take to `run`.
    pub fn open(uri: &str, env: Env, run: fn(Vec<Pending>)) -> Result<Device, KvsError> {
        let uri = DeviceUri::parse(uri)?;
        let creds = Credentials::from_env(env)?;
        let secrets = SecretStore::for_device(&uri.addr, env)?;
        let config = client_config(&uri, env)?;
        // Nothing answering there: the kit's "no such device".
        let count = env("CERBERUS_KVS_CONNECTIONS")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(DEFAULT_CONNECTIONS)
            .clamp(1, MAX_CONNECTIONS);
        let mut connections = Vec::with_capacity(count);
        for _ in 0..count {
            let c = BlockingClient::connect_with(config.clone());
            connections.push(c.map_err(|_| KvsError::NoDevice)?);
        }
        let client = connections[0].clone();
        let identify = match client.device_info() {
            Some(i) => i,
            None => client.identify()?,
        };
        let limits = Limits {
            max_key: identify.max_key_len.min(u32::from(u16::MAX)),
            max_value: identify.max_value_len,
        };
        if let Some(secret) = &creds.admin {
            client
                .authenticate_admin(secret)
                .map_err(|_| KvsError::Credentials("the admin secret was refused".into()))?;
        }
        let tenant = match &creds.tenant {
            Some((ns, secret)) => Some(open_tenant(&connections, ns, secret)?),
            None => None,
        };
        Ok(Device {
            client,
            connections,
            limits,
            admin: creds.admin.is_some(),
            tenant,
            secrets,
            open: Mutex::new(HashSet::new()),
            iterators: IteratorSlots::default(),
            pool: CompletionPool::start(CompletionPool::<Pending>::threads_from_env(env), run)
                .map_err(|e| KvsError::Credentials(format!("starting threads: {e}")))?,
        })
    }

    /// The index of the calling thread's connection.
    pub fn slot(&self) -> usize {
        THREAD_NO.with(|n| *n) % self.connections.len()
    }

    /// Marks key space `name` open; `KeySpaceOpen` if it is.
    pub fn mark_open(&self, name: &str) -> Result<(), KvsError> {
        if lock(&self.open).insert(name.to_string()) {
            Ok(())
        } else {
            Err(KvsError::KeySpaceOpen)
        }
    }

    /// Marks key space `name` closed.
    pub fn mark_closed(&self, name: &str) {
        lock(&self.open).remove(name);
    }

    /// Keeps iterator `it`; its handle (1 to 255, see `iterator_slots`).
    pub fn add_iterator(&self, it: KvsIterator) -> Result<u8, KvsError> {
        self.iterators.add(it.key_space, it)
    }

    /// Iterator `handle`, if key space `key_space` opened it.
    pub fn iterator(
        &self,
        key_space: usize,
        handle: u8,
    ) -> Result<Arc<Mutex<KvsIterator>>, KvsError> {
        self.iterators.get(key_space, handle)
    }

    /// Closes iterator `handle` of key space `key_space`.
    pub fn remove_iterator(&self, key_space: usize, handle: u8) -> Result<(), KvsError> {
        self.iterators.remove(key_space, handle)
    }

    /// Closes every iterator of key space `key_space`.
    pub fn remove_iterators_of(&self, key_space: usize) {
        self.iterators.remove_of(key_space);
    }
}

/// Proves tenant namespace `ns` (an id if all digits, else a name) on every connection.
fn open_tenant(connections: &[BlockingClient], ns: &str, secret: &str) -> Result<Tenant, KvsError> {
    let mut nsid = 0;
    for client in connections {
        let opened = match ns.parse::<u32>() {
            Ok(id) => client.open_namespace(id, secret),
            Err(_) => client.open_namespace_named(ns, secret),
        };
        nsid = match opened {
            Ok(handle) => handle.nsid(),
            Err(HostError::AccessDenied(_)) => {
                return Err(KvsError::Credentials(
                    "CERBERUS_NS / CERBERUS_SECRET were refused".into(),
                ))
            }
            Err(e) => return Err(e.into()),
        };
    }
    Ok(Tenant {
        name: ns.to_string(),
        nsid,
    })
}
