//! What one `itermem` run measured at one table count: the tree, the iterators' state and
//! buffers, the process's memory and open files around the passes.

use cerberus_bench::MemorySample;

/// What the tree looked like and what the iterators held, for one table count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measurement {
    pub tables_asked: usize,
    pub keys: u64,
    /// Iterators held open at once.
    pub iterators: usize,
    /// Tables of the default namespace's tree and of L0 and runs, after the build.
    pub tables: usize,
    /// (level name, tables, bytes) of the levels that hold tables; `runs` if any.
    pub levels: Vec<(String, usize, u64)>,
    pub build_seconds: f64,
    /// Opening, seeking and advancing all iterators the first time (tables opened on the way).
    pub cold_seconds: f64,
    /// The same, the second time: the measured pass.
    pub open_seconds: f64,
    /// `Iter::memory()` of the iterators of the measured pass.
    pub state: Summary,
    pub buffers: Summary,
    /// Around the first pass.
    pub cold_before: MemorySample,
    pub cold_after: MemorySample,
    /// Around the measured pass.
    pub before: MemorySample,
    pub after: MemorySample,
    /// After both passes' iterators are dropped.
    pub after_drop: MemorySample,
    /// Open files before the first pass, after it, and after a full scan.
    pub open_files_before: Option<usize>,
    pub open_files_after: Option<usize>,
    pub open_files_full_scan: Option<usize>,
    /// Heap bytes allocated minus freed over the first pass and over the measured pass (by
    /// every thread: the engine's prefetch and background threads too).
    pub cold_heap: i64,
    pub heap: i64,
}

/// Max, mean and min of a figure over the iterators.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    pub max: usize,
    pub mean: f64,
    pub min: usize,
}

impl Summary {
    pub fn of(values: &[usize]) -> Summary {
        if values.is_empty() {
            return Summary::default();
        }
        Summary {
            max: values.iter().copied().max().unwrap_or(0),
            min: values.iter().copied().min().unwrap_or(0),
            mean: values.iter().sum::<usize>() as f64 / values.len() as f64,
        }
    }
}
