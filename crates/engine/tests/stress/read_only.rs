//! Read-only namespaces in the stress test (issue 61: a cluster move's fence): an operation
//! makes a namespace read-only or writable again, and while it is read-only every write of
//! it (put, delete, batch, index create and drop) must be refused with `NamespaceReadOnly`,
//! nothing of it applied, through reopens and crashes (the flag is in the manifest).

use super::checks::{err_name, kind_of, Check};
use super::config::cov;
use super::ops::{key_bytes, Op, ATTRS};
use super::run::Session;
use cerberus_engine::{Error, WriteBatch};

impl Session {
    /// `Op::ReadOnly`: sets the flag of a live namespace (skipped once faults are armed: a
    /// failed manifest write would leave the flag undecided, and the model keeps one).
    pub(crate) fn exec_read_only(&mut self, ns: u8, on: bool) -> Check {
        if self.faulty {
            return Ok("skip".into());
        }
        let Some((h, m)) = self.live(ns) else {
            return Ok("skip".into());
        };
        cov("Namespace::set_read_only");
        h.set_read_only(on)
            .map_err(|e| format!("set_read_only({on}): {e}"))?;
        if h.is_read_only() != on {
            return Err(format!(
                "set_read_only({on}) returned, the flag says otherwise"
            ));
        }
        m.read_only = on;
        Ok("ok".into())
    }

    /// A write of a namespace the model holds read-only: it must be refused, and the model
    /// stays as it was. None for any other operation or namespace.
    pub(crate) fn refused_read_only(&mut self, op: &Op) -> Option<Check> {
        let ns = match op {
            Op::Put { ns, .. }
            | Op::Delete { ns, .. }
            | Op::Batch { ns, .. }
            | Op::DeleteRange { ns, .. }
            | Op::DeletePrefix { ns, .. }
            | Op::CreateIndex { ns, .. }
            | Op::DropIndex { ns, .. } => *ns,
            _ => return None,
        };
        let faulty = self.faulty;
        let (h, m) = self.live(ns)?;
        if !m.read_only {
            return None;
        }
        let r = match op {
            Op::Put { key, value, .. } => h.put(&key_bytes(*key), value),
            Op::Delete { key, .. } => h.delete(&key_bytes(*key)),
            Op::Batch { writes, .. } => {
                let mut b = WriteBatch::new();
                for (k, v) in writes {
                    match v {
                        Some(v) => b.put(key_bytes(*k), v.clone()),
                        None => b.delete(key_bytes(*k)),
                    };
                }
                h.write(b)
            }
            Op::DeleteRange { .. } | Op::DeletePrefix { .. } => {
                let (start, end) = super::range_delete::bounds(op)?;
                h.delete_range(&start, &end).map(|_| ())
            }
            Op::CreateIndex { attr, kind, .. } => {
                h.create_index(ATTRS[*attr as usize], kind_of(*kind))
            }
            Op::DropIndex { attr, .. } => h.drop_index(ATTRS[*attr as usize]),
            _ => return None,
        };
        cov("read-only namespace: write refused");
        Some(match r {
            Err(Error::NamespaceReadOnly(_)) => Ok("read-only".into()),
            // A fault (an earlier failed manifest write, a poisoned database) may answer
            // first; nothing may be applied either way.
            Err(e) if faulty => Ok(format!("Err({})", err_name(&e))),
            Ok(()) => Err(format!("{op}: accepted by a read-only namespace")),
            Err(e) => Err(format!("{op}: refused with {e}, not NamespaceReadOnly")),
        })
    }
}
