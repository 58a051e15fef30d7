//! A client's connection over NVMe/TCP, as a task on the runtime (for the async `Client`):
//! it takes the native frames the callers queue, sends them through `nvme_flights` (the
//! vendor pair, or one KV command) on one I/O queue, several in flight, and hands the native
//! completions back to the callers. The in-flight bookkeeping is the native connection's;
//! only the bytes' route differs. `BlockingClient` drives the same queue from its callers'
//! threads instead (`nvme_direct`).

use crate::error::{Error, Result};
use crate::inflight::{CloseOnExit, Shared};
use crate::nvme::{NvmeHost, NvmeTarget};
use crate::nvme_flights::{Flights, Native};
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::Digests;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The wire a client speaks to the device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Wire {
    /// The device's own framing (`docs/protocol.md`) on its native port.
    #[default]
    Native,
    /// NVMe/TCP on the device's NVMe port: native commands through the vendor pair.
    Nvme {
        /// The subsystem's NQN.
        subnqn: String,
        /// This host's NQN, as the device's `[nvme.hosts]` grants name it.
        hostnqn: String,
        /// Its DH-HMAC-CHAP secret, if the device's `[nvme.host_secrets]` names it.
        host_secret: Option<String>,
        /// The controller secret the device proves itself with (bidirectional), if asked.
        ctrl_secret: Option<String>,
    },
}

/// Connects a controller (admin and I/O queue) at `addr`.
pub(crate) async fn connect(
    addr: &str,
    subnqn: &str,
    hostnqn: &str,
    (host_secret, ctrl_secret): (Option<&str>, Option<&str>),
) -> Result<NvmeHost> {
    let target = NvmeTarget {
        addr: addr.to_string(),
        subnqn: subnqn.to_string(),
        hostnqn: hostnqn.to_string(),
        digests: Digests::default(),
        host_secret: host_secret.map(str::to_string),
        ctrl_secret: ctrl_secret.map(str::to_string),
    };
    NvmeHost::connect(&target)
        .await
        .map_err(|e| match Error::from(e) {
            // Which subsystem and host the target refused says what to check.
            Error::Protocol(m) => {
                Error::Protocol(format!("{m} (connecting to {subnqn} as {hostnqn})"))
            }
            e => e,
        })
}

/// Sends the queued frames, as many ahead of their completions as the queue has room for
/// (`Flights::room`), matching the target's completions by command id (in order or not),
/// until the connection closes (the last client gone: this task is aborted and the queues'
/// sockets close with it, which ends the controller at the device) or the queue fails.
pub(crate) async fn run(
    mut host: NvmeHost,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
    shared: Arc<Shared>,
) {
    let _close = CloseOnExit(shared.clone());
    let (digests, maxh2cdata) = (host.io.digests(), host.io.maxh2cdata());
    let mut flights = Flights::new(digests, maxh2cdata, host.in_capsule);
    let mut out = BytesMut::new();
    let mut done = Vec::new();
    loop {
        let step = tokio::select! {
            frame = frames.recv(), if flights.room() => match frame {
                Some(frame) => {
                    let max = shared.max_response_body.load(Ordering::Relaxed);
                    let mut step = flights.send(Native::Frame(frame), max, &mut out);
                    // Frames queued behind it go out with it, in one write.
                    while step.is_ok() && flights.room() {
                        let Ok(frame) = frames.try_recv() else { break };
                        let max = shared.max_response_body.load(Ordering::Relaxed);
                        step = flights.send(Native::Frame(frame), max, &mut out);
                    }
                    step
                }
                None => return,
            },
            pdu = host.io.recv(), if !flights.is_empty() => match pdu {
                Ok(pdu) => flights.receive(pdu, &mut out, &mut done),
                Err(e) => Err(e.to_string()),
            },
        };
        let step = match step {
            Ok(()) if !out.is_empty() => host.io.send_raw(&out).await.map_err(|e| e.to_string()),
            step => step,
        };
        out.clear();
        for frame in done.drain(..) {
            shared.complete(frame);
        }
        if let Err(why) = step {
            shared.close(format!("NVMe/TCP I/O queue: {why}"));
            return;
        }
    }
}
