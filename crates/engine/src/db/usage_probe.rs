//! The flush's lookups of the versions it supersedes (docs/quotas.md), made for a batch of
//! keys at once. One key at a time, each lookup waits for its reads (a filter, an index
//! block, a data block per table it asks) before the next starts: on a device with no block
//! cache a flush of overwrites then takes a device read time per key, falls behind the
//! writes, and the writes stall. Here the reads of a batch are issued together and overlap
//! on the device (the NAND model's dies; the reader threads on files): the tables' filters
//! and index blocks once per flush, then one data block per key and table asked, in rounds
//! (a key the filter let through but the block does not hold asks its next table in the
//! next round). The answers are the ones [`super::lookup::search_tables_seq`] gives a record:
//! the same tables, in the same order, through the same filters; an index entry, whose
//! versions may sit out of that order, gets the newest one wherever it is (`next_block`).

use crate::error::{Error, Result};
use crate::key::{self, IndexValue, Kind, SeqNo, NSID_LEN};
use crate::prefetch::{Pending, ReadPool};
use crate::stats::Counters;
use crate::table::block::Block;
use crate::table::filter::filter_hash;
use crate::table::{BlockHandle, TableReader};
use crate::version::{TableHandle, Version};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;

/// Keys looked up together. Each batch waits for its reads a few times (the tables' blocks,
/// then a round per table asked); a wait can sit behind the device's queued programs, so a
/// batch takes a whole memtable of the paper profile (7,600 keys of 1 KiB values). It also
/// bounds what a batch holds: its keys' lookups, and in a round at most a data block per key
/// (blocks several keys need are read once; keys the filters rule out read none). Measured
/// on the NAND model, 8 tenants x 50,000 puts, puts/s per tenant on a loaded machine: 512
/// keys a batch 8,000 and 4,300; 4,096 keys 10,100 and 6,800; a whole memtable 11,400; the
/// accounting skipped 11,400 and 11,600.
pub(super) const BATCH_KEYS: usize = 8192;

/// A version found: its seqno, kind and table entry.
pub(super) type Found = (SeqNo, Kind, IndexValue);

/// What a flush's lookups read: table blocks asked for (filters, index blocks, data blocks),
/// and the times the flush waited for a batch of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ProbeCost {
    pub(super) blocks: u64,
    pub(super) waits: u64,
}

/// A table's filter and index block, read once for the flush's lookups.
struct Probed {
    reader: Arc<TableReader>,
    filter: Option<Bytes>,
    index: Block,
}

/// One key's lookup: the tables that may hold it in search order, and where it is.
struct Want<'k, 'v> {
    user: &'k [u8],
    seek: Vec<u8>,
    hash: u64,
    tables: Vec<&'v Arc<TableHandle>>,
    next: usize,
    found: Option<Found>,
}

/// The lookups of one flush in `version`'s tables; reads go through `pool`, count in `c`.
pub(super) struct BatchProbe<'a> {
    version: &'a Version,
    pool: &'a ReadPool,
    c: &'a Arc<Counters>,
    tables: HashMap<u64, Arc<Probed>>,
    pub(super) cost: ProbeCost,
}

fn stopped() -> Error {
    Error::Background("flush lookup reader stopped".into())
}

impl<'a> BatchProbe<'a> {
    pub(super) fn new(version: &'a Version, pool: &'a ReadPool, c: &'a Arc<Counters>) -> Self {
        BatchProbe {
            version,
            pool,
            c,
            tables: HashMap::new(),
            cost: ProbeCost::default(),
        }
    }

    /// The newest version in the tables of each of `users` (`nsid ++ key`): the highest
    /// seqno any table holds, whichever table it is in.
    pub(super) fn lookup(&mut self, users: &[&[u8]]) -> Result<Vec<Option<Found>>> {
        let mut wants: Vec<Want> = users.iter().map(|u| self.want(u)).collect();
        self.load_tables(&wants)?;
        loop {
            // Each key's next table whose filter lets it through: its data block.
            let mut jobs: Vec<Pending<Result<Block>>> = Vec::new();
            let mut slots: HashMap<(u64, u64), usize> = HashMap::new();
            let mut asks: Vec<(usize, usize)> = Vec::new();
            for (i, w) in wants.iter_mut().enumerate() {
                let Some((id, p, h)) = self.next_block(w)? else {
                    continue;
                };
                let slot = *slots.entry((id, h.offset)).or_insert_with(|| {
                    let (r, c) = (p.reader.clone(), self.c.clone());
                    jobs.push(self.pool.submit(move || r.data_block_at(h, &c, false)));
                    jobs.len() - 1
                });
                asks.push((i, slot));
            }
            if jobs.is_empty() {
                break;
            }
            self.cost.waits += 1;
            self.cost.blocks += jobs.len() as u64;
            let blocks = jobs
                .into_iter()
                .map(|j| j.wait().unwrap_or_else(|| Err(stopped())))
                .collect::<Result<Vec<Block>>>()?;
            for (i, slot) in asks {
                let w = &mut wants[i];
                let p = self.probed(w.tables[w.next])?;
                // The highest seqno wins, not the first table: see `next_block`.
                if let Some(f) = p.reader.find_in(&blocks[slot], w.user, &w.seek)? {
                    if w.found.as_ref().is_none_or(|(seen, ..)| f.0 > *seen) {
                        w.found = Some(f);
                    }
                }
                w.next += 1;
            }
        }
        Ok(wants.into_iter().map(|w| w.found).collect())
    }

    /// The lookup of `user`: the tables whose key range holds it, as the search asks them (L0
    /// newest first, the namespace's runs newest first, one table per deeper level).
    fn want<'k>(&self, user: &'k [u8]) -> Want<'k, 'a> {
        let v: &'a Version = self.version;
        let ns = key::ikey_nsid(user);
        let mut tables: Vec<&'a Arc<TableHandle>> = v.levels[0]
            .iter()
            .chain(v.runs_of(ns))
            .filter(|t| t.covers(user))
            .collect();
        tables.extend((1..v.num_levels()).filter_map(|l| v.find_in_level(l, user)));
        // A key past every table's range (a load of new keys) asks nothing: no seek key.
        let (mut seek, mut hash) = (Vec::new(), 0);
        if !tables.is_empty() {
            seek.reserve(user.len() + key::TRAILER_LEN);
            seek.extend_from_slice(user);
            key::push_trailer(&mut seek, SeqNo::MAX, Kind::Put);
            hash = filter_hash(user);
        }
        Want {
            user,
            seek,
            hash,
            tables,
            next: 0,
            found: None,
        }
    }

    /// Reads, together, the filter and index block of each table `wants` may ask that this
    /// flush has not read yet.
    fn load_tables(&mut self, wants: &[Want]) -> Result<()> {
        let mut jobs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for t in wants.iter().flat_map(|w| &w.tables) {
            if self.tables.contains_key(&t.id()) || !seen.insert(t.id()) {
                continue;
            }
            let (t, c) = (Arc::clone(t), self.c.clone());
            let job = self.pool.submit(move || -> Result<Probed> {
                let reader = t.reader()?;
                let (filter, index) = reader.probe_blocks(&c, false)?;
                Ok(Probed {
                    reader,
                    filter,
                    index,
                })
            });
            jobs.push(job);
        }
        if jobs.is_empty() {
            return Ok(());
        }
        self.cost.waits += 1;
        self.cost.blocks += 2 * jobs.len() as u64;
        for j in jobs {
            let p = j.wait().unwrap_or_else(|| Err(stopped()))?;
            self.tables.insert(p.reader.id(), Arc::new(p));
        }
        Ok(())
    }

    /// Table `t`'s blocks, read by [`BatchProbe::load_tables`].
    fn probed(&self, t: &TableHandle) -> Result<&Arc<Probed>> {
        self.tables
            .get(&t.id())
            .ok_or_else(|| Error::Background("a flush lookup met a table it did not read".into()))
    }

    /// Moves `w` to its next table that may hold its key (namespace range, filter, index) and
    /// gives that table and the data block to read; `None` when no table is left.
    ///
    /// Once a version is found, only a table holding a newer seqno is asked on. A record's
    /// versions reach the tables in seqno order, so in the search's order that is none; an
    /// index backfill's entries do not: they go into the memtable of the day at their
    /// record's (older) seqno, so the table they reach may sort after (L0 by its highest
    /// seqno; deeper once compacted) a table holding an older version of the same entry, a
    /// tombstone a flush put there. The first answer would be that older version.
    fn next_block(&self, w: &mut Want) -> Result<Option<(u64, Arc<Probed>, BlockHandle)>> {
        let (ns, pk) = (key::ikey_nsid(w.user), &w.user[NSID_LEN..]);
        while let Some(t) = w.tables.get(w.next) {
            if w.found
                .as_ref()
                .is_some_and(|(seen, ..)| t.props.max_seq <= *seen)
            {
                w.next += 1;
                continue;
            }
            let p = self.probed(t)?;
            if p.reader.ns_may_contain(ns, pk)
                && TableReader::filter_allows(p.filter.as_ref(), w.hash, self.c)
            {
                if let Some(h) = p.reader.block_for(&p.index, &w.seek)? {
                    return Ok(Some((t.id(), p.clone(), h)));
                }
            }
            w.next += 1;
        }
        Ok(None)
    }
}
