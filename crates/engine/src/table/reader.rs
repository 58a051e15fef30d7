//! Reads tables: point lookups through filter and index, and ordered iteration.

use super::block::{Block, BlockIter};
use super::cache::{BlockCache, Cached};
use super::format::{
    decode_nstable, table_name, BlockHandle, Footer, NsRange, BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use super::meta_blocks::{filter_allows, MetaBlocks};
use crate::error::{Error, IoContext, Result};
use crate::key::{cmp_ikey, split_ikey, IndexValue, Kind, SeqNo};
use crate::stats::Counters;
use crate::storage::{IoPurpose, RandomAccessFile, Storage};
use bytes::Bytes;
use std::sync::Arc;

pub struct TableReader {
    id: u64,
    name: String,
    file: Arc<dyn RandomAccessFile>,
    footer: Footer,
    nstable: Vec<NsRange>,
    cache: Arc<BlockCache>,
    meta: MetaBlocks,
    counters: Arc<Counters>,
}

/// Which of a table's block ends [`TableReader::block_ends_within`] gives.
#[derive(Clone, Copy, Debug)]
pub enum Ends {
    All,
    First(usize),
    Last(usize),
}

/// A point lookup's answer: the newest visible version's seqno, kind and index value.
pub type Found = (SeqNo, Kind, IndexValue);

impl TableReader {
    pub fn open(
        storage: &dyn Storage,
        id: u64,
        cache: Arc<BlockCache>,
        counters: Arc<Counters>,
    ) -> Result<TableReader> {
        let name = table_name(id);
        let file = storage.open(&name).ctx(&name)?;
        let len = file.len().ctx(&name)?;
        if len < FOOTER_LEN as u64 {
            return Err(Error::corruption(&name, 0, "file shorter than a footer"));
        }
        let raw = file
            .read_at(len - FOOTER_LEN as u64, FOOTER_LEN, IoPurpose::Index)
            .ctx(&name)?;
        counters.read(IoPurpose::Index, len - FOOTER_LEN as u64, raw.len());
        let footer = Footer::decode(&raw)
            .map_err(|e| Error::corruption(&name, len - FOOTER_LEN as u64, e))?;
        let mut reader = TableReader {
            id,
            name,
            file,
            footer,
            nstable: Vec::new(),
            meta: MetaBlocks::new(id, cache.clone()),
            cache,
            counters,
        };
        let ns = reader.read_block(footer.nstable, IoPurpose::Index, &reader.counters)?;
        reader.nstable = decode_nstable(&ns).ok_or_else(|| {
            Error::corruption(&reader.name, footer.nstable.offset, "bad namespace table")
        })?;
        Ok(reader)
    }

    /// Per namespace in the table: its key range and entry count.
    pub fn nstable(&self) -> &[NsRange] {
        &self.nstable
    }

    /// The table's file number.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether the NSTable allows `key` of namespace `ns` to be in this table.
    pub fn ns_may_contain(&self, ns: crate::key::Nsid, key: &[u8]) -> bool {
        match self.nstable.binary_search_by_key(&ns, |r| r.nsid) {
            Ok(i) => {
                let r = &self.nstable[i];
                r.min_key.as_slice() <= key && key <= r.max_key.as_slice()
            }
            Err(_) => false,
        }
    }

    /// Reads a block and checks its crc; the read is counted in `c`.
    fn read_block(&self, h: BlockHandle, purpose: IoPurpose, c: &Counters) -> Result<Bytes> {
        let len = h.len as usize + BLOCK_TRAILER_LEN;
        let mut buf = self.file.read_at(h.offset, len, purpose).ctx(&self.name)?;
        c.read(purpose, h.offset, len);
        let stored = crate::coding::get_u32(&buf, h.len as usize).unwrap_or(0);
        if crc32c::crc32c(&buf[..h.len as usize]) != stored {
            let what = format!("{} block checksum mismatch", purpose.name());
            return Err(Error::corruption(&self.name, h.offset, what));
        }
        buf.truncate(h.len as usize);
        Ok(Bytes::from(buf))
    }

    fn filter(&self, c: &Counters) -> Result<Option<Bytes>> {
        if self.footer.filter.len == 0 {
            return Ok(None);
        }
        let read = || self.read_block(self.footer.filter, IoPurpose::Filter, c);
        self.meta.filter(c, read).map(Some)
    }

    /// The index block (cached if `fill_cache`, when the cache holds index blocks).
    pub(super) fn index(&self, c: &Counters, fill_cache: bool) -> Result<Block> {
        self.meta.index(c, fill_cache, || {
            let raw = self.read_block(self.footer.index, IoPurpose::Index, c)?;
            Block::new(raw).ok_or_else(|| self.bad_index())
        })
    }

    /// The table's point index, if it has one and readers keep their meta blocks.
    pub fn point_index(&self, c: &Counters) -> Option<&super::point_index::PointIndex> {
        let h = self.footer.point;
        self.meta.point(u64::from(h.len), || match h.len {
            0 => Ok(None),
            _ => self.read_block(h, IoPurpose::Filter, c).map(Some),
        })
    }

    /// Asks for the lines a probe for the key of `hash` reads first, in the filter and the
    /// point index the reader keeps (`filter::prefetch`): nothing is read or counted.
    pub fn prefetch_probe(&self, hash: u64) {
        if let Some(kept) = self.meta.kept_filter() {
            super::filter::prefetch(kept, hash);
        }
        if let Some(p) = self.meta.kept_point() {
            p.prefetch(hash);
        }
    }

    /// Asks the filter whether `user` (`nsid ++ key`, hashed as `hash`) may be here; reads
    /// are counted in `c`.
    pub fn may_contain(&self, hash: u64, c: &Counters) -> Result<bool> {
        if let Some(kept) = self.meta.kept_filter() {
            return Ok(filter_allows(Some(kept), hash, c));
        }
        Ok(filter_allows(self.filter(c)?.as_ref(), hash, c))
    }

    /// The table's filter and index block, read once for many probes in a row (a flush's
    /// batch of lookups, a batched get); the index block is cached if `fill_cache`.
    pub fn probe_blocks(&self, c: &Counters, fill_cache: bool) -> Result<(Option<Bytes>, Block)> {
        Ok((self.filter(c)?, self.index(c, fill_cache)?))
    }

    /// Whether `filter` (from [`TableReader::probe_blocks`]) may hold the key of `hash`.
    pub fn filter_allows(filter: Option<&Bytes>, hash: u64, c: &Counters) -> bool {
        filter_allows(filter, hash, c)
    }

    /// A data block by its encoded handle (an index entry's value).
    pub(super) fn data_block(
        &self,
        handle_bytes: &[u8],
        c: &Counters,
        fill_cache: bool,
    ) -> Result<Block> {
        let h = BlockHandle::decode(handle_bytes).ok_or_else(|| self.bad_handle())?;
        self.data_block_at(h, c, fill_cache)
    }

    /// A data block, from the cache or read (and cached if `fill_cache`).
    pub fn data_block_at(&self, h: BlockHandle, c: &Counters, fill_cache: bool) -> Result<Block> {
        if let Some(Cached::Data(b)) = self.cache.get(self.id, h.offset) {
            return Ok(b);
        }
        let raw = self.read_block(h, IoPurpose::Data, c)?;
        let b = Block::new(raw)
            .ok_or_else(|| Error::corruption(&self.name, h.offset, "bad data block"))?;
        if fill_cache {
            self.cache
                .insert(self.id, h.offset, Cached::Data(b.clone()));
        }
        Ok(b)
    }

    /// The user keys (without the namespace) of namespace `ns` that end the table's data
    /// blocks from the first whose last key is `>= start` up to (not including) the first that
    /// ends at or past `end` (found by a seek in the index block, cached as a get's), in
    /// order, those `keep` says: each splits the namespace's entries in the table at a block,
    /// which a walk that wants pieces of a range in order can start from.
    pub fn block_ends_within(
        &self,
        ns: crate::key::Nsid,
        start: &[u8],
        end: Option<&[u8]>,
        keep: Ends,
        c: &Counters,
    ) -> Result<Vec<Vec<u8>>> {
        if !self.nstable.iter().any(|r| r.nsid == ns) {
            return Ok(Vec::new());
        }
        let index = self.index(c, true)?;
        let mut it = index.iter();
        let first_of = |ns: crate::key::Nsid, user: &[u8]| {
            let mut k = crate::key::user_part(ns, user);
            crate::key::push_trailer(&mut k, crate::key::MAX_SEQ, crate::key::Kind::Put);
            k
        };
        let target = first_of(ns, start);
        // The last `n` ends before `end` (or the namespace's end): from `n` entries back, not
        // from `start` (a big index has thousands of blocks, and a ranked walk asks often).
        let until = match (keep, end) {
            (Ends::Last(n), Some(e)) => Some((first_of(ns, e), n)),
            (Ends::Last(n), None) => ns.checked_add(1).map(|next| (first_of(next, &[]), n)),
            _ => None,
        };
        match until {
            Some((until, n)) => {
                it.seek_back(&until, n, cmp_ikey);
                if it.valid() && cmp_ikey(it.key(), &target) == std::cmp::Ordering::Less {
                    it.seek(&target, cmp_ikey);
                }
            }
            None => it.seek(&target, cmp_ikey),
        }
        let mut out = std::collections::VecDeque::<Vec<u8>>::new();
        while it.valid() {
            let user = crate::key::ikey_user(it.key());
            let Some(key) = user.get(crate::key::NSID_LEN..) else {
                break;
            };
            if crate::key::ikey_nsid(user) != ns || end.is_some_and(|e| key >= e) {
                break;
            }
            match keep {
                Ends::First(n) if out.len() >= n => break,
                // The buffer of the end let go holds the next one.
                Ends::Last(n) if out.len() >= n => match out.pop_front() {
                    Some(mut b) => {
                        b.clear();
                        b.extend_from_slice(key);
                        out.push_back(b);
                    }
                    None => break,
                },
                _ => out.push_back(key.to_vec()),
            }
            it.advance();
        }
        match it.corrupt() {
            true => Err(self.bad_index()),
            false => Ok(out.into()),
        }
    }

    fn bad_index(&self) -> Error {
        Error::corruption(&self.name, self.footer.index.offset, "bad index block")
    }

    fn bad_handle(&self) -> Error {
        Error::corruption(&self.name, self.footer.index.offset, "bad block handle")
    }

    /// The newest version of `user` at or below the seqno in `seek` (an internal key made by
    /// `key::seek_key`). The filter is not consulted; call `may_contain` first.
    pub fn get(&self, user: &[u8], seek: &[u8], c: &Counters) -> Result<Option<Found>> {
        if let Some(index) = self.meta.kept_index() {
            return self.get_in(index, user, seek, c, true);
        }
        let index = self.index(c, true)?;
        self.get_in(&index, user, seek, c, true)
    }

    /// [`TableReader::get`] with the table's index block at hand; the data block read goes
    /// into the cache if `fill_cache`.
    pub fn get_in(
        &self,
        index: &Block,
        user: &[u8],
        seek: &[u8],
        c: &Counters,
        fill_cache: bool,
    ) -> Result<Option<Found>> {
        match self.block_for(index, seek)? {
            Some(h) => {
                let block = self.data_block_at(h, c, fill_cache)?;
                self.find_in(&block, user, seek)
            }
            None => Ok(None),
        }
    }

    /// The data block of this table that may hold `seek` (`None`: past the table's last key),
    /// found in its index block `index`.
    pub fn block_for(&self, index: &Block, seek: &[u8]) -> Result<Option<BlockHandle>> {
        let mut ii = index.iter();
        ii.seek(seek, cmp_ikey);
        if !ii.valid() {
            self.check(&ii, None)?;
            return Ok(None);
        }
        let h = BlockHandle::decode(ii.value_slice());
        h.map(Some).ok_or_else(|| self.bad_handle())
    }

    /// The newest version of `user` at or below the seqno in `seek` in data block `block` (the
    /// one [`TableReader::block_for`] gave).
    pub fn find_in(&self, block: &Block, user: &[u8], seek: &[u8]) -> Result<Option<Found>> {
        let mut it = block.iter();
        it.seek_point(seek, super::block::key_hash(user), cmp_ikey);
        if !it.valid() {
            return self.check(&it, None);
        }
        let (u, seq, kind) = split_ikey(it.key())
            .ok_or_else(|| Error::corruption(&self.name, 0, "malformed key in data block"))?;
        if u != user {
            return Ok(None);
        }
        self.decode_entry(seq, kind, &it.value()).map(Some)
    }

    fn check(&self, it: &BlockIter, v: Option<Found>) -> Result<Option<Found>> {
        if it.corrupt() {
            return Err(Error::corruption(&self.name, 0, "malformed block entry"));
        }
        Ok(v)
    }

    pub fn decode_entry(&self, seq: SeqNo, kind: u8, value: &Bytes) -> Result<Found> {
        let kind = Kind::from_u8(kind)
            .ok_or_else(|| Error::corruption(&self.name, 0, "bad entry kind"))?;
        let iv = IndexValue::decode(value)
            .ok_or_else(|| Error::corruption(&self.name, 0, "bad index value"))?;
        Ok((seq, kind, iv))
    }

    /// The table file's name (for errors).
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// The counters the table's own reads go into.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_ikey;
    use crate::storage::MemStorage;
    use crate::table::{BlockCache, TableBuilder};

    /// Keys `k0000..k0299` of namespace 1, each with a put at seqno 10 and, for even keys, an
    /// older delete at seqno 5; small blocks so the table has many.
    fn entries() -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        for i in 0..300u32 {
            let k = format!("k{i:04}");
            v.push(make_ikey(1, k.as_bytes(), 10, Kind::Put));
            if i % 2 == 0 {
                v.push(make_ikey(1, k.as_bytes(), 5, Kind::Delete));
            }
        }
        v
    }

    fn open(keys: &[Vec<u8>]) -> Arc<TableReader> {
        let storage = MemStorage::new();
        let mut b = TableBuilder::new(&storage, 7, 128, 10).unwrap();
        for k in keys {
            let mut v = Vec::new();
            IndexValue::Tombstone.encode(&mut v);
            b.add(k, &v).unwrap();
        }
        b.finish().unwrap();
        Arc::new(
            TableReader::open(
                &storage,
                7,
                Arc::new(BlockCache::new(0)),
                Arc::new(Counters::default()),
            )
            .unwrap(),
        )
    }

    #[test]
    fn seek_lands_on_first_entry_not_below_target() {
        let keys = entries();
        let r = open(&keys);
        let mut targets: Vec<Vec<u8>> = keys.clone();
        for i in (0..300u32).step_by(7) {
            let k = format!("k{i:04}");
            // Between the two versions, above both, and between two user keys.
            targets.push(make_ikey(1, k.as_bytes(), 7, Kind::Put));
            targets.push(make_ikey(1, k.as_bytes(), 99, Kind::Put));
            targets.push(make_ikey(1, format!("{k}x").as_bytes(), 99, Kind::Put));
        }
        targets.push(make_ikey(0, b"zzz", 1, Kind::Put));
        targets.push(make_ikey(1, b"", 99, Kind::Put));
        targets.push(make_ikey(1, b"k9999", 1, Kind::Put));
        targets.push(make_ikey(2, b"", 99, Kind::Put));
        let mut it = r.iter().unwrap();
        // Targets in an order that moves the iterator backwards as well as forwards.
        for (n, t) in targets.iter().rev().enumerate() {
            it.seek(t).unwrap();
            let want = keys
                .iter()
                .position(|k| cmp_ikey(k, t) != std::cmp::Ordering::Less);
            match want {
                None => assert!(!it.valid(), "target {n} should be past the end"),
                Some(i) => {
                    assert!(it.valid(), "target {n} should find entry {i}");
                    assert_eq!(it.key(), keys[i].as_slice(), "target {n}");
                    if n % 10 == 0 {
                        // Walking on from a seek visits the rest in order.
                        let mut rest = 0;
                        while it.valid() {
                            assert_eq!(it.key(), keys[i + rest].as_slice());
                            rest += 1;
                            it.advance().unwrap();
                        }
                        assert_eq!(i + rest, keys.len());
                    }
                }
            }
        }
    }
}
