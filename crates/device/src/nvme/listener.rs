//! Accepting NVMe/TCP connections: at most `nvme.max_connections` at once and
//! `nvme.max_connections_per_peer` from one address (`crate::admission`: when full, the
//! oldest connection without a connected, authenticated queue goes for the newcomer; else
//! the newcomer is closed at once), each served on a network thread (the one with the fewest
//! connections, as native connections are placed) until it ends or the device stops.

use super::conn;
use super::target::Target;
use crate::admission::{Room, EVICTION_WAIT};
use crate::placed::Placed;
use crate::reactor::Reactors;
use crate::stop::accept_until_stopped;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// Says, in one line, whom the target takes at their word: every host must authenticate,
/// or (`require_host_auth = false`) the hosts its grants name without a secret.
fn announce(listener: &TcpListener, config: &crate::config::nvme::NvmeConfig) {
    let addr = listener
        .local_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    if config.require_host_auth {
        tracing::info!(
            "NVMe/TCP target on {addr}: every host authenticates (DH-HMAC-CHAP); hosts without a secret are refused"
        );
    } else {
        let hosts = config.hosts_without_secrets();
        tracing::warn!(
            "NVMe/TCP target on {addr}: require_host_auth = false: any host that names one of {hosts:?} in its Connect is taken at its word (host NQNs are not secret)"
        );
    }
}

/// How long a stop waits for connections to finish their command.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `listener` until the device stops, its connections on `reactors`' threads.
pub(crate) async fn serve(
    listener: TcpListener,
    target: Target,
    mut stop: watch::Receiver<bool>,
    reactors: &Reactors,
) {
    let target = Arc::new(target);
    announce(&listener, &target.config);
    let mut conns = JoinSet::new();
    loop {
        while conns.try_join_next().is_some() {}
        let Some((sock, peer)) = accept_until_stopped(&listener, &mut stop, "NVMe/TCP").await
        else {
            break;
        };
        let metrics = &target.shared.metrics;
        let admission = &target.admission;
        if !admission.peer_may_connect(peer.ip()) {
            metrics.connections_refused.inc();
            tracing::warn!(%peer, "NVMe/TCP: this address holds max_connections_per_peer; closing");
            continue;
        }
        let ticket = admission.try_admit(peer.ip());
        if ticket.is_none() {
            let room = admission.make_room();
            if room == Room::Full {
                metrics.connections_refused.inc();
                admission.peer_left(peer.ip());
                tracing::warn!(%peer, "NVMe/TCP: every connection slot holds a connected queue; closing");
                continue;
            }
            if room == Room::Evicted {
                metrics.evictions.inc();
            }
        }
        metrics.connections_accepted.inc();
        let _ = sock.set_nodelay(true);
        let (t, stop) = (target.clone(), stop.clone());
        // Its KV Stores are held with those of the thread's other connections.
        let (handle, puts, core) = reactors.next();
        let placed = Placed(t.shared.clone(), core);
        conns.spawn_on(
            async move {
                let ticket = match ticket {
                    Some(t) => t,
                    // The evicted connection gives its slot back as it closes.
                    None => match t.admission.admit_after_eviction(EVICTION_WAIT, peer.ip()).await {
                        Some(t) => t,
                        None => {
                            t.shared.metrics.connections_refused.inc();
                            t.admission.peer_left(peer.ip());
                            return;
                        }
                    },
                };
                // Accepted on the accepting runtime's loop; moved to the network thread's,
                // or every readiness event would wake that loop first and cross threads
                // (measured: the accepting thread at 12 % of a 1-client run's samples).
                let sock = match sock.into_std().and_then(TcpStream::from_std) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(%peer, error = %e, "NVMe/TCP: could not move a connection to its thread");
                        return;
                    }
                };
                t.shared.metrics.connections_open.inc();
                conn::serve(sock, t.clone(), stop, placed, puts, ticket).await;
                t.shared.metrics.connections_open.dec();
            },
            handle,
        );
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        conns.abort_all();
    }
}
