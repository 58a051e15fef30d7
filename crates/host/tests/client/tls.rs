//! TLS: the client trusts exactly the PEM it is given.

use crate::common;

use cerberus_host::{Client, ClientConfig, Error, TlsOptions};
use common::{FakeDevice, FakeOptions, NS};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(20);

/// A self-signed certificate for "localhost": its PEM and an acceptor serving it.
fn self_signed() -> (String, tokio_rustls::TlsAcceptor) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert: CertificateDer<'static> = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    (
        ck.cert.pem(),
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_and_get_over_tls() {
    let (pem, acceptor) = self_signed();
    let dev = FakeDevice::start_tls(FakeOptions::default(), acceptor).await;
    let config = ClientConfig::new(dev.addr()).with_tls(TlsOptions::new(pem, "localhost"));
    let client = timeout(LIMIT, Client::connect_with(config))
        .await
        .unwrap()
        .unwrap();
    assert!(client.device_info().is_some());
    client.namespace(NS).put("k", "over tls").await.unwrap();
    assert_eq!(
        client.namespace(NS).get("k").await.unwrap().unwrap(),
        "over tls"
    );

    // Pipelined over TLS too.
    let mut tasks = Vec::new();
    for i in 0..200 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            c.namespace(NS)
                .put(format!("k{i}"), format!("v{i}"))
                .await
                .unwrap();
            assert_eq!(
                c.namespace(NS).get(format!("k{i}")).await.unwrap().unwrap(),
                format!("v{i}")
            );
        }));
    }
    for t in tasks {
        timeout(LIMIT, t).await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pem_from_file() {
    let (pem, acceptor) = self_signed();
    let dev = FakeDevice::start_tls(FakeOptions::default(), acceptor).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("device.pem");
    std::fs::write(&path, pem).unwrap();
    let tls = TlsOptions::from_pem_file(&path, "localhost").unwrap();
    let client = Client::connect_with(ClientConfig::new(dev.addr()).with_tls(tls))
        .await
        .unwrap();
    assert!(!client.namespace(NS).contains("k").await.unwrap());

    let err = TlsOptions::from_pem_file(dir.path().join("missing.pem"), "localhost").unwrap_err();
    assert!(matches!(err, Error::Io(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_certificate_is_a_tls_error() {
    let (_, acceptor) = self_signed();
    let (other_pem, _) = self_signed();
    let dev = FakeDevice::start_tls(FakeOptions::default(), acceptor).await;
    let config = ClientConfig::new(dev.addr()).with_tls(TlsOptions::new(other_pem, "localhost"));
    let err = timeout(LIMIT, Client::connect_with(config))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Tls(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_server_name_is_a_tls_error() {
    let (pem, acceptor) = self_signed();
    let dev = FakeDevice::start_tls(FakeOptions::default(), acceptor).await;
    let config = ClientConfig::new(dev.addr()).with_tls(TlsOptions::new(pem, "device.example"));
    let err = timeout(LIMIT, Client::connect_with(config))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Tls(_)), "{err:?}");
}

#[tokio::test]
async fn pem_without_a_certificate_is_a_tls_error() {
    let dev = FakeDevice::start(FakeOptions::default()).await;
    let config = ClientConfig::new(dev.addr()).with_tls(TlsOptions::new("not a pem", "localhost"));
    let err = Client::connect_with(config).await.unwrap_err();
    assert!(
        matches!(&err, Error::Tls(m) if m.contains("no certificate")),
        "{err:?}"
    );
}

/// A TLS client against a plain-TCP device fails (not hangs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_against_plain_tcp_fails() {
    let (pem, _) = self_signed();
    let dev = FakeDevice::start(FakeOptions::default()).await;
    let config = ClientConfig::new(dev.addr()).with_tls(TlsOptions::new(pem, "localhost"));
    let err = timeout(LIMIT, Client::connect_with(config))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Tls(_)), "{err:?}");
}
