//! The session's reads: gets, index lists, queries, snapshots, paged finds and iterators.

use super::checks::{check_get_many, check_indexes, check_read, err_name, stale, tr, trace, Check};
use super::config::cov;
use super::model::{self, norm};
use super::ops::{key_bytes, short, Op, ATTRS};
use super::queries::{check_answer, check_work, expect_query, filter_of, run_engine_query};
use super::run::{Cursor, DbRef, IterState, Session, Slot, SnapState};
use cerberus_engine::Readable;
use cerberus_engine::{Error, ErrorKind, FindOptions, ReadOptions};
use serde_json::Value;
use std::collections::VecDeque;

impl Session {
    /// Runs a read operation (a get, query, snapshot, paged find or iterator step).
    pub(crate) fn exec_read(&mut self, host: &mut DbRef<'_>, op: &Op) -> Check {
        let faulty = self.faulty;
        match op {
            Op::Get { ns, key } | Op::Contains { ns, key } => {
                let k = key_bytes(*key);
                let get = matches!(op, Op::Get { .. });
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_read(*ns, |h| {
                        if get {
                            h.get(&k).map(|_| ())
                        } else {
                            h.contains(&k).map(|_| ())
                        }
                    });
                };
                let r = if get {
                    cov("Namespace::get");
                    h.get(&k).map(|v| v.map(|v| v.to_vec()))
                } else {
                    cov("Namespace::contains");
                    h.contains(&k).map(|c| c.then(Vec::new))
                };
                check_read(m, faulty, &k, r, get)
            }
            Op::GetMany { ns, keys } => {
                let keys: Vec<Vec<u8>> = keys.iter().map(|k| key_bytes(*k)).collect();
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                let limit = self.get_many_bytes;
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_read(*ns, |h| h.get_many(&refs).map(|_| ()));
                };
                cov("Namespace::get_many");
                check_get_many(m, faulty, &keys, h.get_many(&refs), limit)
            }
            Op::ListIndexes { ns } => {
                let Some((h, m)) = self.live(*ns) else {
                    return self.ghost_read(*ns, |h| h.list_indexes().map(|_| ()));
                };
                cov("Namespace::list_indexes");
                match h.list_indexes() {
                    Ok(l) => {
                        if !m.indexes_uncertain {
                            check_indexes(&l, m)?;
                        }
                        Ok(format!("{:?}", m.indexes))
                    }
                    Err(e) if faulty && !e.is_corruption() => Ok("Err".into()),
                    Err(e) => Err(format!("list_indexes: {e}")),
                }
            }
            Op::Query { ns, q, doc, work } => {
                let Some((h, m)) = self.live(*ns) else {
                    let q = q.clone();
                    let doc = *doc;
                    return self.ghost_read(*ns, move |h| {
                        match run_engine_query(Err(h), &q, doc) {
                            Ok(Ok(_)) => Ok(()),
                            Ok(Err(e)) => Err(e),
                            Err(_) => Ok(()),
                        }
                    });
                };
                let base = h;
                let limited;
                let h = match work {
                    Some(w) => {
                        cov("Namespace::with_query_work_limit");
                        limited = h.with_query_work_limit(*w);
                        &limited
                    }
                    None => h,
                };
                let got = run_engine_query(Err(h), q, *doc)?;
                // Past its limit a query answers nothing; within it, exactly as without.
                let stopped = matches!(&got, Err(e) if e.kind() == ErrorKind::WorkLimit);
                if stopped && work.is_none() {
                    return Err(format!("a query without a work limit stopped: {got:?}"));
                }
                if let (Some(w), false) = (work, faulty) {
                    check_work(base, m, q, *doc, *w, stopped)?;
                }
                if stopped {
                    return Ok("stopped at its work limit".into());
                }
                if faulty && (got.is_err() || !m.certain() || m.indexes_uncertain) {
                    return Ok("unchecked (fault)".into());
                }
                check_answer(got, expect_query(m, q), q, false)
            }
            Op::SnapOpen { snap, ns } => {
                let epoch = host.epoch();
                let Slot::Live { ns: h, id, m } = &self.slots[*ns as usize] else {
                    return Ok("skip".into());
                };
                cov("Namespace::snapshot");
                let s = h.snapshot();
                self.snaps[*snap as usize] = Some(SnapState {
                    snap: s,
                    slot: *ns,
                    id: *id,
                    m: m.clone(),
                    epoch,
                });
                Ok("snap".into())
            }
            Op::SnapClose { snap } => {
                cov("Snapshot::drop");
                Ok(if self.snaps[*snap as usize].take().is_some() {
                    "released"
                } else {
                    "skip"
                }
                .into())
            }
            Op::SnapGet { snap, key } | Op::SnapContains { snap, key } => {
                let get = matches!(op, Op::SnapGet { .. });
                let (epoch, k) = (host.epoch(), key_bytes(*key));
                let Some(s) = &self.snaps[*snap as usize] else {
                    return Ok("skip".into());
                };
                let r = if get {
                    cov("Snapshot::get");
                    s.snap.get(&k).map(|v| v.map(|v| v.to_vec()))
                } else {
                    cov("Snapshot::contains");
                    s.snap.contains(&k).map(|c| c.then(Vec::new))
                };
                if s.epoch != epoch {
                    return stale(r.map(|_| ()), "snapshot read");
                }
                let gone = self.gone(s.slot, s.id);
                match r {
                    Err(e) if gone || (faulty && !e.is_corruption()) => Ok("Err".into()),
                    r => check_read(&s.m, faulty, &k, r, get),
                }
            }
            Op::SnapQuery { snap, q } => {
                let epoch = host.epoch();
                let Some(s) = &self.snaps[*snap as usize] else {
                    return Ok("skip".into());
                };
                let got = run_engine_query(Ok(&s.snap), q, false)?;
                if s.epoch != epoch {
                    return stale(got.map(|_| ()), "snapshot query");
                }
                let gone = self.gone(s.slot, s.id);
                if faulty && (got.is_err() || !s.m.certain()) {
                    return Ok("unchecked (fault)".into());
                }
                // Indexes: the namespace's now (a dropped one is gone for the snapshot too).
                let mut m = s.m.clone();
                match &self.slots[s.slot as usize] {
                    Slot::Live { m: now, id, .. } if *id == s.id => {
                        if now.indexes_uncertain {
                            return Ok("unchecked (fault)".into());
                        }
                        m.indexes = now.indexes.clone()
                    }
                    _ => {}
                }
                check_answer(got, expect_query(&m, q), q, gone)
            }
            Op::PageOpen {
                cur,
                ns,
                filter,
                projection,
                page_bytes,
            } => {
                let Slot::Live { id, m, .. } = &self.slots[*ns as usize] else {
                    return Ok("skip".into());
                };
                let c = Cursor {
                    slot: *ns,
                    id: *id,
                    filter: filter.clone(),
                    projection: projection.clone(),
                    page_bytes: *page_bytes,
                    continuation: None,
                    seen: Vec::new(),
                    writes: m.writes,
                    pages: 0,
                };
                self.cursors[*cur as usize] = Some(c);
                self.next_page(*cur)
            }
            Op::PageNext { cur } => match &self.cursors[*cur as usize] {
                Some(c) if c.continuation.is_some() => self.next_page(*cur),
                _ => Ok("skip".into()),
            },
            Op::IterOpen { it, ns, snap, spec } => {
                let epoch = host.epoch();
                let ropts = ReadOptions {
                    upper_bound: spec.upper.map(key_bytes),
                    prefix: spec.prefix.as_ref().map(|p| p.as_bytes().to_vec()),
                    keys_only: spec.keys_only,
                    prefetch_degree: spec.prefetch,
                    index_prefetch: spec.index_prefetch,
                    ..ReadOptions::default()
                };
                let (r, slot, id, m, iepoch) = match snap {
                    Some(s) => {
                        let Some(s) = &self.snaps[*s as usize] else {
                            return Ok("skip".into());
                        };
                        cov("Snapshot::iter");
                        (s.snap.iter(ropts), s.slot, s.id, s.m.clone(), s.epoch)
                    }
                    None => {
                        let Slot::Live { ns: h, id, m } = &self.slots[*ns as usize] else {
                            return Ok("skip".into());
                        };
                        cov("Namespace::iter");
                        (h.iter(ropts), *ns, *id, m.clone(), epoch)
                    }
                };
                if iepoch != epoch {
                    return stale(r.map(|_| ()), "iterator on an old snapshot");
                }
                let gone = self.gone(slot, id);
                let it_h = match r {
                    Ok(i) => i,
                    Err(e) if gone || (faulty && !e.is_corruption()) => return Ok("Err".into()),
                    Err(e) => return Err(format!("iter: {e}")),
                };
                // Uncertain keys: positioned by key, value unchecked.
                let mut all = m.data.clone();
                for k in m.uncertain.keys() {
                    all.entry(k.clone()).or_default();
                }
                let entries = all.into_iter().collect();
                self.iters[*it as usize] = Some(IterState {
                    it: it_h,
                    slot,
                    id,
                    epoch,
                    entries,
                    uncertain: m.uncertain.keys().cloned().collect(),
                    spec: spec.clone(),
                    pos: None,
                    dead: false,
                });
                Ok("iter".into())
            }
            Op::IterClose { it } => {
                cov("Iter::drop");
                Ok(if self.iters[*it as usize].take().is_some() {
                    "dropped"
                } else {
                    "skip"
                }
                .into())
            }
            Op::IterSeek { it, key } => {
                let epoch = host.epoch();
                let Some(st) = &self.iters[*it as usize] else {
                    return Ok("skip".into());
                };
                let gone = self.gone(st.slot, st.id);
                let st = self.iters[*it as usize].as_mut().unwrap();
                if st.dead {
                    return Ok("skip (dead)".into());
                }
                let k = key_bytes(*key);
                cov("Iter::seek");
                let r = st.it.seek(&k);
                if st.epoch != epoch {
                    st.dead = true;
                    return stale(r, "seek on an old iterator");
                }
                match r {
                    Ok(()) => {
                        let target = match &st.spec.prefix {
                            Some(p) if k.as_slice() < p.as_bytes() => p.as_bytes().to_vec(),
                            _ => k,
                        };
                        st.pos = Some(st.entries.partition_point(|(e, _)| *e < target));
                        Ok("seek".into())
                    }
                    Err(e) if gone || (faulty && !e.is_corruption()) => {
                        trace(|| format!("seek: accepted error (gone {gone}): {e}"));
                        st.dead = true;
                        Ok("Err".into())
                    }
                    Err(e) => Err(format!("seek: {e}")),
                }
            }
            Op::IterNext { it, n } => {
                let epoch = host.epoch();
                let Some(st) = &self.iters[*it as usize] else {
                    return Ok("skip".into());
                };
                let gone = self.gone(st.slot, st.id);
                let st = self.iters[*it as usize].as_mut().unwrap();
                if st.dead {
                    return Ok("skip (dead)".into());
                }
                cov("Iter::snapshot");
                cov("Snapshot::namespace");
                if st.it.snapshot().namespace().id() != st.id {
                    return Err("the iterator's snapshot names another namespace".into());
                }
                cov("Iter::memory");
                let mem = st.it.memory();
                if mem.state == 0 || mem.buffers > 64 << 20 {
                    return Err(format!("iterator memory out of bounds: {mem:?}"));
                }
                let mut out = String::new();
                // Reads of 3 and of 50 in one batch, replayed step by step as `next`
                // would have yielded them: the entries, then the end or the error.
                let mut batch = matches!(*n, 3 | 50).then(|| {
                    cov("Iter::next_batch");
                    let mut got = Vec::new();
                    let r = st.it.next_batch(*n as usize, &mut got);
                    let mut steps: VecDeque<_> = got.into_iter().map(|kv| Some(Ok(kv))).collect();
                    match r {
                        Ok(k) if k < *n as usize => steps.push_back(None),
                        Ok(_) => {}
                        Err(e) => steps.push_back(Some(Err(e))),
                    }
                    steps
                });
                for step in 0..*n {
                    let got = match &mut batch {
                        Some(steps) => steps.pop_front().flatten(),
                        None => {
                            cov("Iter::next");
                            st.it.next()
                        }
                    };
                    if st.epoch != epoch {
                        st.dead = true;
                        return match got {
                            Some(Err(_)) => Ok("Err(stale)".into()),
                            other => Err(format!(
                                "next on an iterator of a closed database gave {:?}, not an error",
                                other.map(|r| r.map(|(k, _)| short(&k)))
                            )),
                        };
                    }
                    let pos = st.pos.unwrap_or(0);
                    let want = st.entries.get(pos).filter(|(k, _)| {
                        let above = st
                            .spec
                            .upper
                            .is_some_and(|u| k.as_slice() >= key_bytes(u).as_slice());
                        let outside = st
                            .spec
                            .prefix
                            .as_ref()
                            .is_some_and(|p| !k.starts_with(p.as_bytes()));
                        !above && !outside
                    });
                    let want = if st.pos.is_none() {
                        // Unpositioned: starts at the prefix (or the first key).
                        let start = st.spec.prefix.as_ref().map_or(0, |p| {
                            st.entries
                                .partition_point(|(e, _)| e.as_slice() < p.as_bytes())
                        });
                        st.pos = Some(start);
                        st.entries.get(start).filter(|(k, _)| {
                            let above = st
                                .spec
                                .upper
                                .is_some_and(|u| k.as_slice() >= key_bytes(u).as_slice());
                            let outside = st
                                .spec
                                .prefix
                                .as_ref()
                                .is_some_and(|p| !k.starts_with(p.as_bytes()));
                            !above && !outside
                        })
                    } else {
                        want
                    };
                    match (got, want) {
                        (Some(Err(e)), _) if gone || (faulty && !e.is_corruption()) => {
                            trace(|| format!("next: accepted error (gone {gone}): {e}"));
                            st.dead = true;
                            out.push_str(" Err");
                            break;
                        }
                        (Some(Err(e)), _) => return Err(format!("next (step {step}): {e}")),
                        (None, None) => {
                            out.push_str(" end");
                            break;
                        }
                        (Some(Ok((k, v))), Some((wk, wv))) => {
                            let unsure = st.uncertain.contains(wk);
                            if k.as_ref() != wk.as_slice() && !unsure {
                                return Err(format!(
                                    "next (step {step}): key {}, expected {}",
                                    short(&k),
                                    short(wk)
                                ));
                            }
                            let want_v: &[u8] = if st.spec.keys_only { &[] } else { wv };
                            if v.as_ref() != want_v && !unsure {
                                return Err(format!(
                                    "next (step {step}) key {}: value {}, expected {}",
                                    short(&k),
                                    short(&v),
                                    short(want_v)
                                ));
                            }
                            if unsure {
                                // Cannot tell positions apart any more.
                                st.dead = true;
                                break;
                            }
                            out.push(' ');
                            out.push_str(&short(&k));
                            *st.pos.as_mut().unwrap() += 1;
                        }
                        (got, want) => {
                            if want.is_some_and(|(k, _)| st.uncertain.contains(k)) {
                                st.dead = true;
                                break;
                            }
                            return Err(format!(
                                "next (step {step}): got {:?}, expected {:?}",
                                got.map(|r| r.map(|(k, _)| short(&k)).map_err(|e| e.to_string())),
                                want.map(|(k, _)| short(k))
                            ));
                        }
                    }
                }
                Ok(tr(out))
            }
            _ => unreachable!("not a read operation: {op}"),
        }
    }

    /// The next page of cursor `cur`: each record must be in the namespace as it is now and
    /// meet the filter; if nothing was written since the first page, the pages together
    /// must be the whole answer.
    pub(crate) fn next_page(&mut self, cur: u8) -> Check {
        let faulty = self.faulty;
        let c = self.cursors[cur as usize].as_mut().unwrap();
        let (h, m) = match &self.slots[c.slot as usize] {
            Slot::Live { ns, id, m } if *id == c.id => (ns, m),
            Slot::Ghost(h) => {
                cov("Namespace::find");
                let r = h.find(&filter_of(&c.filter)?, &FindOptions::default());
                self.cursors[cur as usize] = None;
                return match r {
                    Err(e) => Ok(format!("Err({})", err_name(&e))),
                    Ok(_) => Err("find on a destroyed namespace's handle succeeded".into()),
                };
            }
            _ => {
                self.cursors[cur as usize] = None;
                return Ok("skip".into());
            }
        };
        let opts = FindOptions {
            projection: c
                .projection
                .as_ref()
                .map(|p| p.iter().map(|a| ATTRS[*a as usize].to_string()).collect()),
            limit: None,
            page_bytes: c.page_bytes,
            continuation: c.continuation.take(),
            keys_only: false,
        };
        cov("Namespace::find");
        let page = match h.find(&filter_of(&c.filter)?, &opts) {
            Ok(p) => p,
            // The index the continuation reads was dropped since.
            Err(Error::UnknownIndex(_)) if c.pages > 0 => {
                self.cursors[cur as usize] = None;
                return Ok("Err(UnknownIndex)".into());
            }
            Err(e) if faulty && !e.is_corruption() => {
                self.cursors[cur as usize] = None;
                return Ok("Err".into());
            }
            Err(e) => return Err(format!("find page {}: {e}", c.pages)),
        };
        c.pages += 1;
        let check = !faulty && m.certain();
        let want = model::find(&m.data, &c.filter, c.projection.as_deref());
        let mut bytes = 0;
        for r in &page.value {
            bytes += r.pk.len() + r.value.len();
            let v = norm(&super::model::record_json(&r.value));
            if check && !want.iter().any(|(k, w)| k[..] == r.pk[..] && norm(w) == v) {
                return Err(format!(
                    "find page {}: record {} = {} is not a match in the namespace now",
                    c.pages,
                    short(&r.pk),
                    tr(v.to_string())
                ));
            }
            c.seen.push((r.pk.to_vec(), v));
        }
        if page.value.len() > 1 && bytes > c.page_bytes {
            return Err(format!(
                "find page of {} records holds {bytes} bytes, over page_bytes {}",
                page.value.len(),
                c.page_bytes
            ));
        }
        if page.value.is_empty() && page.continuation.is_some() {
            return Err("find: an empty page with a continuation".into());
        }
        let summary = format!("page {}: {} records", c.pages, page.value.len());
        c.continuation = page.continuation;
        if c.continuation.is_none() && check && c.writes == m.writes {
            let mut got = std::mem::take(&mut c.seen);
            got.sort_by(|a, b| a.0.cmp(&b.0));
            let want: Vec<(Vec<u8>, Value)> =
                want.into_iter().map(|(k, v)| (k, norm(&v))).collect();
            if got != want {
                return Err(format!(
                    "find {} paged ({} pages, no write between): {} records, expected {}\n      got      {}\n      expected {}",
                    c.filter.doc(),
                    c.pages,
                    got.len(),
                    want.len(),
                    tr(format!("{:?}", got.iter().map(|r| short(&r.0)).collect::<Vec<_>>())),
                    tr(format!("{:?}", want.iter().map(|r| short(&r.0)).collect::<Vec<_>>()))
                ));
            }
            return Ok(format!("{summary}, complete"));
        }
        Ok(summary)
    }
}
