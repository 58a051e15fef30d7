//! The NVMe/TCP target's settings (`[nvme]` in the device's TOML file; its address is the
//! device's `nvme_listen`).

use serde::Deserialize;
use std::collections::BTreeMap;

/// The IANA port of NVMe/TCP, on loopback: what `cerberus serve --nvme-listen` serves on
/// when given no address.
pub const DEFAULT_NVME_LISTEN: &str = "127.0.0.1:4420";

/// Limits and grants of the NVMe/TCP target.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NvmeConfig {
    /// The subsystem's NQN, which a host's Connect names.
    pub subnqn: String,
    /// Connections (queues) served at once; a newcomer past it is closed at once.
    pub max_connections: usize,
    /// Connections one peer address may hold at once (a host's admin and I/O queues count
    /// one each), so that one host cannot take every slot (192 of 256 by default: a
    /// controller per core of a large host fits, and others keep a quarter). When the target is full, the
    /// oldest connection that has not connected and authenticated a queue is closed for a
    /// newcomer; only when every slot holds a connected queue is the newcomer refused.
    pub max_connections_per_peer: usize,
    /// A connection must send its ICReq, and connect its queue (Fabrics Connect), within
    /// this of its arrival, or it is closed (as a native connection that does not
    /// authenticate within `auth_timeout_ms`).
    pub icreq_timeout_ms: u64,
    /// A connection that sends nothing this long is closed (keep-alives count): checked
    /// once a period, so a silent connection goes between one and two periods after it
    /// last sent, as on the native port.
    pub idle_timeout_secs: u64,
    /// Bytes of data a command capsule may carry (advertised as IOCCSZ); larger writes go
    /// through R2T. At least 1,024 (a Connect's data).
    pub in_capsule_bytes: u32,
    /// Most bytes of one H2CData PDU (MAXH2CDATA in the ICResp).
    pub max_h2c_data: u32,
    /// Bytes the commands in flight on one I/O queue may hold at once: Store values
    /// (from their R2T until their completion) and Retrieve/List buffers. A command past it
    /// waits for earlier ones; one larger than it runs alone. With `max_connections`, this
    /// bounds what hosts can make the target hold; all queues together (and the native
    /// port's connections) are within the device's `max_held_bytes`.
    pub max_queue_bytes: u32,
    /// How long a vendor Submit's response waits for its Fetch: then it is dropped, its
    /// bytes given back, whatever the queue does meanwhile (a host's client fetches at once).
    pub unfetched_timeout_ms: u64,
    /// Host NQN -> the namespaces it may see and use: a name, `id:N` for namespace id N, or
    /// `*` for every one (a bare number is a name: `"7"` never also means id 7). A host not
    /// named here sees none. Holding a grant is what holding the namespace's credential is on
    /// the native wire.
    /// (A grant `"*"` is every namespace.)
    pub hosts: BTreeMap<String, Vec<String>>,
    /// Host NQNs that may prove the device's admin credential inside the vendor commands
    /// (`docs/nvme-tcp.md`): the admin secret alone is not enough over this wire.
    pub admin_hosts: Vec<String>,
    /// Host NQN -> its DH-HMAC-CHAP secret (`DHHC-1:<hh>:<base64>:`, as `nvme gen-dhchap-key`
    /// makes): a host named here must authenticate each queue (NVMe in-band authentication)
    /// before any other command. Checked at start.
    pub host_secrets: BTreeMap<String, String>,
    /// Host NQN -> the controller secret the target proves itself with when that host asks
    /// (bidirectional authentication, `nvme connect --dhchap-ctrl-secret`). Only for hosts
    /// with a secret in `host_secrets`.
    pub ctrl_secrets: BTreeMap<String, String>,
    /// Refuse the Connect of a host NQN that has no secret in `host_secrets` (the default:
    /// host NQNs are not secret, so a host without a secret could be anyone). `false` takes
    /// such hosts at their word, as Redis's protected mode off does; the device says so at
    /// start.
    pub require_host_auth: bool,
    /// Diffie-Hellman exponentiations one peer address (an IPv6 /64) may make the target do
    /// at once for DH-HMAC-CHAP (two per transaction over an FFDHE group, one transaction
    /// per queue at a time: 384 covers `max_connections_per_peer` queues authenticating at
    /// once), refilled at `auth_dh_per_sec`; a transaction that succeeds gives its work back.
    /// Past it, a Negotiate asking for a DH group fails until the bucket refills: a stranger
    /// naming a host with a secret cannot keep the network threads busy with them.
    pub auth_dh_burst: u32,
    /// The rate `auth_dh_burst` refills at, per second.
    pub auth_dh_per_sec: u32,
    /// Sync every KV Store before its completion (a host that wants each Store durable
    /// without a Flush; each Store then waits for the disk). Off by default: Identify
    /// reports a volatile write cache, and Flush syncs it.
    pub sync_stores: bool,
}

impl Default for NvmeConfig {
    fn default() -> Self {
        NvmeConfig {
            subnqn: cerberus_proto::nvme::DEFAULT_SUBNQN.into(),
            max_connections: 256,
            max_connections_per_peer: 192,
            icreq_timeout_ms: 10_000,
            idle_timeout_secs: 300,
            in_capsule_bytes: 8192,
            max_h2c_data: 128 << 10,
            max_queue_bytes: 4 << 20,
            unfetched_timeout_ms: 60_000,
            hosts: BTreeMap::new(),
            admin_hosts: Vec::new(),
            host_secrets: BTreeMap::new(),
            ctrl_secrets: BTreeMap::new(),
            require_host_auth: true,
            auth_dh_burst: 384,
            auth_dh_per_sec: 8,
            sync_stores: false,
        }
    }
}

/// Whether grant `g` names the namespace `name` with id `nsid` (`[nvme.hosts]`).
pub(crate) fn grant_matches(g: &str, name: &str, nsid: u32) -> bool {
    match g.strip_prefix("id:") {
        Some(id) => id.parse() == Ok(nsid),
        None => g == "*" || g == name,
    }
}

impl NvmeConfig {
    /// What is wrong with the settings, if anything.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.in_capsule_bytes < 1024 || self.in_capsule_bytes > 1 << 20 {
            return Err("nvme.in_capsule_bytes is between 1024 and 1 MiB".into());
        }
        if self.max_h2c_data < 4096 || self.max_h2c_data > 1 << 20 {
            return Err("nvme.max_h2c_data is between 4096 and 1 MiB".into());
        }
        if self.max_queue_bytes == 0 || self.max_queue_bytes > 1 << 30 {
            return Err("nvme.max_queue_bytes is between 1 and 1 GiB".into());
        }
        if !(100..=3_600_000).contains(&self.unfetched_timeout_ms) {
            return Err("nvme.unfetched_timeout_ms is between 100 and 3,600,000".into());
        }
        if self.max_connections == 0
            || self.max_connections_per_peer == 0
            || self.icreq_timeout_ms == 0
        {
            return Err("nvme.max_connections, nvme.max_connections_per_peer and \
                 nvme.icreq_timeout_ms are at least 1"
                .into());
        }
        if self.auth_dh_burst < 2 || self.auth_dh_per_sec == 0 {
            return Err("nvme.auth_dh_burst is at least 2 (one transaction) and \
                 nvme.auth_dh_per_sec at least 1"
                .into());
        }
        if self.subnqn.is_empty() || self.subnqn.len() > 223 {
            return Err("nvme.subnqn has 1 to 223 bytes".into());
        }
        for (host, secret) in &self.host_secrets {
            cerberus_proto::nvme::DhchapSecret::parse(secret)
                .map_err(|e| format!("nvme.host_secrets[{host:?}]: {e}"))?;
        }
        for (host, secret) in &self.ctrl_secrets {
            cerberus_proto::nvme::DhchapSecret::parse(secret)
                .map_err(|e| format!("nvme.ctrl_secrets[{host:?}]: {e}"))?;
            if !self.host_secrets.contains_key(host) {
                return Err(format!(
                    "nvme.ctrl_secrets[{host:?}]: the host has no secret in nvme.host_secrets \
                     (the target proves itself only inside the host's authentication)"
                ));
            }
        }
        Ok(())
    }

    /// The hosts this target takes at their word (granted, with no secret, while
    /// `require_host_auth` is off), for the line the device logs at start.
    pub fn hosts_without_secrets(&self) -> Vec<&str> {
        if self.require_host_auth {
            return Vec::new();
        }
        let granted = self.hosts.keys().chain(self.admin_hosts.iter());
        let mut v: Vec<&str> = granted
            .filter(|h| !self.host_secrets.contains_key(*h))
            .map(String::as_str)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_hosts_taken_at_their_word_are_named_only_when_the_admin_allows_them() {
        let mut c = super::NvmeConfig::default();
        c.hosts.insert("nqn.a".into(), vec!["*".into()]);
        c.hosts.insert("nqn.b".into(), vec!["*".into()]);
        c.admin_hosts.push("nqn.c".into());
        c.host_secrets.insert("nqn.b".into(), "DHHC-1:00:x:".into());
        assert!(c.hosts_without_secrets().is_empty(), "refused by default");
        c.require_host_auth = false;
        assert_eq!(c.hosts_without_secrets(), vec!["nqn.a", "nqn.c"]);
    }
}
