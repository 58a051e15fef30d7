//! A tenant's figures over the get phase, from its namespace counters (Cerberus only), and the
//! mean over tenants that the summary and the reports take of them.

use super::TenantResult;
use crate::report::measures::per;
use cerberus_engine::storage::IoPurpose;
use serde::Serialize;

/// Gets by where they were answered: the memtable, then each level; serialized as an
/// object `{"memtable", "L0", "L1", ...}` in that order.
#[derive(Clone, Debug, PartialEq)]
pub struct GetsByLevel {
    pub memtable: u64,
    /// L0 first.
    pub levels: Vec<u64>,
}

impl Serialize for GetsByLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1 + self.levels.len()))?;
        m.serialize_entry("memtable", &self.memtable)?;
        for (i, n) in self.levels.iter().enumerate() {
            m.serialize_entry(&format!("L{i}"), n)?;
        }
        m.end()
    }
}

impl GetsByLevel {
    /// `mem 12.5 L1 80.0 ...`: percentages of `gets`, levels that answered none left out.
    pub(super) fn percentages(&self, gets: u64) -> String {
        if gets == 0 {
            return "-".into();
        }
        let pct = |n: u64| 100.0 * n as f64 / gets as f64;
        let mut parts = vec![format!("mem {:.1}", pct(self.memtable))];
        for (i, &n) in self.levels.iter().enumerate() {
            if n > 0 {
                parts.push(format!("L{i} {:.1}", pct(n)));
            }
        }
        parts.join(" ")
    }
}

/// A tenant's namespace figures over the get phase (Cerberus only).
#[derive(Clone, Debug, PartialEq)]
pub struct TenantFigures {
    /// What the per-get figures divide by: the namespace's gets, or the tenant's get ops
    /// when the namespace counted none.
    pub gets: u64,
    pub gets_by_level: GetsByLevel,
    pub gets_not_found: u64,
    pub filter_probes_per_get: Option<f64>,
    pub filter_loads_per_get: Option<f64>,
    pub index_loads_per_get: Option<f64>,
    pub page_reads_per_get: Option<f64>,
    pub page_reads_per_get_by_purpose: Option<[f64; IoPurpose::COUNT]>,
}

/// The get-phase figures of one tenant, `None` when the engine keeps no namespace counters.
pub fn tenant_figures(t: &TenantResult) -> Option<TenantFigures> {
    let d = t.get_delta()?;
    let gets = if d.gets > 0 { d.gets } else { t.get.ops };
    let g = gets as f64;
    let per_get = |x: u64| (gets > 0).then(|| x as f64 / g);
    Some(TenantFigures {
        gets,
        gets_by_level: GetsByLevel {
            memtable: d.gets_memtable,
            levels: d.gets_by_level.clone(),
        },
        gets_not_found: d.gets_not_found,
        filter_probes_per_get: per_get(d.filter_probes),
        filter_loads_per_get: per_get(d.filter_loads),
        index_loads_per_get: per_get(d.index_loads),
        page_reads_per_get: per_get(d.pages.iter().sum()),
        page_reads_per_get_by_purpose: (gets > 0).then(|| per(&d.pages, g)),
    })
}

/// A counter of the tenant's namespace over the run (Cerberus only).
pub(super) fn tenant_delta(
    t: &TenantResult,
    counter: fn(&cerberus_engine::NamespaceStats) -> u64,
) -> Option<u64> {
    t.stats
        .as_ref()
        .map(|[before, _, after]| counter(after).saturating_sub(counter(before)))
}

/// Table bytes compactions wrote into the tenant's namespace over the run (Cerberus only).
pub(super) fn tenant_compaction_bytes(t: &TenantResult) -> Option<u64> {
    tenant_delta(t, |s| s.compaction_bytes_written)
}

/// The mean of the values present; `None` if there are none.
pub fn mean(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .flatten()
        .fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_skips_missing_values() {
        assert_eq!(mean([Some(1.0), None, Some(3.0)]), Some(2.0));
        assert_eq!(mean([None, None]), None);
        assert_eq!(mean(std::iter::empty()), None);
    }
}
