//! A memtable written as table(s): what a flush writes, and the parameters of the tables
//! flushes and compactions write.

use crate::compaction::{OutputParams, Retention, SnapshotFloors, TableSink};
use crate::error::Result;
use crate::key::{self, IndexValue, Kind, Nsid};
use crate::memtable::Memtable;
use crate::options::{Layout, Options};
use crate::table::TableProps;
use std::collections::HashSet;

/// A flush writes one L0 table holding every namespace.
pub(super) fn flush_params(opts: &Options) -> OutputParams {
    OutputParams {
        split_by_namespace: false,
        ..output_params(opts, u64::MAX)
    }
}

pub(super) fn output_params(opts: &Options, target_table_bytes: u64) -> OutputParams {
    OutputParams {
        block_size: opts.block_size,
        bits_per_key: opts.filter_bits_per_key,
        hash_index: opts.block_hash_index,
        // Readers use a point index only when they keep their meta blocks, and have room
        // to keep some.
        point_index: (opts.point_index
            && !opts.cache_filters_and_indexes
            && opts.point_index_memory_bytes > 0)
            .then_some(opts.point_index_fingerprint_bits),
        target_table_bytes,
        split_by_namespace: opts.layout == Layout::PerNamespace,
    }
}

/// Writes a memtable as L0 table(s); drops the entries of destroyed namespaces and the
/// versions shadowed within it that no snapshot can see. The table holds every namespace:
/// each entry is kept for the snapshots of its own namespace (`floors`).
pub(super) fn flush_memtable(
    storage: &dyn crate::storage::Storage,
    mem: &Memtable,
    params: OutputParams,
    opts: &Options,
    destroyed: &HashSet<Nsid>,
    floors: &SnapshotFloors,
    new_file: &dyn Fn() -> u64,
) -> Result<(Vec<TableProps>, Vec<key::ValueAddr>)> {
    let mut sink = TableSink::new(storage, params, new_file);
    let mut dropped = Vec::new();
    let mut rule = Retention::new(floors.clone());
    let mut ikey = Vec::new();
    let mut val = Vec::new();
    for e in mem.iter() {
        let v = e.value;
        ikey.clear();
        ikey.extend_from_slice(e.user);
        key::push_trailer(&mut ikey, e.seq, v.kind);
        let in_destroyed = !destroyed.is_empty() && destroyed.contains(&key::ikey_nsid(e.user));
        if in_destroyed || rule.drop_entry(&ikey, |_| false) {
            if v.kind == Kind::Put && !v.addr.is_none() {
                dropped.push(v.addr);
            }
            continue;
        }
        val.clear();
        match v.kind {
            Kind::Delete => IndexValue::Tombstone.encode(&mut val),
            Kind::Put if v.addr.is_none() => IndexValue::Table(v.value.clone()).encode(&mut val),
            Kind::Put => IndexValue::Addr {
                addr: v.addr,
                inline: (v.value.len() < opts.inline_value_threshold).then(|| v.value.clone()),
            }
            .encode(&mut val),
        }
        sink.add(&ikey, &val)?;
    }
    Ok((sink.finish()?, dropped))
}
