//! A client beside the C workers that pipelines pairs on the device's native port: a put of
//! one of its keys, then a get of that key, sent together, a round at a time. Each get must
//! answer the put sent just before it, and each key at the end its last put (session 95: a
//! get that came while a piece of held puts was stored on a worker ran ahead of it, and a
//! write handed to a worker could land after a get sent behind it). Its values are large,
//! so the memtable fills and the device stores puts off its network threads.

use bytes::{Bytes, BytesMut};
use cerberus_device::DeviceHandle;
use cerberus_host::Client;
use cerberus_proto::{split_frame, Command, Reply, Request, Response, Status, StoreMode};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const ROUNDS: u32 = 6;
const PAIRS: u32 = 32;
/// Distinct keys: each is put and read several times a round.
const KEYS: u32 = 5;

/// The raw connection and what it read and not yet decoded.
struct Raw {
    sock: TcpStream,
    buf: BytesMut,
    got: HashMap<u32, Response>,
}

impl Raw {
    fn send(&mut self, commands: &[Command]) -> Result<(), String> {
        let mut frames = BytesMut::new();
        for c in commands {
            c.encode(&mut frames).map_err(|e| e.to_string())?;
        }
        self.sock.write_all(&frames).map_err(|e| e.to_string())
    }

    /// Reads replies until command ids below `until` are all answered.
    fn answers(&mut self, until: u32) -> Result<(), String> {
        let mut chunk = vec![0u8; 64 << 10];
        loop {
            while let Some(frame) =
                split_frame(&mut self.buf, u32::MAX).map_err(|e| e.to_string())?
            {
                let r = Response::decode(&frame).map_err(|e| e.to_string())?;
                self.got.insert(r.cid, r);
            }
            if (0..until).all(|c| self.got.contains_key(&c)) {
                return Ok(());
            }
            let n = self
                .sock
                .read(&mut chunk)
                .map_err(|e| format!("put-then-get: {e}"))?;
            if n == 0 {
                return Err("put-then-get: the device closed the connection".into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// The value answered to command `cid`.
    fn value(&self, cid: u32) -> Result<Bytes, String> {
        match self.got.get(&cid) {
            Some(Response {
                reply: Reply::Value(v),
                ..
            }) => Ok(v.clone()),
            other => Err(format!("put-then-get: command {cid} answered {other:?}")),
        }
    }
}

/// A namespace of its own, made by the admin: its id and secret.
fn namespace(dev: &DeviceHandle, seed: u64) -> Result<(u32, String), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (addr, admin) = (dev.local_addr().to_string(), dev.admin_secret().to_string());
    rt.block_on(async move {
        let c = Client::connect(&addr).await.map_err(|e| e.to_string())?;
        c.authenticate_admin(&admin)
            .await
            .map_err(|e| e.to_string())?;
        c.create_namespace(&format!("put-then-get-{seed}"))
            .await
            .map_err(|e| e.to_string())
    })
}

/// Connections, each pipelining its own keys on its own thread.
const CONNECTIONS: u32 = 3;

/// Runs the rounds on each connection; the pairs checked.
pub fn run(dev: &DeviceHandle, seed: u64) -> Result<u64, String> {
    let (ns, secret) = namespace(dev, seed)?;
    std::thread::scope(|s| {
        let conns: Vec<_> = (0..CONNECTIONS)
            .map(|c| {
                let secret = &secret;
                s.spawn(move || pairs(dev, ns, secret, seed, c))
            })
            .collect();
        conns
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("put-then-get panicked".into()))
            })
            .sum()
    })
}

/// Writes the device stored off its network threads so far (a run that had none did not
/// test what this client is for).
pub fn off_loop(dev: &DeviceHandle) -> u64 {
    dev.metrics_text()
        .lines()
        .find_map(|l| {
            l.strip_prefix("cerberus_writes_off_loop_total ")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// One connection's rounds, of keys of its own; the pairs checked.
fn pairs(dev: &DeviceHandle, ns: u32, secret: &str, seed: u64, conn: u32) -> Result<u64, String> {
    let sock = TcpStream::connect(dev.local_addr()).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let mut raw = Raw {
        sock,
        buf: BytesMut::new(),
        got: HashMap::new(),
    };
    let command = |cid: u32, request: Request| Command {
        cid,
        nsid: ns,
        request,
    };
    let auth = Request::Authenticate {
        secret: Bytes::copy_from_slice(secret.as_bytes()),
    };
    raw.send(&[command(0, auth)])?;
    raw.answers(1)?;
    if raw.got[&0].status != Status::Success {
        return Err(format!(
            "put-then-get: authenticate: {:?}",
            raw.got[&0].status
        ));
    }
    let key = |k: u32| Bytes::from(format!("c{conn}-k{k}"));
    // Values of 4-12 KiB, drawn from the seed: a round fills the 128 KiB memtable twice over.
    let size =
        |round: u32, i: u32| 4096 + ((seed as u32 ^ round.wrapping_mul(31) ^ i) % 8192) as usize;
    let mut cid = 1u32;
    for round in 0..ROUNDS {
        let first = cid;
        let mut commands = Vec::new();
        for i in 0..PAIRS {
            let mut value = format!("{round}-{i}-").into_bytes();
            value.resize(size(round, i), b'v');
            let put = Request::Store {
                key: key(i % KEYS),
                value: value.into(),
                mode: StoreMode::Always,
                sync: false,
            };
            commands.push(command(cid, put));
            commands.push(command(cid + 1, Request::Retrieve { key: key(i % KEYS) }));
            cid += 2;
        }
        raw.send(&commands)?;
        raw.answers(cid)?;
        for i in 0..PAIRS {
            let put = &raw.got[&(first + 2 * i)];
            if put.status != Status::Success {
                return Err(format!("put-then-get: put {round}/{i}: {:?}", put.status));
            }
            let got = raw.value(first + 2 * i + 1)?;
            if !got.starts_with(format!("{round}-{i}-").as_bytes()) {
                let seen = String::from_utf8_lossy(&got[..got.len().min(8)]).into_owned();
                return Err(format!(
                    "put-then-get: round {round}, get {i} saw {seen:?}, not its put"
                ));
            }
        }
    }
    // Each key holds its last put: the puts of one key landed in the order sent.
    let gets: Vec<_> = (0..KEYS)
        .map(|k| command(cid + k, Request::Retrieve { key: key(k) }))
        .collect();
    raw.send(&gets)?;
    raw.answers(cid + KEYS)?;
    for k in 0..KEYS {
        let last = (0..PAIRS).filter(|i| i % KEYS == k).max().unwrap_or(0);
        if !raw
            .value(cid + k)?
            .starts_with(format!("{}-{last}-", ROUNDS - 1).as_bytes())
        {
            return Err(format!("put-then-get: key {k} does not hold its last put"));
        }
    }
    Ok(u64::from(ROUNDS * PAIRS))
}
