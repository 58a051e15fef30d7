//! Where a walk of an index in pieces may cut them (`Records::piece_bounds`): the keys that
//! end the tables' data blocks nearest the end the walk starts from.
//!
//! Each table gives its own ends nearest that end, at most `per_table` of them, and each
//! memtable as many of its sampled keys (about 64 keys apart: `memtable/key_samples.rs`),
//! which cut its entries as block ends cut a table's; pooled, they
//! cut the walk's range finely only as far as every table's given ends reach. A table whose
//! share was cut short (it gave all `per_table`) may have more ends past its last one, and
//! pieces past that point would hold its blocks whole (a table spread thin over the index's
//! keys gives ends far past a dense table's first few, and a piece between two of them held
//! most of the dense table). So the pooled ends stop at the nearest such last end: past it
//! the next ask, which starts there, takes the rest. Between two ends kept, each table holds
//! at most one block of entries, and each memtable about 64 keys.

use super::super_version::SuperVersion;
use crate::error::Result;
use crate::key::Nsid;
use crate::memtable::Memtable;
use crate::stats::Counters;
use crate::table::Ends;

/// Ends asked of all the tables at once, at most: `per_table` shrinks to fit.
const PIECE_BOUNDS_MAX: usize = 4096;

/// Keys of index `index` (without the namespace) that cut its entries into pieces of about
/// a table block each, in order: nearest the top (`from_top`) or the bottom, past `beyond`.
pub(super) fn piece_bounds(
    sv: &SuperVersion,
    index: Nsid,
    from_top: bool,
    beyond: Option<&[u8]>,
    per_table: usize,
    counters: &Counters,
) -> Result<Vec<Vec<u8>>> {
    let v = &sv.version;
    let tables: Vec<&std::sync::Arc<crate::version::TableHandle>> = v
        .levels
        .iter()
        .flatten()
        .chain(v.runs_of(index))
        .filter(|t| t.may_hold_namespace(index))
        .collect();
    let memtables: Vec<&Memtable> = std::iter::once(&*sv.mem)
        .chain(sv.imm.iter().map(|f| &*f.mem))
        .filter(|m| !m.is_empty())
        .collect();
    // Every table and memtable is asked (one left out would have its entries whole inside
    // pieces), each for fewer ends when there are many.
    let parts = tables.len() + memtables.len();
    let per = per_table.min(PIECE_BOUNDS_MAX / parts.max(1)).max(1);
    let (start, end, near) = match from_top {
        true => (&[][..], beyond, Ends::Last(per)),
        false => (beyond.unwrap_or_default(), None, Ends::First(per)),
    };
    let mut out: Vec<Vec<u8>> = Vec::new();
    // The nearest end past which a part cut short may have more.
    let mut stop: Option<Vec<u8>> = None;
    let mut keep = |ends: Vec<Vec<u8>>| {
        if ends.len() >= per {
            // In key order: the last of a walk from the top is the first.
            let last = match from_top {
                true => ends.first(),
                false => ends.last(),
            };
            if let Some(last) = last {
                let nearer = stop
                    .as_ref()
                    .is_none_or(|s| (last > s) == from_top && last != s);
                if nearer {
                    stop = Some(last.clone());
                }
            }
        }
        out.extend(ends);
    };
    for t in tables {
        keep(
            t.reader()?
                .block_ends_within(index, start, end, near, counters)?,
        );
    }
    // A memtable's sampled keys cut its entries as a table's block ends cut its blocks.
    for m in memtables {
        keep(m.sampled_keys(index, start, end, from_top, per));
    }
    if let Some(stop) = stop {
        out.retain(|b| match from_top {
            true => *b >= stop,
            false => *b <= stop,
        });
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}
