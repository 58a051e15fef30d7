//! The blocking client, shared by many threads at once.

use crate::common;

use cerberus_host::{BlockingClient, Error, StoreMode};
use common::{opts, FakeDevice, Mode, ADMIN_SECRET, NS};

/// The fake runs on its own runtime; the clients are called from plain threads.
fn fake(mode: Mode) -> (tokio::runtime::Runtime, FakeDevice) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dev = rt.block_on(FakeDevice::start(opts(mode)));
    (rt, dev)
}

#[test]
fn eight_threads_share_one_client() {
    let (_rt, dev) = fake(Mode::PerRead);
    let client = BlockingClient::connect(&dev.addr()).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let c = client.clone();
            std::thread::spawn(move || {
                for i in 0..200 {
                    let key = format!("t{t}-k{i:03}");
                    let value = format!("t{t}-v{i}");
                    let c = c.namespace(NS);
                    c.put(key.clone(), value.clone()).unwrap();
                    assert_eq!(c.get(key.clone()).unwrap().unwrap(), value);
                    assert!(c.contains(key.clone()).unwrap());
                    if i % 2 == 0 {
                        assert!(c.delete(key.clone()).unwrap());
                        assert_eq!(c.get(key).unwrap(), None);
                    } else {
                        assert!(matches!(
                            c.store(key, "x", StoreMode::OnlyIfAbsent),
                            Err(Error::KeyExists)
                        ));
                        assert_eq!(c.get("absent").unwrap(), None);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // 100 odd keys per thread remain.
    let keys = client.namespace(NS).list_all("", 7).unwrap();
    assert_eq!(keys.len(), 800);
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn blocking_admin_calls() {
    let (_rt, dev) = fake(Mode::PerRead);
    let client = BlockingClient::connect(&dev.addr()).unwrap();
    assert_eq!(client.identify().unwrap(), client.device_info().unwrap());
    client.authenticate_admin(ADMIN_SECRET).unwrap();
    let (nsid, secret) = client.create_namespace("tenant").unwrap();
    let ns = client.open_namespace(nsid, &secret).unwrap();
    ns.put("a", "1").unwrap();
    assert_eq!(ns.stats().unwrap()["keys"], 1);
    assert_eq!(client.list_namespaces().unwrap().len(), 2);
    client.destroy_namespace(nsid).unwrap();
    assert_eq!(client.list_namespaces().unwrap().len(), 1);
    drop(client);
}

#[test]
fn threads_pipeline_batches_on_one_client_and_completions_cross_threads() {
    // Completions come back in reverse order of each read: a thread reading for the others
    // hands theirs over.
    let (_rt, dev) = fake(Mode::PerRead);
    let client = BlockingClient::connect(&dev.addr()).unwrap();
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let c = client.clone();
            std::thread::spawn(move || {
                for round in 0..20 {
                    let keys: Vec<bytes::Bytes> = (0..7)
                        .map(|i| format!("t{t}-r{round}-k{i}").into())
                        .collect();
                    let pairs = keys
                        .iter()
                        .map(|k| (k.clone(), bytes::Bytes::from(format!("{k:?}!"))))
                        .collect();
                    c.namespace(NS).put_many(pairs).unwrap();
                    let mut asked = keys.clone();
                    asked.push("absent".into());
                    let got = c.namespace(NS).get_many(asked).unwrap();
                    for (k, v) in keys.iter().zip(&got) {
                        assert_eq!(v.as_deref(), Some(format!("{k:?}!").as_bytes()));
                    }
                    assert_eq!(got.last().unwrap(), &None);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn a_silent_device_times_out_and_a_lost_one_fails_every_waiting_thread() {
    // Accepts and reads, never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let silent = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut s, &mut sink);
    });
    let c = BlockingClient::connect_with(
        cerberus_host::ClientConfig::new(addr)
            .with_request_timeout(std::time::Duration::from_millis(300))
            .with_max_inflight(cerberus_host::InflightLimit::Fixed(0)),
    )
    .unwrap();
    let t = std::time::Instant::now();
    assert!(matches!(c.namespace(NS).get("k"), Err(Error::Timeout)));
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
    drop(c);
    silent.join().unwrap();

    // Held completions, then the device drops the connection: every waiter hears of it.
    let (_rt, dev) = fake(Mode::Batch(1000));
    let client = BlockingClient::connect(&dev.addr()).unwrap();
    let waiters: Vec<_> = (0..4)
        .map(|t| {
            let c = client.clone();
            std::thread::spawn(move || c.namespace(NS).get(format!("k{t}")))
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    dev.kill_connections();
    for w in waiters {
        assert!(matches!(w.join().unwrap(), Err(Error::ConnectionClosed)));
    }
    assert!(client.is_closed());
}

#[test]
fn one_thread_pipelines_more_commands_than_the_device_allows_in_flight() {
    let (_rt, dev) = fake(Mode::PerRead);
    let client = BlockingClient::connect(&dev.addr()).unwrap();
    let limit = client.device_info().unwrap().max_inflight as usize;
    let n = limit * 3 + 7;
    let keys: Vec<bytes::Bytes> = (0..n).map(|i| format!("k{i:05}").into()).collect();
    let pairs = keys
        .iter()
        .map(|k| (k.clone(), k.clone()))
        .collect::<Vec<_>>();
    client.namespace(NS).put_many(pairs).unwrap();
    let got = client.namespace(NS).get_many(keys.clone()).unwrap();
    assert_eq!(got.len(), n);
    for (k, v) in keys.iter().zip(got) {
        assert_eq!(v.as_ref(), Some(k));
    }
}
