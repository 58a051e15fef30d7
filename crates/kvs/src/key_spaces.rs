//! A device's key spaces, which are its namespaces of the same names: creating one (admin
//! credential; its secret kept in the secrets store), deleting one, listing them, and the
//! capacity and utilization their quotas and usage make. A handle with the admin credential
//! sees every namespace; one with a tenant's credential sees that tenant's only; one with
//! neither sees none (it opens key spaces whose secrets the store keeps).

use crate::device::Device;
use crate::result::KvsError;
use crate::secrets::valid_name;
use cerberus_host::{Error as HostError, NamespaceEntry, NamespaceSettings};

/// A namespace's space, as its stats report it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Space {
    /// Its quota (`None`: none).
    pub capacity: Option<u64>,
    pub used: u64,
    /// Pairs it holds (the device's estimate).
    pub keys: u64,
}

impl Space {
    /// The space a namespace's stats document reports.
    pub fn from_stats(doc: &serde_json::Value) -> Space {
        Space {
            capacity: doc.get("capacity").and_then(serde_json::Value::as_u64),
            used: doc
                .get("used_bytes")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0),
            keys: doc
                .get("keys_estimate")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0),
        }
    }
}

/// Summed quotas of `spaces`, and bytes used against them in hundredths of a percent.
pub fn capacity_and_utilization(spaces: &[Space]) -> (u64, u32) {
    let (mut cap, mut used) = (0u64, 0u64);
    for s in spaces {
        if let Some(c) = s.capacity {
            cap = cap.saturating_add(c);
            used = used.saturating_add(s.used);
        }
    }
    if cap == 0 {
        return (0, 0);
    }
    let util = (u128::from(used) * 10_000 / u128::from(cap)).min(10_000) as u32;
    (cap, util)
}

impl Device {
    /// Creates key space `name`, with a quota of `size` bytes unless 0.
    pub fn create_key_space(&self, name: &str, size: u64) -> Result<(), KvsError> {
        if !valid_name(name) {
            return Err(KvsError::KeySpaceName);
        }
        if !self.admin {
            return Err(KvsError::Option(
                "creating a key space needs the admin credential",
            ));
        }
        let settings = NamespaceSettings {
            capacity: (size > 0).then_some(size),
            ..NamespaceSettings::default()
        };
        let (nsid, secret) = match self.client.create_namespace_with(name, &settings) {
            Ok(created) => created,
            Err(HostError::NamespaceExists(_)) => return Err(KvsError::KeySpaceExists),
            Err(e) => return Err(e.into()),
        };
        if let Err(e) = self.secrets.save(name, &secret) {
            // A namespace whose secret nobody has would be unreachable: undo it.
            let _ = self.client.destroy_namespace(nsid);
            return Err(e);
        }
        Ok(())
    }

    /// Deletes key space `name` and every pair in it.
    pub fn delete_key_space(&self, name: &str) -> Result<(), KvsError> {
        let visible = self.key_spaces()?;
        let Some(entry) = visible.iter().find(|e| e.name == name) else {
            return Err(KvsError::KeySpaceNotExist);
        };
        if !self.admin {
            return Err(KvsError::Option(
                "deleting a key space needs the admin credential",
            ));
        }
        match self.client.destroy_namespace(entry.nsid) {
            Ok(()) | Err(HostError::InvalidNamespace(_)) => {}
            Err(e) => return Err(e.into()),
        }
        self.secrets.remove(name);
        self.mark_closed(name);
        Ok(())
    }

    /// The key spaces this handle sees, by namespace id.
    pub fn key_spaces(&self) -> Result<Vec<NamespaceEntry>, KvsError> {
        if self.admin {
            let mut all = self.client.list_namespaces()?;
            all.sort_by_key(|e| e.nsid);
            return Ok(all);
        }
        Ok(self
            .tenant
            .iter()
            .map(|t| NamespaceEntry {
                nsid: t.nsid,
                name: t.name.clone(),
            })
            .collect())
    }

    /// The space of every key space this handle sees.
    pub fn spaces(&self) -> Result<Vec<Space>, KvsError> {
        let mut out = Vec::new();
        for e in self.key_spaces()? {
            match self.client.namespace(e.nsid).stats() {
                Ok(doc) => out.push(Space::from_stats(&doc)),
                // Deleted since the listing.
                Err(HostError::InvalidNamespace(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilization_counts_only_namespaces_with_quotas() {
        let s = |capacity, used| Space {
            capacity,
            used,
            keys: 0,
        };
        assert_eq!(capacity_and_utilization(&[]), (0, 0));
        assert_eq!(capacity_and_utilization(&[s(None, 500)]), (0, 0));
        let spaces = [s(Some(1000), 250), s(Some(1000), 0), s(None, 7)];
        assert_eq!(capacity_and_utilization(&spaces), (2000, 1250));
        assert_eq!(capacity_and_utilization(&[s(Some(10), 20)]), (10, 10_000));
    }

    #[test]
    fn space_reads_the_stats_document() {
        let doc = serde_json::json!({"used_bytes": 42, "capacity": 100, "keys_estimate": 3});
        let s = Space::from_stats(&doc);
        assert_eq!((s.capacity, s.used, s.keys), (Some(100), 42, 3));
        let s = Space::from_stats(&serde_json::json!({"capacity": null}));
        assert_eq!((s.capacity, s.used), (None, 0));
    }
}
