//! Credentials, as the `cerberus` CLI takes them from the environment: the admin secret
//! (`CERBERUS_ADMIN_SECRET`, or the file `CERBERUS_ADMIN_SECRET_FILE` names), a tenant's
//! namespace and secret (`CERBERUS_NS`, `CERBERUS_SECRET`), NVMe/TCP's host NQN, subsystem
//! and DH-HMAC-CHAP secrets (`CERBERUS_HOSTNQN`, `CERBERUS_SUBNQN`, `CERBERUS_DHCHAP_SECRET`,
//! `CERBERUS_DHCHAP_CTRL_SECRET`; the URI's query wins) and the TLS CA of the native wire
//! (`CERBERUS_TLS_CA`). Secrets are never printed: errors name the variable, not its value.

use crate::result::KvsError;
use crate::uri::{DeviceUri, UriWire};
use cerberus_host::proto::nvme::DEFAULT_SUBNQN;
use cerberus_host::{ClientConfig, TlsOptions};
use std::time::Duration;

/// How a device handle authenticates.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// The admin secret: creates, lists and deletes key spaces.
    pub admin: Option<String>,
    /// A tenant: its namespace (name or id) and secret.
    pub tenant: Option<(String, String)>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("admin", &self.admin.as_ref().map(|_| "<secret>"))
            .field("tenant", &self.tenant.as_ref().map(|(ns, _)| ns))
            .finish()
    }
}

/// A lookup of an environment variable (the process's, or a test's map).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process's environment; empty values count as unset.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Credentials {
    /// The credentials `env` gives.
    pub fn from_env(env: Env) -> Result<Credentials, KvsError> {
        let admin = match env("CERBERUS_ADMIN_SECRET") {
            Some(s) => Some(s),
            None => match env("CERBERUS_ADMIN_SECRET_FILE") {
                Some(path) => Some(read_secret_file(&path)?),
                None => None,
            },
        };
        let tenant = match (env("CERBERUS_NS"), env("CERBERUS_SECRET")) {
            (Some(ns), Some(secret)) => Some((ns, secret)),
            _ => None,
        };
        Ok(Credentials { admin, tenant })
    }
}

fn read_secret_file(path: &str) -> Result<String, KvsError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        KvsError::Credentials(format!("reading CERBERUS_ADMIN_SECRET_FILE ({path}): {e}"))
    })?;
    Ok(text.trim().to_string())
}

/// The client settings for `uri` with what `env` adds.
pub fn client_config(uri: &DeviceUri, env: Env) -> Result<ClientConfig, KvsError> {
    let mut config =
        ClientConfig::new(uri.addr.clone()).with_request_timeout(Duration::from_secs(60));
    match &uri.wire {
        UriWire::Native => {
            if let Some(ca) = env("CERBERUS_TLS_CA") {
                let name = TlsOptions::server_name_of(&uri.addr).to_string();
                let tls = TlsOptions::from_pem_file(&ca, name)
                    .map_err(|e| KvsError::Credentials(format!("CERBERUS_TLS_CA ({ca}): {e}")))?;
                config = config.with_tls(tls);
            }
        }
        UriWire::Nvme(q) => {
            let hostnqn = q
                .hostnqn
                .clone()
                .or_else(|| env("CERBERUS_HOSTNQN"))
                .ok_or_else(|| {
                    KvsError::Uri("nvme-tcp needs hostnqn= or CERBERUS_HOSTNQN".into())
                })?;
            let subnqn = q
                .subnqn
                .clone()
                .or_else(|| env("CERBERUS_SUBNQN"))
                .unwrap_or_else(|| DEFAULT_SUBNQN.to_string());
            config = config.with_nvme(subnqn, hostnqn);
            let secret = q
                .dhchap_secret
                .clone()
                .or_else(|| env("CERBERUS_DHCHAP_SECRET"));
            let ctrl = q
                .dhchap_ctrl_secret
                .clone()
                .or_else(|| env("CERBERUS_DHCHAP_CTRL_SECRET"));
            if let Some(s) = secret {
                config = config.with_nvme_secret(s);
            }
            if let Some(s) = ctrl {
                config = config.with_nvme_ctrl_secret(s);
            }
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn admin_secret_comes_from_the_variable_or_its_file() {
        let env = env_of(&[("CERBERUS_ADMIN_SECRET", "s3")]);
        assert_eq!(
            Credentials::from_env(&env).unwrap().admin.as_deref(),
            Some("s3")
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("admin.secret");
        std::fs::write(&path, "from-file\n").unwrap();
        let env = env_of(&[("CERBERUS_ADMIN_SECRET_FILE", path.to_str().unwrap())]);
        let creds = Credentials::from_env(&env).unwrap();
        assert_eq!(creds.admin.as_deref(), Some("from-file"));
        assert!(!format!("{creds:?}").contains("from-file"));
        let env = env_of(&[("CERBERUS_ADMIN_SECRET_FILE", "/nonexistent/x")]);
        assert!(Credentials::from_env(&env).is_err());
    }

    #[test]
    fn a_tenant_needs_both_namespace_and_secret() {
        let env = env_of(&[("CERBERUS_NS", "t1")]);
        assert_eq!(Credentials::from_env(&env).unwrap().tenant, None);
        let env = env_of(&[("CERBERUS_NS", "t1"), ("CERBERUS_SECRET", "x")]);
        let creds = Credentials::from_env(&env).unwrap();
        assert_eq!(creds.tenant, Some(("t1".into(), "x".into())));
    }

    #[test]
    fn a_tls_ca_that_cannot_be_read_is_an_error() {
        let uri = DeviceUri::parse("127.0.0.1:9420").unwrap();
        let env = env_of(&[("CERBERUS_TLS_CA", "/nonexistent/ca.pem")]);
        assert!(client_config(&uri, &env).is_err());
        assert!(client_config(&uri, &env_of(&[])).unwrap().tls.is_none());
    }

    #[test]
    fn nvme_needs_a_host_nqn_from_the_query_or_the_environment() {
        let uri = DeviceUri::parse("nvme-tcp://127.0.0.1").unwrap();
        assert!(client_config(&uri, &env_of(&[])).is_err());
        let env = env_of(&[("CERBERUS_HOSTNQN", "nqn.h")]);
        let c = client_config(&uri, &env).unwrap();
        assert!(
            matches!(c.wire, cerberus_host::Wire::Nvme { ref hostnqn, .. } if hostnqn == "nqn.h")
        );
    }
}
