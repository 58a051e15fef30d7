//! The SNIA key-value API library (`cerberus-kvs`, `libcerberus_kvs.so`) as an engine: the
//! workloads' puts and gets go through its C entry points (called from Rust: the same
//! functions a C program links), to the device `--device` names or one started here as the
//! `device` engine starts it, so that `device,kvs` measures what the C layer costs beside the
//! Rust client. Puts and gets are the synchronous calls; `--pipeline` batches are the `_async`
//! calls, each batch waited for through its callbacks.

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

/// Callbacks still to come for one batch of `_async` calls, and the first failure.
struct Batch {
    left: Mutex<(usize, KvsResult, u64)>,
    done: Condvar,
}

impl Batch {
    fn new(n: usize) -> Batch {
        Batch {
            left: Mutex::new((n, code::SUCCESS, 0)),
            done: Condvar::new(),
        }
    }

    /// One call ended with `result` (`found`: a get found its key).
    fn end(&self, result: KvsResult, found: bool) {
        let mut left = self.left.lock();
        left.0 -= 1;
        if result != code::SUCCESS && result != code::KEY_NOT_EXIST && left.1 == code::SUCCESS {
            left.1 = result;
        }
        left.2 += u64::from(found);
        if left.0 == 0 {
            self.done.notify_all();
        }
    }

    /// Waits for every callback: the first failure and how many gets found their key.
    fn wait(&self) -> (KvsResult, u64) {
        let mut left = self.left.lock();
        while left.0 > 0 {
            self.done.wait(&mut left);
        }
        (left.1, left.2)
    }
}

/// The completion callback of the batches: `private1` is the batch.
unsafe extern "C" fn batch_done(ctx: *mut KvsPostprocessContext) {
    // SAFETY: the library hands a valid context; `private1` is the `Batch` its caller waits
    // on, alive until every callback of the batch ran.
    let (batch, result) = unsafe { (&*((*ctx).private1 as *const Batch), (*ctx).result) };
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
        let batch = Batch::new(pairs.len());
        let private = &batch as *const Batch as *mut c_void;
        for (k, v) in keys.iter_mut().zip(values.iter_mut()) {
            // SAFETY: the key, value and batch outlive the callbacks: this waits for them.
            let r = unsafe {
                kvs_store_kvp_async(
                    self.ks(),
                    k,
                    v,
                    null_mut(),
                    private,
                    null_mut(),
                    Some(batch_done),
                )
            };
            if r != code::SUCCESS {
                batch.end(r, false);
            }
        }
        check(Op::PutMany, batch.wait().0)
    }

    fn get_many(&self, keys: &[&[u8]]) -> Result<u64> {
        let mut ks = keys.iter().map(|k| key_of(k)).collect::<Result<Vec<_>>>()?;
        let mut bufs: Vec<Vec<u8>> = keys.iter().map(|_| vec![0; FIRST_BUFFER]).collect();
        let mut values: Vec<KvsValue> = bufs.iter_mut().map(|b| value_of(b)).collect();
        let batch = Batch::new(keys.len());
        let private = &batch as *const Batch as *mut c_void;
        for (k, v) in ks.iter_mut().zip(values.iter_mut()) {
            // SAFETY: as in put_many; the buffers outlive the callbacks too.
            let r = unsafe {
                kvs_retrieve_kvp_async(
                    self.ks(),
                    k,
                    null_mut(),
                    private,
                    null_mut(),
                    v,
                    Some(batch_done),
                )
            };
            if r != code::SUCCESS {
                batch.end(r, false);
            }
        }
        let (r, found) = batch.wait();
        check(Op::GetMany, r)?;
        Ok(found)
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
