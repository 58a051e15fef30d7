//! Range and prefix deletes (issue 65): the model deletes every key of the range, and the
//! count must be the keys it held there. A failed one (an injected fault) may have written
//! some of its batches: each key of the range then holds its old value or none.

use super::checks::{err_name, Check};
use super::config::cov;
use super::ops::{key_bytes, Op};
use super::run::Session;
use cerberus_engine::{prefix_end, Namespace};

/// The bounds `[start, end)` of a range or prefix delete (an empty end: no bound).
pub(crate) fn bounds(op: &Op) -> Option<(Vec<u8>, Vec<u8>)> {
    match op {
        Op::DeleteRange { start, end, .. } => {
            Some((key_bytes(*start), end.map(key_bytes).unwrap_or_default()))
        }
        Op::DeletePrefix { prefix, .. } => {
            Some((prefix.as_bytes().to_vec(), prefix_end(prefix.as_bytes())))
        }
        _ => None,
    }
}

fn in_range(k: &[u8], start: &[u8], end: &[u8]) -> bool {
    k >= start && (end.is_empty() || k < end)
}

/// Runs the delete `op` names on `h`: the count.
fn run(op: &Op, h: &Namespace, start: &[u8], end: &[u8]) -> cerberus_engine::Result<u64> {
    match op {
        Op::DeletePrefix { prefix, .. } => {
            cov("Namespace::delete_prefix");
            h.delete_prefix(prefix.as_bytes())
        }
        _ => {
            cov("Namespace::delete_range");
            h.delete_range(start, end)
        }
    }
}

impl Session {
    pub(crate) fn exec_range_delete(&mut self, op: &Op) -> Check {
        let faulty = self.faulty;
        let (ns, Some((start, end))) = (
            match op {
                Op::DeleteRange { ns, .. } | Op::DeletePrefix { ns, .. } => *ns,
                _ => unreachable!("not a range delete: {op}"),
            },
            bounds(op),
        ) else {
            unreachable!("a range delete has bounds")
        };
        let Some((h, m)) = self.live(ns) else {
            return self.ghost_write(ns, |h| run(op, h, &start, &end).map(|_| ()));
        };
        let held: Vec<Vec<u8>> = m
            .data
            .keys()
            .filter(|k| in_range(k, &start, &end) && !m.uncertain.contains_key(*k))
            .cloned()
            .collect();
        let undecided: Vec<Vec<u8>> = m
            .uncertain
            .keys()
            .filter(|k| in_range(k, &start, &end))
            .cloned()
            .collect();
        let r = run(op, h, &start, &end);
        let touched = held.iter().chain(&undecided);
        match r {
            Ok(n) => {
                let (lo, hi) = (held.len() as u64, (held.len() + undecided.len()) as u64);
                if n < lo || n > hi {
                    return Err(format!(
                        "{op}: deleted {n} keys; the model holds {lo} there, and {} undecided",
                        undecided.len()
                    ));
                }
                for k in touched {
                    m.write(k, None);
                }
                // Only a count every configuration must agree on goes into the trace.
                Ok(if undecided.is_empty() {
                    format!("deleted {n}")
                } else {
                    "ok".into()
                })
            }
            Err(e) if faulty && !e.is_corruption() => {
                for k in touched {
                    m.write_failed(k, None);
                }
                Ok(format!("Err({})", err_name(&e)))
            }
            Err(e) => Err(format!("{op}: {e}")),
        }
    }
}
