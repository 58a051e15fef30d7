//! The chunk index of one namespace: each distinct chunk with its reference count, and each
//! key's recipe (the chunks its current value is made of), so that an overwrite or a delete
//! drops exactly the references the old value took.
//!
//! Indexes are per namespace: a chunk two tenants both store counts once in each. Sharing
//! chunks across tenants would let one tenant learn, by timing or by the ratio, whether
//! another stores a given piece of data.

use super::chunk::Digest;
use serde::Serialize;
use std::collections::HashMap;

struct Chunk {
    id: u32,
    len: u32,
    refs: u32,
}

#[derive(Default)]
pub struct NsIndex {
    chunks: HashMap<Digest, Chunk>,
    /// Digest by chunk id; `None` for a free id (reused, in `free`).
    by_id: Vec<Option<Digest>>,
    free: Vec<u32>,
    /// Key -> chunk ids of its value, in order.
    recipes: HashMap<Box<[u8]>, Box<[u32]>>,
    logical_bytes: u64,
    logical_chunks: u64,
    unique_bytes: u64,
}

/// What one namespace's values hold, and what deduplication would leave of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct NsDedupStats {
    /// Keys whose value is indexed.
    pub keys: u64,
    /// Chunks of all values.
    pub chunks: u64,
    /// Distinct chunks (by digest) among them.
    pub unique_chunks: u64,
    /// Bytes of all values: what they take without deduplication.
    pub logical_bytes: u64,
    /// Bytes of the distinct chunks: what the values would take deduplicated.
    pub unique_bytes: u64,
    /// `logical_bytes / unique_bytes` (1 when empty).
    pub dedup_ratio: f64,
}

impl NsIndex {
    /// Sets `key`'s value to the chunks `new` (`None`: the key is gone), dropping the
    /// references of what it held before.
    pub fn set(&mut self, key: &[u8], new: Option<&[(Digest, u32)]>) {
        if let Some(old) = self.recipes.remove(key) {
            for &id in old.iter() {
                self.unref(id);
            }
        }
        let Some(new) = new else { return };
        let ids: Box<[u32]> = new.iter().map(|&(d, len)| self.add_ref(d, len)).collect();
        self.recipes.insert(key.into(), ids);
    }

    fn add_ref(&mut self, d: Digest, len: u32) -> u32 {
        self.logical_chunks += 1;
        if let Some(c) = self.chunks.get_mut(&d) {
            // The stored length, not `len`: `unref` takes back exactly what was added, even
            // where a digest arrives with two lengths (a collision, or a crafted index file).
            self.logical_bytes += u64::from(c.len);
            c.refs += 1;
            return c.id;
        }
        self.logical_bytes += u64::from(len);
        let id = match self.free.pop() {
            Some(id) => {
                self.by_id[id as usize] = Some(d);
                id
            }
            None => {
                self.by_id.push(Some(d));
                (self.by_id.len() - 1) as u32
            }
        };
        self.unique_bytes += u64::from(len);
        self.chunks.insert(d, Chunk { id, len, refs: 1 });
        id
    }

    fn unref(&mut self, id: u32) {
        let Some(d) = self.by_id.get(id as usize).copied().flatten() else {
            return;
        };
        let Some(c) = self.chunks.get_mut(&d) else {
            return;
        };
        self.logical_bytes -= u64::from(c.len);
        self.logical_chunks -= 1;
        c.refs -= 1;
        if c.refs == 0 {
            self.unique_bytes -= u64::from(c.len);
            self.chunks.remove(&d);
            self.by_id[id as usize] = None;
            self.free.push(id);
        }
    }

    pub fn stats(&self) -> NsDedupStats {
        NsDedupStats {
            keys: self.recipes.len() as u64,
            chunks: self.logical_chunks,
            unique_chunks: self.chunks.len() as u64,
            logical_bytes: self.logical_bytes,
            unique_bytes: self.unique_bytes,
            dedup_ratio: ratio(self.logical_bytes, self.unique_bytes),
        }
    }

    /// Each key with its chunks (digest, length).
    #[cfg(test)]
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], Vec<(Digest, u32)>)> + '_ {
        self.recipes.iter().map(|(k, ids)| {
            let chunks = ids
                .iter()
                .filter_map(|&id| {
                    let d = self.by_id.get(id as usize).copied().flatten()?;
                    Some((d, self.chunks.get(&d)?.len))
                })
                .collect();
            (k.as_ref(), chunks)
        })
    }

    /// Drops every key's recipe: an index whose counts agree with its recipes ends empty.
    pub fn clear_keys(&mut self) {
        let keys: Vec<Box<[u8]>> = self.recipes.keys().cloned().collect();
        for k in keys {
            self.set(&k, None);
        }
    }

    /// Each distinct chunk and its reference count.
    #[cfg(test)]
    pub fn refcounts(&self) -> HashMap<Digest, u32> {
        self.chunks.iter().map(|(d, c)| (*d, c.refs)).collect()
    }
}

impl NsIndex {
    /// Appends the index: its distinct chunks (digest, length), then each key with the
    /// positions of its chunks in that list.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut dense = vec![u32::MAX; self.by_id.len()];
        let live: Vec<(usize, &Digest)> = self
            .by_id
            .iter()
            .enumerate()
            .filter_map(|(i, d)| Some((i, d.as_ref()?)))
            .collect();
        put_u32(out, live.len() as u32);
        for (n, (id, d)) in live.iter().enumerate() {
            dense[*id] = n as u32;
            out.extend_from_slice(*d);
            put_u32(out, self.chunks.get(*d).map_or(0, |c| c.len));
        }
        put_u32(out, self.recipes.len() as u32);
        for (k, ids) in &self.recipes {
            put_u32(out, k.len() as u32);
            out.extend_from_slice(k);
            put_u32(out, ids.len() as u32);
            for &id in ids.iter() {
                put_u32(out, dense[id as usize]);
            }
        }
    }

    /// Reads what [`NsIndex::encode`] wrote; `None` if the bytes do not hold one.
    pub fn decode(r: &mut Reader<'_>) -> Option<NsIndex> {
        let n = r.u32()? as usize;
        let mut table = Vec::with_capacity(n.min(r.remaining() / 24));
        for _ in 0..n {
            let d: Digest = r.bytes(20)?.try_into().ok()?;
            table.push((d, r.u32()?));
        }
        let keys = r.u32()?;
        let mut ix = NsIndex::default();
        let mut chunks = Vec::new();
        for _ in 0..keys {
            let klen = r.u32()? as usize;
            let key = r.bytes(klen)?;
            let m = r.u32()? as usize;
            chunks.clear();
            for _ in 0..m {
                chunks.push(*table.get(r.u32()? as usize)?);
            }
            ix.set(key, Some(&chunks));
        }
        Some(ix)
    }
}

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Reads a byte string front to back; every read checks the length left.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    pub fn u8(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }

    pub fn remaining(&self) -> usize {
        self.0.len()
    }
}

pub fn ratio(logical: u64, unique: u64) -> f64 {
    if unique == 0 {
        1.0
    } else {
        logical as f64 / unique as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(b: u8) -> Digest {
        [b; 20]
    }

    #[test]
    fn overwrites_and_deletes_drop_their_references() {
        let mut ix = NsIndex::default();
        ix.set(b"a", Some(&[(d(1), 128), (d(1), 128), (d(2), 10)]));
        ix.set(b"b", Some(&[(d(2), 10)]));
        let s = ix.stats();
        assert_eq!((s.keys, s.chunks, s.unique_chunks), (2, 4, 2));
        assert_eq!((s.logical_bytes, s.unique_bytes), (276, 138));
        assert_eq!(ix.refcounts()[&d(1)], 2);
        // Overwrite: a's chunks go, its new one comes.
        ix.set(b"a", Some(&[(d(3), 5)]));
        assert!(!ix.refcounts().contains_key(&d(1)));
        assert_eq!(ix.refcounts()[&d(2)], 1);
        ix.set(b"b", None);
        ix.set(b"a", None);
        assert_eq!(
            ix.stats(),
            NsDedupStats {
                dedup_ratio: 1.0,
                ..NsDedupStats::default()
            }
        );
        // Freed ids are reused and still resolve to the right digests.
        ix.set(b"c", Some(&[(d(9), 1), (d(8), 2)]));
        let e: Vec<_> = ix.entries().collect();
        assert_eq!(e[0].1, vec![(d(9), 1), (d(8), 2)]);
        // Encoded and decoded: the same keys, chunks and counts.
        ix.set(b"e", Some(&[(d(8), 2), (d(7), 3)]));
        let mut buf = Vec::new();
        ix.encode(&mut buf);
        let back = NsIndex::decode(&mut Reader(&buf)).unwrap();
        assert_eq!(back.stats(), ix.stats());
        assert_eq!(back.refcounts(), ix.refcounts());
        for cut in 0..buf.len() {
            assert!(NsIndex::decode(&mut Reader(&buf[..cut])).is_none());
        }
    }
}
