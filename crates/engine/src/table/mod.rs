//! Tables: immutable sorted files of `(internal key, index value)` entries.
//!
//! Layout: `data block* ++ filter ++ index block ++ namespace table ++ footer (64 bytes)`.
//! Every block is followed by the crc32c of its bytes. The index block maps the last key of
//! each data block to its `(offset, size)`. The namespace table (NSTable) lists per namespace
//! the smallest and largest user key and the entry count.

pub mod block;
mod builder;
mod cache;
pub mod filter;
mod id_hash;
mod open_cache;
mod reader;

pub use builder::{TableBuilder, TableProps};
pub use cache::BlockCache;
pub use open_cache::{SegmentFiles, TableCache};
pub use reader::{IterConfig, TableIter, TableReader};

use crate::coding::{get_u32, get_u64, put_u32, put_u64, put_varint, Cursor};
use crate::key::Nsid;

pub const TABLE_MAGIC: u64 = 0x4342_5253_5441_424c; // "CBRSTABL"
/// Version 2: data blocks may carry a hash index (`block.rs`). Version 1 tables (without)
/// are read as they are.
pub const TABLE_VERSION: u32 = 2;
/// The oldest table version read.
pub const OLDEST_TABLE_VERSION: u32 = 1;
pub const FOOTER_LEN: usize = 64;
pub const BLOCK_TRAILER_LEN: usize = 4;

pub fn table_name(id: u64) -> String {
    format!("{id:06}.sst")
}

pub fn parse_table_name(name: &str) -> Option<u64> {
    name.strip_suffix(".sst")?.parse().ok()
}

/// Location of a block in a table file (length without the crc trailer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockHandle {
    pub offset: u64,
    pub len: u32,
}

impl BlockHandle {
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.offset);
        put_varint(out, u64::from(self.len));
    }

    pub fn decode(buf: &[u8]) -> Option<BlockHandle> {
        let mut c = Cursor::new(buf);
        Some(BlockHandle {
            offset: c.varint()?,
            len: u32::try_from(c.varint()?).ok()?,
        })
    }
}

/// The fixed-size end of a table file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footer {
    pub filter: BlockHandle,
    pub index: BlockHandle,
    pub nstable: BlockHandle,
    pub entries: u64,
}

impl Footer {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN);
        for h in [self.filter, self.index, self.nstable] {
            put_u64(&mut out, h.offset);
            put_u32(&mut out, h.len);
        }
        put_u64(&mut out, self.entries);
        put_u32(&mut out, TABLE_VERSION);
        put_u32(&mut out, 0);
        let crc = crc32c::crc32c(&out);
        put_u32(&mut out, crc);
        put_u64(&mut out, TABLE_MAGIC);
        debug_assert_eq!(out.len(), FOOTER_LEN);
        out
    }

    /// Decodes and checks a footer; the error says what is wrong.
    pub fn decode(buf: &[u8]) -> Result<Footer, String> {
        if buf.len() != FOOTER_LEN {
            return Err("short footer".into());
        }
        if get_u64(buf, 56) != Some(TABLE_MAGIC) {
            return Err("bad table magic".into());
        }
        if get_u32(buf, 52) != Some(crc32c::crc32c(&buf[..52])) {
            return Err("footer checksum mismatch".into());
        }
        let version = get_u32(buf, 44).unwrap_or(0);
        if !(OLDEST_TABLE_VERSION..=TABLE_VERSION).contains(&version) {
            return Err(format!("unsupported table version {version}"));
        }
        let h = |at: usize| -> Option<BlockHandle> {
            Some(BlockHandle {
                offset: get_u64(buf, at)?,
                len: get_u32(buf, at + 8)?,
            })
        };
        let bad = || "bad footer".to_string();
        Ok(Footer {
            filter: h(0).ok_or_else(bad)?,
            index: h(12).ok_or_else(bad)?,
            nstable: h(24).ok_or_else(bad)?,
            entries: get_u64(buf, 36).ok_or_else(bad)?,
        })
    }
}

/// One namespace's entry in a table's NSTable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NsRange {
    pub nsid: Nsid,
    pub min_key: Vec<u8>,
    pub max_key: Vec<u8>,
    pub count: u64,
}

pub fn encode_nstable(ranges: &[NsRange]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, ranges.len() as u64);
    for r in ranges {
        put_u32(&mut out, r.nsid);
        crate::coding::put_bytes(&mut out, &r.min_key);
        crate::coding::put_bytes(&mut out, &r.max_key);
        put_varint(&mut out, r.count);
    }
    out
}

pub fn decode_nstable(buf: &[u8]) -> Option<Vec<NsRange>> {
    let mut c = Cursor::new(buf);
    let n = c.varint_usize()?;
    let mut out = Vec::with_capacity(n.min(buf.len()));
    for _ in 0..n {
        out.push(NsRange {
            nsid: c.u32()?,
            min_key: c.bytes()?.to_vec(),
            max_key: c.bytes()?.to_vec(),
            count: c.varint()?,
        });
    }
    c.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_ikey, user_part, IndexValue, Kind, ValueAddr};
    use crate::stats::Counters;
    use crate::storage::{IoPurpose, MemStorage, Storage};
    use std::sync::Arc;

    fn addr(i: u64) -> IndexValue {
        IndexValue::Addr {
            addr: ValueAddr {
                segment: 1,
                offset: i * 100,
                len: 100,
            },
            inline: None,
        }
    }

    fn build(storage: &dyn Storage, n: u64) -> TableProps {
        build_shaped(storage, n, true)
    }

    fn build_shaped(storage: &dyn Storage, n: u64, hash_index: bool) -> TableProps {
        let mut b = TableBuilder::new(storage, 5, 512, 10)
            .unwrap()
            .with_hash_index(hash_index);
        for i in 0..n {
            let mut v = Vec::new();
            addr(i).encode(&mut v);
            let ns = if i < n / 2 { 1 } else { 2 };
            b.add(
                &make_ikey(ns, format!("k{i:06}").as_bytes(), 10, Kind::Put),
                &v,
            )
            .unwrap();
        }
        b.finish().unwrap()
    }

    #[test]
    fn build_then_get_iterate_and_seek() {
        let storage = MemStorage::new();
        let props = build(&storage, 1000);
        gets_iterates_and_seeks(&storage, props);
    }

    /// A table written by a build before data blocks had hash indexes (footer version 1)
    /// reads as before.
    #[test]
    fn a_version_1_table_reads_as_it_did() {
        let storage = MemStorage::new();
        let props = build_shaped(&storage, 1000, false);
        let name = table_name(5);
        let mut raw = crate::storage::read_all(&storage, &name, IoPurpose::Index).unwrap();
        let f = raw.len() - FOOTER_LEN;
        assert_eq!(get_u32(&raw, f + 44), Some(TABLE_VERSION));
        raw[f + 44..f + 48].copy_from_slice(&1u32.to_le_bytes());
        let crc = crc32c::crc32c(&raw[f..f + 52]);
        raw[f + 52..f + 56].copy_from_slice(&crc.to_le_bytes());
        storage.delete(&name).unwrap();
        storage
            .create(&name)
            .unwrap()
            .append(&raw, IoPurpose::Index)
            .unwrap();
        gets_iterates_and_seeks(&storage, props);
        // A version from after this build is refused, not misread.
        raw[f + 44..f + 48].copy_from_slice(&(TABLE_VERSION + 1).to_le_bytes());
        let crc = crc32c::crc32c(&raw[f..f + 52]);
        raw[f + 52..f + 56].copy_from_slice(&crc.to_le_bytes());
        assert!(Footer::decode(&raw[f..]).is_err());
    }

    fn gets_iterates_and_seeks(storage: &MemStorage, props: TableProps) {
        let storage = storage as &dyn Storage;
        assert_eq!(props.entries, 1000);
        let r = Arc::new(
            TableReader::open(
                storage,
                5,
                Arc::new(BlockCache::new(0)),
                Arc::new(Counters::default()),
            )
            .unwrap(),
        );
        assert_eq!(r.nstable().len(), 2);
        assert_eq!(r.nstable()[0].count, 500);
        assert_eq!(r.nstable()[1].min_key, b"k000500");
        for i in [0u64, 1, 499, 500, 999] {
            let ns = if i < 500 { 1 } else { 2 };
            let key = format!("k{i:06}");
            let user = user_part(ns, key.as_bytes());
            assert!(r
                .may_contain(filter::filter_hash(&user), &Counters::default())
                .unwrap());
            let seek = make_ikey(ns, key.as_bytes(), 20, Kind::Put);
            let (seq, kind, v) = r.get(&user, &seek, &Counters::default()).unwrap().unwrap();
            assert_eq!((seq, kind, v), (10, Kind::Put, addr(i)));
            // Not visible below its seqno.
            let old = make_ikey(ns, key.as_bytes(), 9, Kind::Put);
            assert_eq!(r.get(&user, &old, &Counters::default()).unwrap(), None);
        }
        let missing = user_part(1, b"k000500");
        let seek = make_ikey(1, b"k000500", 20, Kind::Put);
        assert_eq!(r.get(&missing, &seek, &Counters::default()).unwrap(), None);
        let mut it = r.iter().unwrap();
        it.seek_to_first().unwrap();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.advance().unwrap();
        }
        assert_eq!(n, 1000);
        assert!(r.ns_may_contain(1, b"k000499"));
        assert!(!r.ns_may_contain(1, b"k000500"));
        assert!(!r.ns_may_contain(3, b"k000001"));
    }

    #[test]
    fn flipped_bytes_are_reported() {
        let storage = MemStorage::new();
        let props = build(&storage, 300);
        let raw =
            crate::storage::read_all(&storage, &table_name(5), crate::storage::IoPurpose::Other)
                .unwrap();
        assert_eq!(raw.len() as u64, props.size);
        for at in (0..raw.len()).step_by(97) {
            let mut bad = raw.clone();
            bad[at] ^= 0x40;
            let s = MemStorage::new();
            s.create(&table_name(5))
                .unwrap()
                .append(&bad, crate::storage::IoPurpose::Other)
                .unwrap();
            let outcome = (|| -> crate::error::Result<usize> {
                let r = Arc::new(TableReader::open(
                    &s,
                    5,
                    Arc::new(BlockCache::new(0)),
                    Arc::new(Counters::default()),
                )?);
                let mut it = r.iter()?;
                it.seek_to_first()?;
                let mut n = 0;
                while it.valid() {
                    n += 1;
                    it.advance()?;
                }
                Ok(n)
            })();
            match outcome {
                Err(e) => assert!(e.is_corruption(), "flip at {at}: {e}"),
                // A flip in the filter leaves iteration intact; anything else must not.
                Ok(n) => assert_eq!(n, 300, "flip at {at} changed the data"),
            }
        }
    }

    #[test]
    fn footer_roundtrip_and_checks() {
        let f = Footer {
            filter: BlockHandle { offset: 1, len: 2 },
            index: BlockHandle { offset: 3, len: 4 },
            nstable: BlockHandle { offset: 5, len: 6 },
            entries: 7,
        };
        let b = f.encode();
        assert_eq!(Footer::decode(&b), Ok(f));
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 1;
            assert!(Footer::decode(&c).is_err());
        }
    }

    #[test]
    fn nstable_roundtrip() {
        let r = vec![NsRange {
            nsid: 9,
            min_key: b"a".to_vec(),
            max_key: b"z".to_vec(),
            count: 3,
        }];
        assert_eq!(decode_nstable(&encode_nstable(&r)), Some(r));
        assert_eq!(decode_nstable(&[5]), None);
    }

    proptest::proptest! {
        /// Bytes from storage never make a table decoder panic.
        #[test]
        fn decoders_survive_garbage(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = Footer::decode(&data);
            let _ = decode_nstable(&data);
            let _ = BlockHandle::decode(&data);
            let _ = IndexValue::decode(&bytes::Bytes::from(data.clone()));
            let _ = filter::may_contain(&data, 12345);
            if let Some(b) = block::Block::new(bytes::Bytes::from(data)) {
                let mut it = b.iter();
                it.seek_to_first();
                while it.advance() {}
                it.seek(b"key", crate::key::cmp_ikey);
            }
        }
    }
}
