//! `Db::verify`: every table and value-log segment read back and every checksum checked, as
//! RocksDB's `sst_dump --verify_checksum` and SQLite's `integrity_check` do.

use crate::error::{Error, IoContext, Result};
use crate::key::{self, Nsid};
use crate::stats::Counters;
use crate::storage::Storage;
use crate::table::{BlockCache, IterConfig, TableReader};
use crate::version::Version;
use crate::vlog::{self, SegmentScan, SCAN_CHUNK};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// What [`crate::Db::verify`] read and what it found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Tables of the current version read whole.
    pub tables: usize,
    /// Entries in those tables.
    pub table_entries: u64,
    /// Value-log segments read whole.
    pub segments: usize,
    /// Records in those segments.
    pub records: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Each damage found: the file, the offset and what is wrong (one per file at most: a
    /// file is not read past its first damage).
    pub problems: Vec<String>,
}

impl VerifyReport {
    /// No damage found.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Reads every table of `version` and every value-log segment on `storage` up to `log_end`
/// (the writer's position, asked once the tables are read), checking every block's and
/// record's checksum, and that every table entry belongs to one of `owners` (the live,
/// destroyed and index ids the manifest held with `version`). Damage is reported, never
/// repaired; an I/O error other than corruption (the disk failing) ends the walk.
pub(super) fn verify(
    storage: &dyn Storage,
    version: &Version,
    owners: &HashSet<Nsid>,
    page_size: u64,
    log_end: impl FnOnce() -> (u64, u64),
) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    // Tables are read through a cache of their own: blocks another read left in the
    // shared cache must still be checked on the disk.
    let cache = Arc::new(BlockCache::new(0));
    let counters = Arc::new(Counters::new(page_size));
    let tables = version.levels.iter().flatten().chain(&version.runs);
    for table in tables {
        report.tables += 1;
        let mut ids = BTreeMap::new();
        let checked = TableReader::open(storage, table.id(), cache.clone(), counters.clone())
            .map(Arc::new)
            .and_then(|reader| walk_table(&reader, &counters, &mut ids));
        report.table_entries += ids.values().sum::<u64>();
        note(&mut report, checked)?;
        for (ns, n) in ids.into_iter().filter(|(ns, _)| !owners.contains(ns)) {
            report.problems.push(format!(
                "table {}: {n} entries of id {ns}, which no namespace or index owns",
                table.id()
            ));
        }
    }
    let (active, written) = log_end();
    let mut segments: Vec<u64> = storage
        .list()
        .ctx("database directory")?
        .iter()
        .filter_map(|n| vlog::parse_segment_name(n))
        .collect();
    segments.sort_unstable();
    for seg in segments.into_iter().filter(|s| *s <= active) {
        let mut scan = match SegmentScan::open(storage, seg, SCAN_CHUNK) {
            Ok(scan) => scan,
            // Collected by GC since the listing.
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                continue
            }
            Err(e) => {
                note(&mut report, Err(e))?;
                continue;
            }
        };
        if seg == active {
            scan.stop_at(written);
        }
        report.segments += 1;
        report.bytes += scan.len();
        let walked = (|| {
            while scan.next_record()?.is_some() {
                report.records += 1;
            }
            Ok(())
        })();
        note(&mut report, walked)?;
    }
    report.bytes += (0..crate::storage::IoPurpose::COUNT)
        .map(|p| counters.sum_of(|s| &s.read_bytes[p]))
        .sum::<u64>();
    Ok(report)
}

/// Reads every entry of `reader` (every data block, through the index block) and its filter;
/// `ids` gets the entries read per namespace (or index) id.
fn walk_table(
    reader: &Arc<TableReader>,
    counters: &Arc<Counters>,
    ids: &mut BTreeMap<Nsid, u64>,
) -> Result<()> {
    let config = IterConfig {
        fill_cache: false,
        readahead: None,
    };
    reader.may_contain(0, counters)?;
    let mut it = reader.iter_with(counters.clone(), &config)?;
    it.seek_to_first()?;
    while it.valid() {
        *ids.entry(key::ikey_nsid(it.key())).or_default() += 1;
        it.advance()?;
    }
    Ok(())
}

/// Records corruption in the report; any other error ends the walk.
fn note(report: &mut VerifyReport, r: Result<()>) -> Result<()> {
    match r {
        Err(e) if e.is_corruption() => {
            report.problems.push(e.to_string());
            Ok(())
        }
        r => r,
    }
}
