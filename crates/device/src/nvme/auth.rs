//! Authentication Send and Receive on a queue: the commands that carry its host's
//! DH-HMAC-CHAP transaction (`queue_auth`), and the queue joining its controller once the
//! host proved itself.

use super::answer::{invalid_field, Answer};
use super::conn::Conn;
use super::queue_auth::{out_of_turn, State};
use cerberus_proto::nvme::{failure, AuthMessage, SECP_DHCHAP, SPSP_DHCHAP};

impl Conn {
    /// Authentication Send: the host's next message.
    pub(super) fn auth_send(&mut self, secp: u8, spsp: u16, data: &[u8]) -> Answer {
        let peer = self.peer();
        let Some(q) = self.queue.as_mut() else {
            return out_of_turn();
        };
        if secp != SECP_DHCHAP || spsp != SPSP_DHCHAP {
            return Answer::status(invalid_field());
        }
        let auth = &mut q.auth;
        let Some(txn) = auth.txn.as_mut() else {
            return out_of_turn(); // no secret for this host: nothing to prove
        };
        if auth.state == State::Failed {
            return out_of_turn();
        }
        let tid = data
            .get(4..6)
            .map_or(0, |t| u16::from_le_bytes([t[0], t[1]]));
        let budget = &self.target.dh_budget;
        let may_exchange = || budget.try_spend(peer, super::dh_budget::PER_TRANSACTION);
        auth.state = match AuthMessage::decode(data) {
            Ok(msg @ AuthMessage::Negotiate { .. }) if auth.state == State::Open => {
                // Authenticating again: the queue waits for its outcome.
                txn.out = None;
                txn.receive(msg, may_exchange)
            }
            // A Success2 after a Success1 without R2: harmless.
            Ok(AuthMessage::Success2 { .. }) if auth.state == State::Open => State::Open,
            Ok(_) if auth.state == State::Open => txn.fail(tid, failure::INCORRECT_MESSAGE),
            Ok(msg) => txn.receive(msg, may_exchange),
            Err(explanation) => txn.fail(tid, explanation),
        };
        // The host's response checked (Success1 next): an I/O queue joins its controller
        // now, or the transaction fails as a wrong response does.
        let proven_now = matches!(txn.out, Some((AuthMessage::Success1 { .. }, _)));
        if proven_now {
            // A host that proves its secret is not who the DH budget is for: its work comes
            // back, so a host connecting more queues than the burst covers never runs dry.
            budget.refund(peer, super::dh_budget::PER_TRANSACTION);
        }
        if proven_now && !self.join_proven() {
            self.fail_unjoined(tid);
        }
        let Some(q) = self.queue.as_mut() else {
            return out_of_turn();
        };
        let auth = &mut q.auth;
        // A Success2 ends a bidirectional transaction.
        auth.proven |= auth.state == State::Open;
        if auth.state == State::Failed {
            self.target.shared.metrics.auth_failures.inc();
            tracing::info!(qid = q.qid, "NVMe/TCP: a host failed its authentication");
        }
        Answer::ok(0)
    }

    /// The I/O queue's host proved itself but the id its Connect named is not one of its
    /// controllers: Failure1, as for a wrong response.
    fn fail_unjoined(&mut self, tid: u16) {
        if let Some(q) = self.queue.as_mut() {
            if let Some(txn) = q.auth.txn.as_mut() {
                q.auth.state = txn.fail(tid, failure::FAILED);
            }
        }
    }

    /// Authentication Receive: the controller's next message, in at most `al` bytes.
    pub(super) fn auth_receive(&mut self, secp: u8, spsp: u16, al: u32) -> Answer {
        let Some(q) = self.queue.as_mut() else {
            return out_of_turn();
        };
        if secp != SECP_DHCHAP || spsp != SPSP_DHCHAP {
            return Answer::status(invalid_field());
        }
        let Some(txn) = q.auth.txn.as_mut() else {
            return out_of_turn();
        };
        let Some((msg, _)) = &txn.out else {
            return out_of_turn();
        };
        let bytes = msg.encode();
        if (al as usize) < bytes.len() {
            return Answer::status(invalid_field());
        }
        if let Some((_, after)) = txn.out.take() {
            if q.auth.state != State::Failed {
                q.auth.state = after;
                q.auth.proven |= after == State::Open;
            }
        }
        Answer::data(bytes)
    }
}
