//! The value log's format: segment names and header, and how a record is encoded.

use crate::coding::{get_u32, get_u64, put_u32};
use crate::error::{Error, Result};
use crate::key::{Kind, Nsid, SeqNo};

pub const SEGMENT_MAGIC: [u8; 8] = *b"CBRSVLOG";
pub const SEGMENT_VERSION: u32 = 1;
pub const SEGMENT_HEADER_LEN: u64 = 16;
pub const RECORD_HEADER_LEN: usize = 29;
pub const FLAG_PUT: u8 = 1;
pub const FLAG_BATCH_END: u8 = 2;

pub fn segment_name(id: u64) -> String {
    format!("{id:06}.vlog")
}

pub fn parse_segment_name(name: &str) -> Option<u64> {
    name.strip_suffix(".vlog")?.parse().ok()
}

/// One decoded record, borrowing from the buffer it was read from.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    pub seq: SeqNo,
    pub nsid: Nsid,
    pub kind: Kind,
    pub batch_end: bool,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// Appends one record to `out`; returns its length.
pub fn encode_record(out: &mut Vec<u8>, rec: &Record<'_>) -> usize {
    let start = out.len();
    let len = encode_unstamped(out, rec);
    stamp_header(&mut out[start..start + RECORD_HEADER_LEN], rec.seq);
    len
}

/// Appends one record to `out` with its payload checksum but not its header's (see
/// [`stamp_header`]); returns its length.
fn encode_unstamped(out: &mut impl bytes::BufMut, rec: &Record<'_>) -> usize {
    out.put_slice(&unstamped_header(rec));
    out.put_slice(rec.key);
    out.put_slice(rec.value);
    RECORD_HEADER_LEN + rec.key.len() + rec.value.len()
}

/// A record's header with its payload checksum but not its own (see [`stamp_header`]):
/// `{header_crc u32 (zero), payload_crc u32, seqno u64, nsid u32, flags u8, key_len u32,
/// value_len u32}`, little-endian.
fn unstamped_header(rec: &Record<'_>) -> [u8; RECORD_HEADER_LEN] {
    let payload_crc = crc32c::crc32c_append(crc32c::crc32c(rec.key), rec.value);
    let mut flags = if rec.kind == Kind::Put { FLAG_PUT } else { 0 };
    if rec.batch_end {
        flags |= FLAG_BATCH_END;
    }
    let mut h = [0u8; RECORD_HEADER_LEN];
    h[4..8].copy_from_slice(&payload_crc.to_le_bytes());
    h[8..16].copy_from_slice(&rec.seq.to_le_bytes());
    h[16..20].copy_from_slice(&rec.nsid.to_le_bytes());
    h[20] = flags;
    h[21..25].copy_from_slice(&(rec.key.len() as u32).to_le_bytes());
    h[25..29].copy_from_slice(&(rec.value.len() as u32).to_le_bytes());
    h
}

/// Key and value lengths of a header this process encoded.
fn header_lens(h: &[u8]) -> (usize, usize) {
    let at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]) as usize;
    (at(21), at(25))
}

/// Writes seqno `seq` into the record header `h` and seals the header with its checksum.
fn stamp_header(h: &mut [u8], seq: SeqNo) {
    h[8..16].copy_from_slice(&seq.to_le_bytes());
    let crc = crc32c::crc32c(&h[8..RECORD_HEADER_LEN]);
    h[..4].copy_from_slice(&crc.to_le_bytes());
}

/// Where one record of an [`EncodedWrite`] sits in its buffer.
#[derive(Clone, Debug)]
pub struct RecordSpan {
    pub at: usize,
    pub len: usize,
    pub kind: Kind,
    pub key: std::ops::Range<usize>,
    pub value: std::ops::Range<usize>,
}

/// The records of one write (a put, a delete or a batch), encoded by the writer's own thread
/// before it joins a commit group; the group's leader stamps the seqnos (and with them the
/// header checksums: a header is sealed once, when its seqno is known).
#[derive(Default)]
pub struct EncodedWrite {
    pub nsid: Nsid,
    /// This write's alone until the memtable freezes it (`write_chunks`).
    pub buf: bytes::BytesMut,
    /// Records in `buf`; where each sits is read back from their headers ([`Self::spans`]),
    /// not kept beside them: one allocation less per put.
    records: usize,
    /// Bytes of the versions these records replace, as a capacity check found them: taken
    /// off what the memtable counts for the namespace.
    pub credit: u64,
    /// The seqno and flush epoch the credit's lookups read at (`None`: a credit that holds
    /// whatever was written since, a GC rewrite's): a write in between to one of its keys
    /// voids it.
    pub credit_at: Option<(u64, u64)>,
}

impl EncodedWrite {
    pub fn new(nsid: Nsid, ops: &[(Kind, &[u8], &[u8])]) -> Self {
        let total: usize = ops
            .iter()
            .map(|(_, k, v)| RECORD_HEADER_LEN + k.len() + v.len())
            .sum();
        let buf = super::write_chunks::encode_in(total, |buf| {
            for (i, (kind, key, value)) in ops.iter().enumerate() {
                let rec = Record {
                    seq: 0,
                    nsid,
                    kind: *kind,
                    batch_end: i + 1 == ops.len(),
                    key,
                    value,
                };
                encode_unstamped(buf, &rec);
            }
        });
        EncodedWrite {
            nsid,
            buf,
            records: ops.len(),
            credit: 0,
            credit_at: None,
        }
    }

    /// Number of records.
    pub fn records(&self) -> usize {
        self.records
    }

    /// Where each record sits, in order, read from the headers `new` wrote.
    pub fn spans(&self) -> Spans<'_> {
        Spans::over(&self.buf, self.records)
    }

    /// Gives the records seqnos `first..` and seals each header with its checksum.
    pub fn stamp(&mut self, first: SeqNo) {
        let mut at = 0;
        for i in 0..self.records {
            let h = &mut self.buf[at..at + RECORD_HEADER_LEN];
            let (key_len, value_len) = header_lens(h);
            let len = RECORD_HEADER_LEN + key_len + value_len;
            stamp_header(h, first + i as u64);
            at += len;
        }
    }
}

/// The spans of the first `records` records an [`EncodedWrite`] encoded in a buffer.
pub struct Spans<'a> {
    buf: &'a [u8],
    at: usize,
    left: usize,
}

impl<'a> Spans<'a> {
    /// The spans of `records` records encoded by [`EncodedWrite::new`] at the start of
    /// `buf` (its buffer, or that buffer moved elsewhere).
    pub fn over(buf: &'a [u8], records: usize) -> Self {
        Spans {
            buf,
            at: 0,
            left: records,
        }
    }
}

impl Iterator for Spans<'_> {
    type Item = RecordSpan;

    fn next(&mut self) -> Option<RecordSpan> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let at = self.at;
        let h = &self.buf[at..at + RECORD_HEADER_LEN];
        let kind = match h[20] & FLAG_PUT {
            0 => Kind::Delete,
            _ => Kind::Put,
        };
        let (key_len, value_len) = header_lens(h);
        let key_at = at + RECORD_HEADER_LEN;
        let len = RECORD_HEADER_LEN + key_len + value_len;
        self.at += len;
        Some(RecordSpan {
            at,
            len,
            kind,
            key: key_at..key_at + key_len,
            value: key_at + key_len..at + len,
        })
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The buffer ends inside the record.
    Short,
    /// The header checksum or a header field is wrong.
    BadHeader,
    /// Key or value do not match their checksum.
    BadPayload,
}

/// A header that checks out: `(seq, nsid, flags, key_len, value_len)`.
pub(super) fn decode_header(
    buf: &[u8],
) -> std::result::Result<(SeqNo, Nsid, u8, usize, usize), DecodeError> {
    if buf.len() < RECORD_HEADER_LEN {
        return Err(DecodeError::Short);
    }
    let stored = get_u32(buf, 0).ok_or(DecodeError::Short)?;
    if crc32c::crc32c(&buf[8..RECORD_HEADER_LEN]) != stored {
        return Err(DecodeError::BadHeader);
    }
    let seq = get_u64(buf, 8).ok_or(DecodeError::Short)?;
    let nsid = get_u32(buf, 16).ok_or(DecodeError::Short)?;
    let flags = buf[20];
    let key_len = get_u32(buf, 21).ok_or(DecodeError::Short)? as usize;
    let value_len = get_u32(buf, 25).ok_or(DecodeError::Short)? as usize;
    if flags & !(FLAG_PUT | FLAG_BATCH_END) != 0 || (flags & FLAG_PUT == 0 && value_len != 0) {
        return Err(DecodeError::BadHeader);
    }
    Ok((seq, nsid, flags, key_len, value_len))
}

/// Decodes the record at the start of `buf`; returns it and its length.
pub fn decode_record(buf: &[u8]) -> std::result::Result<(Record<'_>, usize), DecodeError> {
    let (seq, nsid, flags, key_len, value_len) = decode_header(buf)?;
    let total = RECORD_HEADER_LEN + key_len + value_len;
    if buf.len() < total {
        return Err(DecodeError::Short);
    }
    let key = &buf[RECORD_HEADER_LEN..RECORD_HEADER_LEN + key_len];
    let value = &buf[RECORD_HEADER_LEN + key_len..total];
    let stored = get_u32(buf, 4).ok_or(DecodeError::Short)?;
    if crc32c::crc32c_append(crc32c::crc32c(key), value) != stored {
        return Err(DecodeError::BadPayload);
    }
    let kind = if flags & FLAG_PUT != 0 {
        Kind::Put
    } else {
        Kind::Delete
    };
    let rec = Record {
        seq,
        nsid,
        kind,
        batch_end: flags & FLAG_BATCH_END != 0,
        key,
        value,
    };
    Ok((rec, total))
}

pub(super) fn segment_header() -> Vec<u8> {
    let mut h = SEGMENT_MAGIC.to_vec();
    put_u32(&mut h, SEGMENT_VERSION);
    put_u32(&mut h, 0);
    h
}

pub(super) fn check_segment_header(name: &str, buf: &[u8]) -> Result<()> {
    if buf.len() < SEGMENT_HEADER_LEN as usize || buf[..8] != SEGMENT_MAGIC {
        return Err(Error::corruption(name, 0, "bad value-log segment magic"));
    }
    match get_u32(buf, 8) {
        Some(SEGMENT_VERSION) => Ok(()),
        v => Err(Error::corruption(
            name,
            8,
            format!("unsupported value-log version {v:?}"),
        )),
    }
}
