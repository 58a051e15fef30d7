//! Graceful stop, restart with the same credentials, and the metrics endpoint.

use crate::common;

use cerberus_host::BlockingClient;
use std::io::{Read, Write};

#[test]
fn stop_finishes_in_flight_work_and_restart_keeps_data_and_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let admin_secret = dev.admin_secret().to_string();
    let (c, ns, secret) = common::tenant(&dev, "kept");
    for i in 0..2000u32 {
        c.namespace(ns)
            .put(format!("k{i}").into_bytes(), format!("v{i}").into_bytes())
            .unwrap();
    }
    dev.shutdown().unwrap();
    // Calls on the old connection now fail instead of hanging.
    assert!(c.namespace(ns).get(b"k1".to_vec()).is_err());

    let dev = common::start(dir.path(), |_| {});
    assert_eq!(dev.admin_secret(), admin_secret);
    let c = BlockingClient::connect(&dev.local_addr().to_string()).unwrap();
    c.open_namespace(ns, &secret).unwrap();
    for i in 0..2000u32 {
        assert_eq!(
            c.namespace(ns)
                .get(format!("k{i}").into_bytes())
                .unwrap()
                .unwrap(),
            format!("v{i}").as_bytes()
        );
    }
    dev.shutdown().unwrap();
}

#[test]
fn metrics_endpoint_reports_commands_per_namespace_and_engine_counters() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.metrics_listen = Some("127.0.0.1:0".into())
    });
    let (c, ns, _) = common::tenant(&dev, "m");
    c.namespace(ns).put(b"k".to_vec(), b"v".to_vec()).unwrap();
    c.namespace(ns).get(b"k".to_vec()).unwrap();
    let mut s = std::net::TcpStream::connect(dev.metrics_addr().unwrap()).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.contains(&format!(
        "cerberus_commands_total{{nsid=\"{ns}\",opcode=\"store\",outcome=\"ok\"}} 1"
    )));
    assert!(text.contains(&format!(
        "cerberus_command_latency_seconds_count{{nsid=\"{ns}\",opcode=\"retrieve\"}} 1"
    )));
    assert!(text.contains("cerberus_page_reads_total{purpose=\"value\"}"));
    assert!(text.contains("cerberus_compactions_total"));
    dev.shutdown().unwrap();
}

#[test]
fn a_failed_start_leaves_nothing_behind_and_says_why_once() {
    use cerberus_device::{Device, DeviceConfig, DeviceError};
    let tmp = tempfile::tempdir().unwrap();
    let fresh = tmp.path().join("fresh");
    let config = |listen: String, metrics: Option<String>| DeviceConfig {
        data_dir: fresh.join("data"),
        listen,
        metrics_listen: metrics,
        ..DeviceConfig::default()
    };
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    for (listen, metrics) in [
        (addr.clone(), None),
        ("127.0.0.1:0".to_string(), Some(addr.clone())),
    ] {
        let Err(e) = Device::start(config(listen, metrics)) else {
            panic!("started on a port in use");
        };
        assert!(matches!(e, DeviceError::Listen { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("cannot listen on {addr}: ")),
            "{text}"
        );
        assert!(std::error::Error::source(&e).is_none());
        assert!(!fresh.exists(), "a failed start left {}", fresh.display());
    }

    // The engine refuses its options (after the data directory is made): the start made
    // the data directory, and takes it away again.
    let mut c = config("127.0.0.1:0".into(), None);
    c.engine.memtable_bytes = 0;
    let e = Device::start(c).err().expect("refused");
    assert!(!fresh.exists(), "{e}: left {}", fresh.display());

    let afile = tmp.path().join("afile");
    std::fs::write(&afile, "x").unwrap();
    let mut c = config("127.0.0.1:0".into(), None);
    c.data_dir = afile.clone();
    let e = Device::start(c).err().expect("refused");
    assert_eq!(
        e.to_string(),
        format!(
            "data directory {} is a file, not a directory",
            afile.display()
        )
    );
}

#[test]
fn network_threads_that_spin_before_sleeping_serve_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.network_spin_us = 50;
        c.network_threads = 1;
    });
    let (c, ns, _) = common::tenant(&dev, "spin");
    for i in 0..200u32 {
        c.namespace(ns)
            .put(format!("k{i}"), format!("v{i}"))
            .unwrap();
    }
    for i in 0..200u32 {
        assert_eq!(
            c.namespace(ns).get(format!("k{i}")).unwrap().as_deref(),
            Some(format!("v{i}").as_bytes())
        );
    }
    dev.shutdown().unwrap();
}
