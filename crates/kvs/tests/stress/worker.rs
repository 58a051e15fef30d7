//! A worker thread: its own key prefix, its own exact model of those keys, its own seeded
//! stream of operations (sync, async in groups, iterators, capacity, and the hostile calls
//! of `hostile.rs`), and the last operations it made, for a failure's report.

use crate::asyncs::{check_value, show};
use crate::ffi::{self, Got, H, NOOVERWRITE, POST, UPDATE_ONLY};
use crate::rng::Rng;
use cerberus_kvs::code;
use std::collections::{BTreeMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Keys a worker draws from: few enough that stores, reads and deletes meet.
pub const POOL: usize = 40;
/// Operations a failure report shows.
const LOG: usize = 30;

/// What every worker of a seed shares.
#[derive(Clone, Copy)]
pub struct Ctx {
    pub dev: H,
    pub ks: H,
    /// A key space handle that was closed, and a device handle that was.
    pub closed_ks: H,
    pub closed_dev: H,
    pub max_key: usize,
    pub max_value: usize,
    /// The capacity the admin's handle must report.
    pub capacity: u64,
}

pub struct Worker {
    pub id: usize,
    pub prefix: [u8; 4],
    pub model: BTreeMap<Vec<u8>, Vec<u8>>,
    pub rng: Rng,
    pub ctx: Ctx,
    pub ops: u64,
    log: VecDeque<String>,
}

impl Worker {
    pub fn new(id: usize, seed: u64, ctx: Ctx) -> Worker {
        Worker {
            id,
            prefix: [b'W', 0xa5, b'0' + id as u8, 0x80 | id as u8],
            model: BTreeMap::new(),
            rng: Rng::new(seed.wrapping_mul(1000).wrapping_add(id as u64)),
            ctx,
            ops: 0,
            log: VecDeque::new(),
        }
    }

    /// Key `i` of the pool: the bare prefix, long keys up to the device's limit, short ones.
    pub fn key(&self, i: usize) -> Vec<u8> {
        let mut k = self.prefix.to_vec();
        match i {
            0 => {}
            _ if i % 9 == 1 => {
                let len = self.ctx.max_key - i % 3;
                k.extend(format!("long{i:03}").bytes());
                k.resize(len, b'0' + (i % 10) as u8);
            }
            _ => k.extend(format!("k{i:03}").bytes()),
        }
        k
    }

    pub fn any_key(&mut self) -> Vec<u8> {
        let i = self.rng.below(POOL);
        self.key(i)
    }

    /// A key of the prefix the pool never holds.
    pub fn absent_key(&mut self) -> Vec<u8> {
        let mut k = self.prefix.to_vec();
        k.extend(format!("absent{}", self.rng.below(1000)).bytes());
        k
    }

    pub fn value(&mut self) -> Vec<u8> {
        let len = match self.rng.below(100) {
            0..=9 => 0,
            10..=64 => self.rng.range(1, 200),
            65..=89 => self.rng.range(200, 4096),
            90..=97 => self.rng.range(4096, 65536),
            _ => self.rng.range(65536, 300_000),
        };
        self.rng.bytes(len)
    }

    pub fn note(&mut self, what: String) {
        if self.log.len() == LOG {
            self.log.pop_front();
        }
        self.log.push_back(what);
    }

    /// The last operations, one a line.
    pub fn last_ops(&self) -> String {
        self.log.iter().map(|l| format!("    {l}\n")).collect()
    }

    /// Runs `n` operations; a failure (or a panic) with this thread's last operations.
    pub fn run(&mut self, n: usize) -> Result<(), String> {
        for _ in 0..n {
            let r = catch_unwind(AssertUnwindSafe(|| self.step()))
                .unwrap_or_else(|p| Err(format!("panic: {}", panic_text(&p))));
            self.ops += 1;
            if let Err(e) = r {
                return Err(self.failure(&e));
            }
        }
        Ok(())
    }

    pub fn failure(&self, e: &str) -> String {
        format!(
            "thread {} after {} operations: {e}\n  its last operations:\n{}",
            self.id,
            self.ops,
            self.last_ops()
        )
    }

    fn step(&mut self) -> Result<(), String> {
        match self.rng.below(100) {
            0..=17 => self.op_store(POST),
            18..=21 => self.op_store(UPDATE_ONLY),
            22..=25 => self.op_store(NOOVERWRITE),
            26..=39 => self.op_retrieve(),
            40..=46 => self.op_delete(),
            47..=51 => self.op_exist(),
            52..=54 => self.op_info(),
            55..=68 => self.op_async_group(),
            69..=73 => self.op_iterate(),
            74 if self.rng.one_in(3) => self.op_delete_group(),
            75..=76 => self.op_capacity(),
            77..=99 => self.hostile(),
            _ => self.op_store(POST),
        }
    }

    fn op_store(&mut self, st: i32) -> Result<(), String> {
        let (k, v) = (self.any_key(), self.value());
        let present = self.model.contains_key(&k);
        self.note(format!(
            "store {} ({} B, type {st}, present {present})",
            show(&k),
            v.len()
        ));
        let want = match st {
            UPDATE_ONLY if !present => code::KEY_NOT_EXIST,
            NOOVERWRITE if present => code::VALUE_UPDATE_NOT_ALLOWED,
            _ => code::SUCCESS,
        };
        let st = if st == POST && self.rng.one_in(4) {
            None
        } else {
            Some(st)
        };
        expect("store", ffi::store(self.ctx.ks, &k, &v, st), want)?;
        if want == code::SUCCESS {
            self.model.insert(k, v);
        }
        Ok(())
    }

    fn op_retrieve(&mut self) -> Result<(), String> {
        let k = self.any_key();
        let stored = self.model.get(&k).cloned();
        let len = stored.as_ref().map_or(0, Vec::len);
        let variant = self.rng.below(10);
        let (room, offset, delete) = match variant {
            0..=5 => (len + self.rng.below(64), 0, false),
            6..=7 if len > 0 => (self.rng.below(len), 0, self.rng.one_in(3)),
            8 => {
                let misaligned = self.rng.one_in(4);
                let offset = 512 * self.rng.range(0, len / 512 + 1) + usize::from(misaligned);
                (len + 16, offset as u32, false)
            }
            _ => (len + self.rng.below(8), 0, true),
        };
        self.note(format!(
            "retrieve {} (room {room}, offset {offset}, delete {delete}, stored {len} B)",
            show(&k)
        ));
        let got = ffi::retrieve(self.ctx.ks, &k, room, offset, delete);
        let want = match &stored {
            _ if offset % 512 != 0 => code::VALUE_OFFSET_MISALIGNED,
            None => code::KEY_NOT_EXIST,
            Some(v) if offset as usize > v.len() => code::VALUE_OFFSET_INVALID,
            Some(v) if room < v.len() - offset as usize => code::BUFFER_SMALL,
            Some(_) => code::SUCCESS,
        };
        expect("retrieve", got.code, want)?;
        if let Some(v) = &stored {
            if want == code::SUCCESS || want == code::BUFFER_SMALL {
                check_got(&got, v, offset as usize, want)?;
            }
            if delete && want == code::SUCCESS {
                self.model.remove(&k);
            }
        }
        Ok(())
    }

    fn op_delete(&mut self) -> Result<(), String> {
        let k = if self.rng.one_in(8) {
            self.absent_key()
        } else {
            self.any_key()
        };
        let must = self.rng.one_in(2);
        let present = self.model.contains_key(&k);
        self.note(format!(
            "delete {} (must exist {must}, present {present})",
            show(&k)
        ));
        let want = if must && !present {
            code::KEY_NOT_EXIST
        } else {
            code::SUCCESS
        };
        expect("delete", ffi::delete(self.ctx.ks, &k, must), want)?;
        self.model.remove(&k);
        Ok(())
    }

    fn op_exist(&mut self) -> Result<(), String> {
        let n = self.rng.range(1, 10);
        let keys: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                if self.rng.one_in(4) {
                    self.absent_key()
                } else {
                    self.any_key()
                }
            })
            .collect();
        self.note(format!("exist of {n} keys"));
        let (c, bits) = ffi::exist(self.ctx.ks, &keys);
        expect("exist", c, code::SUCCESS)?;
        let want: Vec<bool> = keys.iter().map(|k| self.model.contains_key(k)).collect();
        if bits != want {
            return Err(format!("exist bits {bits:?}, the model {want:?}"));
        }
        Ok(())
    }

    fn op_info(&mut self) -> Result<(), String> {
        let k = self.any_key();
        self.note(format!("kvp info {}", show(&k)));
        let (c, len, copy) = ffi::kvp_info(self.ctx.ks, &k);
        match self.model.get(&k) {
            None => expect("kvp info", c, code::KEY_NOT_EXIST),
            Some(v) => {
                expect("kvp info", c, code::SUCCESS)?;
                if len as usize != v.len() || copy != k {
                    return Err(format!("kvp info: length {len}, the model {}", v.len()));
                }
                Ok(())
            }
        }
    }

    fn op_iterate(&mut self) -> Result<(), String> {
        let with_values = self.rng.one_in(2);
        let room = [48, 300, 4096, 65536][self.rng.below(4)];
        self.note(format!("iterate (values {with_values}, room {room})"));
        let it = self.iterate_compare(with_values, room)?;
        match self.rng.below(3) {
            0 => {
                self.note(format!("iterate_next on closed iterator {it}"));
                expect(
                    "next after close",
                    ffi::iterate_next(self.ctx.ks, it, 4096).code,
                    code::ITERATOR_NOT_EXIST,
                )
            }
            1 => {
                self.note(format!("delete closed iterator {it} again"));
                expect(
                    "double delete",
                    ffi::delete_iterator(self.ctx.ks, it),
                    code::ITERATOR_NOT_EXIST,
                )
            }
            _ => Ok(()),
        }
    }

    /// Iterates the prefix through a new iterator and compares with the model; the
    /// iterator's handle, closed.
    pub fn iterate_compare(&mut self, with_values: bool, mut room: usize) -> Result<u8, String> {
        let (c, it) = ffi::create_iterator(self.ctx.ks, &self.prefix, with_values);
        expect("create iterator", c, code::SUCCESS)?;
        let mut seen = Vec::new();
        loop {
            let b = if self.rng.one_in(3) {
                crate::asyncs::iterate_next(self.ctx.ks, it, room)?
            } else {
                ffi::iterate_next(self.ctx.ks, it, room)
            };
            if b.code == code::BUFFER_SMALL {
                room *= 2;
                continue;
            }
            expect("iterate next", b.code, code::SUCCESS)?;
            let entries = ffi::parse_entries(&b.bytes, with_values)?;
            if entries.len() != b.entries as usize {
                return Err(format!(
                    "{} entries said, {} filled",
                    b.entries,
                    entries.len()
                ));
            }
            if entries.is_empty() && !b.end {
                return Err("no entries, and not the end".into());
            }
            seen.extend(entries);
            if b.end {
                break;
            }
        }
        expect(
            "delete iterator",
            ffi::delete_iterator(self.ctx.ks, it),
            code::SUCCESS,
        )?;
        let keys: Vec<&Vec<u8>> = seen.iter().map(|(k, _)| k).collect();
        let want: Vec<&Vec<u8>> = self.model.keys().collect();
        if keys != want {
            let show_all =
                |ks: &[&Vec<u8>]| ks.iter().map(|k| show(k)).collect::<Vec<_>>().join(" ");
            return Err(format!(
                "iterator keys [{}], the model's [{}]",
                show_all(&keys),
                show_all(&want)
            ));
        }
        if with_values {
            for (k, v) in &seen {
                if Some(v) != self.model.get(k) {
                    return Err(format!("iterator value of {} differs", show(k)));
                }
            }
        }
        Ok(it)
    }

    fn op_delete_group(&mut self) -> Result<(), String> {
        let is_async = self.rng.one_in(2);
        self.note(format!("delete key group of the prefix (async {is_async})"));
        let r = if is_async {
            crate::asyncs::delete_group(self.ctx.ks, &self.prefix)?
        } else {
            ffi::delete_group(self.ctx.ks, &self.prefix)
        };
        expect("delete group", r, code::SUCCESS)?;
        self.model.clear();
        Ok(())
    }

    fn op_capacity(&mut self) -> Result<(), String> {
        self.note("capacity and utilization".into());
        let (c, cap) = ffi::capacity(self.ctx.dev);
        expect("capacity", c, code::SUCCESS)?;
        if cap != self.ctx.capacity {
            return Err(format!(
                "capacity {cap}, the quotas sum to {}",
                self.ctx.capacity
            ));
        }
        let (c, util) = ffi::utilization(self.ctx.dev);
        expect("utilization", c, code::SUCCESS)?;
        if util > 10_000 {
            return Err(format!("utilization {util} over 10000"));
        }
        Ok(())
    }

    /// Checks key `k` against the model (a retrieve with room to spare).
    pub fn check_key(&mut self, k: &[u8]) -> Result<(), String> {
        let stored = self.model.get(k).cloned();
        let room = stored.as_ref().map_or(16, |v| v.len() + 16);
        let got = ffi::retrieve(self.ctx.ks, k, room, 0, false);
        match &stored {
            None => expect(
                &format!("check of {}", show(k)),
                got.code,
                code::KEY_NOT_EXIST,
            ),
            Some(v) => {
                expect(&format!("check of {}", show(k)), got.code, code::SUCCESS)?;
                check_got(&got, v, 0, code::SUCCESS)
            }
        }
    }

    /// Checks every key of the pool and a listing against the model.
    pub fn check_all(&mut self) -> Result<(), String> {
        self.note("check every key".into());
        let keys: Vec<Vec<u8>> = (0..POOL)
            .map(|i| self.key(i))
            .chain(self.model.keys().cloned())
            .collect();
        for k in keys {
            self.check_key(&k)?;
        }
        self.iterate_compare(true, 65536).map(|_| ())
    }
}

/// `Err` unless `got` is `want`.
pub fn expect(what: &str, got: i32, want: i32) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: {got:#x}, the model says {want:#x}"))
    }
}

/// Checks a sync retrieve's output against `stored` read from `offset`.
fn check_got(got: &Got, stored: &[u8], offset: usize, c: i32) -> Result<(), String> {
    let v = cerberus_kvs::KvsValue {
        value: std::ptr::null_mut(),
        length: got.length,
        actual_value_size: got.actual,
        offset: offset as u32,
    };
    check_value(&v, &got.buf, stored, offset, c)
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}
