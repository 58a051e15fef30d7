//! Find: the records meeting a filter, in pages bounded by a byte budget, each page ending
//! with a continuation the next call resumes from (the paper's IsIter).
//!
//! A continuation carries no snapshot: each page reads the namespace as it is when the page is
//! asked for, so a record written between pages shows up if its position is still ahead. It
//! names the namespace, the index it read (or the scan), the filter and projection it belongs
//! to, and a checksum: given with another namespace, another filter, or after its index was
//! dropped, it is refused with a clear error.

use super::exec::for_each_match;
use super::filter::Filter;
use super::matcher::Wants;
use super::plan::{Access, Plan};
use super::records::Records;
use super::result::QueryResult;
use super::stats::QueryStats;
use crate::coding::{put_varint, Cursor};
use crate::error::{Error, Result};
use crate::index::AttrPath;
use crate::key::Nsid;
use bytes::Bytes;

/// A page's default byte budget.
pub const DEFAULT_PAGE_BYTES: usize = 1 << 20;

const MAGIC: &[u8; 3] = b"CQ1";
/// The access id of a scan (index ids are namespace ids, never this).
const SCAN: Nsid = Nsid::MAX;

/// Where the next page of a find starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Continuation {
    /// The namespace the find reads.
    pub ns: Nsid,
    /// The index read, or `None` for a scan.
    pub index: Option<Nsid>,
    /// Of the filter and projection.
    pub fingerprint: u32,
    /// Records the limit still allows, if there is one.
    pub remaining: Option<u64>,
    /// The position of the last record returned.
    pub position: Vec<u8>,
}

impl Continuation {
    /// The bytes a page hands out: checksummed, decoded by [`decode`](Self::decode).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&self.ns.to_be_bytes());
        out.extend_from_slice(&self.index.unwrap_or(SCAN).to_be_bytes());
        out.extend_from_slice(&self.fingerprint.to_be_bytes());
        put_varint(&mut out, self.remaining.map_or(0, |r| r + 1));
        crate::coding::put_bytes(&mut out, &self.position);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Reads back what [`encode`](Self::encode) wrote; anything else is
    /// [`Error::InvalidQuery`].
    pub fn decode(buf: &[u8]) -> Result<Continuation> {
        let bad = || Error::InvalidQuery("not a continuation of this engine's queries".into());
        let (body, crc) = buf
            .split_at_checked(buf.len().wrapping_sub(4))
            .ok_or_else(bad)?;
        if buf.len() < MAGIC.len() + 16
            || &body[..3] != MAGIC
            || crc32c::crc32c(body).to_be_bytes() != crc
        {
            return Err(bad());
        }
        let u32_at =
            |i: usize| u32::from_be_bytes([body[i], body[i + 1], body[i + 2], body[i + 3]]);
        let (ns, index, fingerprint) = (u32_at(3), u32_at(7), u32_at(11));
        let mut c = Cursor::new(&body[15..]);
        let remaining = match c.varint().ok_or_else(bad)? {
            0 => None,
            r => Some(r - 1),
        };
        let position = c.bytes().ok_or_else(bad)?.to_vec();
        if !c.is_empty() {
            return Err(bad());
        }
        Ok(Continuation {
            ns,
            index: (index != SCAN).then_some(index),
            fingerprint,
            remaining,
            position,
        })
    }
}

/// Identifies a filter and projection, so a continuation is not used with others.
pub fn fingerprint(filter: &Filter, projection: Option<&[AttrPath]>) -> u32 {
    let text = format!("{filter:?}/{projection:?}");
    crc32c::crc32c(text.as_bytes())
}

/// One found record: its pk and its value (the projection's JSON, with a projection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The record's key.
    pub pk: Bytes,
    /// Its value, or the projection's JSON.
    pub value: Bytes,
}

/// What one page asks for.
pub struct PageRequest<'a> {
    /// The namespace read.
    pub ns: Nsid,
    /// What the records must meet.
    pub filter: &'a Filter,
    /// Attributes returned instead of whole values.
    pub projection: Option<&'a [AttrPath]>,
    /// Pks only, each with an empty value (no projection then): see
    /// [`FindOptions::keys_only`](crate::FindOptions::keys_only).
    pub keys_only: bool,
    /// Records this page may still return (a limit less those already returned).
    pub remaining: Option<u64>,
    /// Bytes of keys and values the page holds at most (at least one record).
    pub page_bytes: usize,
    /// Resume after this position.
    pub after: Option<&'a [u8]>,
}

/// Reads one page: records until the byte budget would be exceeded (at least one record per
/// page), the limit is reached, or none is left.
pub fn find_page(
    records: &mut dyn Records,
    plan: &Plan,
    req: &PageRequest<'_>,
    mut stats: QueryStats,
) -> Result<QueryResult<Vec<Found>>> {
    let limit = req.remaining;
    // Values as found, and every pk in one buffer, cut into each record's at the end (one
    // allocation for the page's pks).
    let room = limit.map_or(16, |l| l.min(1024) as usize);
    let mut values: Vec<(usize, Bytes)> = Vec::with_capacity(room);
    let mut pks: Vec<u8> = Vec::with_capacity(room * 16);
    // The position of the last record taken, in one buffer for the page.
    let (mut bytes, mut last): (usize, Vec<u8>) = (0, Vec::new());
    let mut full = false;
    if limit != Some(0) {
        for_each_match(
            records,
            req.filter,
            plan,
            req.after,
            limit,
            Wants {
                record: !req.keys_only,
                attrs: &[],
            },
            &mut stats,
            &mut |m| {
                let value = match (m.doc, req.projection) {
                    _ if req.keys_only => Bytes::new(),
                    (Some(doc), Some(p)) => Bytes::from(doc.project(p).to_string()),
                    (Some(doc), None) => doc.value().clone(),
                    (None, _) => return Err(Error::InvalidQuery("no record read".into())),
                };
                let size = m.pk.len() + value.len();
                if !values.is_empty() && bytes + size > req.page_bytes {
                    full = true;
                    return Ok(false);
                }
                bytes += size;
                pks.extend_from_slice(m.pk);
                values.push((pks.len(), value));
                last.clear();
                last.extend_from_slice(m.position);
                if limit.is_some_and(|l| values.len() as u64 >= l) {
                    return Ok(false);
                }
                Ok(true)
            },
        )?;
    }
    stats.bytes_returned += bytes as u64;
    let pks = Bytes::from(pks);
    let mut start = 0;
    let out: Vec<Found> = values
        .into_iter()
        .map(|(end, value)| {
            let pk = pks.slice(start..end);
            start = end;
            Found { pk, value }
        })
        .collect();
    let remaining = limit.map(|l| l - out.len() as u64);
    let more = full && remaining != Some(0);
    let continuation = match (more, out.is_empty()) {
        (true, false) => Some(
            Continuation {
                ns: req.ns,
                index: match &plan.access {
                    Access::Index { id, .. } => Some(*id),
                    Access::Scan => None,
                },
                fingerprint: fingerprint(req.filter, req.projection),
                remaining,
                position: last,
            }
            .encode(),
        ),
        _ => None,
    };
    Ok(QueryResult {
        value: out,
        continuation,
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuations_round_trip_and_refuse_garbage() {
        let c = Continuation {
            ns: 7,
            index: Some(9),
            fingerprint: 0xdead_beef,
            remaining: Some(0),
            position: b"pos\0ition".to_vec(),
        };
        let enc = c.encode();
        assert_eq!(Continuation::decode(&enc).unwrap(), c);
        let scan = Continuation {
            index: None,
            remaining: None,
            ..c.clone()
        };
        assert_eq!(Continuation::decode(&scan.encode()).unwrap(), scan);
        for cut in 0..enc.len() {
            assert!(Continuation::decode(&enc[..cut]).is_err());
        }
        let mut flipped = enc.clone();
        flipped[5] ^= 1;
        assert!(Continuation::decode(&flipped).is_err());
    }

    proptest::proptest! {
        #[test]
        fn decode_survives_garbage(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let _ = Continuation::decode(&data);
        }
    }
}
