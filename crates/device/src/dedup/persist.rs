//! The saved index: `CBDEDUP1`, the body's length and CRC-32C, then the body: the chunker,
//! each namespace's index, and the tasks that were still queued.

use super::chunk::{ChunkHash, Chunker, Chunking};
use super::index::{put_u32, NsIndex, Reader};
use super::work::DedupWork;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8; 8] = b"CBDEDUP1";

/// Each namespace's index, by namespace id.
type Indexes = HashMap<u32, NsIndex>;

pub fn save(
    chunker: Chunker,
    indexes: &Mutex<Indexes>,
    path: &Path,
    pending: &[DedupWork],
) -> std::io::Result<()> {
    let body = encode(chunker, indexes, pending);
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(MAGIC)?;
        f.write_all(&(body.len() as u64).to_le_bytes())?;
        f.write_all(&crc32c::crc32c(&body).to_le_bytes())?;
        f.write_all(&body)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// The body that [`decode`] reads: the chunker, each namespace's index, the queued tasks.
pub(crate) fn encode(chunker: Chunker, indexes: &Mutex<Indexes>, pending: &[DedupWork]) -> Vec<u8> {
    let mut body = Vec::new();
    put_chunker(&mut body, chunker);
    {
        let indexes = indexes.lock();
        put_u32(&mut body, indexes.len() as u32);
        for (ns, ix) in indexes.iter() {
            put_u32(&mut body, *ns);
            ix.encode(&mut body);
        }
    }
    put_u32(&mut body, pending.len() as u32);
    for w in pending {
        let (kind, ns, key) = match w {
            DedupWork::Key { ns, key } => (0u8, *ns, Some(key)),
            DedupWork::Scan { ns, after } => (1, *ns, after.as_ref()),
            DedupWork::Forget { ns } => (2, *ns, None),
        };
        body.push(kind);
        put_u32(&mut body, ns);
        body.push(key.is_some() as u8);
        if let Some(k) = key {
            put_u32(&mut body, k.len() as u32);
            body.extend_from_slice(k);
        }
    }
    body
}

pub(crate) fn put_chunker(body: &mut Vec<u8>, c: Chunker) {
    body.push(c.chunking as u8);
    body.push(c.hash as u8);
    put_u32(body, c.chunk_bytes);
}

/// `Ok(None)`: no file, or one made with another chunker.
pub fn load(path: &Path, chunker: Chunker) -> std::io::Result<Option<(Indexes, Vec<DedupWork>)>> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    if data.len() < 20 || &data[..8] != MAGIC {
        return Err(bad("not a dedup index (magic)"));
    }
    let len = u64::from_le_bytes(data[8..16].try_into().map_err(|_| bad("header"))?);
    let crc = u32::from_le_bytes(data[16..20].try_into().map_err(|_| bad("header"))?);
    let body = &data[20..];
    if body.len() as u64 != len {
        return Err(bad("truncated"));
    }
    if crc32c::crc32c(body) != crc {
        return Err(bad("checksum mismatch"));
    }
    decode(body, chunker).ok_or_else(|| bad("malformed body"))
}

/// The body after its checksum: `None` if malformed, `Some(None)` if made by another chunker.
pub(crate) fn decode(body: &[u8], chunker: Chunker) -> Option<Option<(Indexes, Vec<DedupWork>)>> {
    let mut r = Reader(body);
    let chunking = match r.u8()? {
        0 => Chunking::Fixed,
        1 => Chunking::Cdc,
        _ => return None,
    };
    let hash = match r.u8()? {
        0 => ChunkHash::Sha1,
        1 => ChunkHash::Xxh3,
        _ => return None,
    };
    let saved = Chunker {
        chunking,
        hash,
        chunk_bytes: r.u32()?,
    };
    if saved != chunker {
        return Some(None);
    }
    let mut indexes = Indexes::new();
    for _ in 0..r.u32()? {
        let ns = r.u32()?;
        indexes.insert(ns, NsIndex::decode(&mut r)?);
    }
    let n = r.u32()?;
    let mut pending = Vec::with_capacity((n as usize).min(r.remaining() / 6));
    for _ in 0..n {
        let kind = r.u8()?;
        let ns = r.u32()?;
        let key = match r.u8()? {
            0 => None,
            _ => {
                let len = r.u32()? as usize;
                Some(Bytes::copy_from_slice(r.bytes(len)?))
            }
        };
        pending.push(match (kind, key) {
            (0, Some(key)) => DedupWork::Key { ns, key },
            (1, after) => DedupWork::Scan { ns, after },
            (2, None) => DedupWork::Forget { ns },
            _ => return None,
        });
    }
    (r.remaining() == 0).then_some(Some((indexes, pending)))
}
