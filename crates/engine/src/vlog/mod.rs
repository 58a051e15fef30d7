//! The value log: every write is appended here first. It is the write-ahead log (recovery
//! replays it from the point the manifest says was last flushed) and the home of values
//! (tables hold only their addresses).
//!
//! A segment is `header (16 bytes) ++ record*`. A record is a 29-byte header
//! `{header_crc u32, payload_crc u32, seqno u64, nsid u32, flags u8, key_len u32, value_len u32}`
//! followed by the key and the value. `header_crc` covers the 25 header bytes after it and lets
//! recovery tell a torn tail from corruption cheaply; `payload_crc` covers key and value. The
//! records of one batch are contiguous in one segment and the last one carries `BATCH_END`.

mod liveness;
mod reader;
mod scan;

pub use liveness::Liveness;
pub use reader::{LastSegment, ReadPin, VlogReader};
pub use scan::{SegmentScan, SCAN_CHUNK};

use crate::coding::{get_u32, get_u64, put_u32, put_u64};
use crate::error::{Error, IoContext, Result};
use crate::key::{Kind, Nsid, SeqNo, ValueAddr};
use crate::storage::{IoPurpose, Storage, StorageRef, WritableFile};
use bytes::Bytes;
use std::sync::Arc;

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
    out.extend_from_slice(&[0; 8]);
    put_u64(out, rec.seq);
    put_u32(out, rec.nsid);
    let mut flags = if rec.kind == Kind::Put { FLAG_PUT } else { 0 };
    if rec.batch_end {
        flags |= FLAG_BATCH_END;
    }
    out.push(flags);
    put_u32(out, rec.key.len() as u32);
    put_u32(out, rec.value.len() as u32);
    out.extend_from_slice(rec.key);
    out.extend_from_slice(rec.value);
    let header_crc = crc32c::crc32c(&out[start + 8..start + RECORD_HEADER_LEN]);
    let mut payload_crc = crc32c::crc32c(rec.key);
    payload_crc = crc32c::crc32c_append(payload_crc, rec.value);
    out[start..start + 4].copy_from_slice(&header_crc.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&payload_crc.to_le_bytes());
    out.len() - start
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
/// before it joins a commit group; the group's leader stamps the seqnos.
#[derive(Default)]
pub struct EncodedWrite {
    pub nsid: Nsid,
    pub buf: Vec<u8>,
    pub spans: Vec<RecordSpan>,
}

impl EncodedWrite {
    pub fn new(nsid: Nsid, ops: &[(Kind, &[u8], &[u8])]) -> Self {
        let total: usize = ops
            .iter()
            .map(|(_, k, v)| RECORD_HEADER_LEN + k.len() + v.len())
            .sum();
        let mut w = EncodedWrite {
            nsid,
            buf: Vec::with_capacity(total),
            spans: Vec::with_capacity(ops.len()),
        };
        for (i, (kind, key, value)) in ops.iter().enumerate() {
            let at = w.buf.len();
            let rec = Record {
                seq: 0,
                nsid,
                kind: *kind,
                batch_end: i + 1 == ops.len(),
                key,
                value,
            };
            let len = encode_record(&mut w.buf, &rec);
            let key_at = at + RECORD_HEADER_LEN;
            w.spans.push(RecordSpan {
                at,
                len,
                kind: *kind,
                key: key_at..key_at + key.len(),
                value: key_at + key.len()..at + len,
            });
        }
        w
    }

    /// Gives the records seqnos `first..`, fixing each header checksum.
    pub fn stamp(&mut self, first: SeqNo) {
        for (i, s) in self.spans.iter().enumerate() {
            let h = &mut self.buf[s.at..s.at + RECORD_HEADER_LEN];
            h[8..16].copy_from_slice(&(first + i as u64).to_le_bytes());
            let crc = crc32c::crc32c(&h[8..RECORD_HEADER_LEN]);
            h[..4].copy_from_slice(&crc.to_le_bytes());
        }
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
fn decode_header(buf: &[u8]) -> std::result::Result<(SeqNo, Nsid, u8, usize, usize), DecodeError> {
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

fn segment_header() -> Vec<u8> {
    let mut h = SEGMENT_MAGIC.to_vec();
    put_u32(&mut h, SEGMENT_VERSION);
    put_u32(&mut h, 0);
    h
}

fn check_segment_header(name: &str, buf: &[u8]) -> Result<()> {
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

/// Appends to the active segment.
pub struct VlogWriter {
    storage: StorageRef,
    file: Arc<dyn WritableFile>,
    segment: u64,
    name: String,
    offset: u64,
    synced: bool,
}

impl VlogWriter {
    /// Creates segment `id` and makes its existence durable. On failure the file is
    /// deleted again where it can be (recovery skips a segment too short for its header).
    pub fn create(storage: StorageRef, id: u64) -> Result<VlogWriter> {
        let name = segment_name(id);
        let file: Arc<dyn WritableFile> = Arc::from(storage.create(&name).ctx(&name)?);
        let ready = file
            .append(&segment_header(), IoPurpose::Log)
            .and_then(|()| file.sync())
            .and_then(|()| storage.sync_dir());
        if let Err(e) = ready {
            drop(file);
            let _ = storage.delete(&name);
            return Err(Error::io(name, e));
        }
        Ok(VlogWriter {
            storage,
            file,
            segment: id,
            name,
            offset: SEGMENT_HEADER_LEN,
            synced: true,
        })
    }

    /// `(segment, offset)` where the next record will go.
    pub fn position(&self) -> (u64, u64) {
        (self.segment, self.offset)
    }

    pub fn segment(&self) -> u64 {
        self.segment
    }

    /// Whether appending `len` more bytes should start a new segment first.
    pub fn needs_roll(&self, len: usize, segment_bytes: u64) -> bool {
        self.offset > SEGMENT_HEADER_LEN && self.offset + len as u64 > segment_bytes
    }

    /// Syncs this segment and continues in a new segment `id`. Syncing first keeps what
    /// survives a crash a prefix of the writes. Fails with [`RollError`] saying which step
    /// failed: a failed sync leaves the log in doubt, a failed creation does not.
    pub fn roll(&mut self, id: u64) -> std::result::Result<(), RollError> {
        self.sync().map_err(RollError::Sync)?;
        *self = VlogWriter::create(self.storage.clone(), id).map_err(RollError::Create)?;
        Ok(())
    }

    /// Appends encoded records; returns the offset of the first byte. If the append fails,
    /// whatever part of it reached the file is cut off again; if even that fails, the
    /// error says so with [`AppendError::Torn`].
    pub fn append(&mut self, buf: &[u8]) -> std::result::Result<u64, AppendError> {
        let at = self.offset;
        if let Err(e) = self.file.append(buf, IoPurpose::Log) {
            let e = Error::io(&self.name, e);
            return Err(match self.file.truncate(at) {
                Ok(()) => AppendError::Clean(e),
                Err(_) => AppendError::Torn(e),
            });
        }
        self.offset += buf.len() as u64;
        self.synced = false;
        Ok(at)
    }

    pub fn sync(&mut self) -> Result<()> {
        if !self.synced {
            self.file.sync().ctx(&self.name)?;
            self.synced = true;
        }
        Ok(())
    }

    /// A handle that makes what was appended so far durable, usable from another thread
    /// (a flush syncs the log behind the memtable it writes without stopping writers).
    pub fn sync_handle(&self) -> LogSync {
        LogSync {
            file: self.file.clone(),
            name: self.name.clone(),
        }
    }
}

/// Why [`VlogWriter::roll`] failed.
#[derive(Debug)]
pub enum RollError {
    /// Syncing the old segment failed: what it holds on disk is unknown.
    Sync(Error),
    /// The new segment could not be made; the writer goes on in the old one.
    Create(Error),
}

/// Why [`VlogWriter::append`] failed.
#[derive(Debug)]
pub enum AppendError {
    /// Nothing of the records stays in the segment.
    Clean(Error),
    /// Part of the records may stay at the segment's end.
    Torn(Error),
}

impl AppendError {
    pub fn into_error(self) -> Error {
        match self {
            AppendError::Clean(e) | AppendError::Torn(e) => e,
        }
    }
}

/// Syncs one segment from any thread.
#[derive(Clone)]
pub struct LogSync {
    file: Arc<dyn WritableFile>,
    name: String,
}

impl LogSync {
    pub fn sync(&self) -> Result<()> {
        self.file.sync().ctx(&self.name)
    }
}

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
    /// A torn or corrupt tail was dropped (only in the last segment).
    pub dropped_tail: bool,
}

/// Replays segment `id` from `start`, delivering records of complete batches in order.
/// In the last segment a torn tail is dropped; anywhere else a bad record is corruption.
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
        // A segment created just before a crash may not even hold its header.
        return Ok(ReplayEnd {
            end: SEGMENT_HEADER_LEN,
            dropped_tail: !data.is_empty(),
        });
    }
    check_segment_header(&name, &data)?;
    let start = start.max(SEGMENT_HEADER_LEN) as usize;
    let mut pos = start;
    let mut batch_start = start;
    let mut pending: Vec<ReplayedRecord> = Vec::new();
    let mut last_seq = 0;
    while pos < data.len() {
        match decode_record(&data[pos..]) {
            Ok((rec, len)) => {
                last_seq = rec.seq;
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
                if !is_last || valid_record_after(&data, pos + 1, last_seq) {
                    return Err(Error::corruption(
                        &name,
                        pos as u64,
                        format!("bad value-log record ({e:?})"),
                    ));
                }
                return Ok(ReplayEnd {
                    end: batch_start as u64,
                    dropped_tail: true,
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
            dropped_tail: true,
        });
    }
    Ok(ReplayEnd {
        end: pos as u64,
        dropped_tail: false,
    })
}

/// Whether an intact record newer than `after_seq` starts anywhere at or past `from`: if so, a
/// bad record before it is corruption in the middle of the log, not a torn tail.
fn valid_record_after(data: &[u8], from: usize, after_seq: SeqNo) -> bool {
    (from..data.len().saturating_sub(RECORD_HEADER_LEN - 1)).any(|p| {
        matches!(decode_header(&data[p..]), Ok((seq, ..)) if seq > after_seq)
            && decode_record(&data[p..]).is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Counters;
    use crate::storage::MemStorage;

    fn rec<'a>(seq: u64, key: &'a [u8], value: &'a [u8], end: bool) -> Record<'a> {
        Record {
            seq,
            nsid: 3,
            kind: Kind::Put,
            batch_end: end,
            key,
            value,
        }
    }

    #[test]
    fn stamped_write_decodes_with_its_seqnos() {
        let mut w = EncodedWrite::new(7, &[(Kind::Put, b"a", b"1"), (Kind::Delete, b"b", b"")]);
        w.stamp(100);
        let (r1, l1) = decode_record(&w.buf).unwrap();
        let (r2, _) = decode_record(&w.buf[l1..]).unwrap();
        assert_eq!((r1.seq, r1.nsid, r1.batch_end), (100, 7, false));
        assert_eq!((r2.seq, r2.kind, r2.batch_end), (101, Kind::Delete, true));
        assert_eq!(&w.buf[w.spans[0].value.clone()], b"1");
    }

    #[test]
    fn record_roundtrip_and_corruption() {
        let mut buf = Vec::new();
        let len = encode_record(&mut buf, &rec(42, b"key", b"value", true));
        let (r, l) = decode_record(&buf).unwrap();
        assert_eq!(
            (r.seq, r.nsid, r.key, r.value, l),
            (42, 3, &b"key"[..], &b"value"[..], len)
        );
        assert_eq!(
            decode_record(&buf[..len - 1]).unwrap_err(),
            DecodeError::Short
        );
        for i in 0..len {
            let mut b = buf.clone();
            b[i] ^= 0x10;
            assert!(decode_record(&b).is_err(), "flip at {i} not detected");
        }
    }

    fn write_segment(storage: &StorageRef, recs: &[Record<'_>]) -> Vec<u8> {
        let mut w = VlogWriter::create(storage.clone(), 1).unwrap();
        let mut buf = Vec::new();
        for r in recs {
            encode_record(&mut buf, r);
        }
        w.append(&buf).unwrap();
        crate::storage::read_all(storage.as_ref(), &segment_name(1), IoPurpose::Log).unwrap()
    }

    fn replay(storage: &StorageRef, is_last: bool) -> Result<(Vec<u64>, ReplayEnd)> {
        let mut seqs = Vec::new();
        let end = replay_segment(storage.as_ref(), 1, 0, is_last, |r| {
            seqs.push(r.seq);
            Ok(())
        })?;
        Ok((seqs, end))
    }

    #[test]
    fn torn_tail_and_partial_batch_are_dropped() {
        let storage: StorageRef = Arc::new(MemStorage::new());
        let data = write_segment(
            &storage,
            &[
                rec(1, b"a", b"1", true),
                rec(2, b"b", b"2", false),
                rec(3, b"c", b"3", true),
            ],
        );
        let (seqs, end) = replay(&storage, true).unwrap();
        assert_eq!(seqs, vec![1, 2, 3]);
        assert!(!end.dropped_tail);
        // Cut inside the last record: the whole second batch goes.
        let f = storage.create(&segment_name(1)).unwrap();
        f.append(&data[..data.len() - 2], IoPurpose::Log).unwrap();
        let (seqs, end) = replay(&storage, true).unwrap();
        assert_eq!(seqs, vec![1]);
        assert!(end.dropped_tail);
        // The same cut in a closed segment is corruption.
        assert!(replay(&storage, false).unwrap_err().is_corruption());
    }

    #[test]
    fn corruption_before_valid_records_is_reported() {
        let storage: StorageRef = Arc::new(MemStorage::new());
        let mut data = write_segment(
            &storage,
            &[rec(1, b"a", b"1", true), rec(2, b"b", b"2", true)],
        );
        data[SEGMENT_HEADER_LEN as usize + 30] ^= 1; // inside the first record
        let f = storage.create(&segment_name(1)).unwrap();
        f.append(&data, IoPurpose::Log).unwrap();
        let err = replay(&storage, true).unwrap_err();
        assert!(err.is_corruption());
        assert!(err.to_string().contains("000001.vlog"));
    }

    #[test]
    fn reader_checks_key_and_crc() {
        let storage: StorageRef = Arc::new(MemStorage::new());
        let data = write_segment(&storage, &[rec(1, b"k", b"v", true)]);
        let reader = VlogReader::new(storage.clone());
        let c = Counters::default();
        let addr = ValueAddr {
            segment: 1,
            offset: SEGMENT_HEADER_LEN,
            len: (data.len() as u64 - SEGMENT_HEADER_LEN) as u32,
        };
        assert_eq!(&reader.read_value(addr, 3, b"k", &c).unwrap()[..], b"v");
        assert!(reader
            .read_value(addr, 3, b"x", &c)
            .unwrap_err()
            .is_corruption());
        assert!(reader
            .read_value(addr, 4, b"k", &c)
            .unwrap_err()
            .is_corruption());
    }

    proptest::proptest! {
        /// Bytes from storage never make the decoder or replay panic.
        #[test]
        fn decoders_survive_garbage(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = decode_record(&data);
            let storage: StorageRef = Arc::new(MemStorage::new());
            let f = storage.create(&segment_name(1)).unwrap();
            let mut seg = segment_header();
            seg.extend_from_slice(&data);
            f.append(&seg, IoPurpose::Log).unwrap();
            let _ = replay_segment(storage.as_ref(), 1, 0, true, |_| Ok(()));
            let _ = replay_segment(storage.as_ref(), 1, 0, false, |_| Ok(()));
        }
    }
}
