//! The table file's format: file names, the footer, block handles and the namespace table.

use crate::coding::{get_u32, get_u64, put_u32, put_u64, put_varint, Cursor};
use crate::key::Nsid;

pub const TABLE_MAGIC: u64 = 0x4342_5253_5441_424c; // "CBRSTABL"
/// Version 2: data blocks may carry a hash index (`block.rs`). Version 3: a point index block
/// (`point_index.rs`) may sit right before the index block, its length in the footer's
/// fourth word (0: none). Older tables are read as they are.
pub const TABLE_VERSION: u32 = 3;
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
    /// The point index block (`len` 0: none): it ends where the index block starts.
    pub point: BlockHandle,
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
        put_u32(&mut out, self.point.len);
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
        let index = h(12).ok_or_else(bad)?;
        let point_len = match version {
            3.. => get_u32(buf, 48).ok_or_else(bad)?,
            _ => 0,
        };
        let point = match point_len {
            0 => BlockHandle::default(),
            len => BlockHandle {
                offset: index
                    .offset
                    .checked_sub(u64::from(len) + BLOCK_TRAILER_LEN as u64)
                    .ok_or_else(|| "bad point index length".to_string())?,
                len,
            },
        };
        Ok(Footer {
            filter: h(0).ok_or_else(bad)?,
            index,
            nstable: h(24).ok_or_else(bad)?,
            entries: get_u64(buf, 36).ok_or_else(bad)?,
            point,
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
