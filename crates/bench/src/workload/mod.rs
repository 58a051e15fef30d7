//! Workloads (db_bench's `--benchmarks`), key and value generation, and the phase runner that
//! spreads a phase over threads and times every operation.

use crate::histogram::Histogram;
use anyhow::{anyhow, bail, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use scan::{ScanConfig, ScanOutcome};
use std::io::IsTerminal;
use std::sync::Arc;

/// One entry of the workload list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Writes keys 0..num in order.
    FillSeq,
    /// Writes num uniformly random keys of 0..num (some repeat, some are never written).
    FillRandom,
    /// Same as fillrandom, meant to run on a filled database.
    Overwrite,
    /// num gets of uniformly random keys of 0..num.
    ReadRandom,
    /// `threads` readers do readrandom while one more thread writes random keys.
    ReadWhileWriting,
    /// Flushes the memtable (timed once).
    Flush,
    /// Compacts the whole key range (timed once).
    Compact,
    /// Flushes and waits until the engine's background compactions are done (timed once;
    /// db_bench's name): the next phase reads a settled tree, as a reader of a database
    /// loaded earlier does, not one whose compaction debt is being paid beside it.
    WaitForCompaction,
    /// `--seeks` seeks to uniformly random keys of 0..num, each followed by reading up to
    /// `--scan-length` entries (seek/). Last, so that the other workloads keep their
    /// seeds.
    SeekRandom,
}

impl Workload {
    pub const ALL: [Workload; 9] = [
        Workload::FillSeq,
        Workload::FillRandom,
        Workload::Overwrite,
        Workload::ReadRandom,
        Workload::ReadWhileWriting,
        Workload::SeekRandom,
        Workload::Flush,
        Workload::Compact,
        Workload::WaitForCompaction,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::FillSeq => "fillseq",
            Workload::FillRandom => "fillrandom",
            Workload::Overwrite => "overwrite",
            Workload::ReadRandom => "readrandom",
            Workload::ReadWhileWriting => "readwhilewriting",
            Workload::Flush => "flush",
            Workload::Compact => "compact",
            Workload::WaitForCompaction => "waitforcompaction",
            Workload::SeekRandom => "seekrandom",
        }
    }

    /// Parses a comma-separated list such as `fillrandom,readrandom`.
    pub fn parse_list(list: &str) -> Result<Vec<Workload>> {
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let w = Workload::ALL
                .into_iter()
                .find(|w| w.name().eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    let known: Vec<_> = Workload::ALL.iter().map(|w| w.name()).collect();
                    anyhow!("unknown workload {name:?} (known: {})", known.join(", "))
                })?;
            out.push(w);
        }
        if out.is_empty() {
            bail!("no workload given");
        }
        Ok(out)
    }

    /// Whether the measured operations are gets (seekrandom's are seeks and scans: not).
    pub fn is_read(self) -> bool {
        matches!(self, Workload::ReadRandom | Workload::ReadWhileWriting)
    }
}

/// Parameters shared by every phase.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    pub num: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub threads: usize,
    /// Operations a thread sends together (`--pipeline`).
    pub pipeline: usize,
    pub seed: u64,
    /// Fraction of a value that is random; the rest repeats it (db_bench's compression_ratio).
    pub compression_ratio: f64,
    /// What seekrandom does; `None` when the list has no seekrandom.
    pub scan: Option<ScanConfig>,
}

/// Keys are the key index in zero-padded decimal, `size` bytes wide, so that their byte order
/// is their numeric order and fillseq writes them sorted.
#[derive(Clone, Copy, Debug)]
pub struct KeyFormat {
    size: usize,
}

impl KeyFormat {
    /// A format for keys 0..num; fails if `size` digits cannot hold num - 1.
    pub fn new(size: usize, num: u64) -> Result<KeyFormat> {
        let largest = num.saturating_sub(1);
        let digits = largest.checked_ilog10().unwrap_or(0) as usize + 1;
        if size < digits {
            bail!("--key-size {size} is too small for --num {num}: keys need {digits} digits");
        }
        Ok(KeyFormat { size })
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Writes key `i` into `buf`, which must be `size` bytes.
    #[inline]
    pub fn write(&self, mut i: u64, buf: &mut [u8]) {
        debug_assert_eq!(buf.len(), self.size);
        for b in buf.iter_mut().rev() {
            *b = b'0' + (i % 10) as u8;
            i /= 10;
        }
        debug_assert_eq!(i, 0, "key index too large for the key size");
    }

    #[cfg(test)]
    pub fn key(&self, i: u64) -> Vec<u8> {
        let mut buf = vec![0; self.size];
        self.write(i, &mut buf);
        buf
    }
}

/// A buffer of pre-generated value bytes that values are sliced from, as db_bench's
/// RandomGenerator does.
pub struct ValuePool {
    data: Arc<[u8]>,
    value_size: usize,
}

impl ValuePool {
    pub fn new(value_size: usize, compression_ratio: f64, seed: u64) -> ValuePool {
        let len = (1usize << 20).max(2 * value_size);
        let mut rng = SmallRng::seed_from_u64(mix(seed, 0x7661_6c75));
        let mut data = Vec::with_capacity(len + 100);
        let raw_len = ((100.0 * compression_ratio.clamp(0.0, 1.0)).round() as usize).max(1);
        while data.len() < len {
            // Each 100-byte piece is raw_len random printable bytes repeated.
            let raw: Vec<u8> = (0..raw_len).map(|_| rng.gen_range(b' '..=b'~')).collect();
            let start = data.len();
            while data.len() < start + 100 {
                let take = raw_len.min(start + 100 - data.len());
                data.extend_from_slice(&raw[..take]);
            }
        }
        data.truncate(len);
        ValuePool {
            data: data.into(),
            value_size,
        }
    }

    /// A generator for one thread, starting at a random place.
    pub fn generator(&self, rng: &mut SmallRng) -> ValueGen {
        let room = self.data.len() - self.value_size;
        ValueGen {
            data: self.data.clone(),
            pos: rng.gen_range(0..=room),
            len: self.value_size,
        }
    }
}

pub struct ValueGen {
    data: Arc<[u8]>,
    pos: usize,
    len: usize,
}

impl ValueGen {
    #[inline]
    pub fn next(&mut self) -> &[u8] {
        if self.pos + self.len > self.data.len() {
            self.pos = 0;
        }
        let v = &self.data[self.pos..self.pos + self.len];
        self.pos += self.len;
        v
    }
}

/// splitmix64 of `a` and `b`: distinct, well-spread seeds for threads and phases.
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What one phase measured.
#[derive(Clone, Debug)]
pub struct PhaseOutcome {
    pub workload: Workload,
    /// Name printed and written for the phase: the workload's, or e.g. "put" and "get" for
    /// the phases of `multitenant` (whose `workload` says only whether they read).
    pub name: &'static str,
    /// Measured operations (the readers' gets for readwhilewriting).
    pub ops: u64,
    /// Gets that found their key (read phases).
    pub found: Option<u64>,
    /// Puts of the background writer (readwhilewriting).
    pub writer_ops: Option<u64>,
    /// Wall time from the start of all threads to the end of the last measured one.
    pub seconds: f64,
    /// Sum over measured threads of their busy time (db_bench's micros/op is this / ops).
    pub thread_seconds: f64,
    /// Key and value bytes moved by measured ops (found values only, for reads; the entries
    /// returned, for seekrandom).
    pub bytes: u64,
    /// Latency of the measured ops (seekrandom: a seek and its scan).
    pub latency: Histogram,
    /// What seekrandom's scans returned, and the latencies of their seeks and nexts.
    pub scan: Option<ScanOutcome>,
}

impl PhaseOutcome {
    /// A phase of `workload` printed as `name` that took `seconds`, nothing counted yet.
    pub fn new(workload: Workload, name: &'static str, seconds: f64, found: Option<u64>) -> Self {
        PhaseOutcome {
            workload,
            name,
            ops: 0,
            found,
            writer_ops: None,
            seconds,
            thread_seconds: 0.0,
            bytes: 0,
            latency: Histogram::new(),
            scan: None,
        }
    }

    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    pub fn micros_per_op(&self) -> f64 {
        if self.ops > 0 {
            self.thread_seconds * 1e6 / self.ops as f64
        } else {
            0.0
        }
    }

    pub fn mb_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1_048_576.0 / self.seconds
        } else {
            0.0
        }
    }
}

/// Ops between two progress-bar updates of a thread.
pub(crate) const PROGRESS_EVERY: u64 = 512;

/// Advances a phase's progress bar every `PROGRESS_EVERY` ops, and by the rest when dropped.
pub(crate) struct Progress<'a> {
    bar: &'a ProgressBar,
    pending: u64,
}

impl<'a> Progress<'a> {
    pub fn new(bar: &'a ProgressBar) -> Self {
        Progress { bar, pending: 0 }
    }

    #[inline]
    pub fn add(&mut self, ops: u64) {
        self.pending += ops;
        if self.pending >= PROGRESS_EVERY {
            self.bar.inc(self.pending);
            self.pending = 0;
        }
    }
}

impl Drop for Progress<'_> {
    fn drop(&mut self) {
        self.bar.inc(self.pending);
    }
}

/// A progress bar on stderr, hidden when stderr is not a terminal.
pub(crate) fn progress_bar(name: &str, len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(
            "{prefix:>16} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} {rate} eta {eta}",
        )
        .expect("valid template")
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} ops/s", state.per_sec());
            },
        ),
    );
    pb.set_prefix(name.to_string());
    pb
}

/// Splits `total` into `parts` nearly equal shares (the first ones get the remainder).
pub(crate) fn split(total: u64, parts: usize) -> Vec<(u64, u64)> {
    let parts = parts.max(1) as u64;
    let base = total / parts;
    let extra = total % parts;
    let mut start = 0;
    (0..parts)
        .map(|t| {
            let len = base + u64::from(t < extra);
            let range = (start, start + len);
            start += len;
            range
        })
        .collect()
}

/// The seed of phase number `index`. The workload is in it so that a readrandom does not
/// replay the key sequence of the fillrandom before it (phase 0 of one run, phase 0 of the
/// next with --db); each thread's is `mix(phase_seed, thread + 1)`.
pub(crate) fn phase_seed(seed: u64, workload: Workload, index: usize) -> u64 {
    mix(mix(seed, workload as u64 + 1), index as u64 + 1)
}

pub mod run;
pub mod scan;
pub mod seek;
