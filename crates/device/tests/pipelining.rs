//! One connection, many commands in flight: the device completes them by command id, and
//! every caller gets its own answer.

mod common;

use cerberus_host::Client;

#[test]
fn a_thousand_commands_in_flight_on_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.max_inflight = 64);
    let (_, ns, secret) = common::tenant(&dev, "pipe");
    let addr = dev.local_addr().to_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let c = Client::connect(&addr).await.unwrap();
        assert_eq!(c.device_info().unwrap().max_inflight, 64);
        c.authenticate(ns, &secret).await.unwrap();
        let mut tasks = Vec::new();
        for i in 0..1000u32 {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                let k = format!("k{i:04}");
                c.put(ns, k.clone(), format!("v{i}")).await.unwrap();
                let got = c.get(ns, k).await.unwrap().unwrap();
                assert_eq!(got, format!("v{i}").as_bytes());
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let keys = c.list_all(ns, "", 1000).await.unwrap();
        assert_eq!(keys.len(), 1000);
    });
    dev.shutdown().unwrap();
}
