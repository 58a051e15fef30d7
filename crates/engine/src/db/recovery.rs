//! Opening: the manifest read back, the value log replayed, a fresh manifest and segment.

use super::dead_bytes::dead_bytes_by_segment;
use super::flush_table::{flush_memtable, flush_params};
use super::flush_usage::{flush_usage, recount_version};
use super::index_set::{derive_entries, IndexSet};
use super::supersede::{insert_tombstones, supersede_index_entries};
use crate::compaction::SnapshotFloors;
use crate::error::{Error, IoContext, Result};
use crate::key::{Kind, Nsid, SeqNo};
use crate::memtable::{MemValue, Memtable};
use crate::options::Options;
use crate::prefetch::ReadPool;
use crate::storage::Storage;
use crate::table::{parse_table_name, table_name};
use crate::version::{Namespaces, Recovered, TableCtx, Version, VersionEdit, VersionSet};
use crate::vlog::{self, VlogReader, VlogWriter};
use std::collections::HashSet;

/// Reads the manifest, replays the value log into a memtable, flushes it, and starts a new
/// manifest and a new value-log segment.
pub(super) fn recover(
    ctx: &TableCtx,
    opts: &Options,
) -> Result<(VersionSet, Memtable, VlogWriter)> {
    let storage = ctx.storage.as_ref();
    let Recovered {
        mut version,
        mut namespaces,
        mut next_file,
        mut last_seq,
        log_start,
        mut vlog_dead,
    } = VersionSet::recover(ctx, opts.num_levels)?.unwrap_or_else(|| Recovered {
        version: Version::new(opts.num_levels),
        namespaces: Namespaces::default(),
        next_file: 1,
        last_seq: 0,
        log_start: (0, 0),
        vlog_dead: Default::default(),
    });
    let LogFiles {
        segments,
        empty,
        unnamed,
    } = scan_directory(storage, &version, &mut next_file)?;
    let replay: Vec<u64> = segments
        .iter()
        .copied()
        .filter(|&s| s >= log_start.0)
        .collect();
    let mem = Memtable::new(opts.memtable_bytes);
    let indexes = IndexSet::from_defs(namespaces.indexes.values(), &[], Vec::new());
    let flushed_seq = last_seq;
    replay_log(storage, &replay, log_start, flushed_seq, &mem, &indexes)?;
    if !mem.is_empty() {
        let ids = std::cell::Cell::new(next_file);
        let alloc = || ids.replace(ids.get() + 1);
        let params = flush_params(opts);
        let destroyed: HashSet<Nsid> = namespaces.destroyed.iter().copied().collect();
        let vlog = VlogReader::new(ctx.storage.clone());
        let tombstones = supersede_index_entries(&mem, &version, &indexes, &vlog, &ctx.counters)?;
        insert_tombstones(&mem, &tombstones, |_| true);
        // The replay's own readers: the database's are not started yet.
        let pool = ReadPool::new(opts.prefetch_threads, storage.nand_stats().is_some());
        let usage = flush_usage(&mem, &version, &destroyed, &ctx.counters, &pool)?;
        let (props, dropped) = flush_memtable(
            storage,
            &mem,
            params,
            opts,
            &destroyed,
            &SnapshotFloors::uniform(SeqNo::MAX),
            &alloc,
        )?;
        for (seg, bytes) in dead_bytes_by_segment(&dropped) {
            *vlog_dead.entry(seg).or_default() += bytes;
        }
        next_file = ids.get();
        storage.sync_dir().ctx("database directory")?;
        last_seq = last_seq.max(mem.max_seq());
        let edit = VersionEdit {
            added: props.into_iter().map(|p| (0, p)).collect(),
            ..VersionEdit::default()
        };
        version = version.apply(&edit, ctx).0;
        // Into the snapshot of the new manifest, with the table (an untracked manifest is
        // recounted below, from the tables alone).
        usage.apply_to(&mut namespaces);
    }
    // Sums for segments GC has deleted (or versions dropped after their segment went), taken
    // after the replay's flush so that nothing it counted can name a segment that is gone.
    vlog_dead.retain(|seg, _| segments.binary_search(seg).is_ok());
    for segs in namespaces.garbage.values_mut() {
        segs.retain(|seg, _| segments.binary_search(seg).is_ok());
    }
    if !namespaces.usage_tracked {
        let version = std::sync::Arc::new(version.clone());
        let base = recount_version(&version, &namespaces, &ctx.counters)?;
        tracing::info!(
            ids = base.len(),
            "recounted namespace usage of an older manifest"
        );
        namespaces.apply(&VersionEdit {
            usage_base: Some(base),
            ..VersionEdit::default()
        });
    }
    // The manifest points replay at the new segment before the segment exists: a crash in
    // between leaves nothing to replay, never an old torn tail followed by a newer segment.
    let segment = next_file;
    next_file += 1;
    let versions = VersionSet::create(
        ctx.clone(),
        Recovered {
            version,
            namespaces,
            next_file,
            last_seq,
            log_start: (segment, vlog::SEGMENT_HEADER_LEN),
            vlog_dead,
        },
    )?;
    // Only now that the new manifest is durable: the manifest read back may end in edits
    // that never reached the disk (appended, their sync failed), and a table such an edit
    // dropped is still named by the manifest the disk holds. Deleted before, a crash left
    // a manifest naming a table that was gone.
    for id in unnamed {
        let _ = storage.delete(&table_name(id));
    }
    let writer = VlogWriter::create(ctx.storage.clone(), segment)?;
    // The new manifest replays from the new segment: the empty ones are of no use to replay,
    // and without this every open would leave one more behind. A crash before the deletions
    // are durable leaves them for the next open to delete.
    delete_empty_segments(storage, &empty);
    Ok((versions, Memtable::new(opts.memtable_bytes), writer))
}

/// The value-log segments the directory holds, in order, and those of them with no record.
struct LogFiles {
    segments: Vec<u64>,
    /// Segments that hold their header and no record: an earlier open's segment that got no
    /// write. Nothing can point into them; they go once the new segment exists.
    empty: Vec<u64>,
    /// Tables the manifest does not name: output of a flush or compaction that never
    /// reached it. They go once the new manifest is durable.
    unnamed: Vec<u64>,
}

/// Lists the directory: raises `next_file` past every file number in it, checks that every
/// table `version` names is there, lists the tables it does not name and deletes segments
/// too short for their header.
fn scan_directory(
    storage: &dyn Storage,
    version: &Version,
    next_file: &mut u64,
) -> Result<LogFiles> {
    let names = storage.list().ctx("database directory")?;
    let mut segments = Vec::new();
    let mut tables = Vec::new();
    for name in &names {
        let id = if let Some(id) = vlog::parse_segment_name(name) {
            segments.push(id);
            id
        } else if let Some(id) = parse_table_name(name) {
            tables.push(id);
            id
        } else if name.ends_with(crate::storage::CUT_SUFFIX) {
            // The copy of a cut (`Storage::truncate_file`) a crash interrupted; the file it
            // was cut from is still whole and is cut again.
            let _ = storage.delete(name);
            continue;
        } else {
            name.strip_prefix("MANIFEST-")
                .and_then(|n| n.parse().ok())
                .unwrap_or_default()
        };
        *next_file = (*next_file).max(id + 1);
    }
    for id in version.table_ids() {
        if !tables.contains(&id) {
            return Err(Error::corruption(
                table_name(id),
                0,
                "table named by the manifest is missing",
            ));
        }
    }
    let live: Vec<u64> = version.table_ids().collect();
    let unnamed = tables.into_iter().filter(|id| !live.contains(id)).collect();
    segments.sort_unstable();
    // A segment too short for its header was being created when a write failed or the
    // power went: it never held a record.
    let mut kept = Vec::with_capacity(segments.len());
    let mut empty = Vec::new();
    for seg in segments {
        let name = vlog::segment_name(seg);
        let len = storage.open(&name).and_then(|f| f.len()).ctx(&name)?;
        if len < vlog::SEGMENT_HEADER_LEN {
            storage.delete(&name).ctx(&name)?;
        } else {
            if len == vlog::SEGMENT_HEADER_LEN {
                empty.push(seg);
            }
            kept.push(seg);
        }
    }
    Ok(LogFiles {
        segments: kept,
        empty,
        unnamed,
    })
}

/// Replays segments `replay` from `log_start` into `mem` (with their index entries), the
/// records above `flushed_seq` only.
fn replay_log(
    storage: &dyn Storage,
    replay: &[u64],
    log_start: (u64, u64),
    flushed_seq: SeqNo,
    mem: &Memtable,
    indexes: &IndexSet,
) -> Result<()> {
    for (i, &seg) in replay.iter().enumerate() {
        let start = if seg == log_start.0 { log_start.1 } else { 0 };
        let is_last = i + 1 == replay.len();
        let end = vlog::replay_segment(storage, seg, start, is_last, |r| {
            if r.seq > flushed_seq {
                if r.kind == Kind::Put {
                    let _ =
                        derive_entries(mem, indexes.of(r.nsid), &r.key, &r.value, r.addr, r.seq);
                }
                let mut user = Vec::with_capacity(4 + r.key.len());
                user.extend_from_slice(&r.nsid.to_be_bytes());
                user.extend_from_slice(&r.key);
                mem.insert(
                    &user,
                    r.seq,
                    MemValue {
                        kind: r.kind,
                        value: r.value,
                        addr: r.addr,
                    },
                );
            }
            Ok(())
        })?;
        if end.dropped > 0 {
            // Cut off, durably, before anything is written after it: left in place, a torn
            // tail would be read by value-log GC once the segment is sealed, and a tail
            // brought back by a later crash would sit before newer segments.
            let name = vlog::segment_name(seg);
            if end.intact_after {
                keep_aside(storage, &name, end.end)?;
            }
            storage.truncate_file(&name, end.end).ctx(&name)?;
            tracing::warn!(
                segment = seg,
                end = end.end,
                bytes = end.dropped,
                "cut off a torn or damaged value-log tail"
            );
        }
    }
    Ok(())
}

/// Copies what recovery drops of segment `name` from `end` on to `name` +
/// [`DAMAGED_SUFFIX`], durably, before the cut: intact records followed the damage, and if
/// the damage was rot in synced bytes rather than a crash's hole, they are acknowledged
/// writes. Recovery keeps a prefix of the log either way; the copy loses nothing for an
/// administrator to look at. Nothing reads it; deleting it is the administrator's call.
fn keep_aside(storage: &dyn Storage, name: &str, end: u64) -> Result<()> {
    let f = storage.open(name).ctx(name)?;
    let len = f.len().ctx(name)?;
    let tail = usize::try_from(len - end)
        .map_err(|_| Error::corruption(name, end, "tail too large to keep aside"))?;
    let bytes = f
        .read_at(end, tail, crate::storage::IoPurpose::Log)
        .ctx(name)?;
    let aside = format!("{name}.{end}{DAMAGED_SUFFIX}");
    let w = storage.create(&aside).ctx(&aside)?;
    w.append(&bytes, crate::storage::IoPurpose::Log)
        .ctx(&aside)?;
    w.sync().ctx(&aside)?;
    storage.sync_dir().ctx("database directory")?;
    tracing::error!(
        segment = name,
        offset = end,
        kept_in = aside,
        bytes = len - end,
        "damage in the value log's last segment with intact records after it: recovery keeps \
         the writes before it, the bytes from it on are kept aside"
    );
    Ok(())
}

/// The suffix of the copy of a value-log tail recovery dropped past damage
/// (`NNNNNN.vlog.OFFSET.damaged`).
pub const DAMAGED_SUFFIX: &str = ".damaged";

/// Deletes the `empty` segments, which the new manifest no longer replays.
fn delete_empty_segments(storage: &dyn Storage, empty: &[u64]) {
    for &seg in empty {
        let name = vlog::segment_name(seg);
        match storage.delete(&name) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(file = %name, error = %e, "could not delete an empty segment"),
        }
    }
}

#[cfg(test)]
#[path = "recovery_memory_tests.rs"]
mod memory_tests;
