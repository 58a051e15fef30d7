//! Walks a segment's records in order through a buffer of bounded size: what value-log GC
//! reads a sealed segment with, so its memory does not grow with the segment.

use super::format::{check_segment_header, decode_header, decode_record, segment_name, Record};
use super::format::{RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use crate::error::{Error, IoContext, Result};
use crate::storage::{IoPurpose, RandomAccessFile, Storage};
use std::sync::Arc;

/// Bytes a [`SegmentScan`] reads at a time, unless one record is larger.
pub const SCAN_CHUNK: usize = 1 << 20;

/// The records of one segment, front to back, read `chunk` bytes at a time. A record that
/// straddles two chunks is read again from its start; one larger than a chunk is read
/// whole. Every record's checksums are checked; a bad one is corruption at its offset.
pub struct SegmentScan {
    segment: u64,
    file: Arc<dyn RandomAccessFile>,
    name: String,
    /// The segment's length when the scan began (sealed segments do not grow).
    len: u64,
    chunk: usize,
    /// Bytes `[buf_at, buf_at + buf.len())` of the segment.
    buf: Vec<u8>,
    buf_at: u64,
    /// Offset of the next record.
    pos: u64,
}

/// A record as the scan found it.
pub struct Scanned<'a> {
    pub offset: u64,
    /// Bytes of the record, header included.
    pub len: usize,
    pub record: Record<'a>,
}

impl SegmentScan {
    /// Opens segment `id` and checks its header.
    pub fn open(storage: &dyn Storage, id: u64, chunk: usize) -> Result<SegmentScan> {
        let name = segment_name(id);
        let file = storage.open(&name).ctx(&name)?;
        let len = file.len().ctx(&name)?;
        let mut scan = SegmentScan {
            segment: id,
            file,
            name,
            len,
            chunk: chunk.max(RECORD_HEADER_LEN),
            buf: Vec::new(),
            buf_at: 0,
            pos: SEGMENT_HEADER_LEN,
        };
        if len < SEGMENT_HEADER_LEN {
            return Err(Error::corruption(
                &scan.name,
                0,
                "value-log segment shorter than its header",
            ));
        }
        scan.fill(0, SEGMENT_HEADER_LEN as usize)?;
        check_segment_header(&scan.name, &scan.buf[..SEGMENT_HEADER_LEN as usize])?;
        Ok(scan)
    }

    /// Starts again at the first record, on the file opened before (which stays readable
    /// even if the segment has been deleted since).
    pub fn rewind(&mut self) {
        self.pos = SEGMENT_HEADER_LEN;
        self.buf = Vec::new();
        self.buf_at = 0;
    }

    /// Ends the scan at `len` if the segment is longer: the active segment is read up to
    /// where its writer stood, never into an append in progress.
    pub fn stop_at(&mut self, len: u64) {
        self.len = self.len.min(len);
    }

    /// The segment's number.
    pub fn segment(&self) -> u64 {
        self.segment
    }

    /// The segment's length.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The file's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Makes the buffer hold `[at, at + need)`, reading at least a chunk from `at` if it does
    /// not. The caller has checked that the range is inside the segment.
    fn fill(&mut self, at: u64, need: usize) -> Result<()> {
        let end = at + need as u64;
        if at >= self.buf_at && end <= self.buf_at + self.buf.len() as u64 {
            return Ok(());
        }
        let want = (need.max(self.chunk) as u64).min(self.len - at) as usize;
        // The old buffer goes first: at most one buffer is held at a time.
        self.buf = Vec::new();
        self.buf = self
            .file
            .read_at(at, want, IoPurpose::Log)
            .ctx(&self.name)?;
        self.buf_at = at;
        Ok(())
    }

    fn bad(&self, at: u64, why: impl std::fmt::Display) -> Error {
        Error::corruption(&self.name, at, format!("bad value-log record ({why})"))
    }

    /// The next record, `None` at the end of the segment.
    pub fn next_record(&mut self) -> Result<Option<Scanned<'_>>> {
        let at = self.pos;
        if at >= self.len {
            return Ok(None);
        }
        if self.len - at < RECORD_HEADER_LEN as u64 {
            return Err(self.bad(at, "Short"));
        }
        self.fill(at, RECORD_HEADER_LEN)?;
        let off = (at - self.buf_at) as usize;
        let total = match decode_header(&self.buf[off..]) {
            Ok((_, _, _, key_len, value_len)) => {
                RECORD_HEADER_LEN as u64 + key_len as u64 + value_len as u64
            }
            Err(e) => return Err(self.bad(at, format!("{e:?}"))),
        };
        // Checked before reading: a header cannot make the scan allocate past the file.
        if total > self.len - at {
            return Err(self.bad(at, "Short"));
        }
        self.fill(at, total as usize)?;
        let off = (at - self.buf_at) as usize;
        match decode_record(&self.buf[off..off + total as usize]) {
            Ok((record, len)) => {
                self.pos = at + len as u64;
                Ok(Some(Scanned {
                    offset: at,
                    len,
                    record,
                }))
            }
            Err(e) => Err(Error::corruption(
                &self.name,
                at,
                format!("bad value-log record ({e:?})"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Kind;
    use crate::storage::{MemStorage, StorageRef};
    use crate::vlog::{encode_record, VlogWriter};

    /// A segment of records whose values have the given sizes; returns each record's offset.
    fn segment(storage: &StorageRef, sizes: &[usize]) -> Vec<u64> {
        let mut w = VlogWriter::create(storage.clone(), 1).unwrap();
        let mut buf = Vec::new();
        let mut offsets = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            offsets.push(SEGMENT_HEADER_LEN + buf.len() as u64);
            let key = format!("key{i}");
            let value = vec![i as u8; n];
            encode_record(
                &mut buf,
                &Record {
                    seq: i as u64 + 1,
                    nsid: 2,
                    kind: Kind::Put,
                    batch_end: true,
                    key: key.as_bytes(),
                    value: &value,
                },
            );
        }
        w.append(&buf).unwrap();
        offsets
    }

    fn scan_all(storage: &StorageRef, chunk: usize) -> Result<Vec<(u64, u64, usize)>> {
        let mut s = SegmentScan::open(storage.as_ref(), 1, chunk)?;
        let mut out = Vec::new();
        while let Some(r) = s.next_record()? {
            assert_eq!(r.record.key, format!("key{}", r.record.seq - 1).as_bytes());
            assert!(r
                .record
                .value
                .iter()
                .all(|&b| b == (r.record.seq - 1) as u8));
            out.push((r.offset, r.record.seq, r.record.value.len()));
        }
        Ok(out)
    }

    /// Records straddling chunk boundaries and records larger than a chunk come whole and in
    /// order, whatever the chunk size.
    #[test]
    fn records_across_and_above_the_chunk_size() {
        let storage: StorageRef = Arc::new(MemStorage::new());
        let sizes = [10, 200, 3, 5000, 0, 64, 999, 1, 12_000, 7];
        let offsets = segment(&storage, &sizes);
        for chunk in [1, 29, 64, 100, 257, 1000, 4096, SCAN_CHUNK] {
            let got = scan_all(&storage, chunk).unwrap();
            let want: Vec<_> = offsets
                .iter()
                .zip(&sizes)
                .enumerate()
                .map(|(i, (&o, &n))| (o, i as u64 + 1, n))
                .collect();
            assert_eq!(got, want, "chunk {chunk}");
            let mut s = SegmentScan::open(storage.as_ref(), 1, chunk).unwrap();
            while s.next_record().unwrap().is_some() {}
            s.rewind();
            let first = s.next_record().unwrap().map(|r| (r.offset, r.record.seq));
            assert_eq!(first, Some((offsets[0], 1)), "chunk {chunk}");
        }
    }

    /// A flipped byte is corruption at the offset of the record that holds it, with the
    /// file's name; so is a record cut short by the end of the file.
    #[test]
    fn corruption_names_the_file_and_the_record_offset() {
        let storage: StorageRef = Arc::new(MemStorage::new());
        let sizes = [100, 3000, 50, 700];
        let offsets = segment(&storage, &sizes);
        let name = segment_name(1);
        let data = crate::storage::read_all(storage.as_ref(), &name, IoPurpose::Log).unwrap();
        for (i, &at) in offsets.iter().enumerate() {
            for delta in [2usize, 12, RECORD_HEADER_LEN + 3] {
                let mut bad = data.clone();
                bad[at as usize + delta] ^= 0x20;
                storage
                    .create(&name)
                    .unwrap()
                    .append(&bad, IoPurpose::Log)
                    .unwrap();
                for chunk in [64, 1000, SCAN_CHUNK] {
                    match scan_all(&storage, chunk) {
                        Err(Error::Corruption { file, offset, .. }) => {
                            assert_eq!((file.as_str(), offset), (name.as_str(), at));
                        }
                        other => panic!("record {i} +{delta}, chunk {chunk}: {other:?}"),
                    }
                }
            }
        }
        let cut = &data[..data.len() - 5];
        storage
            .create(&name)
            .unwrap()
            .append(cut, IoPurpose::Log)
            .unwrap();
        match scan_all(&storage, 1000) {
            Err(Error::Corruption { offset, .. }) => assert_eq!(offset, offsets[3]),
            other => panic!("cut: {other:?}"),
        }
        // A bad segment header.
        let mut bad = data.clone();
        bad[0] ^= 1;
        storage
            .create(&name)
            .unwrap()
            .append(&bad, IoPurpose::Log)
            .unwrap();
        assert!(SegmentScan::open(storage.as_ref(), 1, 1000)
            .err()
            .is_some_and(|e| e.is_corruption()));
    }
}
