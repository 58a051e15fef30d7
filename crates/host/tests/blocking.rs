//! The blocking client, shared by many threads at once.

mod common;

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
                    c.put(NS, key.clone(), value.clone()).unwrap();
                    assert_eq!(c.get(NS, key.clone()).unwrap().unwrap(), value);
                    assert!(c.exists(NS, key.clone()).unwrap());
                    if i % 2 == 0 {
                        assert!(c.delete(NS, key.clone()).unwrap());
                        assert_eq!(c.get(NS, key).unwrap(), None);
                    } else {
                        assert!(matches!(
                            c.store(NS, key, "x", StoreMode::OnlyIfAbsent, false),
                            Err(Error::KeyExists)
                        ));
                        assert_eq!(c.get(NS, "absent").unwrap(), None);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // 100 odd keys per thread remain.
    let keys = client.list_all(NS, "", 7).unwrap();
    assert_eq!(keys.len(), 800);
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn blocking_admin_calls() {
    let (_rt, dev) = fake(Mode::PerRead);
    let client = BlockingClient::connect(&dev.addr()).unwrap();
    assert_eq!(client.identify().unwrap(), client.device_info().unwrap());
    client.authenticate_admin(ADMIN_SECRET).unwrap();
    let (nsid, secret) = client.ns_create("tenant").unwrap();
    client.authenticate(nsid, &secret).unwrap();
    client.put(nsid, "a", "1").unwrap();
    assert_eq!(client.stats(nsid).unwrap()["keys"], 1);
    assert_eq!(client.ns_list().unwrap().len(), 2);
    client.ns_destroy(nsid).unwrap();
    assert_eq!(client.ns_list().unwrap().len(), 1);
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
                    c.put_many(NS, pairs).unwrap();
                    let mut asked = keys.clone();
                    asked.push("absent".into());
                    let got = c.get_many(NS, asked).unwrap();
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
    assert!(matches!(c.get(NS, "k"), Err(Error::Timeout)));
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
    drop(c);
    silent.join().unwrap();

    // Held completions, then the device drops the connection: every waiter hears of it.
    let (_rt, dev) = fake(Mode::Batch(1000));
    let client = BlockingClient::connect(&dev.addr()).unwrap();
    let waiters: Vec<_> = (0..4)
        .map(|t| {
            let c = client.clone();
            std::thread::spawn(move || c.get(NS, format!("k{t}")))
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
    client.put_many(NS, pairs).unwrap();
    let got = client.get_many(NS, keys.clone()).unwrap();
    assert_eq!(got.len(), n);
    for (k, v) in keys.iter().zip(got) {
        assert_eq!(v.as_ref(), Some(k));
    }
}
