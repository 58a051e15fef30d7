//! Every Prometheus series the device exposes, named and described here alone, on the
//! `prometheus-client` crate: the commands' counters and latencies (`commands`), the
//! connections' counters (live `Counter`s and a `Gauge`), and the engine's, scheduler's and
//! dedup service's numbers read at scrape time (`snapshot`). `http` serves them.
//!
//! The text is the OpenMetrics exposition (`encoding::text::encode`): a counter's family is
//! named without its `_total` suffix in `# TYPE` and `# HELP`, its sample keeps it, so every
//! sample is named as before the crate was used (`docs/device.md`, Metrics).

mod commands;
pub mod http;
mod snapshot;

use commands::CommandSeries;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
pub use snapshot::Snapshot;
use std::sync::Arc;
use std::time::Duration;

/// The device's live series. Recording touches only these; the registry that encodes them
/// is made at each scrape, with the numbers of that moment (`Snapshot`).
#[derive(Default)]
pub struct Metrics {
    commands: Arc<CommandSeries>,
    pub connections_accepted: Counter,
    /// Connections closed at once: every slot was held by an authenticated client.
    pub connections_refused: Counter,
    pub connections_open: Gauge,
    /// Iterators open, on every connection and NVMe/TCP queue.
    pub iterators_open: Gauge,
    /// Frames that could not be decoded.
    pub protocol_errors: Counter,
    /// Connections closed for not authenticating in time.
    pub auth_timeouts: Counter,
    /// Credentials refused: a wrong namespace or admin secret (either wire), a failed
    /// NVMe/TCP DH-HMAC-CHAP transaction.
    pub auth_failures: Counter,
    /// Connections closed for not finishing a frame in time.
    pub frame_timeouts: Counter,
    /// Connections closed after sitting idle.
    pub idle_timeouts: Counter,
    /// Connections closed for not taking their replies in time.
    pub write_timeouts: Counter,
    /// Unauthenticated connections closed to make room for a newcomer.
    pub evictions: Counter,
    /// Writes carried out on a worker because the engine would have slowed them down or
    /// made them wait: pieces of held puts, puts and deletes that would have run inline, and
    /// commands stored with their namespace's held puts.
    pub writes_off_loop: Counter,
    /// Queries answered on the network thread that read them, within the work limit.
    pub queries_inline: Counter,
    /// Queries tried there that needed more work and ran on a worker.
    pub queries_off_loop: Counter,
    /// Queries sent straight to a worker: one of their shape needed more work just before.
    pub queries_skipped_inline: Counter,
    /// Times a connection (either wire) gave its network thread to the others after
    /// `network_frames_per_turn` frames, a query answered there counting as 8.
    pub turns_given: Counter,
    /// Runs of pipelined gets answered by one engine read.
    pub get_batches: Counter,
    /// The gets of those runs.
    pub batched_gets: Counter,
    /// Pieces of two or more held puts (of any connections of a network thread, either wire)
    /// stored with one engine write.
    pub put_batches: Counter,
    /// The puts of those pieces.
    pub batched_puts: Counter,
    /// Times a native connection stopped reading until the device's held bytes
    /// (`max_held_bytes`) came back.
    pub budget_waits: Counter,
    /// NVMe/TCP I/O queues joined to their controller (once their host proved itself,
    /// when it must): a queue that never joined never touched one.
    pub io_queues_joined: Counter,
}

impl Metrics {
    /// Records one completed command of an authorized namespace (or the device); `live`
    /// says whether the namespace still exists, asked only when its series is to be made
    /// (a destroyed namespace's commands count under the device: its series went with it).
    pub fn record(
        &self,
        nsid: u32,
        opcode: u8,
        ok: bool,
        latency: Duration,
        live: impl Fn() -> bool,
    ) {
        self.commands.record(nsid, opcode, ok, latency, live);
    }

    /// Records a command refused before it reached a namespace.
    pub fn record_refused(&self, opcode: u8) {
        self.commands.record_refused(opcode);
    }

    /// Forgets a destroyed namespace's series.
    pub fn forget(&self, nsid: u32) {
        self.commands.forget(nsid);
    }

    /// The Prometheus text of every series, with `now`'s numbers for the engine's, the
    /// scheduler's and the dedup service's.
    pub fn encode(&self, now: Snapshot) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; the encoder's own errors are for other writers.
        if let Err(e) = encode(&mut out, &self.registry(now)) {
            tracing::error!(error = %e, "metrics not encoded");
        }
        out
    }

    /// A registry of every series: the live ones share their values with `self`.
    fn registry(&self, now: Snapshot) -> Registry {
        let mut r = Registry::default();
        r.register_collector(Box::new(self.commands.clone()));
        for (name, help, c) in self.counters() {
            // Registered without `_total`: the encoder appends it to a counter's sample.
            r.register(name, help, c.clone());
        }
        r.register(
            "cerberus_connections_open",
            "Connections being served.",
            self.connections_open.clone(),
        );
        r.register(
            "cerberus_iterators_open",
            "Iterators open on every connection (idle ones and ones past the maximum \
             snapshot age until the sweep closes them).",
            self.iterators_open.clone(),
        );
        r.register_collector(Box::new(now));
        r
    }

    /// The live counters: name (without `_total`), help, the counter.
    fn counters(&self) -> Vec<(&'static str, &'static str, &Counter)> {
        vec![
            (
                "cerberus_connections_accepted",
                "Connections accepted.",
                &self.connections_accepted,
            ),
            (
                "cerberus_connections_refused",
                "Connections closed at once: every slot was held by an authenticated client.",
                &self.connections_refused,
            ),
            (
                "cerberus_protocol_errors",
                "Frames that could not be decoded.",
                &self.protocol_errors,
            ),
            (
                "cerberus_auth_timeouts",
                "Connections closed for not authenticating in time.",
                &self.auth_timeouts,
            ),
            (
                "cerberus_auth_failures",
                "Credentials refused: a wrong secret, a failed NVMe/TCP DH-HMAC-CHAP transaction.",
                &self.auth_failures,
            ),
            (
                "cerberus_frame_timeouts",
                "Connections closed for not finishing a frame in time.",
                &self.frame_timeouts,
            ),
            (
                "cerberus_idle_timeouts",
                "Connections closed after sitting idle.",
                &self.idle_timeouts,
            ),
            (
                "cerberus_write_timeouts",
                "Connections closed for not taking their replies in time.",
                &self.write_timeouts,
            ),
            (
                "cerberus_evictions",
                "Unauthenticated connections closed to make room for a newcomer.",
                &self.evictions,
            ),
            (
                "cerberus_writes_off_loop",
                "Writes carried out on a worker because the engine would have slowed them \
                 down or made them wait.",
                &self.writes_off_loop,
            ),
            (
                "cerberus_turns_given",
                "Times a connection gave its network thread to the others after \
                 network_frames_per_turn frames (a query answered there counting as 8).",
                &self.turns_given,
            ),
            (
                "cerberus_queries_inline",
                "Queries answered on the network thread, within inline_query_work.",
                &self.queries_inline,
            ),
            (
                "cerberus_queries_off_loop",
                "Queries that needed more than inline_query_work and ran on a worker.",
                &self.queries_off_loop,
            ),
            (
                "cerberus_queries_skipped_inline",
                "Queries sent straight to a worker: one of their shape needed more than inline_query_work just before.",
                &self.queries_skipped_inline,
            ),
            (
                "cerberus_get_batches",
                "Runs of two or more pipelined gets of one connection answered by one engine read.",
                &self.get_batches,
            ),
            (
                "cerberus_batched_gets",
                "Gets answered in those runs.",
                &self.batched_gets,
            ),
            (
                "cerberus_put_batches",
                "Pieces of two or more held puts (of any connections of a network thread, native or NVMe/TCP) stored with one engine write.",
                &self.put_batches,
            ),
            (
                "cerberus_batched_puts",
                "Puts written in those pieces.",
                &self.batched_puts,
            ),
            (
                "cerberus_budget_waits",
                "Times a native connection stopped reading until the device's held bytes \
                 (max_held_bytes) came back.",
                &self.budget_waits,
            ),
            (
                "cerberus_nvme_io_queues_joined",
                "NVMe/TCP I/O queues joined to their controller (after their host's \
                 authentication, when it must authenticate).",
                &self.io_queues_joined,
            ),
        ]
    }
}

#[cfg(test)]
mod tests;
