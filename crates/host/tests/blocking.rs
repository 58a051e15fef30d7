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
