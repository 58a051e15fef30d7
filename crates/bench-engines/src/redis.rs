//! Redis, the device's peer: a `redis-server` this process starts on a free loopback port over
//! the run's directory, persistent as the device is without `--sync` (`appendonly yes`,
//! `appendfsync no`; `--sync`: `appendfsync always`), no snapshots. Each benchmark thread has
//! a connection of its own, as `redis-benchmark`'s clients do.

use crate::config::OpenConfig;
use crate::db::{
    read_value, with_tenant_key, Affix, BenchCursor, BenchDb, CursorOptions, TenantHandle,
};
use crate::error::{Doing, EngineError, Result};
use crate::op::Op;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Distinguishes the servers of one process, so a thread's connection is to the right one.
static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static CONN: RefCell<Option<(usize, redis::Connection)>> = const { RefCell::new(None) };
}

pub struct RedisDb {
    id: usize,
    url: String,
    server: Mutex<Option<Child>>,
    /// `OpenConfig::ordered_keys`: every key is also in the sorted set [`KEYS`].
    ordered: bool,
}

/// The sorted set of the keys (all of score 0, so it orders them by their bytes) with
/// `OpenConfig::ordered_keys`.
const KEYS: &str = "cerberus-bench:keys";

fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// The error of the redis-server process (or what starting it needs) failing in `op`.
fn server_failed(op: Op) -> impl FnOnce(std::io::Error) -> EngineError {
    move |source| EngineError::RedisServer { op, source }
}

impl RedisDb {
    pub fn open(config: &OpenConfig) -> Result<RedisDb> {
        let port = free_port().map_err(server_failed(Op::FindPort))?;
        let dir = config
            .path
            .canonicalize()
            .map_err(|source| EngineError::RedisServer {
                op: Op::Resolve {
                    path: config.path.clone(),
                },
                source,
            })?;
        let server = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&dir)
            .args(["--appendonly", "yes"])
            .args(["--appendfsync", if config.sync { "always" } else { "no" }])
            .args(["--save", "", "--daemonize", "no", "--protected-mode", "no"])
            .args(["--logfile", "redis.log"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(EngineError::RedisNotStarted)?;
        let db = RedisDb {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            url: format!("redis://127.0.0.1:{port}/"),
            server: Mutex::new(Some(server)),
            ordered: config.ordered_keys,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ping = db.try_conn(|c| redis::cmd("PING").query::<String>(c).map(drop));
            match ping {
                Ok(()) => break,
                Err(e) if Instant::now() > deadline => return Err(EngineError::RedisNoAnswer(e)),
                Err(_) => {
                    // Not listening yet: the next try makes a new connection.
                    CONN.with(|c| c.borrow_mut().take());
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        Ok(db)
    }

    /// Runs `f` on the calling thread's connection, made on first use.
    fn try_conn<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> redis::RedisResult<T> {
        CONN.with(|cell| {
            let mut slot = cell.borrow_mut();
            if let Some((id, conn)) = slot.as_mut() {
                if *id == self.id {
                    return f(conn);
                }
            }
            let conn = redis::Client::open(self.url.as_str())?.get_connection()?;
            let (_, conn) = slot.insert((self.id, conn));
            f(conn)
        })
    }

    /// [`RedisDb::try_conn`], its failure that of `op`.
    fn with_conn<T>(
        &self,
        op: Op,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T> {
        self.try_conn(f).doing(op)
    }
}

impl BenchDb for RedisDb {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.ordered {
            return self.put_many(&[(key, value)]);
        }
        self.with_conn(Op::Put, |c| {
            redis::cmd("SET").arg(key).arg(value).query::<()>(c)
        })
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        let v = self.with_conn(Op::Get, |c| {
            redis::cmd("GET").arg(key).query::<Option<Vec<u8>>>(c)
        })?;
        Ok(read_value(v))
    }

    fn put_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let mut p = redis::pipe();
        for (k, v) in pairs {
            p.cmd("SET").arg(*k).arg(*v).ignore();
            if self.ordered {
                p.cmd("ZADD").arg(KEYS).arg(0).arg(*k).ignore();
            }
        }
        self.with_conn(Op::PutMany, |c| p.query::<()>(c))
    }

    fn get_many(&self, keys: &[&[u8]]) -> Result<u64> {
        let mut p = redis::pipe();
        for k in keys {
            p.cmd("GET").arg(*k);
        }
        let got: Vec<Option<Vec<u8>>> = self.with_conn(Op::GetMany, |c| p.query(c))?;
        Ok(got.iter().filter(|v| read_value(v.as_ref())).count() as u64)
    }

    /// Tenants are key prefixes (the tenant's index, 4 bytes), as a Redis user keeps
    /// tenants apart: its 16 numbered databases would cap the count and make each
    /// connection `SELECT` before every other tenant's command.
    fn create_tenants(&self, n: usize) -> Result<Vec<TenantHandle>> {
        Ok((0..n)
            .map(|index| TenantHandle {
                index,
                id: index as u32,
                name: TenantHandle::name_of(index),
            })
            .collect())
    }

    fn put_tenant(&self, tenant: &TenantHandle, key: &[u8], value: &[u8]) -> Result<()> {
        with_tenant_key(Affix::Prefix, tenant.id, key, |k| self.put(k, value))
    }

    fn put_many_tenant(&self, tenant: &TenantHandle, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let keys: Vec<Vec<u8>> = pairs
            .iter()
            .map(|(k, _)| with_tenant_key(Affix::Prefix, tenant.id, k, <[u8]>::to_vec))
            .collect();
        let prefixed: Vec<(&[u8], &[u8])> = keys
            .iter()
            .zip(pairs)
            .map(|(k, (_, v))| (k.as_slice(), *v))
            .collect();
        self.put_many(&prefixed)
    }

    fn get_tenant(&self, tenant: &TenantHandle, key: &[u8]) -> Result<bool> {
        with_tenant_key(Affix::Prefix, tenant.id, key, |k| self.get(k))
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        Ok(())
    }

    /// With `ordered_keys`: the keys from the sorted set (`ZRANGEBYLEX`), their values in
    /// one `MGET`, a batch of the scan length (at least 16) at a time.
    fn cursor(&self, opts: &CursorOptions) -> Result<Box<dyn BenchCursor + '_>> {
        if !self.ordered {
            return Err(EngineError::NoIterator);
        }
        Ok(Box::new(RedisCursor {
            db: self,
            batch: opts.scan_length.max(16),
            entries: Vec::new(),
            at: 0,
            more: false,
        }))
    }

    fn stats_json(&self) -> serde_json::Value {
        let info = self
            .try_conn(|c| redis::cmd("INFO").arg("memory").query::<String>(c))
            .unwrap_or_default();
        let used = info
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse::<u64>().ok());
        serde_json::json!({ "used_memory_bytes": used })
    }

    fn close(&self) -> Result<()> {
        if let Some(mut server) = self.server.lock().take() {
            // The append-only file is written as commands arrive; nothing is left to save.
            let _ = self.try_conn(|c| redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(c));
            let deadline = Instant::now() + Duration::from_secs(5);
            while server
                .try_wait()
                .map_err(server_failed(Op::StopServer))?
                .is_none()
            {
                if Instant::now() > deadline {
                    server.kill().map_err(server_failed(Op::StopServer))?;
                    server.wait().map_err(server_failed(Op::StopServer))?;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }
}

/// A scan of the sorted set of keys: `entries` the batch read, `at` the next one to yield.
struct RedisCursor<'a> {
    db: &'a RedisDb,
    batch: usize,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    at: usize,
    /// The last batch was full: more may follow its last key.
    more: bool,
}

impl RedisCursor<'_> {
    /// The batch from `min` (a `ZRANGEBYLEX` bound: `[key` from key on, `(key` past it).
    fn fill(&mut self, min: Vec<u8>) -> Result<()> {
        let batch = self.batch;
        let keys: Vec<Vec<u8>> = self.db.with_conn(Op::Seek, |c| {
            redis::cmd("ZRANGEBYLEX")
                .arg(KEYS)
                .arg(min)
                .arg("+")
                .arg("LIMIT")
                .arg(0)
                .arg(batch)
                .query(c)
        })?;
        let values: Vec<Option<Vec<u8>>> = match keys.is_empty() {
            true => Vec::new(),
            false => self
                .db
                .with_conn(Op::Seek, |c| redis::cmd("MGET").arg(&keys).query(c))?,
        };
        self.more = keys.len() == batch;
        // A key whose value went (never here: the bench deletes nothing) is left out.
        self.entries = keys
            .into_iter()
            .zip(values)
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
        self.at = 0;
        Ok(())
    }
}

impl BenchCursor for RedisCursor<'_> {
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        let mut min = b"[".to_vec();
        min.extend_from_slice(key);
        self.fill(min)
    }

    fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.at == self.entries.len() && self.more {
            let mut min = b"(".to_vec();
            min.extend_from_slice(&self.entries.last().map(|e| e.0.clone()).unwrap_or_default());
            self.fill(min)?;
        }
        let Some((k, v)) = self.entries.get(self.at) else {
            return Ok(None);
        };
        self.at += 1;
        Ok(Some((k, v)))
    }
}

impl Drop for RedisDb {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.lock().take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::LayoutArg;

    /// With `ordered_keys`, a cursor yields the keys from its seek on in byte order, across
    /// batches, each with its value; without, Redis has no cursor.
    #[test]
    fn ordered_keys_scan_in_order_across_batches() {
        let dir = tempfile::tempdir().unwrap();
        let plain = RedisDb::open(&OpenConfig::at(dir.path(), LayoutArg::PerNamespace)).unwrap();
        assert!(plain.cursor(&CursorOptions::default()).is_err());
        plain.close().unwrap();
        let ordered = OpenConfig {
            ordered_keys: true,
            ..OpenConfig::at(dir.path(), LayoutArg::PerNamespace)
        };
        let db = RedisDb::open(&ordered).unwrap();
        let keys: Vec<String> = (0..40).map(|i| format!("k{:03}", (i * 17) % 40)).collect();
        for (n, k) in keys.iter().enumerate() {
            match n % 2 {
                0 => db.put(k.as_bytes(), format!("v{k}").as_bytes()).unwrap(),
                _ => db
                    .put_many(&[(k.as_bytes(), format!("v{k}").as_bytes())])
                    .unwrap(),
            }
        }
        let mut c = db.cursor(&CursorOptions::default()).unwrap();
        c.seek(b"k005").unwrap();
        let mut got = Vec::new();
        while let Some((k, v)) = c.next().unwrap() {
            assert_eq!(v, format!("v{}", String::from_utf8_lossy(k)).as_bytes());
            got.push(String::from_utf8(k.to_vec()).unwrap());
        }
        let want: Vec<String> = (5..40).map(|i| format!("k{i:03}")).collect();
        assert_eq!(got, want);
        drop(c);
        db.close().unwrap();
    }

    /// Tenants' keys are apart: one tenant's put is not another's get.
    #[test]
    fn tenants_keep_their_keys_apart() {
        let dir = tempfile::tempdir().unwrap();
        let db = RedisDb::open(&OpenConfig::at(dir.path(), LayoutArg::PerNamespace)).unwrap();
        let t = db.create_tenants(3).unwrap();
        db.put_tenant(&t[0], b"k1", b"a").unwrap();
        db.put_many_tenant(&t[1], &[(b"k2", b"b"), (b"k3", b"c")])
            .unwrap();
        assert!(db.get_tenant(&t[0], b"k1").unwrap());
        assert!(!db.get_tenant(&t[1], b"k1").unwrap());
        assert!(db.get_tenant(&t[1], b"k3").unwrap());
        assert!(!db.get_tenant(&t[2], b"k2").unwrap());
        assert!(!db.get(b"k1").unwrap());
        db.close().unwrap();
    }
}
