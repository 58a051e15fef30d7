//! A table's point index: for each user key of the table, its newest version's value-log
//! address, found by the key's hash in one probe of an open-addressed array.
//!
//! A get that finds its key here reads the value record straight away: no index block search,
//! no block cache lookup, no data block. The record names its key, so the get checks the key
//! there; the index holds only a 32-bit fingerprint, and a fingerprint shared with another key
//! sends the get the long way (through the data block), which is always right.
//!
//! Block: `max_seq u64 ++ slots u32 ++ mask u32 ++ slot*`, each slot 16 bytes: `fingerprint
//! u32, segment u32, offset u32, len u32`, little-endian. A key's fingerprint is its hash's low
//! word under `mask` (all ones but in tests, which make fingerprints collide on purpose), low
//! bit set: a fingerprint of 0 is an empty slot. A slot with `len` 0 says "this key is here, read its
//! data block" (a tombstone, an inline or table-only value, or an address too wide for the
//! slot). A key lies in the first empty-or-matching slot from its bucket on, wrapping.
//! `max_seq` is the newest seqno in the table: a get at an older snapshot may want an older
//! version, and goes the long way.

use crate::coding::{get_u32, get_u64, put_u32, put_u64};
use crate::key::{Kind, ValueAddr};
use bytes::Bytes;

const HEADER_LEN: usize = 16;
const SLOT_LEN: usize = 16;
/// Slots per key, as a fraction: 4 in 3, so that a present key is found within a slot or two
/// of its bucket.
const SLOTS_PER_KEY: (usize, usize) = (4, 3);

/// What a table's point index says of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointProbe {
    /// Not in the table.
    Absent,
    /// In the table (or a key sharing its fingerprint is): read its data block.
    Long,
    /// Its value's record is here, if the fingerprint is the key's own: the reader checks the
    /// key the record names.
    Record(ValueAddr),
}

fn bucket(hash: u64, m: usize) -> usize {
    (((hash >> 32) * m as u64) >> 32) as usize
}

fn fingerprint(hash: u64, mask: u32) -> u32 {
    (hash as u32 & mask) | 1
}

/// The value-log address a table entry's value holds, when it holds one and nothing else.
fn log_addr(kind: Kind, value: &[u8]) -> Option<ValueAddr> {
    match kind {
        Kind::Put => crate::key::IndexValue::log_addr_only(value),
        _ => None,
    }
}

/// Collects a table's keys as the builder adds them.
pub struct PointIndexBuilder {
    mask: u32,
    /// Per user key: its hash, and the slot's last 12 bytes (all 0: the long way).
    keys: Vec<(u64, [u8; 12])>,
    /// Keys whose slot holds an address.
    direct: usize,
    max_seq: u64,
}

impl Default for PointIndexBuilder {
    fn default() -> Self {
        Self::with_fingerprint_bits(32)
    }
}

impl PointIndexBuilder {
    /// A builder whose fingerprints keep `bits` bits of the hash (32: all; fewer only in
    /// tests, so that keys share fingerprints and gets take the long way often).
    pub fn with_fingerprint_bits(bits: u32) -> Self {
        PointIndexBuilder {
            mask: u32::MAX
                .checked_shr(32 - bits.clamp(1, 32))
                .unwrap_or(u32::MAX),
            keys: Vec::new(),
            direct: 0,
            max_seq: 0,
        }
    }

    /// Adds the newest version of a user key (the first entry of each, in table order).
    pub fn add_key(&mut self, hash: u64, kind: Kind, value: &[u8]) {
        let mut slot = [0u8; 12];
        let addr = log_addr(kind, value).and_then(|a| {
            Some((
                u32::try_from(a.segment).ok().filter(|s| *s != u32::MAX)?,
                u32::try_from(a.offset).ok()?,
                a.len,
            ))
        });
        if let Some((seg, off, len)) = addr.filter(|a| a.2 > 0) {
            slot[..4].copy_from_slice(&seg.to_le_bytes());
            slot[4..8].copy_from_slice(&off.to_le_bytes());
            slot[8..].copy_from_slice(&len.to_le_bytes());
            self.direct += 1;
        }
        self.keys.push((hash, slot));
    }

    /// Notes an entry's seqno (every entry's).
    pub fn add_seq(&mut self, seq: u64) {
        self.max_seq = self.max_seq.max(seq);
    }

    /// The block, or `None` when under half the keys would find their record through it
    /// (a table of tombstones, small inline values or index entries: its filter does as well).
    pub fn finish(self) -> Option<Vec<u8>> {
        if self.keys.is_empty() || self.direct * 2 < self.keys.len() {
            return None;
        }
        let m = (self.keys.len() * SLOTS_PER_KEY.0).div_ceil(SLOTS_PER_KEY.1);
        let mut out = Vec::with_capacity(HEADER_LEN + m * SLOT_LEN);
        put_u64(&mut out, self.max_seq);
        put_u32(&mut out, m as u32);
        put_u32(&mut out, self.mask);
        out.resize(HEADER_LEN + m * SLOT_LEN, 0);
        for (hash, rest) in self.keys {
            let mut i = bucket(hash, m);
            loop {
                let at = HEADER_LEN + i * SLOT_LEN;
                if out[at..at + 4] == [0; 4] {
                    let fp = fingerprint(hash, self.mask);
                    out[at..at + 4].copy_from_slice(&fp.to_le_bytes());
                    out[at + 4..at + SLOT_LEN].copy_from_slice(&rest);
                    break;
                }
                i = (i + 1) % m;
            }
        }
        Some(out)
    }
}

/// A table's point index, read and checked.
pub struct PointIndex {
    data: Bytes,
    slots: usize,
    mask: u32,
    max_seq: u64,
}

impl PointIndex {
    /// `None` if the block is malformed.
    pub fn new(data: Bytes) -> Option<PointIndex> {
        let max_seq = get_u64(&data, 0)?;
        let slots = get_u32(&data, 8)? as usize;
        let mask = get_u32(&data, 12)?;
        if slots == 0 || mask == 0 || data.len() != HEADER_LEN + slots.checked_mul(SLOT_LEN)? {
            return None;
        }
        Some(PointIndex {
            data,
            slots,
            mask,
            max_seq,
        })
    }

    /// The newest seqno in the table: a get at an older snapshot cannot use the index.
    pub fn max_seq(&self) -> u64 {
        self.max_seq
    }

    /// Asks for the line of the slot [`PointIndex::probe`] reads first for `hash`, ahead of
    /// the probe (both ends: a slot of a buffer not aligned to 16 bytes may span two lines).
    pub fn prefetch(&self, hash: u64) {
        let at = HEADER_LEN + bucket(hash, self.slots) * SLOT_LEN;
        if let Some(slot) = self.data.get(at..at + SLOT_LEN) {
            crate::bloom::prefetch(slot);
        }
    }

    /// What the index says of the user key hashed as `hash` (`filter::filter_hash`).
    pub fn probe(&self, hash: u64) -> PointProbe {
        let want = fingerprint(hash, self.mask);
        let mut i = bucket(hash, self.slots);
        for _ in 0..self.slots {
            let at = HEADER_LEN + i * SLOT_LEN;
            let word = |k: usize| get_u32(&self.data, at + 4 * k).unwrap_or(0);
            match word(0) {
                0 => return PointProbe::Absent,
                fp if fp == want => {
                    let len = word(3);
                    return match len {
                        0 => PointProbe::Long,
                        _ => PointProbe::Record(ValueAddr {
                            segment: u64::from(word(1)),
                            offset: u64::from(word(2)),
                            len,
                        }),
                    };
                }
                _ => i = (i + 1) % self.slots,
            }
        }
        // A full array (a malformed block): it cannot say.
        PointProbe::Long
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::IndexValue;

    fn addr_value(segment: u64, offset: u64, len: u32) -> Vec<u8> {
        let mut v = Vec::new();
        IndexValue::Addr {
            addr: ValueAddr {
                segment,
                offset,
                len,
            },
            inline: None,
        }
        .encode(&mut v);
        v
    }

    fn hash(i: u64) -> u64 {
        crate::table::filter::filter_hash(format!("key{i}").as_bytes())
    }

    #[test]
    fn every_key_is_found_at_its_record_and_others_are_mostly_absent() {
        let mut b = PointIndexBuilder::default();
        for i in 0..1000u64 {
            b.add_key(
                hash(i),
                Kind::Put,
                &addr_value(i % 7, i * 100, 90 + i as u32),
            );
            b.add_seq(i + 5);
        }
        let p = PointIndex::new(Bytes::from(b.finish().unwrap())).unwrap();
        assert_eq!(p.max_seq(), 1004);
        for i in 0..1000u64 {
            let want = ValueAddr {
                segment: i % 7,
                offset: i * 100,
                len: 90 + i as u32,
            };
            assert_eq!(p.probe(hash(i)), PointProbe::Record(want), "key {i}");
        }
        let absent = (1000..11000u64)
            .filter(|i| p.probe(hash(*i)) == PointProbe::Absent)
            .count();
        // A 31-bit fingerprint: an absent key matches another's about never.
        assert_eq!(absent, 10000);
    }

    #[test]
    fn keys_it_cannot_point_at_are_sent_the_long_way() {
        let mut b = PointIndexBuilder::default();
        let mut inline = Vec::new();
        IndexValue::Addr {
            addr: ValueAddr {
                segment: 1,
                offset: 2,
                len: 3,
            },
            inline: Some(Bytes::from_static(b"abc")),
        }
        .encode(&mut inline);
        let mut tomb = Vec::new();
        IndexValue::Tombstone.encode(&mut tomb);
        b.add_key(hash(0), Kind::Put, &inline);
        b.add_key(hash(1), Kind::Delete, &tomb);
        b.add_key(hash(2), Kind::Put, &addr_value(u64::from(u32::MAX), 0, 10));
        b.add_key(hash(3), Kind::Put, &addr_value(1, 1 << 33, 10));
        for i in 4..10 {
            b.add_key(hash(i), Kind::Put, &addr_value(1, i, 10));
        }
        let p = PointIndex::new(Bytes::from(b.finish().unwrap())).unwrap();
        for i in 0..4 {
            assert_eq!(p.probe(hash(i)), PointProbe::Long, "key {i}");
        }
        assert!(matches!(p.probe(hash(4)), PointProbe::Record(_)));
    }

    #[test]
    fn fingerprints_of_few_bits_collide_and_still_find_every_key_or_say_so() {
        let mut b = PointIndexBuilder::with_fingerprint_bits(2);
        for i in 0..100u64 {
            b.add_key(hash(i), Kind::Put, &addr_value(1, i * 10, 5));
        }
        let p = PointIndex::new(Bytes::from(b.finish().unwrap())).unwrap();
        let mut others = 0;
        for i in 0..100u64 {
            match p.probe(hash(i)) {
                PointProbe::Record(a) if a.offset == i * 10 => {}
                // Another key's record: the reader finds it names another key.
                PointProbe::Record(_) => others += 1,
                x => panic!("key {i}: {x:?}"),
            }
        }
        assert!(others > 10, "{others}");
    }

    #[test]
    fn a_table_mostly_of_keys_it_cannot_point_at_gets_none() {
        let mut b = PointIndexBuilder::default();
        let mut tomb = Vec::new();
        IndexValue::Tombstone.encode(&mut tomb);
        for i in 0..3 {
            b.add_key(hash(i), Kind::Delete, &tomb);
        }
        b.add_key(hash(3), Kind::Put, &addr_value(1, 1, 10));
        assert!(b.finish().is_none());
        assert!(PointIndexBuilder::default().finish().is_none());
    }

    #[test]
    fn malformed_blocks_are_refused_and_a_full_one_cannot_say() {
        assert!(PointIndex::new(Bytes::new()).is_none());
        let mut b = vec![0u8; HEADER_LEN + 2 * SLOT_LEN];
        b[8] = 2;
        // No fingerprint mask.
        assert!(PointIndex::new(Bytes::from(b.clone())).is_none());
        b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        b[8] = 3;
        assert!(PointIndex::new(Bytes::from(b.clone())).is_none());
        b[8] = 2;
        // Both slots taken by other fingerprints: no empty slot ends the search.
        b[HEADER_LEN] = 2;
        b[HEADER_LEN + SLOT_LEN] = 4;
        let p = PointIndex::new(Bytes::from(b)).unwrap();
        assert_eq!(p.probe(hash(1) & !0xffff_ffff | 8), PointProbe::Long);
    }
}
