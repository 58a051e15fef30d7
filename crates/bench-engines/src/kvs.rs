//! The SNIA key-value API library (`cerberus-kvs`, `libcerberus_kvs.so`) as an engine: the
//! workloads' puts and gets go through its C entry points (called from Rust: the same
//! functions a C program links), to the device `--device` names or one started here as the
//! `device` engine starts it, so that `device,kvs` measures what the C layer costs beside the
//! Rust client. Puts and gets are the synchronous calls; `--pipeline` batches are the `_async`
//! calls, each batch waited for through its callbacks (a caller waiting alone spins up to
//! 200 us, yielding, before it sleeps).

use crate::config::OpenConfig;
use crate::db::BenchDb;
use crate::device::start_local;
use crate::error::{EngineError, Result};
use crate::op::Op;
use cerberus_device::DeviceHandle;
use cerberus_host::Wire;
use cerberus_kvs::{
    code, kvs_close_device, kvs_close_key_space, kvs_create_key_space, kvs_open_device_with,
    kvs_open_key_space, kvs_retrieve_kvp, kvs_retrieve_kvp_async, kvs_store_kvp,
    kvs_store_kvp_async, KvsKey, KvsKeySpaceName, KvsOptionKeySpace, KvsPostprocessContext,
    KvsResult, KvsValue,
};
use parking_lot::{Condvar, Mutex};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::path::Path;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The key space the workloads use.
const KEY_SPACE: &str = "bench";
/// Connections of the library's device handle: one per benchmark thread up to this many, as
/// the `device` engine's.
const CONNECTIONS: &str = "64";
/// A get's first buffer; a larger value is read again into one of its size.
const FIRST_BUFFER: usize = 64 << 10;

/// The `kvs` engine: a device handle and a key space handle of the library.
pub struct KvsDb {
    local: Mutex<Option<DeviceHandle>>,
    /// `kvs_device_handle` and `kvs_key_space_handle`, as numbers (they are not pointers).
    dev: usize,
    ks: usize,
}

thread_local! {
    static VALUE: RefCell<Vec<u8>> = RefCell::new(vec![0; FIRST_BUFFER]);
    /// The buffers of a thread's `get_many` batches.
    static BUFFERS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// `code`, as the failure of `op` unless it is `KVS_SUCCESS`.
fn check(op: Op, code: KvsResult) -> Result<()> {
    if code == code::SUCCESS {
        Ok(())
    } else {
        Err(EngineError::Kvs { op, code })
    }
}

impl KvsDb {
    /// Opens key space `bench` of the device of `config.device` (started here if `local`).
    pub fn open(config: &OpenConfig) -> Result<KvsDb> {
        let target = config.device.as_deref().unwrap_or("local");
        let nvme = crate::config::wire_nvme();
        let mut env: HashMap<&str, String> = HashMap::new();
        let (local, uri) = if target == "local" {
            let dev = start_local(config, nvme, |_| {})?;
            env.insert("CERBERUS_ADMIN_SECRET", dev.device.admin_secret().into());
            let uri = match dev.client_config(nvme)?.wire {
                Wire::Native => dev.addr.clone(),
                Wire::Nvme {
                    subnqn,
                    hostnqn,
                    host_secret,
                    ..
                } => {
                    if let Some(s) = host_secret {
                        env.insert("CERBERUS_DHCHAP_SECRET", s);
                    }
                    let addr = dev.device.nvme_addr().ok_or(EngineError::NoNvmeTarget)?;
                    format!("nvme-tcp://{addr}?hostnqn={hostnqn}&subnqn={subnqn}")
                }
            };
            (Some(dev.device), uri)
        } else {
            if nvme {
                return Err(EngineError::NeedsLocalDevice {
                    what: "--wire nvme",
                });
            }
            let secret = config
                .admin_secret
                .clone()
                .ok_or(EngineError::NoAdminSecret)?;
            env.insert("CERBERUS_ADMIN_SECRET", secret);
            (None, target.to_string())
        };
        let secrets = config.path.join("kvs-secrets");
        if local.is_some() {
            keep_secrets(&secrets, &uri);
        }
        env.insert("CERBERUS_KVS_SECRETS", secrets.display().to_string());
        env.insert("CERBERUS_KVS_CONNECTIONS", CONNECTIONS.into());
        let lookup = |k: &str| env.get(k).cloned();
        let mut dev = null_mut();
        check(
            Op::Open {
                path: config.path.clone(),
            },
            kvs_open_device_with(&uri, &lookup, &mut dev),
        )?;
        let name = CString::new(KEY_SPACE).unwrap_or_default();
        let mut ks_name = KvsKeySpaceName {
            name_len: KEY_SPACE.len() as u32,
            name: name.as_ptr().cast_mut(),
        };
        let create = Op::CreateNamespace {
            name: KEY_SPACE.into(),
        };
        // SAFETY: a live device handle, a valid name.
        match unsafe {
            kvs_create_key_space(dev, &mut ks_name, 0, KvsOptionKeySpace { ordering: 0 })
        } {
            code::SUCCESS | code::KS_EXIST => {}
            other => {
                return Err(EngineError::Kvs {
                    op: create,
                    code: other,
                })
            }
        }
        let mut ks = null_mut();
        // SAFETY: as above, and a writable handle.
        let opened = unsafe { kvs_open_key_space(dev, name.as_ptr().cast_mut(), &mut ks) };
        check(Op::OpenNamespace { nsid: 0 }, opened)?;
        Ok(KvsDb {
            local: Mutex::new(local),
            dev: dev as usize,
            ks: ks as usize,
        })
    }

    fn ks(&self) -> *mut c_void {
        self.ks as *mut c_void
    }

    /// Makes `n` `_async` calls (`call(i, private)` makes the `i`th, its callback
    /// `batch_done` with `private`), and waits for them: the first failure, else how many
    /// found a value.
    fn all_async(
        &self,
        n: usize,
        op: Op,
        mut call: impl FnMut(usize, *mut c_void) -> KvsResult,
    ) -> Result<u64> {
        let batch = Batch::new(n);
        for i in 0..n {
            let private = batch.share();
            let r = call(i, private);
            if r != code::SUCCESS {
                // SAFETY: refused, so no callback has `private`.
                unsafe { Batch::refused(private, r) };
            }
        }
        let (r, found) = batch.wait();
        check(op, r)?;
        Ok(found)
    }

    /// Retrieves `keys` into `values` with the `_async` calls, and waits for them: the first
    /// failure, else how many were found.
    fn retrieve_all(&self, keys: &mut [KvsKey], values: &mut [KvsValue]) -> Result<u64> {
        self.all_async(keys.len(), Op::GetMany, |i, private| {
            // SAFETY: the keys and buffers outlive the callbacks: `all_async` waits for them.
            unsafe {
                kvs_retrieve_kvp_async(
                    self.ks(),
                    &mut keys[i],
                    null_mut(),
                    private,
                    null_mut(),
                    &mut values[i],
                    Some(batch_done),
                )
            }
        })
    }
}

/// A local device listens on a new port at each start, and the library keeps key-space
/// secrets per device address: the secrets an earlier run over this database kept move to
/// this run's address, so its key space opens again (best effort: without them the open
/// fails and says so).
fn keep_secrets(root: &Path, uri: &str) {
    let addr = uri.trim_start_matches("nvme-tcp://");
    let addr = addr.split('?').next().unwrap_or(addr);
    let mine = cerberus_kvs::secrets_dir(root, addr);
    if mine.exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    if let Some(old) = entries.flatten().map(|e| e.path()).find(|p| p.is_dir()) {
        let _ = std::fs::rename(old, mine);
    }
}

fn key_of(key: &[u8]) -> Result<KvsKey> {
    let length = u16::try_from(key.len()).map_err(|_| EngineError::Kvs {
        op: Op::Put,
        code: code::KEY_LENGTH_INVALID,
    })?;
    Ok(KvsKey {
        key: key.as_ptr().cast_mut().cast(),
        length,
    })
}

fn value_of(buf: &[u8]) -> KvsValue {
    KvsValue {
        value: buf.as_ptr().cast_mut().cast(),
        length: buf.len() as u32,
        actual_value_size: 0,
        offset: 0,
    }
}

/// How long a batch's caller looks for its callbacks before it sleeps (yielding the core
/// meanwhile): a batch of 16 ends within it on loopback, and a sleeper costs a wake-up
/// (10-50 us on a VM). A C program waits as it likes; this one spins briefly, then parks.
const WAIT_SPIN: Duration = Duration::from_micros(200);
/// Callers waiting for their batches: only a caller waiting alone spins (with more, their
/// batches wait behind each other anyway, and spinning takes the cores the device and the
/// library's threads need).
static WAITING: AtomicUsize = AtomicUsize::new(0);

/// Callbacks still to come for one batch of `_async` calls, and the first failure. Each
/// queued call holds a reference, so a callback never touches a batch its caller dropped.
struct Batch {
    left: AtomicUsize,
    failure: AtomicI32,
    found: AtomicU64,
    lock: Mutex<()>,
    done: Condvar,
}

impl Batch {
    fn new(n: usize) -> Arc<Batch> {
        Arc::new(Batch {
            left: AtomicUsize::new(n),
            failure: AtomicI32::new(code::SUCCESS),
            found: AtomicU64::new(0),
            lock: Mutex::new(()),
            done: Condvar::new(),
        })
    }

    /// One call ended with `result` (`found`: a get found its key).
    fn end(&self, result: KvsResult, found: bool) {
        if result != code::SUCCESS && result != code::KEY_NOT_EXIST {
            let _ = self.failure.compare_exchange(
                code::SUCCESS,
                result,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        self.found.fetch_add(u64::from(found), Ordering::Relaxed);
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Under the lock: a waiter that found calls left checks again under it.
            let _held = self.lock.lock();
            self.done.notify_all();
        }
    }

    /// Waits for every callback: the first failure and how many gets found their key.
    fn wait(&self) -> (KvsResult, u64) {
        if WAITING.fetch_add(1, Ordering::Relaxed) == 0 {
            let start = Instant::now();
            while self.left.load(Ordering::Acquire) > 0 && start.elapsed() < WAIT_SPIN {
                std::thread::yield_now();
            }
        }
        let mut held = self.lock.lock();
        while self.left.load(Ordering::Acquire) > 0 {
            self.done.wait(&mut held);
        }
        drop(held);
        WAITING.fetch_sub(1, Ordering::Relaxed);
        (
            self.failure.load(Ordering::Relaxed),
            self.found.load(Ordering::Relaxed),
        )
    }

    /// The `private1` of one call: a reference the callback takes back.
    fn share(self: &Arc<Batch>) -> *mut c_void {
        Arc::into_raw(self.clone()).cast_mut().cast()
    }

    /// A call was refused with `result` (no callback comes): its reference back too.
    ///
    /// # Safety
    /// `private` came from [`Batch::share`] and goes to no callback.
    unsafe fn refused(private: *mut c_void, result: KvsResult) {
        // SAFETY: as the caller promises.
        let batch = unsafe { Arc::from_raw(private.cast_const().cast::<Batch>()) };
        batch.end(result, false);
    }
}

/// The completion callback of the batches: `private1` is the batch.
unsafe extern "C" fn batch_done(ctx: *mut KvsPostprocessContext) {
    // SAFETY: the library hands a valid context; `private1` is a reference to the batch
    // from `Batch::share`, this call's own.
    let (batch, result) = unsafe {
        let batch = Arc::from_raw((*ctx).private1.cast_const().cast::<Batch>());
        (batch, (*ctx).result)
    };
    batch.end(
        result,
        result == code::SUCCESS || result == code::BUFFER_SMALL,
    );
}

impl BenchDb for KvsDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let (mut k, mut v) = (key_of(key)?, value_of(value));
        // SAFETY: a live key space handle; the key and value point into the caller's slices.
        check(Op::Put, unsafe {
            kvs_store_kvp(self.ks(), &mut k, &mut v, null_mut())
        })
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        let mut k = key_of(key)?;
        VALUE.with(|buf| {
            let mut buf = buf.borrow_mut();
            loop {
                let mut v = value_of(&buf);
                // SAFETY: as above; `v` names the thread's buffer, writable.
                let r = unsafe { kvs_retrieve_kvp(self.ks(), &mut k, null_mut(), &mut v) };
                match r {
                    code::SUCCESS => return Ok(true),
                    code::KEY_NOT_EXIST => return Ok(false),
                    code::BUFFER_SMALL => buf.resize(v.actual_value_size as usize, 0),
                    other => {
                        return Err(EngineError::Kvs {
                            op: Op::Get,
                            code: other,
                        })
                    }
                }
            }
        })
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let mut keys = pairs
            .iter()
            .map(|(k, _)| key_of(k))
            .collect::<Result<Vec<_>>>()?;
        let mut values: Vec<KvsValue> = pairs.iter().map(|(_, v)| value_of(v)).collect();
        self.all_async(pairs.len(), Op::PutMany, |i, private| {
            // SAFETY: the keys and values outlive the callbacks: `all_async` waits for them.
            unsafe {
                kvs_store_kvp_async(
                    self.ks(),
                    &mut keys[i],
                    &mut values[i],
                    null_mut(),
                    private,
                    null_mut(),
                    Some(batch_done),
                )
            }
        })
        .map(drop)
    }

    fn get_many(&self, keys: &[&[u8]]) -> Result<u64> {
        let mut ks = keys.iter().map(|k| key_of(k)).collect::<Result<Vec<_>>>()?;
        BUFFERS.with(|bufs| {
            let mut bufs = bufs.borrow_mut();
            // The thread's buffers, made once: a C program reuses its buffers too.
            if bufs.len() < keys.len() {
                bufs.resize_with(keys.len(), || vec![0; FIRST_BUFFER]);
            }
            let mut values: Vec<KvsValue> = bufs
                .iter_mut()
                .take(keys.len())
                .map(|b| value_of(b))
                .collect();
            self.retrieve_all(&mut ks, &mut values)
        })
    }

    fn flush(&self) -> Result<()> {
        Err(EngineError::NoDeviceCommand { command: "flush" })
    }

    fn compact(&self) -> Result<()> {
        Err(EngineError::NoDeviceCommand {
            command: "compaction",
        })
    }

    fn settle(&self) -> Result<()> {
        Ok(())
    }

    fn stats_json(&self) -> serde_json::Value {
        serde_json::json!({})
    }

    fn close(&self) -> Result<()> {
        // A second close finds both handles closed already.
        match kvs_close_key_space(self.ks()) {
            code::SUCCESS | code::KS_NOT_OPEN => {}
            other => check(Op::Close, other)?,
        }
        match kvs_close_device(self.dev as *mut c_void) {
            code::SUCCESS | code::DEV_NOT_EXIST => {}
            other => check(Op::Close, other)?,
        }
        if let Some(dev) = self.local.lock().take() {
            dev.shutdown().map_err(EngineError::StopDevice)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::LayoutArg;

    #[test]
    fn puts_and_gets_through_the_library_sync_and_async() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = OpenConfig::at(dir.path(), LayoutArg::default());
        config.device = Some("local".into());
        let db = KvsDb::open(&config).unwrap();
        db.put(b"key-1", b"value-1").unwrap();
        assert!(db.get(b"key-1").unwrap());
        assert!(!db.get(b"key-2").unwrap());
        let big = vec![7u8; FIRST_BUFFER + 10];
        db.put(b"big", &big).unwrap();
        assert!(db.get(b"big").unwrap(), "a value past the first buffer");
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..40)
            .map(|i| (format!("many-{i}").into_bytes(), vec![i as u8; 100]))
            .collect();
        let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        db.put_many(&refs).unwrap();
        let keys: Vec<&[u8]> = refs
            .iter()
            .map(|(k, _)| *k)
            .chain([&b"absent"[..]])
            .collect();
        assert_eq!(db.get_many(&keys).unwrap(), 40);
        db.close().unwrap();
        db.close().unwrap();
        // A second open finds the key space and its kept secret.
        let db = KvsDb::open(&config).unwrap();
        assert!(db.get(b"key-1").unwrap());
        db.close().unwrap();
    }
}
