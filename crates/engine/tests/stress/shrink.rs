//! Shrinking a failing operation log (delta debugging): drop chunks of operations, halving
//! the chunk size, then single operations, keeping each removal after which the log still
//! fails.

use super::ops::Op;
use super::run::Failure;
use std::time::{Duration, Instant};

/// The shortest log found within `budget` for which `fails` still reports a failure, with
/// that failure.
pub fn shrink(
    ops: &[Op],
    first: Failure,
    budget: Duration,
    fails: &mut dyn FnMut(&[Op]) -> Option<Failure>,
) -> (Vec<Op>, Failure, usize) {
    let start = Instant::now();
    let mut runs = 0;
    let mut best: Vec<Op> = ops[..(first.op + 1).min(ops.len())].to_vec();
    let mut failure = first;
    // The failure may need nothing after the failing op: check the cut log.
    runs += 1;
    match fails(&best) {
        Some(f) => {
            best.truncate((f.op + 1).min(best.len()));
            failure = f;
        }
        None => {
            // Only the final reopen found it, or it is flaky: keep the whole log.
            best = ops.to_vec();
        }
    }
    let mut chunk = best.len().div_ceil(2).max(1);
    loop {
        let mut removed_any = false;
        let mut i = 0;
        while i < best.len() {
            if start.elapsed() > budget {
                return (best, failure, runs);
            }
            let end = (i + chunk).min(best.len());
            let mut cand = best[..i].to_vec();
            cand.extend_from_slice(&best[end..]);
            runs += 1;
            match fails(&cand) {
                Some(f) => {
                    cand.truncate((f.op + 1).min(cand.len()));
                    best = cand;
                    failure = f;
                    removed_any = true;
                }
                None => i += chunk,
            }
        }
        if chunk == 1 && !removed_any {
            break;
        }
        if !removed_any || chunk > best.len() {
            chunk = (chunk / 2).max(1);
        }
    }
    // Then the writes inside batches, one by one.
    for i in 0..best.len() {
        let mut j = 0;
        while let Op::Batch { writes, .. } = &best[i] {
            if j >= writes.len() || writes.len() < 2 || start.elapsed() > budget {
                break;
            }
            let mut cand = best.clone();
            if let Op::Batch { writes, .. } = &mut cand[i] {
                writes.remove(j);
            }
            runs += 1;
            match fails(&cand) {
                Some(f) if f.op >= i => {
                    best = cand;
                    failure = f;
                }
                _ => j += 1,
            }
        }
    }
    (best, failure, runs)
}
