//! The host's side of NVMe in-band authentication (DH-HMAC-CHAP): when a queue's Connect
//! response asks for it (ATR), before anything else on that queue, the initiator negotiates
//! (SHA-256, then SHA-384 and SHA-512; the FFDHE groups, then NULL), answers the controller's
//! challenge with its DH value and R1 from its `DHHC-1` secret, and waits for Success1. With
//! a controller secret it also sends C2 and checks the controller's R2 (bidirectional), then
//! sends Success2.

use super::error::{ok, NvmeError, Result};
use super::queue::NvmeQueue;
use super::target::NvmeTarget;
use bytes::Bytes;
use cerberus_proto::nvme::{
    augmented, auth_command, failure, AuthMessage, Challenged, DhGroup, DhchapSecret, HashId,
    DHGROUP_NULL, DH_PRIVATE_LEN, FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND,
};
use rand::RngCore;
use subtle::ConstantTimeEq;

/// Allocation length of an Authentication Receive: more than any message (an ffdhe8192
/// challenge: 16 bytes, a SHA-512 value and a 1,024-byte DH value).
const RECEIVE_LEN: u32 = 4096;

fn refused(why: impl Into<String>) -> NvmeError {
    NvmeError::Auth(why.into())
}

async fn send(q: &mut NvmeQueue, msg: &AuthMessage) -> Result<()> {
    let data = msg.encode();
    let sqe = auth_command(FCTYPE_AUTH_SEND, data.len() as u32);
    ok(q.command(sqe, Bytes::from(data), true, 0).await?)?;
    Ok(())
}

async fn receive(q: &mut NvmeQueue) -> Result<AuthMessage> {
    let sqe = auth_command(FCTYPE_AUTH_RECEIVE, RECEIVE_LEN);
    let (_, data) = ok(q.command(sqe, Bytes::new(), true, RECEIVE_LEN).await?)?;
    AuthMessage::decode(&data).map_err(|_| refused("a malformed message from the controller"))
}

/// Tells the controller this host gives up (Failure2), then fails with `why`.
async fn give_up(q: &mut NvmeQueue, tid: u16, explanation: u8, why: &str) -> Result<()> {
    let msg = AuthMessage::Failure {
        tid,
        from_host: true,
        explanation,
    };
    let _ = send(q, &msg).await;
    Err(refused(why))
}

/// Runs one transaction (id `tid`) on `q`, just connected to `subnqn` as `t.hostnqn`.
pub(super) async fn authenticate(
    q: &mut NvmeQueue,
    t: &NvmeTarget,
    subnqn: &str,
    tid: u16,
) -> Result<()> {
    let Some(secret) = t.host_secret.as_deref() else {
        return Err(refused(
            "the target requires authentication; no host secret is set",
        ));
    };
    let secret = DhchapSecret::parse(secret).map_err(refused)?;
    let ctrl_secret = match t.ctrl_secret.as_deref() {
        Some(s) => Some(DhchapSecret::parse(s).map_err(refused)?),
        None => None,
    };
    // The FFDHE groups first, the smallest first (the cheapest exchange with forward
    // secrecy), then NULL for a target that does none.
    let mut dhgroups: Vec<u8> = DhGroup::ALL.iter().map(|g| *g as u8).collect();
    dhgroups.push(DHGROUP_NULL);
    let negotiate = AuthMessage::Negotiate {
        tid,
        sc_c: 0,
        hashes: vec![
            HashId::Sha256 as u8,
            HashId::Sha384 as u8,
            HashId::Sha512 as u8,
        ],
        dhgroups,
    };
    send(q, &negotiate).await?;
    let (hash, group, seqnum, c1, their_dh) = match receive(q).await? {
        AuthMessage::Challenge {
            tid: got,
            hash,
            dhgroup,
            seqnum,
            challenge,
            dh_value,
        } if got == tid => {
            let group = DhGroup::from_id(dhgroup);
            let known = group.is_some() || (dhgroup == DHGROUP_NULL && dh_value.is_empty());
            match HashId::from_id(hash) {
                Some(h) if known && challenge.len() == h.output_len() => {
                    (h, group, seqnum, challenge, dh_value)
                }
                _ => return give_up(q, tid, failure::INCORRECT_PAYLOAD, "a bad challenge").await,
            }
        }
        AuthMessage::Failure { explanation, .. } => {
            return Err(refused(format!(
                "the controller refused the negotiation (explanation {explanation:#04x})"
            )))
        }
        _ => return give_up(q, tid, failure::INCORRECT_MESSAGE, "not a challenge").await,
    };
    let mut rng = rand::rngs::OsRng;
    let (z, dh_value) = match group {
        None => (None, Vec::new()),
        Some(g) => {
            let mut random = [0u8; DH_PRIVATE_LEN];
            rng.fill_bytes(&mut random);
            let mine = g.key_pair(&random);
            match mine.shared(&their_dh) {
                Ok(z) => (Some(z), mine.public),
                Err(e) => return give_up(q, tid, e, "a bad DH value from the controller").await,
            }
        }
    };
    let ca = augmented(hash, z.as_deref(), &c1);
    let at = Challenged {
        hash,
        challenge: &ca,
        seqnum,
        tid,
        sc_c: 0,
    };
    let response = at.host_response(&secret.transformed(&t.hostnqn), &t.hostnqn, subnqn);
    // Bidirectional: a fresh C2 and S2, and the R2 a controller holding the secret returns.
    let expected_r2 = ctrl_secret.map(|kc| {
        let mut c2 = vec![0u8; hash.output_len()];
        rng.fill_bytes(&mut c2);
        let s2 = rng.next_u32().max(1);
        let ca2 = augmented(hash, z.as_deref(), &c2);
        let at = Challenged {
            challenge: &ca2,
            seqnum: s2,
            ..at
        };
        let r2 = at.controller_response(&kc.transformed(subnqn), subnqn, &t.hostnqn);
        (c2, s2, r2)
    });
    let reply = AuthMessage::Reply {
        tid,
        seqnum: expected_r2.as_ref().map_or(0, |e| e.1),
        response,
        challenge: expected_r2.as_ref().map(|e| e.0.clone()),
        dh_value,
    };
    send(q, &reply).await?;
    success(q, tid, expected_r2.map(|e| e.2)).await
}

/// Waits for Success1; checks R2 against `expected_r2` when the host asked for one, then
/// sends Success2.
async fn success(q: &mut NvmeQueue, tid: u16, expected_r2: Option<Vec<u8>>) -> Result<()> {
    match receive(q).await? {
        AuthMessage::Success1 {
            tid: got, response, ..
        } if got == tid => match (&expected_r2, response) {
            (None, _) => Ok(()),
            (Some(r2), Some(got)) if bool::from(r2.ct_eq(&got)) => {
                send(q, &AuthMessage::Success2 { tid }).await
            }
            (Some(_), _) => {
                give_up(
                    q,
                    tid,
                    failure::FAILED,
                    "the controller did not prove it holds this host's controller secret",
                )
                .await
            }
        },
        AuthMessage::Failure { explanation, .. } => Err(refused(format!(
            "the controller refused this host's response (explanation {explanation:#04x})"
        ))),
        _ => Err(refused("neither Success1 nor Failure1")),
    }
}
