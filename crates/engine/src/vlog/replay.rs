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
    let data = Bytes::from(crate::storage::read_all(storage, &name, IoPurpose::Log).ctx(&name)?);
    if data.len() < SEGMENT_HEADER_LEN as usize && is_last {
        // A segment created just before a crash may not even hold its header (open deletes
        // such a segment before it replays).
        return Ok(ReplayEnd {
            end: SEGMENT_HEADER_LEN,
            dropped: 0,
            intact_after: false,
        });
    }
    check_segment_header(&name, &data)?;
    let start = start.max(SEGMENT_HEADER_LEN) as usize;
    let mut pos = start;
    let mut batch_start = start;
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
                        offset: pos as u64,
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
                        pos as u64,
                        format!("bad value-log record ({e:?})"),
                    ));
                }
                // Intact records past the damage: a hole a crash left in unsynced pages, or
                // rot in synced ones (recovery cannot tell them apart; it keeps those bytes).
                let intact_after = (pos + 1..data.len()).any(|p| decode_record(&data[p..]).is_ok());
                return Ok(ReplayEnd {
                    end: batch_start as u64,
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
                batch_start as u64,
                "batch without its end in a closed segment",
            ));
        }
        return Ok(ReplayEnd {
            end: batch_start as u64,
            dropped: (data.len() - batch_start) as u64,
            intact_after: false,
        });
    }
    Ok(ReplayEnd {
        end: pos as u64,
        dropped: 0,
        intact_after: false,
    })
}
