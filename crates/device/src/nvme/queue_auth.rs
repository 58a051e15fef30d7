//! NVMe in-band authentication of a queue (DH-HMAC-CHAP, `docs/nvme-tcp.md`): a host NQN
//! with a secret in `[nvme.host_secrets]` gets "authentication required" (ATR) in each
//! queue's Connect response, and nothing but Authentication Send/Receive, Property Get and
//! Disconnect on that queue until a transaction succeeds: AUTH_Negotiate (the host offers
//! hash functions and DH groups; the target takes the first hash it knows, and the first
//! FFDHE group the host lists, NULL only if the host lists no FFDHE group),
//! DH-HMAC-CHAP_Challenge (a fresh random C1, sequence number and, with an FFDHE group, the
//! target's DH value), _Reply (the host's R1 over the challenge augmented with the DH
//! secret, compared in constant time; with C2, the host asks the target to prove itself),
//! then _Success1 (carrying R2, from the host's controller secret in
//! `[nvme.ctrl_secrets]`, when asked; the host's _Success2 then ends the transaction) or
//! _Failure1. A failed or malformed transaction leaves the queue refusing everything until
//! it closes. A host with no secret is refused unless `require_host_auth = false`.
//!
//! Not implemented, refused with the Failure1 explanation the specification gives: secure
//! channel concatenation (concatenation mismatch).

use super::answer::Answer;
use super::target::Target;
use cerberus_proto::nvme::{
    augmented, failure, AuthMessage, Challenged, DhGroup, DhKey, HashId, NvmeStatus, DHGROUP_NULL,
    DH_PRIVATE_LEN,
};
use rand::RngCore;
use subtle::ConstantTimeEq;

/// "Command Sequence Error": an authentication command out of turn.
pub(super) fn out_of_turn() -> Answer {
    Answer::status(NvmeStatus::error(0, 0x0C))
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// Commands pass: no secret for this host, or a transaction succeeded.
    Open,
    /// Nothing but authentication until a transaction succeeds.
    Required,
    /// A transaction failed: nothing passes until the queue closes.
    Failed,
}

/// What a queue's host has to prove, and how far it got.
pub(super) struct QueueAuth {
    pub(super) state: State,
    /// A transaction succeeded on this queue once.
    pub(super) proven: bool,
    pub(super) txn: Option<Box<Transaction>>,
}

/// A host's transaction on one queue.
pub(super) struct Transaction {
    /// The host's key, transformed for its NQN.
    key: Vec<u8>,
    /// The controller's key for this host, transformed for the subsystem's NQN: what
    /// answers a host that asks the target to prove itself.
    ctrl_key: Option<Vec<u8>>,
    hostnqn: String,
    subnqn: String,
    /// The challenge sent.
    sent: Option<Sent>,
    /// The message the next Authentication Receive returns, and the state it leaves.
    pub(super) out: Option<(AuthMessage, State)>,
    /// Success1 carried R2: the host's Success2 ends the transaction (T_ID).
    awaiting_success2: Option<u16>,
}

/// A challenge sent: T_ID, hash, S1, C1 and the target's DH key (None: the NULL group).
struct Sent {
    tid: u16,
    hash: HashId,
    seqnum: u32,
    c1: Vec<u8>,
    dh: Option<DhKey>,
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
                    ctrl_key: target
                        .ctrl_secrets
                        .get(hostnqn)
                        .map(|s| s.transformed(subnqn)),
                    hostnqn: hostnqn.to_string(),
                    subnqn: subnqn.to_string(),
                    sent: None,
                    out: None,
                    awaiting_success2: None,
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
    pub(super) fn fail(&mut self, tid: u16, explanation: u8) -> State {
        let msg = AuthMessage::Failure {
            tid,
            from_host: false,
            explanation,
        };
        self.sent = None;
        self.awaiting_success2 = None;
        self.out = Some((msg, State::Failed));
        State::Failed
    }

    /// A message from the host; the queue's state after it. `may_exchange`: whether the
    /// host's peer may have the DH work a Negotiate over an FFDHE group costs
    /// (`dh_budget`); asked only then.
    pub(super) fn receive(
        &mut self,
        msg: AuthMessage,
        may_exchange: impl FnOnce() -> bool,
    ) -> State {
        match msg {
            AuthMessage::Negotiate {
                tid,
                sc_c,
                hashes,
                dhgroups,
            } => self.negotiate(tid, sc_c, &hashes, &dhgroups, may_exchange),
            AuthMessage::Reply {
                tid,
                seqnum,
                response,
                challenge,
                dh_value,
            } => self.reply(tid, seqnum, &response, challenge, &dh_value),
            // The host checked R2: the transaction ends.
            AuthMessage::Success2 { tid }
                if self.awaiting_success2 == Some(tid) && self.out.is_none() =>
            {
                self.awaiting_success2 = None;
                State::Open
            }
            // The host gives up (Failure2, R2 refused among them), or sends what only a
            // controller sends, or a Success2 out of turn.
            AuthMessage::Failure { tid, .. }
            | AuthMessage::Challenge { tid, .. }
            | AuthMessage::Success1 { tid, .. }
            | AuthMessage::Success2 { tid } => self.fail(tid, failure::INCORRECT_MESSAGE),
        }
    }

    fn negotiate(
        &mut self,
        tid: u16,
        sc_c: u8,
        hashes: &[u8],
        dhgroups: &[u8],
        may_exchange: impl FnOnce() -> bool,
    ) -> State {
        if self.sent.is_some() {
            // One Negotiate per transaction: each costs a DH key pair (an 8192-bit modular
            // exponentiation on the network thread for ffdhe8192), and a stranger naming a
            // host with a secret could otherwise ask for thousands in one stream. The queue
            // fails: the next costs a new connection (and its slot).
            return self.fail(tid, failure::INCORRECT_MESSAGE);
        }
        if sc_c != 0 {
            return self.fail(tid, failure::CONCAT_MISMATCH);
        }
        let Some(hash) = hashes.iter().find_map(|&h| HashId::from_id(h)) else {
            return self.fail(tid, failure::HASH_UNUSABLE);
        };
        // An exchange whenever the host can do one: it gives forward secrecy.
        let group = dhgroups.iter().find_map(|&g| DhGroup::from_id(g));
        if group.is_none() && !dhgroups.contains(&DHGROUP_NULL) {
            return self.fail(tid, failure::DHGROUP_UNUSABLE);
        }
        if group.is_some() && !may_exchange() {
            // Its peer asked for more DH work than its bucket holds: none is done.
            return self.fail(tid, failure::DHGROUP_UNUSABLE);
        }
        let mut rng = rand::rngs::OsRng;
        let dh = group.map(|g| {
            let mut random = [0u8; DH_PRIVATE_LEN];
            rng.fill_bytes(&mut random);
            g.key_pair(&random)
        });
        let mut c1 = vec![0u8; hash.output_len()];
        rng.fill_bytes(&mut c1);
        let seqnum = rng.next_u32().max(1);
        let msg = AuthMessage::Challenge {
            tid,
            hash: hash as u8,
            dhgroup: group.map_or(DHGROUP_NULL, |g| g as u8),
            seqnum,
            challenge: c1.clone(),
            dh_value: dh.as_ref().map(|k| k.public.clone()).unwrap_or_default(),
        };
        self.sent = Some(Sent {
            tid,
            hash,
            seqnum,
            c1,
            dh,
        });
        self.awaiting_success2 = None;
        self.out = Some((msg, State::Required));
        State::Required
    }

    fn reply(
        &mut self,
        tid: u16,
        s2: u32,
        r1: &[u8],
        c2: Option<Vec<u8>>,
        dh_value: &[u8],
    ) -> State {
        // The challenge must have been read (nothing waiting to go out).
        let Some(sent) = self.sent.take().filter(|_| self.out.is_none()) else {
            return self.fail(tid, failure::INCORRECT_MESSAGE);
        };
        let hl = sent.hash.output_len();
        if tid != sent.tid || r1.len() != hl || c2.as_ref().is_some_and(|c| c.len() != hl) {
            return self.fail(tid, failure::INCORRECT_PAYLOAD);
        }
        let z = match &sent.dh {
            Some(k) => match k.shared(dh_value) {
                Ok(z) => Some(z),
                Err(explanation) => return self.fail(tid, explanation),
            },
            None if dh_value.is_empty() => None,
            None => return self.fail(tid, failure::INCORRECT_PAYLOAD),
        };
        let ca = augmented(sent.hash, z.as_deref(), &sent.c1);
        let at = Challenged {
            hash: sent.hash,
            challenge: &ca,
            seqnum: sent.seqnum,
            tid,
            sc_c: 0,
        };
        let expected = at.host_response(&self.key, &self.hostnqn, &self.subnqn);
        if !bool::from(expected.ct_eq(r1)) {
            return self.fail(tid, failure::FAILED);
        }
        let r2 = match c2 {
            None => None,
            // The host asks the target to prove itself: with the controller secret it was
            // given for this host, else the transaction fails (the host must not go on
            // believing it reached a device that knows its secrets).
            Some(_) if s2 == 0 => return self.fail(tid, failure::INCORRECT_PAYLOAD),
            Some(c2) => match &self.ctrl_key {
                None => return self.fail(tid, failure::FAILED),
                Some(kc) => {
                    let ca2 = augmented(sent.hash, z.as_deref(), &c2);
                    let at = Challenged {
                        challenge: &ca2,
                        seqnum: s2,
                        ..at
                    };
                    Some(at.controller_response(kc, &self.subnqn, &self.hostnqn))
                }
            },
        };
        let after = match r2 {
            Some(_) => {
                self.awaiting_success2 = Some(tid);
                State::Required
            }
            None => State::Open,
        };
        let msg = AuthMessage::Success1 {
            tid,
            hl: hl as u8,
            response: r2,
        };
        self.out = Some((msg, after));
        State::Required
    }
}
