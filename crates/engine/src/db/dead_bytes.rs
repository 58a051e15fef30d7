//! Dead value-log bytes as a manifest edit records them.

use crate::key;

/// Value-log bytes of `addrs`, per segment, as a manifest edit records them.
pub(super) fn dead_bytes_by_segment(addrs: &[key::ValueAddr]) -> Vec<(u64, u64)> {
    let mut sums: std::collections::BTreeMap<u64, u64> = Default::default();
    for a in addrs {
        *sums.entry(a.segment).or_default() += u64::from(a.len);
    }
    sums.into_iter().collect()
}
