use super::{Metrics, Snapshot};
use crate::scheduler::stats::SchedulerStats;
use crate::scheduler::Policy;
use cerberus_engine::DbStats;
use cerberus_proto::Opcode;
use std::time::Duration;

fn snapshot() -> Snapshot {
    Snapshot {
        db: DbStats::default(),
        scheduler: SchedulerStats {
            policy: Policy::Off,
            sample_every: 0,
            load_threshold: 0.0,
            samples: 0,
            migrations: 0,
            fg_queueing_ns_per_command: 0.0,
            cores: Vec::new(),
        },
        dedup: None,
        shares: Vec::new(),
        held_bytes: 0,
    }
}

/// The cumulative count of bucket `le` of the latency histogram of `nsid` and `opcode`.
fn bucket(text: &str, nsid: &str, opcode: &str, le: f64) -> Option<f64> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).ok()?;
    scrape.samples.iter().find_map(|s| {
        let ours = s.metric == "cerberus_command_latency_seconds"
            && s.labels.get("nsid") == Some(nsid)
            && s.labels.get("opcode") == Some(opcode);
        match &s.value {
            prometheus_parse::Value::Histogram(b) if ours => {
                b.iter().find(|b| b.less_than == le).map(|b| b.count)
            }
            _ => None,
        }
    })
}

#[test]
fn histogram_is_cumulative_and_labels_are_bounded() {
    let m = Metrics::default();
    m.record(
        3,
        Opcode::Store as u8,
        true,
        Duration::from_micros(30),
        || true,
    );
    m.record(
        3,
        Opcode::Store as u8,
        false,
        Duration::from_millis(2),
        || true,
    );
    for n in 0..100 {
        m.record_refused(n);
    }
    let text = m.encode(snapshot());
    assert!(text.contains("cerberus_commands_total{nsid=\"3\",opcode=\"store\",outcome=\"ok\"} 1"));
    // The encoder writes `le` before the other labels (their order means nothing to
    // Prometheus): the buckets are read back by a parser.
    assert_eq!(bucket(&text, "3", "store", 0.00005), Some(1.0));
    assert_eq!(bucket(&text, "3", "store", f64::INFINITY), Some(2.0));
    // 100 refused opcodes: the known ones plus one "unknown" slot.
    let refused = text
        .lines()
        .filter(|l| l.starts_with("cerberus_commands_total{nsid=\"-\"") && l.contains("error"))
        .count();
    assert!(refused <= Opcode::ALL.len() + 1, "{refused}");
    m.forget(3);
    assert!(!m.encode(snapshot()).contains("nsid=\"3\""));
    // A command of namespace 3 after its destroy (its own answer, a connection that still
    // holds its proof) makes no series of it again: it counts under the device.
    m.record(3, Opcode::Retrieve as u8, false, Duration::ZERO, || false);
    let text = m.encode(snapshot());
    assert!(!text.contains("nsid=\"3\""), "{text}");
    assert!(text.contains(
        "cerberus_commands_total{nsid=\"device\",opcode=\"retrieve\",outcome=\"error\"} 1"
    ));
}

#[test]
fn counters_keep_their_names_and_the_text_ends_as_openmetrics_says() {
    let m = Metrics::default();
    m.evictions.inc();
    m.connections_open.inc();
    let text = m.encode(snapshot());
    assert!(
        text.lines().any(|l| l == "cerberus_evictions_total 1"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l == "cerberus_connections_open 1"),
        "{text}"
    );
    assert!(text.contains("cerberus_page_reads_total{purpose=\"value\"} 0"));
    assert!(text.contains("cerberus_level_bytes{level=\"runs\"} 0"));
    assert!(text.contains("# TYPE cerberus_commands counter"));
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn row_cache_series_come_from_the_engine_stats() {
    let mut now = snapshot();
    now.db.row_cache.hits = 7;
    now.db.row_cache.misses = 3;
    now.db.row_cache.evictions = 2;
    now.db.row_cache.deferred = 5;
    now.db.row_cache.bytes = 4096;
    now.db.row_cache.capacity_bytes = 256 << 20;
    let text = Metrics::default().encode(now);
    for line in [
        "cerberus_row_cache_hits_total 7",
        "cerberus_row_cache_misses_total 3",
        "cerberus_row_cache_inserts_total 0",
        "cerberus_row_cache_evictions_total 2",
        "cerberus_row_cache_deferred_total 5",
        "cerberus_row_cache_bytes 4096",
        "cerberus_row_cache_capacity_bytes 268435456",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}: {text}");
    }
}
