//! Talking to a device: the connection (TCP or TLS), the namespace it authenticates for,
//! and the device's limits.

use crate::limits::Limits;
use crate::target::{Conn, DataTarget, NsAuth, WireArg};
use crate::tenant::Tenant;
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use cerberus_host::{BlockingClient, BlockingNamespace, ClientConfig, ScanOptions, TlsOptions};
use std::io::{IsTerminal, Read};
use std::time::Duration;

/// Entries in key order, from one namespace or merged from a tenant's parts.
pub type Entries = Box<dyn Iterator<Item = Result<(Bytes, Bytes)>>>;

/// A namespace on a connection authenticated for it, and the device's limits; or a
/// cluster tenant's parts (`--tenant`), for the key commands that reach one.
pub struct Session {
    /// The namespace (a tenant's first part: use [`Session::ns_for`] and
    /// [`Session::every`] to reach a tenant's keys).
    pub ns: BlockingNamespace,
    pub limits: Option<Limits>,
    tenant: Option<Tenant>,
}

impl Session {
    /// The namespace of a command that reaches one device's namespace only: a cluster
    /// tenant is refused, not served from one of its parts.
    pub fn open(target: &DataTarget) -> Result<Session> {
        if let Some(t) = &target.tenant.tenant {
            bail!(
                "--tenant {t}: this command reaches one device's namespace; a cluster tenant \
                 is reached by put, get, delete, exists, list and scan (or from Python: \
                 cerberus.connect_cluster)"
            );
        }
        let client = connect(&target.conn)?;
        let ns = open_namespace(&client, &target.auth)?;
        let limits = Limits::of(&client);
        Ok(Session {
            ns,
            limits,
            tenant: None,
        })
    }

    /// [`open`](Self::open), or with `--tenant` the parts of that cluster tenant.
    pub fn open_keys(target: &DataTarget) -> Result<Session> {
        let (Some(name), Some(file)) = (&target.tenant.tenant, &target.tenant.cluster) else {
            return Session::open(target);
        };
        let tenant = Tenant::open(file, name)?;
        let ns = tenant.parts()[0].clone();
        let limits = Limits::of(ns.client());
        Ok(Session {
            ns,
            limits,
            tenant: Some(tenant),
        })
    }

    /// The namespace `key` lives in.
    pub fn ns_for(&self, key: &[u8]) -> &BlockingNamespace {
        match &self.tenant {
            Some(t) => t.part_of(key),
            None => &self.ns,
        }
    }

    /// Every namespace the session's keys live in.
    pub fn every(&self) -> &[BlockingNamespace] {
        match &self.tenant {
            Some(t) => t.parts(),
            None => std::slice::from_ref(&self.ns),
        }
    }

    /// Fails for a tenant that a move has frozen.
    pub fn writable(&self) -> Result<()> {
        self.tenant.as_ref().map_or(Ok(()), Tenant::writable)
    }

    /// The entries `opts` asks for, in key order, from every namespace of the session.
    pub fn scan(&self, opts: ScanOptions) -> Result<Entries> {
        Ok(match &self.tenant {
            Some(t) => Box::new(t.scan(&opts)?),
            None => Box::new(self.ns.scan(opts)?.map(|e| e.map_err(anyhow::Error::from))),
        })
    }

    pub fn check_key(&self, key: &[u8]) -> Result<()> {
        match &self.limits {
            Some(l) => l.check_key(key).map_err(anyhow::Error::msg),
            None => Ok(()),
        }
    }
}

/// Reads the value of `put KEY` from stdin, up to the device's limit: past it, the rest is
/// only counted, so the error can say how large the value was.
pub fn read_stdin_value(limits: Option<&Limits>) -> Result<Vec<u8>> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        bail!("no value: give it after the key, or on standard input (cerberus put KEY < FILE)");
    }
    let mut input = stdin.lock();
    let mut value = Vec::new();
    match limits {
        Some(l) => {
            let max = u64::from(l.max_value_len);
            (&mut input)
                .take(max + 1)
                .read_to_end(&mut value)
                .context("reading the value from standard input")?;
            if value.len() as u64 > max {
                let rest = std::io::copy(&mut input, &mut std::io::sink())
                    .context("reading the value from standard input")?;
                bail!(cerberus_host::proto::value_size_refusal(
                    value.len() as u64 + rest,
                    l.max_value_len
                ));
            }
        }
        None => {
            input
                .read_to_end(&mut value)
                .context("reading the value from standard input")?;
        }
    }
    Ok(value)
}

/// Authenticates for `--ns` (an id, or a name) with `--secret` and returns the namespace's
/// handle.
pub fn open_namespace(client: &BlockingClient, auth: &NsAuth) -> Result<BlockingNamespace> {
    let ns = auth
        .ns
        .as_deref()
        .context("no namespace: give --ns NSID or NAME, or set CERBERUS_NS")?;
    let secret = auth
        .secret
        .as_deref()
        .context("no credential: give --secret or set CERBERUS_SECRET")?;
    let opened = match NsRef::parse(ns) {
        NsRef::Id(nsid) => client.open_namespace(nsid, secret),
        NsRef::Name(name) => client.open_namespace_named(name, secret),
    };
    opened.with_context(|| format!("authenticating for namespace {ns}"))
}

/// A namespace as a command line names it: an id (digits only) or a name.
#[derive(Debug, PartialEq, Eq)]
pub enum NsRef<'a> {
    Id(u32),
    Name(&'a str),
}

impl<'a> NsRef<'a> {
    pub fn parse(s: &'a str) -> NsRef<'a> {
        match s.parse::<u32>() {
            Ok(id) if s.bytes().all(|b| b.is_ascii_digit()) => NsRef::Id(id),
            _ => NsRef::Name(s),
        }
    }

    /// The id: given, or found by name in the device's list (admin). An id that another
    /// namespace has for its name (a name of digits, made by another client) is refused:
    /// which one was meant cannot be told, and an admin command may destroy it.
    pub fn resolve(&self, client: &BlockingClient) -> Result<u32> {
        match self {
            NsRef::Id(id) => {
                let list = client.list_namespaces().context("listing the namespaces")?;
                let digits = id.to_string();
                match list.iter().find(|e| e.name == digits && e.nsid != *id) {
                    Some(e) => bail!(
                        "{id} is namespace {id}, and also the name of namespace {}: \
                         ambiguous, nothing done (rename isn't possible; address them by id \
                         through another client)",
                        e.nsid
                    ),
                    None => Ok(*id),
                }
            }
            NsRef::Name(name) => client
                .list_namespaces()
                .context("finding the namespace by name")?
                .into_iter()
                .find(|e| e.name == *name)
                .map(|e| e.nsid)
                .with_context(|| format!("no namespace named {name:?} (`cerberus ns list`)")),
        }
    }
}

/// The device's address: `--device`, or on loopback the wire's port (9420, or NVMe/TCP's
/// 4420: the native port answers an NVMe/TCP host with a bad PDU, which said nothing of it).
fn address(conn: &Conn) -> String {
    conn.device.clone().unwrap_or_else(|| match conn.wire {
        WireArg::Nvme => cerberus_device::DEFAULT_NVME_LISTEN.to_string(),
        WireArg::Native => cerberus_device::DEFAULT_LISTEN.to_string(),
    })
}

pub fn connect(conn: &Conn) -> Result<BlockingClient> {
    let device = address(conn);
    let tls = match &conn.tls_ca {
        Some(ca) => {
            let name = match &conn.tls_name {
                Some(n) => n.clone(),
                None => TlsOptions::server_name_of(&device).to_string(),
            };
            Some(TlsOptions {
                ca_cert_pem: std::fs::read(ca)
                    .with_context(|| format!("reading {}", ca.display()))?,
                server_name: name,
            })
        }
        None => None,
    };
    let mut config =
        ClientConfig::new(device.clone()).with_request_timeout(Duration::from_secs(60));
    if let Some(t) = tls {
        config = config.with_tls(t);
    }
    if conn.wire == WireArg::Nvme {
        if conn.tls_ca.is_some() {
            bail!("--tls-ca is for the native wire: the NVMe/TCP target has no TLS yet");
        }
        let hostnqn = conn
            .hostnqn
            .clone()
            .context("--wire nvme needs --hostnqn (or CERBERUS_HOSTNQN)")?;
        let subnqn = conn
            .subnqn
            .clone()
            .unwrap_or_else(|| cerberus_device::NvmeConfig::default().subnqn);
        config = config.with_nvme(subnqn, hostnqn);
        if let Some(secret) = &conn.dhchap_secret {
            config = config.with_nvme_secret(secret.clone());
        }
        if let Some(secret) = &conn.dhchap_ctrl_secret {
            if conn.dhchap_secret.is_none() {
                bail!("--dhchap-ctrl-secret needs --dhchap-secret: the device proves itself inside the host's authentication");
            }
            config = config.with_nvme_ctrl_secret(secret.clone());
        }
    } else if conn.dhchap_secret.is_some() || conn.dhchap_ctrl_secret.is_some() {
        bail!("--dhchap-secret and --dhchap-ctrl-secret are for --wire nvme");
    }
    BlockingClient::connect_with(config)
        .with_context(|| format!("connecting to the device at {device}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(wire: WireArg, device: Option<&str>) -> Conn {
        Conn {
            device: device.map(str::to_string),
            tls_ca: None,
            tls_name: None,
            wire,
            subnqn: None,
            hostnqn: None,
            dhchap_secret: None,
            dhchap_ctrl_secret: None,
        }
    }

    #[test]
    fn namespaces_are_named_by_id_or_by_name() {
        assert_eq!(NsRef::parse("7"), NsRef::Id(7));
        assert_eq!(NsRef::parse("app"), NsRef::Name("app"));
        assert_eq!(NsRef::parse("+7"), NsRef::Name("+7"), "not digits only");
        assert_eq!(NsRef::parse("99999999999"), NsRef::Name("99999999999"));
    }

    /// Issue 65, point 3: `--wire nvme` without `--device` went to the native port (9420)
    /// and failed with "bad PDU ... invalid PDU header field at byte 2".
    #[test]
    fn each_wire_has_its_own_default_port() {
        assert_eq!(address(&conn(WireArg::Native, None)), "127.0.0.1:9420");
        assert_eq!(address(&conn(WireArg::Nvme, None)), "127.0.0.1:4420");
        let given = conn(WireArg::Nvme, Some("10.0.0.7:4421"));
        assert_eq!(address(&given), "10.0.0.7:4421");
    }
}
