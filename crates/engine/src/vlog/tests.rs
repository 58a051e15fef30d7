use super::format::*;
use super::replay::ReplayEnd;
use super::*;
use crate::error::Result;
use crate::key::{Kind, ValueAddr};
use crate::stats::Counters;
use crate::storage::{IoPurpose, MemStorage, StorageRef};
use std::sync::Arc;

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
    let spans: Vec<_> = w.spans().collect();
    assert_eq!(&w.buf[spans[0].value.clone()], b"1");
    assert_eq!(&w.buf[spans[1].key.clone()], b"b");
    assert_eq!(
        (spans[1].kind, spans[1].value.len(), w.records()),
        (Kind::Delete, 0, 2)
    );
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
    assert_eq!(end.dropped, 0);
    // Cut inside the last record: the whole second batch goes.
    let f = storage.create(&segment_name(1)).unwrap();
    f.append(&data[..data.len() - 2], IoPurpose::Log).unwrap();
    let (seqs, end) = replay(&storage, true).unwrap();
    assert_eq!(seqs, vec![1]);
    assert_eq!(end.dropped, (data.len() - 2) as u64 - end.end);
    // The same cut in a closed segment is corruption.
    assert!(replay(&storage, false).unwrap_err().is_corruption());
}

/// Damage followed by intact records: in the last segment it is what a crash left of the
/// unsynced tail (a page that never reached the disk before a later one did), and the log
/// ends before it, intact records after it included; in a closed segment, which was synced
/// before the next one began, it is corruption of synced data, reported with file and offset.
#[test]
fn damage_before_intact_records_ends_the_last_segment_and_is_corruption_elsewhere() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let mut data = write_segment(
        &storage,
        &[
            rec(1, b"a", b"1", true),
            rec(2, b"b", b"2", true),
            rec(3, b"c", b"3", true),
        ],
    );
    let second = SEGMENT_HEADER_LEN as usize + RECORD_HEADER_LEN + 2;
    data[second + 30] ^= 1; // inside the second record
    let f = storage.create(&segment_name(1)).unwrap();
    f.append(&data, IoPurpose::Log).unwrap();
    let (seqs, end) = replay(&storage, true).unwrap();
    assert_eq!(seqs, vec![1]);
    assert_eq!(end.end, second as u64);
    assert_eq!(end.dropped, (data.len() - second) as u64);
    let err = replay(&storage, false).unwrap_err();
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

/// A write of many records (empty keys and values, deletes, a large value), and
/// the same write stamped twice (a leader stamping again after a failed roll): every record
/// decodes with its seqno, and the spans read back from the headers match the decode. An
/// unstamped write's headers do not pass the checksum (a write that reached the log
/// unstamped would be the torn tail recovery drops).
#[test]
fn every_record_of_a_stamped_write_decodes_and_spans_agree() {
    let big = vec![9u8; 70_000];
    let mut ops: Vec<(Kind, &[u8], &[u8])> = Vec::new();
    for i in 0..40 {
        match i % 5 {
            0 => ops.push((Kind::Put, b"", b"")),
            1 => ops.push((Kind::Delete, b"gone", b"")),
            2 => ops.push((Kind::Put, b"k", &big)),
            3 => ops.push((Kind::Put, &big[..300], b"v")),
            _ => ops.push((Kind::Put, b"key", b"value")),
        }
    }
    let mut w = EncodedWrite::new(5, &ops);
    assert!(matches!(decode_record(&w.buf), Err(DecodeError::BadHeader)));
    w.stamp(7);
    w.stamp(1_000);
    let spans: Vec<_> = w.spans().collect();
    assert_eq!(spans.len(), ops.len());
    let mut at = 0;
    for (i, (s, (kind, key, value))) in spans.iter().zip(&ops).enumerate() {
        let (r, len) = decode_record(&w.buf[at..]).unwrap();
        assert_eq!((s.at, s.len), (at, len), "record {i}");
        assert_eq!((r.seq, r.nsid, r.kind), (1_000 + i as u64, 5, *kind));
        assert_eq!(r.batch_end, i + 1 == ops.len());
        assert_eq!((r.key, r.value), (*key, *value));
        assert_eq!(&w.buf[s.key.clone()], *key);
        assert_eq!(&w.buf[s.value.clone()], *value);
        at += len;
    }
    assert_eq!(at, w.buf.len());
}
