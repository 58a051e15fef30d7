//! [`Readable`]: the reads a [`Namespace`] and a [`Snapshot`] share, each written once over
//! the point it reads at (a namespace reads at "now", a snapshot at its pinned seqno).

use super::handle::Namespace;
use super::iterator::{Iter, ReadOptions};
use super::query::{FindOptions, TopOptions};
use super::snapshot::Snapshot;
use crate::error::Result;
use crate::key::SeqNo;
use crate::query::{Aggregate, Filter, Found, QueryResult, Ranked};
use bytes::Bytes;
use serde_json::Value;

mod sealed {
    use super::{Namespace, SeqNo, Snapshot};

    /// Where a read looks: the namespace as it is now, or a snapshot of it.
    pub enum ReadPoint<'a> {
        Now(&'a Namespace),
        At(&'a Snapshot),
    }

    impl ReadPoint<'_> {
        pub(in crate::db) fn namespace(&self) -> &Namespace {
            match self {
                ReadPoint::Now(ns) => ns,
                ReadPoint::At(s) => s.namespace(),
            }
        }

        /// The seqno a point read looks at (`None`: the newest visible).
        pub(in crate::db) fn seq(&self) -> Option<SeqNo> {
            match self {
                ReadPoint::Now(_) => None,
                ReadPoint::At(s) => Some(s.seq()),
            }
        }

        /// Fails once the snapshot read through is past its maximum age.
        pub(in crate::db) fn check(&self) -> crate::error::Result<()> {
            match self {
                ReadPoint::Now(_) => Ok(()),
                ReadPoint::At(s) => s.check(),
            }
        }

        /// A snapshot to read through for longer than one lookup (an iterator): the snapshot
        /// itself, or a new one of the namespace, released when the read is done. Its pin is
        /// what keeps flushes, compactions and value-log GC off what it reads.
        pub(in crate::db) fn pinned(&self) -> Snapshot {
            match self {
                ReadPoint::Now(ns) => ns.snapshot(),
                ReadPoint::At(s) => (*s).clone(),
            }
        }

        /// As [`pinned`](Self::pinned), for a read that ends when its call returns (a
        /// query): a new pin has no expiry, whose registration woke the background thread
        /// on every query (a futex wake and a switch on a core serving clients).
        pub(in crate::db) fn pinned_for_call(&self) -> Snapshot {
            match self {
                ReadPoint::Now(ns) => Snapshot::for_call((*ns).clone()),
                ReadPoint::At(s) => (*s).clone(),
            }
        }
    }

    /// Keeps [`Readable`](super::readable::Readable) to the engine's own read handles.
    pub trait Sealed {
        fn read_point(&self) -> ReadPoint<'_>;
    }
}

impl sealed::Sealed for Namespace {
    fn read_point(&self) -> sealed::ReadPoint<'_> {
        sealed::ReadPoint::Now(self)
    }
}

impl sealed::Sealed for Snapshot {
    fn read_point(&self) -> sealed::ReadPoint<'_> {
        sealed::ReadPoint::At(self)
    }
}

/// The reads of one namespace, through a [`Namespace`] (each read sees the newest data when
/// it starts) or a [`Snapshot`] (each read sees the namespace as it was when the snapshot was
/// taken). Bring it into scope to read: `use cerberus_engine::Readable;`. Sealed: only the
/// engine's handles implement it.
pub trait Readable: sealed::Sealed {
    /// The value of `key`, or `None` if it has none.
    fn get(&self, key: &[u8]) -> Result<Option<Bytes>> {
        let at = self.read_point();
        at.check()?;
        let ns = at.namespace();
        let reader = ns.inner.reader();
        reader.get(&ns.entry, key, at.seq())
    }

    /// The values of `keys` (`None` where a key has none), in the order of `keys`, all read
    /// at one point: as one get each, but each table's filter and index block are read once
    /// for the batch and the value-log records together. At most
    /// [`MAX_GET_MANY_KEYS`](crate::MAX_GET_MANY_KEYS) keys ([`Error::TooManyKeys`](crate::Error::TooManyKeys)
    /// beyond), whose values take at most [`MAX_GET_MANY_BYTES`](crate::MAX_GET_MANY_BYTES)
    /// ([`Error::TooManyBytes`](crate::Error::TooManyBytes) beyond, before any value is read
    /// from the value log: split the keys and ask again).
    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Bytes>>> {
        let at = self.read_point();
        at.check()?;
        let ns = at.namespace();
        let (inner, nsid, c) = (&ns.inner, ns.entry.id, &ns.entry.counters);
        // On a modeled device the values are read on the prefetch threads, all queued at once.
        let far = || {
            inner.storage.nand_stats().is_some().then(|| {
                let pool = inner.prefetcher();
                move |addr, key: Vec<u8>| {
                    let (inner, c) = (inner.clone(), c.clone());
                    pool.submit(move || inner.vlog_reader.read_value(addr, nsid, &key, &c))
                }
            })
        };
        let reader = inner.reader();
        reader.get_many(&ns.entry, keys, at.seq(), inner.opts.get_many_bytes, far)
    }

    /// Whether `key` has a value, found like a get but without reading the value (so never
    /// from the value log).
    fn contains(&self, key: &[u8]) -> Result<bool> {
        let at = self.read_point();
        at.check()?;
        let ns = at.namespace();
        let reader = ns.inner.reader();
        reader.contains(&ns.entry, key, at.seq())
    }

    /// An iterator over the namespace's keys and values in byte order. Through a
    /// `Namespace` it reads an implicit snapshot taken now, released with the iterator.
    fn iter(&self, opts: ReadOptions) -> Result<Iter> {
        let at = self.read_point();
        at.check()?;
        Iter::open(at.pinned(), opts)
    }

    /// One page of the records meeting `filter` (`value`), and the continuation to pass in
    /// `opts` for the next page (`None`: no record is left). Through a `Namespace` each page
    /// reads the namespace as it is when asked for.
    fn find(&self, filter: &Filter, opts: &FindOptions) -> Result<QueryResult<Vec<Found>>> {
        let at = self.read_point();
        at.check()?;
        let snap = at.pinned_for_call();
        let ns = snap.namespace();
        ns.inner
            .queries()
            .find(&ns.entry, snap.seq(), ns.query_work, filter, opts)
    }

    /// The pks of the records whose attribute `attr` equals `value` (at most `limit`, in
    /// index order: by pk), through its index; reads no record.
    fn get_by_secondary(
        &self,
        attr: &str,
        value: &Value,
        limit: Option<usize>,
    ) -> Result<QueryResult<Vec<Bytes>>> {
        let at = self.read_point();
        at.check()?;
        let snap = at.pinned_for_call();
        let ns = snap.namespace();
        ns.inner.queries().get_by_secondary(
            &ns.entry,
            snap.seq(),
            ns.query_work,
            attr,
            value,
            limit,
        )
    }

    /// The `opts.k` records meeting `filter` with the smallest (or, `desc`, largest) scalar
    /// at `opts.by`, ties by pk, with the projection's attributes if given.
    fn top(&self, filter: &Filter, opts: &TopOptions) -> Result<QueryResult<Vec<Ranked>>> {
        let at = self.read_point();
        at.check()?;
        let snap = at.pinned_for_call();
        let ns = snap.namespace();
        ns.inner
            .queries()
            .top(&ns.entry, snap.seq(), ns.query_work, filter, opts)
    }

    /// An aggregate over the records meeting `filter`.
    fn aggregate(&self, filter: &Filter, op: &Aggregate) -> Result<QueryResult<Value>> {
        let at = self.read_point();
        at.check()?;
        let snap = at.pinned_for_call();
        let ns = snap.namespace();
        ns.inner
            .queries()
            .aggregate(&ns.entry, snap.seq(), ns.query_work, filter, op)
    }
}

impl Readable for Namespace {}

impl Readable for Snapshot {}
