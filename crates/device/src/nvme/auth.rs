//! NVMe in-band authentication of a queue (DH-HMAC-CHAP, `docs/nvme-tcp.md`): a host NQN
//! with a secret in `[nvme.host_secrets]` gets "authentication required" (ATR) in each
//! queue's Connect response, and nothing but Authentication Send/Receive, Property Get and
//! Disconnect on that queue until a transaction succeeds: AUTH_Negotiate (the host offers
//! hash functions and DH groups; the target takes the first hash it knows and needs the NULL
//! group), DH-HMAC-CHAP_Challenge (a fresh random C1 and sequence number), _Reply (the
//! host's R1, compared in constant time), then _Success1 or _Failure1. A failed or
//! malformed transaction leaves the queue refusing everything until it closes.
//!
//! Not implemented, refused with the Failure1 explanation the specification gives: FFDHE
//! groups (DH group not usable: the NULL group is all), secure channel concatenation
//! (concatenation mismatch), bidirectional authentication (the device has no controller
//! secrets: failed).

use super::conn::Conn;
use super::Answer;
use super::{invalid_field, Target};
use cerberus_proto::nvme::{
    failure, host_response, AuthMessage, HashId, NvmeStatus, DHGROUP_NULL, SECP_DHCHAP, SPSP_DHCHAP,
};
use rand::RngCore;
use subtle::ConstantTimeEq;

/// "Command Sequence Error": an authentication command out of turn.
fn out_of_turn() -> Answer {
    Answer::status(NvmeStatus::error(0, 0x0C))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Commands pass: no secret for this host, or a transaction succeeded.
    Open,
    /// Nothing but authentication until a transaction succeeds.
    Required,
    /// A transaction failed: nothing passes until the queue closes.
    Failed,
}

/// What a queue's host has to prove, and how far it got.
pub(super) struct QueueAuth {
    state: State,
    /// A transaction succeeded on this queue once.
    proven: bool,
    txn: Option<Box<Transaction>>,
}

/// A host's transaction on one queue.
struct Transaction {
    /// The host's key, transformed for its NQN.
    key: Vec<u8>,
    hostnqn: String,
    subnqn: String,
    /// The challenge sent: T_ID, hash, S1, C1.
    sent: Option<(u16, HashId, u32, Vec<u8>)>,
    /// The message the next Authentication Receive returns, and the state it leaves.
    out: Option<(AuthMessage, State)>,
}

impl QueueAuth {
    /// The authentication a Connect from `hostnqn` to `subnqn` gets; None if the host is to
    /// be refused (no secret while the device requires one).
    pub fn for_host(target: &Target, hostnqn: &str, subnqn: &str) -> Option<QueueAuth> {
        match target.secrets.get(hostnqn) {
            Some(secret) => Some(QueueAuth {
                state: State::Required,
                proven: false,
                txn: Some(Box::new(Transaction {
                    key: secret.transformed(hostnqn),
                    hostnqn: hostnqn.to_string(),
                    subnqn: subnqn.to_string(),
                    sent: None,
                    out: None,
                })),
            }),
            None if target.config.require_host_auth => None,
            None => Some(QueueAuth {
                state: State::Open,
                proven: true,
                txn: None,
            }),
        }
    }

    /// Commands other than authentication may run.
    pub fn usable(&self) -> bool {
        self.state == State::Open
    }

    /// Its host must authenticate and never did: the queue closes if that lasts past the
    /// Connect deadline (`icreq_timeout_ms` from its arrival), a failed queue among them.
    pub fn unproven(&self) -> bool {
        !self.proven
    }

    /// The Connect response asks the host to authenticate.
    pub fn required(&self) -> bool {
        self.state == State::Required
    }
}

impl Transaction {
    /// The next Receive answers Failure1 with `explanation`; the queue is refused from now.
    fn fail(&mut self, tid: u16, explanation: u8) -> State {
        let msg = AuthMessage::Failure {
            tid,
            from_host: false,
            explanation,
        };
        self.sent = None;
        self.out = Some((msg, State::Failed));
        State::Failed
    }

    /// A message from the host; the queue's state after it.
    fn receive(&mut self, msg: AuthMessage) -> State {
        match msg {
            AuthMessage::Negotiate {
                tid,
                sc_c,
                hashes,
                dhgroups,
            } => {
                if sc_c != 0 {
                    return self.fail(tid, failure::CONCAT_MISMATCH);
                }
                let Some(hash) = hashes.iter().find_map(|&h| HashId::from_id(h)) else {
                    return self.fail(tid, failure::HASH_UNUSABLE);
                };
                if !dhgroups.contains(&DHGROUP_NULL) {
                    return self.fail(tid, failure::DHGROUP_UNUSABLE);
                }
                let mut challenge = vec![0u8; hash.output_len()];
                rand::rngs::OsRng.fill_bytes(&mut challenge);
                let seqnum = rand::rngs::OsRng.next_u32().max(1);
                let msg = AuthMessage::Challenge {
                    tid,
                    hash: hash as u8,
                    dhgroup: DHGROUP_NULL,
                    seqnum,
                    challenge: challenge.clone(),
                    dh_value: Vec::new(),
                };
                self.sent = Some((tid, hash, seqnum, challenge));
                self.out = Some((msg, State::Required));
                State::Required
            }
            AuthMessage::Reply {
                tid,
                response,
                challenge: c2,
                ..
            } => {
                // The challenge must have been read (nothing waiting to go out).
                let Some((sent_tid, hash, seqnum, c1)) =
                    self.sent.take().filter(|_| self.out.is_none())
                else {
                    return self.fail(tid, failure::INCORRECT_MESSAGE);
                };
                if tid != sent_tid || response.len() != hash.output_len() {
                    return self.fail(tid, failure::INCORRECT_PAYLOAD);
                }
                let expected = host_response(
                    hash,
                    &self.key,
                    &c1,
                    seqnum,
                    tid,
                    0,
                    &self.hostnqn,
                    &self.subnqn,
                );
                if !bool::from(expected.ct_eq(&response)) || c2.is_some() {
                    // A wrong response; or a right one asking the controller to prove
                    // itself, which this device has no secret for.
                    return self.fail(tid, failure::FAILED);
                }
                let msg = AuthMessage::Success1 {
                    tid,
                    hl: hash.output_len() as u8,
                    response: None,
                };
                self.out = Some((msg, State::Open));
                State::Required
            }
            // The host gives up (Failure2), or sends what only a controller sends, or a
            // Success2 this device never asks for.
            AuthMessage::Failure { tid, .. }
            | AuthMessage::Challenge { tid, .. }
            | AuthMessage::Success1 { tid, .. }
            | AuthMessage::Success2 { tid } => self.fail(tid, failure::INCORRECT_MESSAGE),
        }
    }
}

impl Conn {
    /// Authentication Send: the host's next message.
    pub(super) fn auth_send(&mut self, secp: u8, spsp: u16, data: &[u8]) -> Answer {
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
        auth.state = match AuthMessage::decode(data) {
            Ok(msg @ AuthMessage::Negotiate { .. }) if auth.state == State::Open => {
                // Authenticating again: the queue waits for its outcome.
                txn.out = None;
                txn.receive(msg)
            }
            // A Success2 after Success1 (this device never asks for one): harmless.
            Ok(AuthMessage::Success2 { .. }) if auth.state == State::Open => State::Open,
            Ok(_) if auth.state == State::Open => txn.fail(tid, failure::INCORRECT_MESSAGE),
            Ok(msg) => txn.receive(msg),
            Err(explanation) => txn.fail(tid, explanation),
        };
        if auth.state == State::Failed {
            self.target.shared.metrics.auth_failures.inc();
            tracing::info!(qid = q.qid, "NVMe/TCP: a host failed its authentication");
        }
        Answer::ok(0)
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
