//! Checkpoints: a consistent copy of the database taken while writes go on.
//!
//! The copy is the image a crash would leave at one moment, with every byte written before it
//! durable: under the writer lock (no append is under way, so the log ends between commit
//! groups) the moment's sequence number, the log's end and the manifest's state are read
//! together. Tables and sealed segments never change, so they are hard-linked (copied where
//! linking fails); the live segment is copied up to the log's end; a fresh manifest holds the
//! state read. Opening the copy replays the log from the manifest's start to that end, as
//! recovery after a crash does, and so gives the state at exactly that sequence number: the
//! writes at or below it, whole groups (a batch is one group), nothing after.
//!
//! The moment's version keeps its tables (a table file goes when the last version holding it
//! does) and a value-log read pin keeps every segment GC retires meanwhile.
//!
//! A marker file is the first thing written to the target and the last removed: a checkpoint
//! a crash interrupted is refused by [`Db::open`](super::database::Db::open) (see [`CHECKPOINT_MARKER`]).

use super::database::Db;
use super::versions::Versions;
use super::write_queue::WriteQueue;
use crate::error::{Error, IoContext, Result};
use crate::key::{Nsid, SeqNo};
use crate::stats::Counters;
use crate::storage::{IoPurpose, PosixStorage, Storage, StorageRef};
use crate::table::{table_name, BlockCache};
use crate::version::{Recovered, TableCtx, Version, VersionSet};
use crate::vlog::{self, ReadPin, VlogReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file a checkpoint writes first and deletes last. A directory holding it is a
/// checkpoint a crash (or an error) interrupted: opening it fails; delete it and take the
/// checkpoint again.
pub const CHECKPOINT_MARKER: &str = "CHECKPOINT-INCOMPLETE";

/// Bytes copied per read when a file is copied rather than linked.
const COPY_CHUNK: usize = 1 << 20;

/// What a checkpoint wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CheckpointInfo {
    /// The checkpoint holds every write at or below this sequence number and none above.
    pub sequence: SeqNo,
    /// Files hard-linked (tables, sealed value-log segments).
    pub files_linked: u64,
    /// Bytes of the linked files (shared with the database, not written again).
    pub bytes_linked: u64,
    /// Files copied or written: the live value-log segment up to the checkpoint's point,
    /// the files that could not be linked (another file system, a storage without files),
    /// and the manifest and `CURRENT`, written fresh.
    pub files_copied: u64,
    /// Bytes written to copies.
    pub bytes_copied: u64,
    /// The live namespaces the checkpoint holds (ids; the default namespace 0 included).
    pub namespaces: Vec<Nsid>,
}

/// The moment a checkpoint copies: what the manifest says then, and where the log ends.
struct Point {
    seq: SeqNo,
    /// The live segment and the length of its prefix that is in the checkpoint.
    log_end: (u64, u64),
    state: Recovered,
    /// Keeps the segments GC retires from now on.
    _pin: ReadPin,
}

impl Db {
    /// Writes a consistent copy of the database to directory `dir`, which must not exist (it
    /// is made, mode 0700, in its parent, which must exist: built beside it as
    /// `.NAME.checkpoint-tmp` and renamed to `dir` once complete). Writes go on meanwhile: the copy holds
    /// every write acknowledged before the call and none made after the point it reports, an
    /// atomic batch whole or not at all. Tables and sealed value-log segments are hard-linked
    /// (copied where linking fails); everything is synced before it returns. Open the copy
    /// with [`Db::open`]. An error leaves nothing; a crash leaves no `dir`, only the
    /// staging directory, which the next call replaces.
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointInfo> {
        let dir = dir.as_ref();
        self.inner.check_open()?;
        let tmp = staging_dir(dir)?;
        let result = PosixStorage::new(&tmp)
            .map_err(|e| Error::io(tmp.display().to_string(), e))
            .and_then(|s| self.checkpoint_to(&(Arc::new(s) as StorageRef)))
            .and_then(|info| publish(&tmp, dir).map(|()| info));
        if result.is_err() {
            // An error (not a crash) leaves nothing behind.
            let _ = std::fs::remove_dir_all(&tmp);
        }
        result
    }

    /// [`checkpoint`](Self::checkpoint) into `target`, which must hold no file (a storage
    /// without local files gets copies of everything).
    pub fn checkpoint_to(&self, target: &StorageRef) -> Result<CheckpointInfo> {
        self.inner.check_open()?;
        if !target.list().ctx("checkpoint directory")?.is_empty() {
            return Err(Error::InvalidArgument(
                "a checkpoint goes to an empty directory".into(),
            ));
        }
        let inner = &self.inner;
        write_checkpoint(inner.storage.as_ref(), target.clone(), || {
            inner.check_open()?;
            Ok(Point::take(
                &inner.writes,
                &inner.vlog_reader,
                &inner.versions,
            ))
        })
    }
}

/// Writes a checkpoint of the database on `source` into `target`: its marker first, then
/// what the point `take_point` reads holds (taken once the marker is durable).
fn write_checkpoint(
    source: &dyn Storage,
    target: StorageRef,
    take_point: impl FnOnce() -> Result<Point>,
) -> Result<CheckpointInfo> {
    target
        .create(CHECKPOINT_MARKER)
        .and_then(|f| f.sync())
        .and_then(|()| target.sync_dir())
        .ctx(CHECKPOINT_MARKER)?;
    let point = take_point()?;
    let mut info = CheckpointInfo {
        sequence: point.seq,
        namespaces: point.state.namespaces.live.keys().copied().collect(),
        ..CheckpointInfo::default()
    };
    for id in point.state.version.table_ids() {
        let name = table_name(id);
        // The version keeps its tables: a table is always there.
        transfer(source, target.as_ref(), &name, None, &mut info)?;
    }
    let (live, end) = point.log_end;
    let mut segments: Vec<u64> = source
        .list()
        .ctx("database directory")?
        .iter()
        .filter_map(|n| vlog::parse_segment_name(n))
        .filter(|&s| s <= live)
        .collect();
    segments.sort_unstable();
    for seg in segments {
        let name = vlog::segment_name(seg);
        let len = (seg == live).then_some(end);
        match transfer(source, target.as_ref(), &name, len, &mut info) {
            Ok(()) => {}
            // Retired before the point and deleted since: nothing the point reads.
            Err(e) if seg != live && is_not_found(&e) => {}
            Err(e) => return Err(e),
        }
    }
    let ctx = TableCtx::new(
        target.clone(),
        Arc::new(BlockCache::new(0)),
        Arc::new(Counters::default()),
        16,
    );
    // Writes the manifest and `CURRENT`, synced, and syncs the directory.
    drop(VersionSet::create(ctx, point.state)?);
    info.files_copied += 2;
    target.sync_dir().ctx("checkpoint directory")?;
    target
        .delete(CHECKPOINT_MARKER)
        .and_then(|()| target.sync_dir())
        .ctx(CHECKPOINT_MARKER)?;
    tracing::info!(?info, "checkpoint written");
    Ok(info)
}

impl Point {
    /// Reads, together, the last sequence number written, the log's end and the manifest's
    /// state: the writer lock keeps appends out, so the tables hold nothing past the point.
    fn take(writes: &WriteQueue, vlog_reader: &VlogReader, versions: &Versions) -> Point {
        let w = writes.writer.lock();
        // Before the version is read: a segment retired before the pin has its live records
        // in tables of that version.
        let pin = vlog_reader.pin();
        let vs = versions.lock();
        let version: Version = (*vs.current()).clone();
        let state = Recovered {
            version,
            namespaces: vs.namespaces.clone(),
            next_file: vs.next_file,
            last_seq: vs.last_seq,
            log_start: vs.log_start,
            vlog_dead: vs.vlog_dead.clone(),
        };
        Point {
            seq: w.next_seq.saturating_sub(1),
            log_end: w.vlog.position(),
            state,
            _pin: pin,
        }
    }
}

fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// Makes the directory a checkpoint into `dir` is built in, beside it: `.NAME.checkpoint-tmp`,
/// mode 0700 (one a crash left is replaced), after checking that `dir` does not exist.
fn staging_dir(dir: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let shown = dir.display().to_string();
    if dir.symlink_metadata().is_ok() {
        return Err(Error::InvalidArgument(format!(
            "checkpoint directory {shown} exists; a checkpoint makes a new one"
        )));
    }
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::InvalidArgument(format!("{shown} names no directory")))?;
    let tmp = parent_of(dir).join(format!(".{name}{STAGING_SUFFIX}"));
    match std::fs::remove_dir_all(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::io(tmp.display().to_string(), e))
        }
        _ => {}
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&tmp)
        .map_err(|e| Error::io(tmp.display().to_string(), e))?;
    Ok(tmp)
}

/// The suffix of the directory a checkpoint is built in before it is renamed into place.
pub const STAGING_SUFFIX: &str = ".checkpoint-tmp";

fn parent_of(dir: &Path) -> &Path {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Renames the finished checkpoint `tmp` to `dir` and syncs their parent: until then a crash
/// leaves no `dir`, only `tmp`, which the next checkpoint to `dir` replaces.
fn publish(tmp: &Path, dir: &Path) -> Result<()> {
    let shown = dir.display().to_string();
    std::fs::rename(tmp, dir).map_err(|e| Error::io(shown.clone(), e))?;
    let parent = parent_of(dir);
    std::fs::File::open(parent)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(parent.display().to_string(), e))
}

/// Puts file `name` of `source` into `target`: a hard link where both keep local files and
/// the link works, else a copy of its first `len` bytes (`None`: all of it), synced. A file
/// cut to a prefix is always copied.
fn transfer(
    source: &dyn Storage,
    target: &dyn Storage,
    name: &str,
    len: Option<u64>,
    info: &mut CheckpointInfo,
) -> Result<()> {
    if len.is_none() {
        if let Some(src) = source.local_path(name) {
            match target.link_from(&src, name) {
                Ok(()) => {
                    info.files_linked += 1;
                    info.bytes_linked += std::fs::metadata(&src).map(|m| m.len()).unwrap_or(0);
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::io(name, e))
                }
                // Another file system, a target without files: copied.
                Err(_) => {}
            }
        }
    }
    let file = source.open(name).ctx(name)?;
    let len = match len {
        Some(l) => l,
        None => file.len().ctx(name)?,
    };
    let out = target.create(name).ctx(name)?;
    let mut at = 0u64;
    while at < len {
        let n = usize::try_from(len - at).map_or(COPY_CHUNK, |r| r.min(COPY_CHUNK));
        let bytes = file.read_at(at, n, IoPurpose::Other).ctx(name)?;
        out.append(&bytes, IoPurpose::Other).ctx(name)?;
        at += n as u64;
    }
    out.sync().ctx(name)?;
    info.files_copied += 1;
    info.bytes_copied += len;
    Ok(())
}
