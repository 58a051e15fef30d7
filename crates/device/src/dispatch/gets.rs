//! The consecutive gets of one connection's pipeline, run as one engine `get_many`: one
//! super version, the keys in sorted order, each table's blocks and the value records read
//! once for the batch (see `connection::gets` for how a batch is gathered).

use super::Shared;
use crate::panics::catch_command;
use cerberus_engine::Readable;
use cerberus_proto::{Command, Opcode, Reply, Request, Response, Status};

impl Shared {
    /// Whether `cmd` may join its connection's batch of gets: a retrieve of a valid key (an
    /// invalid one is refused on the path of any command).
    pub fn batches_get(&self, cmd: &Command) -> bool {
        matches!(&cmd.request, Request::Retrieve { key } if self.check_key(key).is_ok())
    }

    /// Answers `cmds` (retrieves of namespace `ns` that [`Shared::batches_get`] took, in
    /// pipeline order) with one engine read at one point; a response each, in their order.
    /// A panic answers every get of the batch, as it would one get.
    pub fn retrieve_many(&self, ns: u32, cmds: &[Command]) -> Vec<Response> {
        let opcode = Opcode::Retrieve as u8;
        if let [one] = cmds {
            // A get alone takes a get's path: a batch's sorting and block map would cost it
            // more than they save.
            return vec![self.retrieve_one(ns, one)];
        }
        let failed: Vec<Option<(Status, String)>> =
            cmds.iter().map(|c| injected(ns, opcode, c)).collect();
        let keys: Vec<&[u8]> = cmds
            .iter()
            .zip(&failed)
            .filter(|(_, f)| f.is_none())
            .filter_map(|(c, _)| match &c.request {
                Request::Retrieve { key } => Some(key.as_ref()),
                _ => None,
            })
            .collect();
        let got = catch_command(ns, opcode, || {
            self.with_namespace(ns, |h| match h.get_many(&keys) {
                // Gathered by count, bounded by bytes: large values go one at a time.
                Err(cerberus_engine::Error::TooManyBytes { .. }) => Ok(None),
                r => r.map(Some).map_err(super::engine),
            })
        })
        .and_then(|r| r);
        let got = match got {
            Ok(None) => {
                let alone = cmds.iter().zip(failed);
                return alone.map(|(c, f)| self.retrieve_alone(ns, c, f)).collect();
            }
            Ok(Some(values)) => Ok(values),
            Err(e) => Err(e),
        };
        let mut values = got.as_ref().ok().map(|v| v.iter());
        cmds.iter()
            .zip(failed)
            .map(|(c, f)| {
                let fail = |(status, msg): (Status, String)| {
                    Response::error(c.cid, ns, opcode, status, msg)
                };
                if let Some(e) = f {
                    return fail(e);
                }
                let next = match (&got, values.as_mut()) {
                    (Err(e), _) => return fail(e.clone()),
                    (Ok(_), Some(vals)) => vals.next(),
                    (Ok(_), None) => None,
                };
                match next {
                    Some(Some(v)) => Response {
                        cid: c.cid,
                        nsid: ns,
                        opcode,
                        status: Status::Success,
                        reply: Reply::Value(v.clone()),
                    },
                    Some(None) => fail((Status::KeyNotExist, String::new())),
                    None => fail((
                        Status::InternalError,
                        "a get of a batch went unanswered".into(),
                    )),
                }
            })
            .collect()
    }
}

impl Shared {
    /// Answers `c`, a retrieve of namespace `ns` that [`Shared::batches_get`] took, alone.
    pub fn retrieve_one(&self, ns: u32, c: &Command) -> Response {
        self.retrieve_alone(ns, c, injected(ns, Opcode::Retrieve as u8, c))
    }

    /// [`Shared::retrieve_one`] with the armed fault's verdict (`failed`) already taken.
    fn retrieve_alone(&self, ns: u32, c: &Command, failed: Option<(Status, String)>) -> Response {
        let opcode = Opcode::Retrieve as u8;
        let outcome = match (failed, &c.request) {
            (Some(e), _) => Err(e),
            (None, Request::Retrieve { key }) => {
                catch_command(ns, opcode, || self.retrieve(ns, key)).and_then(|r| r)
            }
            (None, _) => Err((Status::InternalError, "not a get".into())),
        };
        match outcome {
            Ok(reply) => Response {
                cid: c.cid,
                nsid: ns,
                opcode,
                status: Status::Success,
                reply,
            },
            Err((status, msg)) => Response::error(c.cid, ns, opcode, status, msg),
        }
    }
}

/// The failure an armed fault gives get `c` (feature `fault-injection`: faults are armed per
/// command reaching a worker, so each get of a batch meets them alone).
fn injected(ns: u32, opcode: u8, c: &Command) -> Option<(Status, String)> {
    #[cfg(feature = "fault-injection")]
    if let Err(e) = catch_command(ns, opcode, || super::fault::intercept(c)) {
        return Some(e);
    }
    let _ = (ns, opcode, c);
    None
}
