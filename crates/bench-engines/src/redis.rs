//! Redis, the device's peer: a `redis-server` this process starts on a free loopback port over
//! the run's directory, persistent as the device is without `--sync` (`appendonly yes`,
//! `appendfsync no`; `--sync`: `appendfsync always`), no snapshots. Each benchmark thread has
//! a connection of its own, as `redis-benchmark`'s clients do.

use crate::config::OpenConfig;
use crate::db::{read_value, BenchDb};
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
}

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

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        Ok(())
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

impl Drop for RedisDb {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.lock().take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}
