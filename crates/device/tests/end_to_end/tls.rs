//! The command port behind TLS with an operator's certificate.

use crate::common;

use cerberus_host::{BlockingClient, ClientConfig, TlsOptions};
use std::time::Duration;

#[test]
fn serves_over_tls_and_refuses_plain_clients() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).unwrap();
    let data = dir.path().join("data");
    let dev = common::start(&data, |c| {
        c.tls_cert = Some(cert_path.clone());
        c.tls_key = Some(key_path.clone());
    });
    let config = ClientConfig::new(dev.local_addr().to_string())
        .with_tls(TlsOptions::new(cert.cert.pem().into_bytes(), "localhost"))
        .with_request_timeout(Duration::from_secs(30));
    let admin = BlockingClient::connect_with(config.clone()).unwrap();
    admin.authenticate_admin(dev.admin_secret()).unwrap();
    let (ns, secret) = admin.create_namespace("secure").unwrap();
    let c = BlockingClient::connect_with(config).unwrap();
    c.open_namespace(ns, &secret).unwrap();
    c.namespace(ns).put(b"k".to_vec(), b"v".to_vec()).unwrap();
    assert_eq!(
        c.namespace(ns).get(b"k".to_vec()).unwrap().unwrap(),
        "v".as_bytes()
    );
    // A plain-TCP client does not get through.
    let plain = BlockingClient::connect_with(
        ClientConfig::new(dev.local_addr().to_string())
            .with_request_timeout(Duration::from_secs(5)),
    );
    if let Ok(p) = plain {
        assert!(p.open_namespace(ns, &secret).is_err());
    }
    dev.shutdown().unwrap();
}
