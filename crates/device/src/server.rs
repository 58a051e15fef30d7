//! Starting and stopping the device: the engine, the worker pool, the listener (TCP or TLS),
//! the metrics endpoint, and a graceful stop (stop accepting, finish what is in flight, flush).

use crate::admission::{Admission, Room, Ticket, EVICTION_WAIT};
use crate::auth::Credentials;
use crate::config::DeviceConfig;
use crate::connection;
use crate::dispatch::Shared;
use crate::error::bind;
use crate::error::DeviceError;
use crate::metrics;
use crate::nvme;
use crate::placed::Placed;
use crate::put_batch::HeldPuts;
use crate::reactor::Reactors;
use crate::scheduler::Scheduler;
use crate::stop::accept_until_stopped;
use crate::workers::Workers;
use crate::{data_dir, tls};
use cerberus_engine::Db;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

/// How long a stop waits for connections to finish their in-flight commands.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The device's entry point: [`Device::start`] runs one from a [`DeviceConfig`].
pub struct Device;

/// A running device. Dropping it stops the device.
pub struct DeviceHandle {
    local_addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    nvme_addr: Option<SocketAddr>,
    admin_secret: String,
    stop_tx: watch::Sender<bool>,
    runtime: tokio::runtime::Handle,
    thread: Option<std::thread::JoinHandle<Result<(), DeviceError>>>,
    shared: Arc<Shared>,
}

impl Device {
    /// Opens the engine in `config.data_dir/db`, binds the listeners and starts serving on a
    /// runtime of its own. Returns once the device accepts connections.
    pub fn start(config: DeviceConfig) -> Result<DeviceHandle, DeviceError> {
        config.validate()?;
        // What can fail without side effects goes first (TLS files, ports), then the data
        // directory; should anything after it fail, the directories this start made go.
        let tls = match (&config.tls_cert, &config.tls_key) {
            (Some(c), Some(k)) => Some(tls::acceptor(c, k)?),
            _ => None,
        };
        // Accepts connections and serves the metrics; connections go to the network threads.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| DeviceError::io("runtime", e))?;
        let (listener, metrics, nvme) = runtime.block_on(bind_all(&config))?;
        let created = data_dir::create(&config.data_dir)?;
        let creds = Credentials::open(&config.data_dir, config.admin_secret.as_deref())?;
        let admin_secret = creds.admin_secret().to_string();
        let db_dir = config.data_dir.join("db");
        std::fs::create_dir_all(&db_dir).map_err(|e| DeviceError::io(&db_dir, e))?;
        // The engine's flushes and compactions run on the scheduler's lanes.
        let scheduler = Arc::new(Scheduler::new(
            config.network_threads,
            config.scheduler.clone(),
            config.engine.background_threads,
        ));
        let mut options = config.engine_options();
        options.background_runner = Some(scheduler.engine_runner());
        let db = Db::builder(options)
            .storage(config.engine_storage())
            .open(&db_dir)?;
        let workers = Arc::new(
            Workers::start(config.worker_threads()).map_err(|e| DeviceError::io("workers", e))?,
        );
        let local_addr = listener
            .local_addr()
            .map_err(|e| DeviceError::io(&config.listen, e))?;
        let metrics_addr = local_addr_of(&metrics, "metrics")?;
        let nvme_addr = local_addr_of(&nvme, "NVMe/TCP")?;
        let shared = Arc::new(Shared::with_scheduler(db, creds, config, scheduler.clone()));
        let engine = shared.clone();
        // Each job's compactions are charged to the namespaces they worked for.
        let lanes = scheduler.start_lanes(Arc::new(move || {
            let step = engine.db.run_background_job();
            engine.shares.after_job(&engine.db, step);
            step
        }));
        let reactors = lanes.and_then(|()| Reactors::start(&shared, &workers));
        let mut reactors = match reactors {
            Ok(r) => r,
            Err(e) => {
                let _ = shared.db.close();
                scheduler.stop_lanes();
                return Err(DeviceError::io("network threads", e));
            }
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        let handle = runtime.handle().clone();
        let kept = shared.clone();
        tracing::info!(
            addr = %local_addr,
            tls = tls.is_some(),
            metrics = ?metrics_addr,
            nvme = ?nvme_addr,
            data_dir = %shared.config.data_dir.display(),
            "device serving"
        );
        let thread = std::thread::Builder::new()
            .name("cerberus-device".into())
            .spawn(move || {
                runtime.block_on(async {
                    if let Some(m) = metrics {
                        let s = shared.clone();
                        let render: metrics::http::Render = Arc::new(move || s.metrics_text());
                        tokio::spawn(metrics::http::serve(m, render, stop_rx.clone()));
                    }
                    let target = nvme::Target::new(shared.clone(), workers.clone());
                    let nvme_stop = stop_rx.clone();
                    let nvme = async {
                        if let Some(n) = nvme {
                            nvme::serve(n, target, nvme_stop, &reactors).await;
                        }
                    };
                    let native = accept_loop(
                        listener,
                        tls,
                        shared.clone(),
                        workers.clone(),
                        &reactors,
                        stop_rx,
                    );
                    tokio::join!(native, nvme);
                });
                reactors.stop();
                // Connections are done (or timed out): let queued jobs finish, then make
                // everything durable. The dedup index is saved after the workers' last
                // writes have queued their tasks.
                workers.stop();
                shared.save_background();
                let flushed = shared.db.flush();
                let closed = shared.db.close();
                shared.scheduler.stop_lanes();
                runtime.shutdown_timeout(Duration::from_secs(1));
                tracing::info!("device stopped");
                flushed?;
                closed?;
                Ok(())
            })
            .map_err(|e| DeviceError::io("device thread", e))?;
        created.keep();
        Ok(DeviceHandle {
            local_addr,
            metrics_addr,
            nvme_addr,
            admin_secret,
            stop_tx,
            runtime: handle,
            thread: Some(thread),
            shared: kept,
        })
    }
}

impl DeviceHandle {
    /// The engine the device serves, for a process that runs the device inside it (a test,
    /// a benchmark that settles the device between a load and its queries).
    pub fn engine(&self) -> &cerberus_engine::Db {
        &self.shared.db
    }

    /// The scheduler's counters: per core load, tasks, migrations.
    pub fn scheduler_stats(&self) -> crate::scheduler::stats::SchedulerStats {
        self.shared.scheduler.stats()
    }

    /// Gives namespace `ns` its I/O shares (reservation, weight, limit), as the
    /// NamespaceConfigure command does: kept by the engine (other settings unchanged) and
    /// enforced from its next command; refused if they make no sense (`IoShares::validate`).
    pub fn set_shares(
        &self,
        ns: u32,
        shares: cerberus_engine::IoShares,
    ) -> Result<(), cerberus_engine::Error> {
        let h = self.shared.db.namespace(ns)?;
        let mut options = h.options();
        options.shares = shares;
        h.configure(options)?;
        self.shared.shares.set(ns, shares)
    }

    /// Namespace `ns`'s shares and what it was served, waited and charged.
    pub fn share_report(&self, ns: u32) -> crate::shares::ShareReport {
        self.shared.shares.report(ns)
    }

    /// The dedup service's index and backlog (`None` when the service is off).
    pub fn dedup_stats(&self) -> Option<crate::dedup::DedupStats> {
        self.shared.dedup.as_ref().map(|d| d.stats())
    }

    /// Test only: core `core` runs a background task that holds it for `d`.
    #[cfg(feature = "fault-injection")]
    pub fn hold_core(&self, core: usize, d: Duration) {
        self.shared
            .scheduler
            .submit_to(core, crate::scheduler::Work::Hold(d));
    }

    /// The address the command set is served on (the port chosen when `listen` gave 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The Prometheus text the metrics endpoint serves.
    pub fn metrics_text(&self) -> String {
        self.shared.metrics_text()
    }

    /// The address of the metrics endpoint, if `metrics_listen` was set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The address of the NVMe/TCP target, if `nvme_listen` was set (the port chosen when
    /// it gave 0).
    pub fn nvme_addr(&self) -> Option<SocketAddr> {
        self.nvme_addr
    }

    /// The admin credential in force (given, read from `admin.secret`, or generated).
    pub fn admin_secret(&self) -> &str {
        &self.admin_secret
    }

    /// Starts a graceful stop: no new connections or commands; in-flight commands finish.
    pub fn stop(&self) {
        let _ = self.stop_tx.send(true);
    }

    /// Stops the device on SIGINT or SIGTERM.
    pub fn stop_on_signals(&self) -> Result<(), DeviceError> {
        use tokio::signal::unix::{signal, SignalKind};
        let _guard = self.runtime.enter();
        let mut int = signal(SignalKind::interrupt()).map_err(|e| DeviceError::io("SIGINT", e))?;
        let mut term =
            signal(SignalKind::terminate()).map_err(|e| DeviceError::io("SIGTERM", e))?;
        let tx = self.stop_tx.clone();
        self.runtime.spawn(async move {
            tokio::select! {
                _ = int.recv() => tracing::info!("SIGINT: stopping"),
                _ = term.recv() => tracing::info!("SIGTERM: stopping"),
            }
            let _ = tx.send(true);
        });
        Ok(())
    }

    /// Waits until the device has stopped (after [`stop`](Self::stop) or a signal) and its
    /// data is flushed.
    pub fn wait(mut self) -> Result<(), DeviceError> {
        self.join()
    }

    /// Stops the device and waits for it.
    pub fn shutdown(self) -> Result<(), DeviceError> {
        self.stop();
        self.wait()
    }

    fn join(&mut self) -> Result<(), DeviceError> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| DeviceError::Config("device thread panicked".into()))?,
            None => Ok(()),
        }
    }
}

impl Drop for DeviceHandle {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop();
            let _ = self.join();
        }
    }
}

/// The native listener, and the metrics' and NVMe/TCP target's when they are set.
async fn bind_all(
    config: &DeviceConfig,
) -> Result<(TcpListener, Option<TcpListener>, Option<TcpListener>), DeviceError> {
    let l = bind(&config.listen).await?;
    let m = match &config.metrics_listen {
        Some(a) => Some(bind(a).await?),
        None => None,
    };
    let n = match &config.nvme_listen {
        Some(a) => Some(bind(a).await?),
        None => None,
    };
    Ok((l, m, n))
}

fn local_addr_of(l: &Option<TcpListener>, what: &str) -> Result<Option<SocketAddr>, DeviceError> {
    match l {
        Some(l) => Ok(Some(l.local_addr().map_err(|e| DeviceError::io(what, e))?)),
        None => Ok(None),
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    shared: Arc<Shared>,
    workers: Arc<Workers>,
    reactors: &Reactors,
    mut stop: watch::Receiver<bool>,
) {
    // No cap per address on the native port: its clients authenticate at once.
    let admission = Admission::new(shared.config.max_connections, usize::MAX, Duration::ZERO);
    let mut conns = JoinSet::new();
    loop {
        while conns.try_join_next().is_some() {}
        let Some((sock, peer)) = accept_until_stopped(&listener, &mut stop, "native").await else {
            break;
        };
        admission.peer_may_connect(peer.ip());
        let ticket = admission.try_admit(peer.ip());
        if ticket.is_none() {
            let room = admission.make_room();
            if room == Room::Full {
                shared.metrics.connections_refused.inc();
                tracing::warn!(%peer, "every connection slot is held by an authenticated client; closing");
                admission.peer_left(peer.ip());
                drop(sock);
                continue;
            }
            if room == Room::Evicted {
                shared.metrics.evictions.inc();
            }
        }
        shared.metrics.connections_accepted.inc();
        let _ = sock.set_nodelay(true);
        let (shared, workers, stop, tls, admission) = (
            shared.clone(),
            workers.clone(),
            stop.clone(),
            tls.clone(),
            admission.clone(),
        );
        let (handle, puts, core) = reactors.next();
        let placed = Placed(shared.clone(), core);
        let serve = async move {
            let _placed = placed;
            let ticket = match ticket {
                Some(t) => t,
                // The evicted connection gives its slot back as it closes.
                None => match admission
                    .admit_after_eviction(EVICTION_WAIT, peer.ip())
                    .await
                {
                    Some(t) => t,
                    None => {
                        shared.metrics.connections_refused.inc();
                        admission.peer_left(peer.ip());
                        return;
                    }
                },
            };
            // Accepted on this thread's loop; moved to the network thread's, or every
            // readiness event would cross threads.
            let sock = match sock.into_std().and_then(TcpStream::from_std) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(%peer, error = %e, "could not move a connection to its thread");
                    return;
                }
            };
            shared.metrics.connections_open.inc();
            tracing::debug!(%peer, "connection open");
            serve_socket(sock, tls, shared.clone(), workers, stop, ticket, puts).await;
            tracing::debug!(%peer, "connection closed");
            shared.metrics.connections_open.dec();
        };
        conns.spawn_on(serve, handle);
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("connections still busy after {DRAIN_TIMEOUT:?}; closing them");
        conns.abort_all();
    }
}

async fn serve_socket(
    sock: TcpStream,
    tls: Option<TlsAcceptor>,
    shared: Arc<Shared>,
    workers: Arc<Workers>,
    stop: watch::Receiver<bool>,
    ticket: Ticket,
    puts: Arc<HeldPuts>,
) {
    match tls {
        None => connection::serve(sock, shared, workers, stop, ticket, puts).await,
        Some(acceptor) => {
            let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(sock));
            let accepted = tokio::select! {
                r = handshake => r,
                _ = ticket.evicted() => return,
            };
            match accepted {
                Ok(Ok(s)) => connection::serve(s, shared, workers, stop, ticket, puts).await,
                Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!("TLS handshake timed out"),
            }
        }
    }
}
