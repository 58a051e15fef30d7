//! A fake device for the client's tests: speaks the protocol with `cerberus-proto` over a
//! map in memory, with knobs to reorder completions, hold them, or break the connection.
//!
//! Data commands with special keys steer it:
//! - `!close`: drop the connection at once (commands held so far are never answered);
//! - `!half`: write half of a completion frame, then drop the connection;
//! - `!hold`: never answer this command;
//! - `!status:XX` (hex): answer with status XX and the message `forced XX`.

#![allow(dead_code)]

use bytes::{Bytes, BytesMut};
use cerberus_proto::{
    split_frame, Command, Identify, NamespaceEntry, Reply, Request, Response, Status, StoreMode,
    DEVICE_NSID,
};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

pub const ADMIN_SECRET: &str = "admin-secret";
/// A namespace that exists from the start.
pub const NS: u32 = 1;
pub const NS_SECRET: &str = "ns1-secret";

/// When data commands are answered.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// After each read, every command in it, in reverse order.
    PerRead,
    /// In batches of this many, each in reverse order of arrival (other commands at once).
    Batch(usize),
}

#[derive(Clone, Debug)]
pub struct FakeOptions {
    pub identify: Identify,
    /// Data commands and stats need Authenticate first (as the real device).
    pub require_auth: bool,
    pub mode: Mode,
}

impl Default for FakeOptions {
    fn default() -> Self {
        FakeOptions {
            identify: Identify {
                protocol_version: 1,
                max_key_len: 64,
                max_value_len: 4096,
                max_inflight: 1024,
                max_frame_body: 8192,
                max_list_keys: 4,
                max_iterators: 0,
                max_iter_batch_bytes: 0,
                iterator_idle_secs: 0,
            },
            require_auth: false,
            mode: Mode::PerRead,
        }
    }
}

#[derive(Default)]
pub struct FakeStats {
    /// Most commands of one connection received and not yet answered.
    pub peak_outstanding: AtomicUsize,
    pub commands: AtomicUsize,
    /// Connections that ended (the client closed or was dropped, or the fake closed).
    pub connections_ended: AtomicUsize,
}

struct Namespace {
    name: String,
    secret: String,
}

struct Store {
    data: BTreeMap<(u32, Bytes), Bytes>,
    namespaces: BTreeMap<u32, Namespace>,
    next_nsid: u32,
}

struct Device {
    opts: FakeOptions,
    store: Mutex<Store>,
    stats: Arc<FakeStats>,
}

pub struct FakeDevice {
    pub addr: SocketAddr,
    pub stats: Arc<FakeStats>,
    kill: tokio::sync::watch::Sender<bool>,
}

impl FakeDevice {
    pub async fn start(opts: FakeOptions) -> FakeDevice {
        FakeDevice::start_with(opts, None).await
    }

    /// Serves TLS through `acceptor`.
    pub async fn start_tls(opts: FakeOptions, acceptor: tokio_rustls::TlsAcceptor) -> FakeDevice {
        FakeDevice::start_with(opts, Some(acceptor)).await
    }

    async fn start_with(
        opts: FakeOptions,
        acceptor: Option<tokio_rustls::TlsAcceptor>,
    ) -> FakeDevice {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stats = Arc::new(FakeStats::default());
        let mut namespaces = BTreeMap::new();
        namespaces.insert(
            NS,
            Namespace {
                name: "default".into(),
                secret: NS_SECRET.into(),
            },
        );
        let device = Arc::new(Device {
            opts,
            store: Mutex::new(Store {
                data: BTreeMap::new(),
                namespaces,
                next_nsid: NS + 1,
            }),
            stats: stats.clone(),
        });
        let (kill, killed) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let device = device.clone();
                let acceptor = acceptor.clone();
                let mut killed = killed.clone();
                tokio::spawn(async move {
                    let work = async {
                        match acceptor {
                            None => serve(device.clone(), tcp).await,
                            Some(acceptor) => {
                                if let Ok(tls) = acceptor.accept(tcp).await {
                                    serve(device.clone(), tls).await;
                                }
                            }
                        }
                    };
                    tokio::select! {
                        _ = work => {}
                        _ = killed.wait_for(|k| *k) => {}
                    }
                    device
                        .stats
                        .connections_ended
                        .fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        FakeDevice { addr, stats, kill }
    }

    /// Drops every connection, open or future, without answering anything.
    pub fn kill_connections(&self) {
        self.kill.send_replace(true);
    }

    pub fn addr(&self) -> String {
        self.addr.to_string()
    }
}

enum Action {
    Reply(Response),
    Hold,
    Close,
    Half(Response),
}

#[derive(Default)]
struct Session {
    admin: bool,
    authed: HashSet<u32>,
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(device: Arc<Device>, mut stream: S) {
    let mut session = Session::default();
    let mut buf = BytesMut::with_capacity(1 << 16);
    let mut batch: Vec<Response> = Vec::new();
    let mut outstanding = 0usize;
    loop {
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut out: Vec<Response> = Vec::new();
        loop {
            let frame = match split_frame(&mut buf, 1 << 20) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => return,
            };
            device.stats.commands.fetch_add(1, Ordering::SeqCst);
            outstanding += 1;
            device
                .stats
                .peak_outstanding
                .fetch_max(outstanding, Ordering::SeqCst);
            let h = frame.header;
            let (action, data) = match Command::decode(&frame) {
                Err(e) => (
                    Action::Reply(Response::error(
                        h.cid,
                        h.nsid,
                        h.opcode,
                        e.status(),
                        e.to_string(),
                    )),
                    false,
                ),
                Ok(cmd) => {
                    let data = cmd.request.opcode().is_data();
                    (device.handle(&mut session, cmd), data)
                }
            };
            match action {
                Action::Reply(r) => match device.opts.mode {
                    Mode::Batch(n) if data => {
                        batch.push(r);
                        if batch.len() == n {
                            out.extend(batch.drain(..).rev());
                        }
                    }
                    _ => out.push(r),
                },
                Action::Hold => {}
                Action::Close => return,
                Action::Half(r) => {
                    let mut wire = BytesMut::new();
                    r.encode(&mut wire).unwrap();
                    let _ = stream.write_all(&wire[..wire.len() / 2]).await;
                    let _ = stream.flush().await;
                    // Close after the half frame (FIN), and read what the client still
                    // sends until it closes too: dropping a socket with unread bytes would
                    // reset the connection, and the reset can discard the half frame before
                    // the client reads it (a command sent just after `!half` did that).
                    let _ = stream.shutdown().await;
                    let mut sink = [0u8; 4096];
                    while let Ok(Ok(n)) = tokio::time::timeout(
                        std::time::Duration::from_secs(5),
                        stream.read(&mut sink),
                    )
                    .await
                    {
                        if n == 0 {
                            break;
                        }
                    }
                    return;
                }
            }
        }
        if let Mode::PerRead = device.opts.mode {
            out.reverse();
        }
        let mut wire = BytesMut::new();
        for r in &out {
            r.encode(&mut wire).unwrap();
        }
        outstanding -= out.len();
        if stream.write_all(&wire).await.is_err() || stream.flush().await.is_err() {
            return;
        }
    }
}

/// A command's reply, or its failure status and message.
type Outcome = Result<Reply, (Status, String)>;

fn refuse(status: Status, msg: impl Into<String>) -> Outcome {
    Err((status, msg.into()))
}

impl Device {
    fn handle(&self, session: &mut Session, cmd: Command) -> Action {
        let Command { cid, nsid, request } = cmd;
        let opcode = request.opcode() as u8;
        if let Some(action) = scripted(cid, nsid, opcode, &request) {
            return action;
        }
        Action::Reply(match self.run(session, nsid, request) {
            Ok(reply) => Response {
                cid,
                nsid,
                opcode,
                status: Status::Success,
                reply,
            },
            Err((status, msg)) => Response::error(cid, nsid, opcode, status, msg),
        })
    }

    fn run(&self, session: &mut Session, nsid: u32, request: Request) -> Outcome {
        let id = self.opts.identify;
        let mut st = self.store.lock();
        let may_access = !self.opts.require_auth || session.authed.contains(&nsid);
        if request.opcode().is_data() && !may_access {
            return refuse(Status::AccessDenied, "not authenticated for this namespace");
        }
        if let Some(key) = request.key() {
            if key.is_empty() || key.len() > id.max_key_len as usize {
                return refuse(
                    Status::InvalidKeySize,
                    format!("key of {} bytes", key.len()),
                );
            }
        }
        match request {
            Request::Store { .. }
            | Request::Retrieve { .. }
            | Request::Delete { .. }
            | Request::Exist { .. }
            | Request::List { .. } => data(&mut st, nsid, request, &id),
            Request::IterOpen { .. } | Request::IterNext { .. } | Request::IterClose { .. } => {
                refuse(Status::InvalidOpcode, "the fake device has no iterators")
            }
            Request::IndexCreate { .. }
            | Request::IndexDrop { .. }
            | Request::IndexList
            | Request::Query { .. } => {
                refuse(Status::InvalidOpcode, "the fake device has no indexes")
            }
            Request::NamespaceConfigure { .. } => refuse(
                Status::InvalidOpcode,
                "the fake device has no namespace settings",
            ),
            Request::WriteBatch { .. } | Request::DeleteRange { .. } => {
                refuse(Status::InvalidOpcode, "the fake device has no batches")
            }
            Request::AuthenticateByName { .. } | Request::NamespaceRekey => refuse(
                Status::InvalidOpcode,
                "the fake device has no names or rekeys",
            ),
            Request::Backup { .. } => {
                refuse(Status::InvalidOpcode, "the fake device has no backups")
            }
            Request::Authenticate { secret } => authenticate(&st, session, nsid, &secret),
            Request::Identify => Ok(Reply::Identify(id)),
            Request::Stats => stats(&st, session, nsid, may_access),
            Request::NamespaceCreate { .. }
            | Request::NamespaceDestroy
            | Request::NamespaceList => {
                if !session.admin {
                    return refuse(Status::AccessDenied, "admin only");
                }
                namespaces(&mut st, nsid, request)
            }
        }
    }
}

/// What the tests' magic keys make the fake do instead of answering.
fn scripted(cid: u32, nsid: u32, opcode: u8, request: &Request) -> Option<Action> {
    let key = request.key()?;
    match &key[..] {
        b"!close" => Some(Action::Close),
        b"!hold" => Some(Action::Hold),
        b"!half" => Some(Action::Half(Response {
            cid,
            nsid,
            opcode,
            status: Status::Success,
            reply: Reply::Value(Bytes::from(vec![7u8; 100])),
        })),
        k if k.starts_with(b"!status:") => {
            let hex = std::str::from_utf8(&k[8..]).unwrap();
            let code = u16::from_str_radix(hex, 16).unwrap();
            let status = Status::from_code(code);
            let msg = format!("forced {hex}");
            Some(Action::Reply(Response::error(
                cid, nsid, opcode, status, msg,
            )))
        }
        _ => None,
    }
}

/// Store, retrieve, delete, exist and list.
fn data(st: &mut Store, nsid: u32, request: Request, id: &Identify) -> Outcome {
    match request {
        Request::Store {
            key, value, mode, ..
        } => {
            if value.len() > id.max_value_len as usize {
                let msg = format!("value of {} bytes", value.len());
                return refuse(Status::InvalidValueSize, msg);
            }
            let present = st.data.contains_key(&(nsid, key.clone()));
            match mode {
                StoreMode::OnlyIfAbsent if present => return refuse(Status::KeyExists, ""),
                StoreMode::OnlyIfPresent if !present => return refuse(Status::KeyNotExist, ""),
                _ => {}
            }
            st.data.insert((nsid, key), value);
            Ok(Reply::Empty)
        }
        Request::Retrieve { key } => match st.data.get(&(nsid, key)) {
            Some(v) => Ok(Reply::Value(v.clone())),
            None => refuse(Status::KeyNotExist, ""),
        },
        Request::Delete { key } => match st.data.remove(&(nsid, key)) {
            Some(_) => Ok(Reply::Empty),
            None => refuse(Status::KeyNotExist, ""),
        },
        Request::Exist { key } => match st.data.contains_key(&(nsid, key)) {
            true => Ok(Reply::Empty),
            false => refuse(Status::KeyNotExist, ""),
        },
        Request::List {
            start,
            start_exclusive,
            max_keys,
        } => {
            let n = max_keys.min(id.max_list_keys) as usize;
            let mut keys: Vec<Bytes> = st
                .data
                .range((nsid, start.clone())..)
                .take_while(|((ns, _), _)| *ns == nsid)
                .map(|((_, k), _)| k.clone())
                .filter(|k| !(start_exclusive && *k == start))
                .take(n + 1)
                .collect();
            let more = keys.len() > n;
            keys.truncate(n);
            Ok(Reply::Keys { keys, more })
        }
        other => refuse(
            Status::InternalError,
            format!("not a data command: {other:?}"),
        ),
    }
}

fn authenticate(st: &Store, session: &mut Session, nsid: u32, secret: &[u8]) -> Outcome {
    let good = if nsid == DEVICE_NSID {
        secret == ADMIN_SECRET.as_bytes()
    } else {
        st.namespaces
            .get(&nsid)
            .is_some_and(|ns| secret == ns.secret.as_bytes())
    };
    if !good {
        return refuse(Status::AccessDenied, "wrong secret");
    }
    if nsid == DEVICE_NSID {
        session.admin = true;
    } else {
        session.authed.insert(nsid);
    }
    Ok(Reply::Empty)
}

/// Namespace create, destroy and list (the admin's).
fn namespaces(st: &mut Store, nsid: u32, request: Request) -> Outcome {
    match request {
        Request::NamespaceCreate { name, .. } => {
            if st.namespaces.values().any(|ns| ns.name == name) {
                return refuse(Status::NamespaceExists, format!("{name} exists"));
            }
            let new = st.next_nsid;
            st.next_nsid += 1;
            let secret = format!("secret-{new}");
            st.namespaces.insert(
                new,
                Namespace {
                    name,
                    secret: secret.clone(),
                },
            );
            Ok(Reply::Created { nsid: new, secret })
        }
        Request::NamespaceDestroy => {
            if st.namespaces.remove(&nsid).is_none() {
                return refuse(Status::InvalidNamespace, format!("no namespace {nsid}"));
            }
            st.data.retain(|(ns, _), _| *ns != nsid);
            Ok(Reply::Empty)
        }
        Request::NamespaceList => {
            let list = st
                .namespaces
                .iter()
                .map(|(nsid, ns)| NamespaceEntry {
                    nsid: *nsid,
                    name: ns.name.clone(),
                })
                .collect();
            Ok(Reply::Namespaces(list))
        }
        other => refuse(
            Status::InternalError,
            format!("not a namespace command: {other:?}"),
        ),
    }
}

fn stats(st: &Store, session: &Session, nsid: u32, may_access: bool) -> Outcome {
    let doc = if nsid == DEVICE_NSID {
        if !session.admin {
            return refuse(Status::AccessDenied, "admin only");
        }
        serde_json::json!({ "keys": st.data.len(), "namespaces": st.namespaces.len() })
    } else {
        if !may_access {
            return refuse(Status::AccessDenied, "not authenticated");
        }
        let keys = st.data.keys().filter(|(ns, _)| *ns == nsid).count();
        serde_json::json!({ "nsid": nsid, "keys": keys })
    };
    Ok(Reply::Stats(Bytes::from(serde_json::to_vec(&doc).unwrap())))
}

/// Ready-made options.
pub fn opts(mode: Mode) -> FakeOptions {
    FakeOptions {
        mode,
        ..FakeOptions::default()
    }
}

/// Waits (polling) until `cond` holds; panics after 20 s rather than hanging.
pub async fn wait_until(mut cond: impl FnMut() -> bool) {
    tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while !cond() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("condition not reached");
}
