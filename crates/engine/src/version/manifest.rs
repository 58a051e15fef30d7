//! The manifest: a log of version edits. `CURRENT` names the live manifest.
//!
//! File: `magic "CBRSMANI" ++ version u32 ++ reserved u32`, then records
//! `len u32 ++ crc32c(payload) u32 ++ payload (an encoded VersionEdit)`. A new manifest starts
//! with one edit holding the whole state. Every append is synced before the edit is applied.
//!
//! A failed append may leave a torn record, or a whole one whose sync failed: nothing is ever
//! appended behind it. The next edit starts a new manifest holding the state in memory (as
//! LevelDB does), and only once that manifest is durable and named by `CURRENT` does the
//! state in memory move on. Recovery therefore meets a torn record only at a manifest's end.

use super::edit::VersionEdit;
use super::levels::{Version, RUNS};
use super::namespaces::Namespaces;
use super::table_handle::TableCtx;
use crate::coding::{get_u32, put_u32};
use crate::error::{Error, IoContext, Result};
use crate::storage::{IoPurpose, WritableFile};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const MANIFEST_MAGIC: [u8; 8] = *b"CBRSMANI";
pub const MANIFEST_VERSION: u32 = 1;
const HEADER_LEN: usize = 16;
const CURRENT: &str = "CURRENT";
/// A manifest larger than this is rewritten as a snapshot.
const ROTATE_BYTES: u64 = 32 << 20;

pub fn manifest_name(id: u64) -> String {
    format!("MANIFEST-{id:06}")
}

/// What the manifest says at open.
pub struct Recovered {
    pub version: Version,
    pub namespaces: Namespaces,
    pub next_file: u64,
    pub last_seq: u64,
    pub log_start: (u64, u64),
    /// Dead value-log bytes per segment, summed over the edits.
    pub vlog_dead: BTreeMap<u64, u64>,
}

/// Adds an edit's dead value-log bytes to the running sums.
fn add_dead(sums: &mut BTreeMap<u64, u64>, edit: &VersionEdit) {
    for &(seg, bytes) in &edit.vlog_dead {
        let e = sums.entry(seg).or_default();
        *e = e.saturating_add(bytes);
    }
}

/// The current version plus the persistent counters, and the open manifest.
pub struct VersionSet {
    ctx: TableCtx,
    manifest: Box<dyn WritableFile>,
    manifest_id: u64,
    current: Arc<Version>,
    /// Next file number to hand out (tables, segments, manifests share the space).
    pub next_file: u64,
    /// Largest seqno in tables.
    pub last_seq: u64,
    /// Where replay starts.
    pub log_start: (u64, u64),
    pub namespaces: Namespaces,
    /// Dead value-log bytes per segment (of segments not collected yet).
    pub vlog_dead: BTreeMap<u64, u64>,
    /// An append to the live manifest failed: the next edit starts a new one.
    broken: bool,
    /// Tables added by edits that failed to log: a manifest may still hold them until a new
    /// one replaces it, so they are deleted only then.
    orphans: Vec<u64>,
}

impl VersionSet {
    /// Reads `CURRENT` and its manifest; `None` if there is no database yet.
    pub fn recover(ctx: &TableCtx, num_levels: usize) -> Result<Option<Recovered>> {
        let storage = ctx.storage.as_ref();
        if !storage.exists(CURRENT).ctx(CURRENT)? {
            return Ok(None);
        }
        let cur = crate::storage::read_all(storage, CURRENT, IoPurpose::Log).ctx(CURRENT)?;
        let name = std::str::from_utf8(&cur)
            .ok()
            .map(str::trim)
            .filter(|n| n.starts_with("MANIFEST-") && !n.contains('/'))
            .ok_or_else(|| Error::corruption(CURRENT, 0, "CURRENT does not name a manifest"))?
            .to_string();
        let data = crate::storage::read_all(storage, &name, IoPurpose::Log).ctx(&name)?;
        if data.len() < HEADER_LEN || data[..8] != MANIFEST_MAGIC {
            return Err(Error::corruption(&name, 0, "bad manifest magic"));
        }
        if get_u32(&data, 8) != Some(MANIFEST_VERSION) {
            return Err(Error::corruption(&name, 8, "unsupported manifest version"));
        }
        let mut version = Version::new(num_levels);
        // A manifest names every namespace it knows; start from none, not the default set.
        let mut namespaces = Namespaces {
            live: Default::default(),
            destroyed: Default::default(),
            next: 0,
            indexes: Default::default(),
            options: Default::default(),
            read_only: Default::default(),
            usage: Default::default(),
            // Until an edit says so: a manifest of an older engine does not.
            usage_tracked: false,
            garbage: Default::default(),
        };
        let (mut next_file, mut last_seq, mut log_start) = (0, 0, (0, 0));
        let mut vlog_dead = BTreeMap::new();
        let mut pos = HEADER_LEN;
        while pos < data.len() {
            let (Some(len), Some(crc)) = (get_u32(&data, pos), get_u32(&data, pos + 4)) else {
                break; // torn header of an edit that was never acknowledged
            };
            let start = pos + 8;
            let Some(payload) = data.get(start..start + len as usize) else {
                break; // torn tail
            };
            if crc32c::crc32c(payload) != crc {
                if start + len as usize == data.len() {
                    break; // a torn last record
                }
                return Err(Error::corruption(
                    &name,
                    pos as u64,
                    "manifest record checksum mismatch",
                ));
            }
            let edit = VersionEdit::decode(payload)
                .ok_or_else(|| Error::corruption(&name, pos as u64, "malformed manifest record"))?;
            let bad = |l: usize| l >= num_levels && l != RUNS;
            if edit.added.iter().any(|(l, _)| bad(*l)) || edit.deleted.iter().any(|(l, _)| bad(*l))
            {
                return Err(Error::corruption(
                    &name,
                    pos as u64,
                    "manifest names a level beyond num_levels",
                ));
            }
            version = version.apply(&edit, ctx).0;
            namespaces.apply(&edit);
            add_dead(&mut vlog_dead, &edit);
            if let Some(n) = edit.next_file {
                next_file = next_file.max(n);
            }
            if let Some(s) = edit.last_seq {
                last_seq = last_seq.max(s);
            }
            if let Some(p) = edit.log_start {
                log_start = p;
            }
            pos = start + len as usize;
        }
        Ok(Some(Recovered {
            version,
            namespaces,
            next_file,
            last_seq,
            log_start,
            vlog_dead,
        }))
    }

    /// Starts a fresh manifest holding `version` and makes `CURRENT` point at it.
    pub fn create(ctx: TableCtx, r: Recovered) -> Result<VersionSet> {
        let Recovered {
            version,
            namespaces,
            next_file,
            last_seq,
            log_start,
            vlog_dead,
        } = r;
        let manifest_id = next_file;
        let mut vs = VersionSet {
            manifest: Box::new(NullFile),
            manifest_id,
            current: Arc::new(version),
            next_file: next_file + 1,
            last_seq,
            log_start,
            namespaces,
            vlog_dead,
            ctx,
            broken: false,
            orphans: Vec::new(),
        };
        let snapshot = vs.snapshot_edit(&vs.current, &vs.namespaces, &vs.vlog_dead);
        vs.write_new_manifest(manifest_id, &snapshot)?;
        Ok(vs)
    }

    /// One edit holding `version` with these namespaces and dead-byte sums, and this
    /// set's counters.
    fn snapshot_edit(
        &self,
        version: &Version,
        namespaces: &Namespaces,
        vlog_dead: &BTreeMap<u64, u64>,
    ) -> VersionEdit {
        let mut edit = VersionEdit {
            log_start: Some(self.log_start),
            next_file: Some(self.next_file),
            last_seq: Some(self.last_seq),
            added: version
                .levels
                .iter()
                .enumerate()
                .flat_map(|(l, ts)| ts.iter().map(move |t| (l, t.props.clone())))
                .chain(version.runs.iter().map(|t| (RUNS, t.props.clone())))
                .collect(),
            vlog_dead: vlog_dead.iter().map(|(s, b)| (*s, *b)).collect(),
            ..VersionEdit::default()
        };
        namespaces.snapshot_into(&mut edit);
        edit
    }

    /// Writes manifest `id` holding `snapshot`, points `CURRENT` at it and makes both
    /// durable; then the other manifests and the orphaned tables go. On failure the live
    /// manifest stays what it was (a crash may find either; both are whole).
    fn write_new_manifest(&mut self, id: u64, snapshot: &VersionEdit) -> Result<()> {
        let storage = self.ctx.storage.clone();
        let name = manifest_name(id);
        let mut renamed = false;
        let result = (|| {
            let file = storage.create(&name).ctx(&name)?;
            let mut buf = MANIFEST_MAGIC.to_vec();
            put_u32(&mut buf, MANIFEST_VERSION);
            put_u32(&mut buf, 0);
            append_record(&mut buf, &snapshot.encode(), &name)?;
            file.append(&buf, IoPurpose::Log).ctx(&name)?;
            file.sync().ctx(&name)?;
            let tmp = "CURRENT.tmp";
            let cur = storage.create(tmp).ctx(tmp)?;
            cur.append(format!("{name}\n").as_bytes(), IoPurpose::Log)
                .ctx(tmp)?;
            cur.sync().ctx(tmp)?;
            drop(cur);
            storage.rename(tmp, CURRENT).ctx(CURRENT)?;
            renamed = true;
            storage.sync_dir().ctx(CURRENT)?;
            Ok(file)
        })();
        let file = match result {
            Ok(f) => f,
            Err(e) => {
                if !renamed {
                    // Nothing names it; `CURRENT.tmp` is rewritten by the next attempt.
                    let _ = storage.delete(&name);
                }
                return Err(e);
            }
        };
        self.manifest_id = id;
        self.manifest = file;
        self.broken = false;
        // Best effort: what is left is found and deleted by the next open.
        if let Ok(names) = storage.list() {
            for n in names {
                if n.starts_with("MANIFEST-") && n != name {
                    let _ = storage.delete(&n);
                }
            }
        }
        for t in std::mem::take(&mut self.orphans) {
            let _ = storage.delete(&crate::table::table_name(t));
        }
        Ok(())
    }

    /// The last manifest write failed and no new manifest replaced it yet.
    pub fn in_doubt(&self) -> bool {
        self.broken
    }

    pub fn current(&self) -> Arc<Version> {
        self.current.clone()
    }

    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file;
        self.next_file += 1;
        n
    }

    /// Logs `edit` durably, then installs the version it produces. On failure the edit
    /// may or may not be on disk (in doubt, like an unacknowledged write); the state in
    /// memory stays as it was, every file is kept, and the next edit starts a new manifest.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        let (old_start, old_seq) = (self.log_start, self.last_seq);
        if let Some(p) = edit.log_start {
            self.log_start = p;
        }
        if let Some(s) = edit.last_seq {
            self.last_seq = self.last_seq.max(s);
        }
        edit.next_file = Some(self.next_file);
        let mut namespaces = self.namespaces.clone();
        namespaces.apply(&edit);
        let mut vlog_dead = self.vlog_dead.clone();
        add_dead(&mut vlog_dead, &edit);
        let (next, removed) = self.current.apply(&edit, &self.ctx);
        let next = Arc::new(next);
        let logged = if self.broken || self.manifest.len() > ROTATE_BYTES {
            let id = self.new_file_number();
            let snapshot = self.snapshot_edit(&next, &namespaces, &vlog_dead);
            self.write_new_manifest(id, &snapshot)
        } else {
            let name = manifest_name(self.manifest_id);
            let mut buf = Vec::new();
            append_record(&mut buf, &edit.encode(), &name).and_then(|()| {
                self.manifest
                    .append(&buf, IoPurpose::Log)
                    .and_then(|_| self.manifest.sync())
                    .map_err(|e| Error::io(name, e))
            })
        };
        if let Err(e) = logged {
            self.broken = true;
            self.log_start = old_start;
            self.last_seq = old_seq;
            // The edit's new tables only: a trivial move re-adds a table the current
            // version (and every manifest) still names.
            let named: std::collections::HashSet<u64> = self.current.table_ids().collect();
            let new = edit.added.iter().map(|(_, p)| p.id);
            self.orphans.extend(new.filter(|id| !named.contains(id)));
            return Err(e);
        }
        self.current = next;
        self.namespaces = namespaces;
        self.vlog_dead = vlog_dead;
        for t in removed {
            t.mark_obsolete();
        }
        Ok(self.current.clone())
    }
}

pub(crate) fn append_record(buf: &mut Vec<u8>, payload: &[u8], file: &str) -> Result<()> {
    let len = u32::try_from(payload.len()).map_err(|_| {
        Error::InvalidArgument(format!(
            "a manifest record of {} bytes for {file} exceeds 2^32-1",
            payload.len()
        ))
    })?;
    put_u32(buf, len);
    put_u32(buf, crc32c::crc32c(payload));
    buf.extend_from_slice(payload);
    Ok(())
}

/// Placeholder until the first manifest is written.
struct NullFile;

impl WritableFile for NullFile {
    fn append(&self, _data: &[u8], _purpose: IoPurpose) -> std::io::Result<()> {
        Err(std::io::Error::other("no manifest open"))
    }
    fn sync(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
    fn truncate(&self, _len: u64) -> std::io::Result<()> {
        Err(std::io::Error::other("no manifest open"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Counters;
    use crate::storage::{MemStorage, StorageRef};
    use crate::table::BlockCache;

    fn ctx() -> TableCtx {
        let storage: StorageRef = Arc::new(MemStorage::new());
        TableCtx::new(
            storage,
            Arc::new(BlockCache::new(0)),
            Arc::new(Counters::default()),
            16,
        )
    }

    #[test]
    fn create_log_and_recover() {
        let ctx = ctx();
        let r = Recovered {
            version: Version::new(3),
            namespaces: Namespaces::default(),
            next_file: 5,
            last_seq: 0,
            log_start: (4, 16),
            vlog_dead: BTreeMap::from([(2, 10)]),
        };
        let mut vs = VersionSet::create(ctx.clone(), r).unwrap();
        let edit = VersionEdit {
            log_start: Some((9, 100)),
            last_seq: Some(77),
            vlog_dead: vec![(2, 5), (3, 7)],
            ..VersionEdit::default()
        };
        vs.log_and_apply(edit).unwrap();
        let r = VersionSet::recover(&ctx, 3).unwrap().unwrap();
        assert_eq!((r.log_start, r.last_seq), ((9, 100), 77));
        // The snapshot's sums plus the edit's.
        assert_eq!(r.vlog_dead, BTreeMap::from([(2, 15), (3, 7)]));
        assert_eq!(r.namespaces, Namespaces::default());
        assert!(r.next_file >= 6);
    }

    proptest::proptest! {
        /// A manifest full of garbage is an error or an empty state, never a panic.
        #[test]
        fn recover_survives_garbage(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let ctx = ctx();
            let mut m = MANIFEST_MAGIC.to_vec();
            put_u32(&mut m, MANIFEST_VERSION);
            put_u32(&mut m, 0);
            m.extend_from_slice(&data);
            ctx.storage.create("MANIFEST-000001").unwrap().append(&m, IoPurpose::Log).unwrap();
            ctx.storage.create("CURRENT").unwrap().append(b"MANIFEST-000001\n", IoPurpose::Log).unwrap();
            let _ = VersionSet::recover(&ctx, 4);
        }
    }
}
