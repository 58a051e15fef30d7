//! Entry points for the fuzz targets in `crates/engine/fuzz`: each feeds arbitrary bytes to a
//! decoder of bytes that come from storage. Not part of the stable API.

use crate::storage::{IoPurpose, MemStorage, Storage};
use std::sync::Arc;

/// Value-log record decoding and replay of a segment made of `data`.
pub fn vlog_segment(data: &[u8]) {
    let _ = crate::vlog::decode_record(data);
    let storage = MemStorage::new();
    if let Ok(f) = storage.create(&crate::vlog::segment_name(1)) {
        let mut seg = b"CBRSVLOG\x01\0\0\0\0\0\0\0".to_vec();
        seg.extend_from_slice(data);
        let _ = f.append(&seg, IoPurpose::Log);
        let _ = crate::vlog::replay_segment(&storage, 1, 0, true, |_| Ok(()));
    }
}

/// Table decoding: `data` as a whole table file, read through footer, index and blocks.
pub fn table_file(data: &[u8]) {
    let storage = MemStorage::new();
    let Ok(f) = storage.create(&crate::table::table_name(1)) else {
        return;
    };
    let _ = f.append(data, IoPurpose::Other);
    let cache = Arc::new(crate::table::BlockCache::new(1 << 20));
    let counters = Arc::default();
    if let Ok(r) = crate::table::TableReader::open(&storage, 1, cache, counters) {
        let r = Arc::new(r);
        let _ = r.may_contain(7, &Default::default());
        let _ = r.get(
            b"\0\0\0\0key",
            b"\0\0\0\0key\0\0\0\0\0\0\x01\x01",
            &Default::default(),
        );
        if let Ok(mut it) = r.iter() {
            if it.seek_to_first().is_ok() {
                while it.valid() && it.advance().is_ok() {}
            }
        }
    }
}

/// Manifest decoding: `data` as the records of the live manifest.
pub fn manifest(data: &[u8]) {
    let _ = crate::version::VersionEdit::decode(data);
    let storage: crate::storage::StorageRef = Arc::new(MemStorage::new());
    let mut m = b"CBRSMANI\x01\0\0\0\0\0\0\0".to_vec();
    m.extend_from_slice(data);
    let ok = storage
        .create("MANIFEST-000001")
        .and_then(|f| f.append(&m, IoPurpose::Log))
        .and_then(|_| storage.create("CURRENT"))
        .and_then(|f| f.append(b"MANIFEST-000001\n", IoPurpose::Log));
    if ok.is_ok() {
        let ctx = crate::version::TableCtx {
            storage,
            cache: Arc::new(crate::table::BlockCache::new(0)),
            counters: Arc::default(),
        };
        let _ = crate::version::VersionSet::recover(&ctx, 7);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn entry_points_take_garbage() {
        for data in [&b""[..], b"\x01\x02\x03", &[0xff; 200], &[0; 64]] {
            super::vlog_segment(data);
            super::table_file(data);
            super::manifest(data);
        }
    }
}
