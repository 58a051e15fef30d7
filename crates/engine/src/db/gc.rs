//! Value-log garbage collection: find the live records of sealed segments, write them again
//! at the head of the log (unless a newer write got there first), then delete the segments.

use super::gc_state::{GcState, GcStats};
use super::namespace_set::NsState;
use super::read::Reader;
use super::segment_retire::SegmentRetire;
use super::snapshots::Snapshots;
use super::versions::Versions;
use super::write::WritePath;
use super::write_queue::WriteQueue;
use crate::background::GcUrgency;
use crate::error::{Error, IoContext, Result};
use crate::key::{Kind, Nsid, ValueAddr};
use crate::stats::Counters;
use crate::storage::StorageRef;
use crate::version::VersionEdit;
use crate::vlog::{self, EncodedWrite, SegmentScan, VlogReader, SCAN_CHUNK};
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::HashSet;
use std::sync::Arc;

/// Rewrites go to the log in groups of about this many bytes, so writers are not held up
/// for long at a time.
const REWRITE_CHUNK: usize = 1 << 20;

/// Puts of a segment checked against the open snapshots at a time.
const SNAPSHOT_CHECK_PUTS: usize = 4096;

struct LiveRecord {
    nsid: Nsid,
    key: Bytes,
    value: Bytes,
    addr: ValueAddr,
}

/// The parts value-log GC touches, borrowed: the write path its rewrites take, the reader
/// its liveness checks take, and the retirement of the segments it collected.
pub(super) struct ValueLogGc<'a, F, R> {
    pub(super) storage: &'a StorageRef,
    pub(super) versions: &'a Versions,
    pub(super) writes: &'a WriteQueue,
    pub(super) namespaces: &'a RwLock<NsState>,
    pub(super) gc: &'a GcState,
    pub(super) snapshots: &'a Snapshots,
    pub(super) vlog_reader: &'a VlogReader,
    /// Counters of background work (GC's lookups count there).
    pub(super) counters: &'a Arc<Counters>,
    pub(super) reader: Reader<'a, R>,
    pub(super) retire: SegmentRetire<'a>,
    pub(super) write: WritePath<'a, F>,
}

impl<F: Fn(), R: Fn()> ValueLogGc<'_, F, R> {
    /// A collection called for by hand (`Db::gc_value_log`): the log rolled and everything
    /// flushed first, so every segment but the new head is sealed and collectable.
    pub(super) fn collect_now(&self) -> Result<GcStats> {
        let (write, flusher) = (&self.write, self.write.flusher());
        write.bg.check_open(write.closed)?;
        {
            let mut w = self.writes.writer.lock();
            if w.vlog.position().1 > vlog::SEGMENT_HEADER_LEN {
                let id = self.versions.new_file_number();
                write.roll_log(&mut w, id)?;
            }
        }
        flusher.flush()?;
        {
            // Nothing left in memory: replay can start at the head, sealing what is behind.
            let w = self.writes.writer.lock();
            let sv = self.versions.super_version();
            if sv.mem.is_empty() && sv.imm.is_empty() {
                let pos = w.vlog.position();
                if self.versions.lock().log_start < pos {
                    let edit = VersionEdit {
                        log_start: Some(pos),
                        ..VersionEdit::default()
                    };
                    flusher.installer.install(edit, None)?;
                }
            }
        }
        write.bg.take_gc_slot()?;
        let result = self.gc_pass(0.0);
        write.bg.release_gc_slot();
        let stats = result?;
        // The collected segments go once their rewrites are flushed: now, so the space is
        // back when this returns.
        if !self.gc.retire_after_flush.lock().is_empty() {
            flusher.flush()?;
            self.retire.if_all_flushed();
        }
        self.count(&stats);
        Ok(stats)
    }

    /// Freezes the memtable (a flush follows) unless it is empty, once the frozen ones leave
    /// room: the segments collected so far go once what they rewrote is flushed, and no
    /// write may come to fill it (when writes are refused for want of that space).
    pub(super) fn flush_soon(&self) -> Result<()> {
        let mut w = self.write.writer_for_job()?;
        self.write.freeze_when_room(&mut w)
    }

    /// Counts a collection's deleted segments and rewritten bytes.
    pub(super) fn count(&self, stats: &GcStats) {
        let c = self.counters.local();
        Counters::add(&c.gc_segments_deleted, stats.segments_deleted as u64);
        Counters::add(&c.gc_bytes_rewritten, stats.bytes_rewritten);
    }

    /// Sealed segments with their sizes: every record in them is older than the replay
    /// start, so tables hold all of their entries.
    pub(super) fn sealed_segments(&self) -> Result<Vec<(u64, u64)>> {
        let replay_from = self.versions.lock().log_start.0;
        let mut out = Vec::new();
        for name in self.storage.list().ctx("database directory")? {
            if let Some(id) = vlog::parse_segment_name(&name) {
                // A retired segment waits for its last readers; it is collected already. A
                // deferred one waits for a snapshot to go.
                let deferred = self.gc.deferred.lock().contains(&id)
                    || self
                        .gc
                        .retire_after_flush
                        .lock()
                        .iter()
                        .any(|(_, s)| *s == id);
                let damaged = self.gc.damaged.lock().contains_key(&id);
                if id < replay_from && !self.vlog_reader.is_retired(id) && !deferred && !damaged {
                    match self.storage.open(&name).and_then(|f| f.len()) {
                        Ok(len) => out.push((id, len)),
                        // Retired and deleted since the listing, by the last get that
                        // pinned it.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(Error::io(name, e)),
                    }
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Collects segment `seg` if at least `min_dead_ratio` of its record bytes are dead.
    ///
    /// The segment is streamed, never held whole: one pass finds the live records (keeping
    /// their offsets), the snapshot checks walk it again only while snapshots exist, and the
    /// rewrite pass copies live records out one group ([`REWRITE_CHUNK`]) at a time.
    pub(super) fn gc_segment(
        &self,
        seg: u64,
        min_dead_ratio: f64,
        stats: &mut GcStats,
    ) -> Result<()> {
        let mut scan = match SegmentScan::open(self.storage.as_ref(), seg, SCAN_CHUNK) {
            Ok(scan) => scan,
            // Collected and deleted since it was listed, by a collection that raced this one
            // (a manual and a background pass): nothing is left to do.
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let seg_len = scan.len();
        stats.segments_scanned += 1;
        let destroyed = self.namespaces.read().destroyed.clone();
        // Offsets of the records still current.
        let mut live = Vec::new();
        let (mut live_bytes, mut total) = (0u64, 0u64);
        while let Some(r) = scan.next_record()? {
            let rec = r.record;
            let addr = ValueAddr {
                segment: seg,
                offset: r.offset,
                len: r.len as u32,
            };
            total += r.len as u64;
            let candidate = rec.kind == Kind::Put
                && !destroyed.contains(&rec.nsid)
                && !self.gc.liveness.is_dead(&addr)
                && self.is_current(rec.nsid, rec.key, addr)?;
            if candidate {
                live_bytes += r.len as u64;
                live.push(r.offset);
            }
        }
        let dead = total - live_bytes;
        if total > 0 && (dead == 0 || (dead as f64) < min_dead_ratio * total as f64) {
            return Ok(());
        }
        let released = self.snapshots.releases();
        let seen = self.segment_seen_by_snapshot(&mut scan)?;
        if !seen.is_empty() {
            self.defer_segment(seg, released, seen);
            return Ok(());
        }
        // The passes after the first read the file opened for it: a segment retired meanwhile
        // (a collection that raced this one) stays readable.
        scan.rewind();
        let mut wanted = live.iter().copied().peekable();
        let mut group: Vec<LiveRecord> = Vec::new();
        let mut group_bytes = 0;
        while wanted.peek().is_some() {
            let Some(r) = scan.next_record()? else {
                return Err(Error::corruption(
                    scan.name(),
                    seg_len,
                    "value-log segment shorter than when GC first read it",
                ));
            };
            if wanted.peek() != Some(&r.offset) {
                continue;
            }
            wanted.next();
            group_bytes += r.len;
            group.push(LiveRecord {
                nsid: r.record.nsid,
                key: Bytes::copy_from_slice(r.record.key),
                value: Bytes::copy_from_slice(r.record.value),
                addr: ValueAddr {
                    segment: seg,
                    offset: r.offset,
                    len: r.len as u32,
                },
            });
            if group_bytes >= REWRITE_CHUNK || wanted.peek().is_none() {
                self.rewrite_group(&group, stats)?;
                group.clear();
                group_bytes = 0;
            }
        }
        // The rewritten records must be durable before the only other copy goes.
        self.write.writer_for_job()?.vlog.sync()?;
        // A snapshot taken before the rewrites became visible reads the old copies; one
        // taken after reads the new ones.
        let released = self.snapshots.releases();
        let seen = self.segment_seen_by_snapshot(&mut scan)?;
        if !seen.is_empty() {
            self.defer_segment(seg, released, seen);
            return Ok(());
        }
        drop(scan);
        // A flush that retires index entries reads the versions its writes replace, and some
        // may be in this segment: it goes once everything written so far is flushed. This holds
        // with no index too, since one may be created before those writes are flushed.
        let upto = self
            .writes
            .visible_seq
            .load(std::sync::atomic::Ordering::Acquire);
        self.gc.retire_after_flush.lock().push((upto, seg));
        self.retire.if_all_flushed();
        stats.segments_deleted += 1;
        stats.bytes_reclaimed += seg_len;
        Ok(())
    }

    /// Appends the records of `group` that are still current at the head of the log, as one
    /// group under the writer lock.
    fn rewrite_group(&self, group: &[LiveRecord], stats: &mut GcStats) -> Result<()> {
        let mut guard = self.write.writer_for_job()?;
        let w = &mut *guard;
        self.write.make_room(w)?;
        // Checked again under the writer lock: no write can slip in between. A namespace
        // being destroyed gets nothing back (its destroy clears the flag, then waits for
        // this lock, before a flush may forget the id: entries added after would belong to
        // no tree).
        let live: Vec<bool> = {
            let ns = self.namespaces.read();
            let live = |id| ns.live.get(id).is_some_and(|e| e.check_live().is_ok());
            group.iter().map(|r| live(&r.nsid)).collect()
        };
        let mut encoded = Vec::new();
        let mut bytes = 0;
        for (r, live) in group.iter().zip(live) {
            if live && self.is_current(r.nsid, &r.key, r.addr)? {
                let mut e = EncodedWrite::new(r.nsid, &[(Kind::Put, &r.key[..], &r.value[..])]);
                // It replaces itself: the namespace's pending bytes do not grow.
                e.credit = (r.key.len() + r.value.len()) as u64;
                bytes += e.buf.len();
                encoded.push(e);
                stats.records_rewritten += 1;
                stats.bytes_rewritten += u64::from(r.addr.len);
            }
        }
        if !encoded.is_empty() {
            self.write.append_locked(w, &mut encoded, bytes, false)?;
        }
        Ok(())
    }

    /// Whether a live snapshot reads a put of the segment `scan` reads (of a namespace not in
    /// `dead_ns`): [`seen_by_snapshot`](Self::seen_by_snapshot) over the segment's puts, streamed and checked
    /// [`SNAPSHOT_CHECK_PUTS`] at a time. With no snapshot open, nothing is read.
    fn segment_seen_by_snapshot(&self, scan: &mut SegmentScan) -> Result<Vec<Nsid>> {
        let with_snapshots: HashSet<Nsid> = self
            .snapshots
            .list()
            .into_iter()
            .map(|(ns, _)| ns)
            .collect();
        if with_snapshots.is_empty() {
            return Ok(Vec::new());
        }
        let seg = scan.segment();
        scan.rewind();
        let mut seen = std::collections::BTreeSet::new();
        let mut puts = Vec::with_capacity(SNAPSHOT_CHECK_PUTS);
        loop {
            let next = scan.next_record()?;
            let end = next.is_none();
            if let Some(r) = next {
                // Every put a snapshot might still read (a destroyed namespace's too: an
                // iterator opened before the destroy reads on), of namespaces not found yet.
                let ns = r.record.nsid;
                if r.record.kind == Kind::Put && with_snapshots.contains(&ns) && !seen.contains(&ns)
                {
                    let addr = ValueAddr {
                        segment: seg,
                        offset: r.offset,
                        len: r.len as u32,
                    };
                    puts.push((ns, Bytes::copy_from_slice(r.record.key), addr));
                }
            }
            if puts.len() >= SNAPSHOT_CHECK_PUTS || (end && !puts.is_empty()) {
                seen.extend(self.seen_by_snapshot(&puts)?);
                puts.clear();
            }
            if end || seen.len() == with_snapshots.len() {
                return Ok(seen.into_iter().collect());
            }
        }
    }

    /// Leaves `seg` until a snapshot of one of `namespaces` goes; `released` is the count of
    /// snapshot releases read before the check that found one reading it. A release since then
    /// may have missed the entry (it wakes collection only when something waits): then the
    /// segment is not deferred, and the next pass looks at it again.
    fn defer_segment(&self, seg: u64, released: u64, namespaces: Vec<Nsid>) {
        let mut deferred = self.gc.deferred.lock();
        deferred.insert(seg, namespaces);
        if self.snapshots.releases() != released {
            deferred.remove(&seg);
        }
    }

    /// The namespaces with a live snapshot that reads one of `puts` (the record at that
    /// address is the version of its key the snapshot sees). Snapshots count per namespace:
    /// a snapshot only ever reads its own namespace's records, so only those are looked up.
    /// An iterator of a destroyed namespace reads its snapshot to the end: any put of that
    /// namespace is taken as read (its entries may be compacted away already).
    fn seen_by_snapshot(&self, puts: &[(Nsid, Bytes, ValueAddr)]) -> Result<Vec<Nsid>> {
        let mut seen: Vec<Nsid> = Vec::new();
        let destroyed = self.namespaces.read().destroyed.clone();
        // By namespace: once one snapshot of a namespace reads the segment, that is enough.
        for (ns, seq) in self.snapshots.list() {
            if seen.last() == Some(&ns) {
                continue;
            }
            let of_destroyed = destroyed.contains(&ns);
            for (_, key, addr) in puts.iter().filter(|(n, _, _)| *n == ns) {
                let read = of_destroyed || {
                    let hit = self.reader.lookup(ns, key, Some(seq), self.counters)?;
                    // A destroy racing this check takes the namespace's tables out of the
                    // version before it joins the destroyed set: a miss may be that, not a newer
                    // version. The manifest's list of destroyed ids changes with the version
                    // the lookup read, so a miss for that reason finds the id in it.
                    hit.is_some_and(|h| h.kind == Kind::Put && h.addr == Some(*addr))
                        || self.versions.lock().namespaces.destroyed.contains(&ns)
                };
                if read {
                    seen.push(ns);
                    break;
                }
            }
        }
        Ok(seen)
    }

    /// Whether the newest version of `(ns, key)` is the record at `addr`.
    fn is_current(&self, ns: Nsid, key: &[u8], addr: ValueAddr) -> Result<bool> {
        let hit = self.reader.lookup(ns, key, None, self.counters)?;
        Ok(hit.is_some_and(|h| h.kind == Kind::Put && h.addr == Some(addr)))
    }

    /// Collects every sealed segment with at least `min_dead_ratio` dead bytes (0 = any).
    pub(super) fn gc_pass(&self, min_dead_ratio: f64) -> Result<GcStats> {
        let mut stats = GcStats::default();
        for (seg, _) in self.sealed_segments()? {
            self.collect_segment(seg, min_dead_ratio, &mut stats)?;
        }
        Ok(stats)
    }

    /// [`gc_segment`](Self::gc_segment), except that a damaged segment is kept and recorded instead of
    /// failing the collection: corruption fails the reads that touch it, not the database.
    pub(super) fn collect_segment(
        &self,
        seg: u64,
        min_dead_ratio: f64,
        stats: &mut GcStats,
    ) -> Result<()> {
        match self.gc_segment(seg, min_dead_ratio, stats) {
            Err(e) if e.is_corruption() => {
                tracing::error!(segment = seg, error = %e, "value-log GC keeps a damaged segment");
                stats.segments_damaged += 1;
                self.gc.damaged.lock().insert(seg, e.to_string());
                Ok(())
            }
            r => r,
        }
    }

    /// The sealed segment background GC collects next at `urgency`, if any (see [`GcGate`]).
    pub(super) fn gc_candidate(&self, ratio: f64, urgency: GcUrgency) -> Result<Option<u64>> {
        // With one background thread, the GC's rewrites flush for themselves (`make_room`).
        let dead = self.gc.liveness.dead_bytes();
        if dead.is_empty() {
            return Ok(None);
        }
        let segments: Vec<(u64, u64, u64)> = self
            .sealed_segments()?
            .into_iter()
            .map(|(id, len)| (id, len, dead.get(&id).map_or(0, |d| (*d).min(len))))
            .collect();
        // A storage that cannot say its free space is never short of it. Writes are refused
        // once the free space is down to the reserve: what counts is what is above it.
        let opts = self.write.opts;
        let space = self.storage.space().ok().flatten();
        let gate = GcGate {
            ratio,
            urgency,
            free: space.map(|(total, free)| free.saturating_sub(opts.reserve_on(total))),
            room: space.map(|(_, free)| free),
        };
        Ok(gate.pick(&segments))
    }
}

/// Which sealed segment background GC collects: the deadest at or above the dead ratio, but
/// only while it pays.
///
/// Collecting a segment `d` dead rewrites its `1 - d` live part to give back `d`: at the
/// ratio's 0.5, a byte written for every byte freed. The deadest segment is the cheapest, and
/// the longer a segment waits the deader it gets, so GC waits until the sealed log as a whole
/// holds `ratio` of garbage, then takes the deadest segment first. What does not wait: a
/// segment at least [`NEARLY_DEAD`] dead (its rewrite is nearly free); segments past the ratio
/// while a destroyed namespace's values are garbage ([`GcUrgency::Reclaim`]) or while the
/// storage's free space above the writes' reserve is below the log's garbage; and, once writes
/// are refused for want of space ([`GcUrgency::Space`]), the deadest segment with any garbage
/// whose live bytes fit in the free space.
pub(super) struct GcGate {
    pub(super) ratio: f64,
    pub(super) urgency: GcUrgency,
    /// The storage's free bytes above the reserve writes keep (`None`: it cannot say).
    pub(super) free: Option<u64>,
    /// The storage's free bytes, the reserve's included: room for a collection's rewrites.
    pub(super) room: Option<u64>,
}

/// A segment this dead is collected whatever the rest of the log holds.
pub(super) const NEARLY_DEAD: f64 = 0.9;

impl GcGate {
    /// From `(segment, bytes, dead bytes)` of the sealed segments, the one to collect.
    pub(super) fn pick(&self, segments: &[(u64, u64, u64)]) -> Option<u64> {
        let (total, garbage) = segments
            .iter()
            .fold((0u64, 0u64), |(t, g), (_, len, d)| (t + len, g + d));
        let share = |len: u64, d: u64| d as f64 / len.max(1) as f64;
        let fits = |len: u64, d: u64| self.room.is_none_or(|room| len.saturating_sub(d) <= room);
        let least = self.urgency.least_dead(self.ratio);
        let open = self.urgency != GcUrgency::Wait
            || self.free.is_some_and(|f| f < garbage)
            || garbage as f64 >= self.ratio * total as f64;
        segments
            .iter()
            .filter(|(_, len, d)| *d > 0 && share(*len, *d) >= least && fits(*len, *d))
            .filter(|(_, len, d)| open || share(*len, *d) >= NEARLY_DEAD)
            // The deadest; of equals, the oldest.
            .max_by(|a, b| {
                share(a.1, a.2)
                    .total_cmp(&share(b.1, b.2))
                    .then(b.0.cmp(&a.0))
            })
            .map(|(id, _, _)| *id)
    }
}

#[cfg(test)]
#[path = "gc_tests.rs"]
mod tests;
