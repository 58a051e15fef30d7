//! Recovery's reading of the log: a segment's records of complete batches, in order.

use super::format::{check_segment_header, decode_record, segment_name};
use super::format::{RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use crate::error::{Error, IoContext, Result};
use crate::key::{Kind, Nsid, SeqNo, ValueAddr};
use crate::storage::{IoPurpose, Storage};
use bytes::Bytes;

/// A record recovered from the log, with its value as a slice of the segment.
pub struct ReplayedRecord {
    pub seq: SeqNo,
    pub nsid: Nsid,
    pub kind: Kind,
    pub key: Bytes,
    pub value: Bytes,
    pub addr: ValueAddr,
}

/// How a replayed segment ended.
#[derive(Debug, PartialEq, Eq)]
pub struct ReplayEnd {
    /// Offset just past the last complete batch.
    pub end: u64,
    /// Bytes past `end` that recovery must cut off: a torn or damaged tail, or a batch
    /// without its end (only in the last segment).
    pub dropped: u64,
    /// Intact records follow the damage in what was dropped.
    pub intact_after: bool,
}

/// Replays segment `id` from `start`, delivering records of complete batches in order.
/// In the last segment the log ends at the first bad record (what follows it is never
/// delivered, so recovery keeps a prefix of the writes); anywhere else a bad record is
/// corruption.
pub fn replay_segment(
    storage: &dyn Storage,
    id: u64,
    start: u64,
    is_last: bool,
    mut deliver: impl FnMut(ReplayedRecord) -> Result<()>,
) -> Result<ReplayEnd> {
    let name = segment_name(id);
    let file = storage.open(&name).ctx(&name)?;
    let len = file.len().ctx(&name)?;
    if len < SEGMENT_HEADER_LEN && is_last {
        // A segment created just before a crash may not even hold its header (open deletes
        // such a segment before it replays).
        return Ok(ReplayEnd {
            end: SEGMENT_HEADER_LEN,
            dropped: 0,
            intact_after: false,
        });
    }
    let head_len = SEGMENT_HEADER_LEN.min(len) as usize;
    check_segment_header(
        &name,
        &file.read_at(0, head_len, IoPurpose::Log).ctx(&name)?,
    )?;
    // Only from `start` on: what is before it is in tables. The values delivered are slices
    // of what is read, held until the memtable they fill is flushed: reading the whole
    // segment held all of it (up to `vlog_segment_bytes`) for a short unflushed tail.
    let base = start.max(SEGMENT_HEADER_LEN);
    let tail_len = usize::try_from(len.saturating_sub(base))
        .map_err(|_| Error::corruption(&name, base, "value-log segment too large to read"))?;
    let data = match tail_len {
        0 => Bytes::new(),
        n => Bytes::from(file.read_at(base, n, IoPurpose::Log).ctx(&name)?),
    };
    // Offsets in the segment of `data`'s positions.
    let at = |p: usize| base + p as u64;
    let mut pos = 0;
    let mut batch_start = 0;
    let mut pending: Vec<ReplayedRecord> = Vec::new();
    while pos < data.len() {
        match decode_record(&data[pos..]) {
            Ok((rec, len)) => {
                let key_at = pos + RECORD_HEADER_LEN;
                pending.push(ReplayedRecord {
                    seq: rec.seq,
                    nsid: rec.nsid,
                    kind: rec.kind,
                    key: data.slice(key_at..key_at + rec.key.len()),
                    value: data.slice(key_at + rec.key.len()..pos + len),
                    addr: ValueAddr {
                        segment: id,
                        offset: at(pos),
                        len: len as u32,
                    },
                });
                pos += len;
                if rec.batch_end {
                    for r in pending.drain(..) {
                        deliver(r)?;
                    }
                    batch_start = pos;
                }
            }
            Err(e) => {
                // Rolled segments are synced before the next one exists: damage there hit
                // synced bytes (bit rot), and dropping what follows would lose acknowledged
                // writes. In the last segment it is the unsynced tail a crash left (torn,
                // or a page that never reached the disk before a later one did): the log
                // ends at the last complete batch before it, whatever intact records follow.
                if !is_last {
                    return Err(Error::corruption(
                        &name,
                        at(pos),
                        format!("bad value-log record ({e:?})"),
                    ));
                }
                // Intact records past the damage: a hole a crash left in unsynced pages, or
                // rot in synced ones (recovery cannot tell them apart; it keeps those bytes).
                let intact_after = (pos + 1..data.len()).any(|p| decode_record(&data[p..]).is_ok());
                return Ok(ReplayEnd {
                    end: at(batch_start),
                    dropped: (data.len() - batch_start) as u64,
                    intact_after,
                });
            }
        }
    }
    if !pending.is_empty() {
        if !is_last {
            return Err(Error::corruption(
                &name,
                at(batch_start),
                "batch without its end in a closed segment",
            ));
        }
        return Ok(ReplayEnd {
            end: at(batch_start),
            dropped: (data.len() - batch_start) as u64,
            intact_after: false,
        });
    }
    Ok(ReplayEnd {
        end: at(pos),
        dropped: 0,
        intact_after: false,
    })
}
