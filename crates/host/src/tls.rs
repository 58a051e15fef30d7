//! TLS settings. The client trusts exactly the certificates given (a private CA, or the
//! device's self-signed certificate), not the system's roots: devices are addressed by
//! operators, not found on the public web.

use crate::error::{Error, Result};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::TlsConnector;

/// What a TLS connection trusts and which name it expects the device's certificate to carry.
#[derive(Clone)]
pub struct TlsOptions {
    /// PEM of the CA (or the self-signed server certificate) to trust; may hold several.
    pub ca_cert_pem: Vec<u8>,
    /// The name checked against the device's certificate (DNS name or IP address).
    pub server_name: String,
}

impl TlsOptions {
    /// Trusts the CA certificate in `ca_cert_pem` and expects the device to be `server_name`.
    pub fn new(ca_cert_pem: impl Into<Vec<u8>>, server_name: impl Into<String>) -> TlsOptions {
        TlsOptions {
            ca_cert_pem: ca_cert_pem.into(),
            server_name: server_name.into(),
        }
    }

    /// The name a device's certificate must carry unless told otherwise: the host part of
    /// its address (`host:port`, `[v6]:port`).
    pub fn server_name_of(address: &str) -> &str {
        let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
        host.trim_start_matches('[').trim_end_matches(']')
    }

    /// Reads the PEM to trust from a file (checked when connecting, not here).
    pub fn from_pem_file(path: impl AsRef<Path>, server_name: impl Into<String>) -> Result<Self> {
        Ok(TlsOptions::new(std::fs::read(path)?, server_name))
    }

    /// A connector trusting the PEM's certificates, and the name to verify. Uses the `ring`
    /// provider explicitly, so nothing depends on a process-wide default provider.
    pub(crate) fn connector(&self) -> Result<(TlsConnector, ServerName<'static>)> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&self.ca_cert_pem) {
            let cert = cert.map_err(|e| Error::Tls(format!("reading the CA PEM: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| Error::Tls(format!("CA certificate refused: {e}")))?;
        }
        if roots.is_empty() {
            return Err(Error::Tls("no certificate in the CA PEM".into()));
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = ServerName::try_from(self.server_name.clone())
            .map_err(|e| Error::Tls(format!("server name {:?}: {e}", self.server_name)))?;
        Ok((TlsConnector::from(Arc::new(config)), name))
    }
}

impl std::fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsOptions")
            .field(
                "ca_cert_pem",
                &format_args!("{} bytes", self.ca_cert_pem.len()),
            )
            .field("server_name", &self.server_name)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::TlsOptions;

    #[test]
    fn server_names_of_addresses() {
        assert_eq!(TlsOptions::server_name_of("127.0.0.1:9420"), "127.0.0.1");
        assert_eq!(TlsOptions::server_name_of("[::1]:9420"), "::1");
        assert_eq!(TlsOptions::server_name_of("dev.example"), "dev.example");
    }
}
