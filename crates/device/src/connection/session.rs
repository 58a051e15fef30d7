//! What a connection has proved, and the commands answered on the network thread in the
//! order they arrive: Authenticate (so a command sent after it sees its effect) and Identify.

use crate::admission::Ticket;
use crate::auth::Credentials;
use crate::dispatch::Shared;
use cerberus_proto::{Command, Reply, Request, Response, Status, DEVICE_NSID};
use rustc_hash::FxHashMap;

/// The namespace an unknown name is checked against: the engine's default namespace, which
/// the device never issues a credential (so the check fails as a wrong secret's does).
pub(crate) const UNNAMED: u32 = 0;

/// What a connection has proved.
#[derive(Default)]
pub(crate) struct Session {
    admin: bool,
    /// Each namespace proved, with the epoch of the credential that proved it.
    namespaces: FxHashMap<u32, u64>,
    /// The credentials' epoch when the proofs were last checked.
    seen: u64,
}

impl Session {
    /// Whether the connection proved namespace `ns`.
    pub(super) fn holds(&self, ns: u32) -> bool {
        self.namespaces.contains_key(&ns)
    }

    /// Drops the proofs a rekey or a destroy has ended since they were last checked.
    fn recheck(&mut self, creds: &Credentials) {
        let epoch = creds.epoch();
        if epoch != self.seen {
            self.seen = epoch;
            self.namespaces.retain(|ns, e| creds.still_holds(*ns, *e));
        }
    }

    /// Whether the connection proved the admin credential.
    pub(crate) fn is_admin(&self) -> bool {
        self.admin
    }

    /// The namespaces the connection proved.
    pub(super) fn namespaces(&self) -> impl Iterator<Item = u32> + '_ {
        self.namespaces.keys().copied()
    }

    /// Whether the connection may run `cmd`; a namespace's credential counts while it is the
    /// namespace's own (a rekey ends it on every connection at once).
    pub(crate) fn allows(&mut self, cmd: &Command, creds: &Credentials) -> bool {
        self.recheck(creds);
        match cmd.request {
            Request::Store { .. }
            | Request::WriteBatch { .. }
            | Request::DeleteRange { .. }
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
            | Request::Query { .. } => self.holds(cmd.nsid),
            Request::Stats => self.admin || (cmd.nsid != DEVICE_NSID && self.holds(cmd.nsid)),
            Request::NamespaceCreate { .. }
            | Request::NamespaceConfigure { .. }
            | Request::NamespaceDestroy
            | Request::NamespaceRekey
            | Request::NamespaceList
            | Request::Backup { .. } => self.admin,
            Request::Authenticate { .. }
            | Request::AuthenticateByName { .. }
            | Request::Identify => true,
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
        let mut nsid = cmd.nsid;
        let reply = match &cmd.request {
            Request::Authenticate { .. } | Request::AuthenticateByName { .. } => {
                let proved = match &cmd.request {
                    // An unknown name is checked as namespace 0, which has no credential:
                    // the same work and the same failure count as a wrong secret.
                    Request::AuthenticateByName { name, secret } => {
                        Some(shared.namespace_named(name).unwrap_or(UNNAMED))
                            .filter(|ns| self.authenticate(*ns, secret, shared))
                    }
                    Request::Authenticate { secret } => {
                        Some(nsid).filter(|ns| self.authenticate(*ns, secret, shared))
                    }
                    _ => None,
                };
                let Some(ns) = proved else {
                    shared.metrics.record_refused(opcode);
                    // One answer for all, so a client cannot find out which namespaces exist.
                    return Some(Response::error(
                        cmd.cid,
                        cmd.nsid,
                        opcode,
                        Status::AccessDenied,
                        "unknown namespace or wrong credential".into(),
                    ));
                };
                // By name, the answer says the namespace's id.
                nsid = ns;
                ticket.authenticated();
                shared.record(ns, opcode, true, arrived.elapsed());
                Reply::Empty
            }
            Request::Identify => {
                shared.record(DEVICE_NSID, opcode, true, arrived.elapsed());
                Reply::Identify(shared.identify)
            }
            _ => return None,
        };
        Some(Response {
            cid: cmd.cid,
            nsid,
            opcode,
            status: Status::Success,
            reply,
        })
    }

    /// Checks `secret` for `nsid` (the admin's for the device) and, if it holds, remembers it.
    pub(crate) fn authenticate(&mut self, nsid: u32, secret: &[u8], shared: &Shared) -> bool {
        let ok = if nsid == DEVICE_NSID {
            let ok = shared.creds.verify_admin(secret);
            self.admin |= ok;
            ok
        } else {
            let proof = shared.creds.verify(nsid, secret);
            if let Some(epoch) = proof {
                self.namespaces.insert(nsid, epoch);
            }
            proof.is_some()
        };
        if !ok {
            shared.metrics.auth_failures.inc();
        }
        ok
    }
}
