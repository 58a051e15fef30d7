//! The device URI `kvs_open_device` takes: its address and wire. `host:port` and
//! `cerberus://host[:port]` are the native wire (port 9420 by default);
//! `nvme-tcp://host[:port]?hostnqn=..&subnqn=..` is NVMe/TCP (port 4420 by default). The
//! NVMe/TCP host NQN and DH-HMAC-CHAP secrets may come from the query or the environment
//! (the query wins), as `credentials` reads it.

use crate::result::KvsError;

const NATIVE_PORT: u16 = 9420;
const NVME_PORT: u16 = 4420;

/// The wire a URI names, with its NVMe/TCP parameters from the query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UriWire {
    /// The device's own protocol.
    Native,
    /// NVMe/TCP, with what the query said (each may still come from the environment).
    Nvme(NvmeQuery),
}

/// `nvme-tcp://` query parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NvmeQuery {
    pub hostnqn: Option<String>,
    pub subnqn: Option<String>,
    pub dhchap_secret: Option<String>,
    pub dhchap_ctrl_secret: Option<String>,
}

/// A parsed device URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceUri {
    /// `host:port`.
    pub addr: String,
    pub wire: UriWire,
}

impl DeviceUri {
    /// Reads `uri`.
    pub fn parse(uri: &str) -> Result<DeviceUri, KvsError> {
        let uri = uri.trim();
        if let Some(rest) = uri.strip_prefix("cerberus://") {
            let addr = with_port(rest.trim_end_matches('/'), NATIVE_PORT)?;
            return Ok(DeviceUri {
                addr,
                wire: UriWire::Native,
            });
        }
        if let Some(rest) = uri.strip_prefix("nvme-tcp://") {
            let (host, query) = rest.split_once('?').unwrap_or((rest, ""));
            let addr = with_port(host.trim_end_matches('/'), NVME_PORT)?;
            return Ok(DeviceUri {
                addr,
                wire: UriWire::Nvme(parse_query(query)?),
            });
        }
        if uri.contains("://") {
            return Err(KvsError::Uri(
                "scheme is not cerberus:// or nvme-tcp://".into(),
            ));
        }
        // A bare address must name its port: a path such as the kit's /dev/nvme0n1 is not one.
        match uri.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(DeviceUri {
                    addr: uri.to_string(),
                    wire: UriWire::Native,
                })
            }
            _ => Err(KvsError::Uri("expected host:port".into())),
        }
    }
}

/// `host` with `default` as its port unless it names one (`[v6]:port` included).
fn with_port(host: &str, default: u16) -> Result<String, KvsError> {
    if host.is_empty() || host.contains('/') {
        return Err(KvsError::Uri("no host".into()));
    }
    let has_port = match host.rsplit_once(':') {
        Some((h, p)) => {
            !h.is_empty() && (!host.starts_with('[') || h.ends_with(']')) && {
                p.parse::<u16>()
                    .map_err(|_| KvsError::Uri("bad port".into()))?;
                true
            }
        }
        None => false,
    };
    Ok(if has_port {
        host.to_string()
    } else {
        format!("{host}:{default}")
    })
}

fn parse_query(query: &str) -> Result<NvmeQuery, KvsError> {
    let mut q = NvmeQuery::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| KvsError::Uri(format!("query part without '=': {k}", k = pair)))?;
        let v = Some(v.to_string());
        match k {
            "hostnqn" => q.hostnqn = v,
            "subnqn" => q.subnqn = v,
            "dhchap_secret" => q.dhchap_secret = v,
            "dhchap_ctrl_secret" => q.dhchap_ctrl_secret = v,
            other => return Err(KvsError::Uri(format!("unknown query parameter {other:?}"))),
        }
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_addresses_are_the_native_wire() {
        let u = DeviceUri::parse("127.0.0.1:9420").unwrap();
        assert_eq!(u.addr, "127.0.0.1:9420");
        assert_eq!(u.wire, UriWire::Native);
        assert!(DeviceUri::parse("/dev/nvme0n1").is_err());
        assert!(DeviceUri::parse("localhost").is_err());
        assert!(DeviceUri::parse("").is_err());
    }

    #[test]
    fn cerberus_scheme_defaults_its_port() {
        let u = DeviceUri::parse("cerberus://dev.example").unwrap();
        assert_eq!(u.addr, "dev.example:9420");
        let u = DeviceUri::parse("cerberus://10.0.0.2:7000/").unwrap();
        assert_eq!(u.addr, "10.0.0.2:7000");
        let u = DeviceUri::parse("cerberus://[::1]").unwrap();
        assert_eq!(u.addr, "[::1]:9420");
        assert!(DeviceUri::parse("cerberus://h:notaport").is_err());
        assert!(DeviceUri::parse("http://h:1").is_err());
    }

    #[test]
    fn nvme_scheme_reads_its_query() {
        let u = DeviceUri::parse("nvme-tcp://10.0.0.2?hostnqn=nqn.h:1&subnqn=nqn.s").unwrap();
        assert_eq!(u.addr, "10.0.0.2:4420");
        let UriWire::Nvme(q) = u.wire else {
            panic!("nvme")
        };
        assert_eq!(q.hostnqn.as_deref(), Some("nqn.h:1"));
        assert_eq!(q.subnqn.as_deref(), Some("nqn.s"));
        assert_eq!(q.dhchap_secret, None);
        assert!(DeviceUri::parse("nvme-tcp://h:1?bogus=1").is_err());
        assert!(DeviceUri::parse("nvme-tcp://h:1?hostnqn").is_err());
    }
}
