//! What a connection has proved, and the commands answered on the network thread in the
//! order they arrive: Authenticate (so a command sent after it sees its effect) and Identify.

use crate::admission::Ticket;
use crate::dispatch::Shared;
use cerberus_proto::{Command, Reply, Request, Response, Status, DEVICE_NSID};
use std::collections::HashSet;

/// What a connection has proved.
#[derive(Default)]
pub(crate) struct Session {
    admin: bool,
    namespaces: HashSet<u32>,
}

impl Session {
    /// Whether the connection proved namespace `ns`.
    pub(super) fn holds(&self, ns: u32) -> bool {
        self.namespaces.contains(&ns)
    }

    /// Whether the connection proved the admin credential.
    pub(crate) fn is_admin(&self) -> bool {
        self.admin
    }

    /// The namespaces the connection proved.
    pub(super) fn namespaces(&self) -> impl Iterator<Item = u32> + '_ {
        self.namespaces.iter().copied()
    }

    pub(crate) fn allows(&self, cmd: &Command) -> bool {
        match cmd.request {
            Request::Store { .. }
            | Request::WriteBatch { .. }
            | Request::Retrieve { .. }
            | Request::List { .. }
            | Request::Delete { .. }
            | Request::Exist { .. }
            | Request::IterOpen { .. }
            | Request::IterNext { .. }
            | Request::IterClose { .. }
            | Request::IndexCreate { .. }
            | Request::IndexDrop { .. }
            | Request::IndexList
            | Request::Query { .. } => self.namespaces.contains(&cmd.nsid),
            Request::Stats => {
                self.admin || (cmd.nsid != DEVICE_NSID && self.namespaces.contains(&cmd.nsid))
            }
            Request::NamespaceCreate { .. }
            | Request::NamespaceConfigure { .. }
            | Request::NamespaceDestroy
            | Request::NamespaceList
            | Request::Backup { .. } => self.admin,
            Request::Authenticate { .. } | Request::Identify => true,
        }
    }

    /// The answer to `cmd` when the connection answers it itself (Authenticate, Identify),
    /// recorded in the metrics; `None` for every other command.
    pub(super) fn answer_here(
        &mut self,
        cmd: &Command,
        ticket: &mut Ticket,
        shared: &Shared,
        arrived: quanta::Instant,
    ) -> Option<Response> {
        let opcode = cmd.request.opcode() as u8;
        let reply = match &cmd.request {
            Request::Authenticate { secret } => {
                if !self.authenticate(cmd.nsid, secret, shared) {
                    shared.metrics.record_refused(opcode);
                    // One answer for both, so a client cannot find out which namespaces exist.
                    return Some(Response::error(
                        cmd.cid,
                        cmd.nsid,
                        opcode,
                        Status::AccessDenied,
                        "unknown namespace or wrong credential".into(),
                    ));
                }
                ticket.authenticated();
                shared
                    .metrics
                    .record(cmd.nsid, opcode, true, arrived.elapsed());
                Reply::Empty
            }
            Request::Identify => {
                shared
                    .metrics
                    .record(DEVICE_NSID, opcode, true, arrived.elapsed());
                Reply::Identify(shared.identify)
            }
            _ => return None,
        };
        Some(Response {
            cid: cmd.cid,
            nsid: cmd.nsid,
            opcode,
            status: Status::Success,
            reply,
        })
    }

    /// Checks `secret` for `nsid` (the admin's for the device) and, if it holds, remembers it.
    pub(crate) fn authenticate(&mut self, nsid: u32, secret: &[u8], shared: &Shared) -> bool {
        let ok = if nsid == DEVICE_NSID {
            shared.creds.verify_admin(secret)
        } else {
            shared.creds.verify(nsid, secret)
        };
        if ok {
            if nsid == DEVICE_NSID {
                self.admin = true;
            } else {
                self.namespaces.insert(nsid);
            }
        } else {
            shared.metrics.auth_failures.inc();
        }
        ok
    }
}
