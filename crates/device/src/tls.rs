//! TLS for the command port: the operator's certificate chain and key, served with rustls.

use crate::error::DeviceError;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, DeviceError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| DeviceError::Tls(format!("{}: {e}", cert.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| DeviceError::Tls(format!("{}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(DeviceError::Tls(format!(
            "{}: no certificate in the file",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| DeviceError::Tls(format!("{}: {e}", key.display())))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| DeviceError::Tls(e.to_string()))?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| DeviceError::Tls(e.to_string()))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
