//! `/metrics` scraped over HTTP from a running device, read with a Prometheus text parser;
//! and the endpoint's limits against clients that trickle, flood or never finish.

use crate::common;

use prometheus_parse::{Sample, Scrape, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Sends `request` and reads the whole answer (the endpoint closes after one): status line,
/// headers and body.
fn http(addr: SocketAddr, request: &[u8]) -> (String, Vec<String>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.split("\r\n").map(str::to_string);
    let status = lines.next().unwrap_or_default();
    (status, lines.collect(), body.to_string())
}

fn scrape(addr: SocketAddr) -> (String, Scrape) {
    let (status, headers, body) = http(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        headers.iter().any(|h| h.eq_ignore_ascii_case(
            "content-type: application/openmetrics-text; version=1.0.0; charset=utf-8"
        )),
        "{headers:?}"
    );
    let length = format!("content-length: {}", body.len());
    assert!(headers.iter().any(|h| h.eq_ignore_ascii_case(&length)));
    let parsed = Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("parses");
    (body, parsed)
}

/// The value of the plain sample `name` whose labels include `labels`.
fn value(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<&Sample> = s
        .samples
        .iter()
        .filter(|x| x.metric == name && labels.iter().all(|(k, v)| x.labels.get(k) == Some(v)))
        .collect();
    assert_eq!(found.len(), 1, "{name} {labels:?}: {found:?}");
    match found[0].value {
        // OpenMetrics names a counter's family without `_total`: a parser of the older text
        // format types its samples as untyped.
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
        ref other => panic!("{name}: {other:?}"),
    }
}

/// The cumulative count of bucket `le` of the latency histogram of `nsid` and `opcode`.
fn bucket(s: &Scrape, nsid: &str, opcode: &str, le: f64) -> f64 {
    let h = s
        .samples
        .iter()
        .find(|x| {
            x.metric == "cerberus_command_latency_seconds"
                && x.labels.get("nsid") == Some(nsid)
                && x.labels.get("opcode") == Some(opcode)
        })
        .expect("a histogram");
    match &h.value {
        Value::Histogram(b) => b.iter().find(|b| b.less_than == le).expect("bucket").count,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_scrape_over_http_parses_and_counts_the_commands_sent() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.metrics_listen = Some("127.0.0.1:0".into())
    });
    let addr = dev.metrics_addr().unwrap();
    let (c, ns, _) = common::tenant(&dev, "scraped");
    for i in 0..3 {
        c.namespace(ns)
            .put(format!("k{i}").into_bytes(), b"v".to_vec())
            .unwrap();
    }
    assert!(c.namespace(ns).get(b"k0".to_vec()).unwrap().is_some());
    assert!(c.namespace(ns).get(b"absent".to_vec()).unwrap().is_none());
    assert!(c.namespace(ns).delete(b"k1".to_vec()).unwrap());

    let (text, s) = scrape(addr);
    let nsid = ns.to_string();
    let of = |op: &'static str, outcome: &'static str| {
        let labels = [
            ("nsid", nsid.as_str()),
            ("opcode", op),
            ("outcome", outcome),
        ];
        value(&s, "cerberus_commands_total", &labels)
    };
    assert_eq!(of("store", "ok"), 3.0);
    assert_eq!(of("store", "error"), 0.0);
    assert_eq!(of("retrieve", "ok"), 1.0);
    // An absent key is a KeyNotExist completion.
    assert_eq!(of("retrieve", "error"), 1.0);
    assert_eq!(of("delete", "ok"), 1.0);
    // Every store finished in the largest bucket at the latest; none before it arrived.
    assert_eq!(bucket(&s, &nsid, "store", f64::INFINITY), 3.0);
    let count = [("nsid", nsid.as_str()), ("opcode", "store")];
    assert_eq!(
        value(&s, "cerberus_command_latency_seconds_count", &count),
        3.0
    );
    // The admin's namespace create and both authentications.
    assert!(value(&s, "cerberus_connections_accepted_total", &[]) >= 2.0);
    assert!(value(&s, "cerberus_connections_open", &[]) >= 1.0);
    assert_eq!(value(&s, "cerberus_protocol_errors_total", &[]), 0.0);
    // The engine's counters, read at the scrape.
    assert!(value(&s, "cerberus_puts_total", &[]) >= 3.0);
    assert!(value(&s, "cerberus_deletes_total", &[]) >= 1.0);
    assert!(value(&s, "cerberus_page_reads_total", &[("purpose", "value")]) >= 0.0);
    assert!(value(&s, "cerberus_level_tables", &[("level", "L0")]) >= 0.0);

    // Whole OpenMetrics text: every sample belongs to a family with a TYPE, and it ends.
    assert!(text.ends_with("# EOF\n"), "{text}");
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next())
        .collect();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let name = line.split(['{', ' ']).next().unwrap_or_default();
        let known = families.iter().any(|f| {
            ["", "_total", "_bucket", "_sum", "_count"]
                .iter()
                .any(|suffix| name == format!("{f}{suffix}"))
        });
        assert!(known, "{line}");
    }

    // A later scrape sees later commands.
    c.namespace(ns).put(b"k9".to_vec(), b"v".to_vec()).unwrap();
    let (_, s) = scrape(addr);
    let labels = [
        ("nsid", nsid.as_str()),
        ("opcode", "store"),
        ("outcome", "ok"),
    ];
    assert_eq!(value(&s, "cerberus_commands_total", &labels), 4.0);
    dev.shutdown().unwrap();
}

#[test]
fn the_scrape_endpoint_bounds_slow_huge_and_wrong_requests() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.metrics_listen = Some("127.0.0.1:0".into())
    });
    let addr = dev.metrics_addr().unwrap();

    // Another path: a 404, at once.
    let (status, _, body) = http(addr, b"GET /other HTTP/1.1\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    assert_eq!(body, "try /metrics\n");

    // A head past the limit that never ends: answered as it stands, not read for ever.
    let mut huge = b"GET /metrics-and-more".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 64 << 10));
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // The device may close before taking every byte.
    let _ = s.write_all(&huge);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    assert!(answer.starts_with(b"HTTP/1.1 404 Not Found"));

    // A client that connects and says nothing is closed at the read deadline, and the
    // endpoint serves others meanwhile.
    let started = Instant::now();
    let mut silent = TcpStream::connect(addr).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let (status, _, _) = http(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let mut rest = Vec::new();
    assert_eq!(silent.read_to_end(&mut rest).unwrap_or(0), 0);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(4) && waited < Duration::from_secs(20),
        "{waited:?}"
    );
    dev.shutdown().unwrap();
}

#[test]
fn connections_past_the_scrape_cap_are_closed_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.metrics_listen = Some("127.0.0.1:0".into())
    });
    let addr = dev.metrics_addr().unwrap();
    let cap = cerberus_device::MAX_SCRAPES;
    // Silent clients hold every slot (each for the 5 s read deadline)...
    let held: Vec<TcpStream> = (0..cap)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // ... so the next ones are closed at once, not given a task each (before issue 61
    // there was no cap: a thousand idle connections held a thousand tasks).
    for _ in 0..20 {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut rest = Vec::new();
        match s.read_to_end(&mut rest) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            // A timeout: the connection was kept.
            other => panic!("a connection past the cap: {other:?}, {} bytes", rest.len()),
        }
    }
    // Their deadline frees the slots: a scrape is served again.
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    scrape(addr);
    dev.shutdown().unwrap();
}
