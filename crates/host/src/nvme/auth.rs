//! The host's side of NVMe in-band authentication (DH-HMAC-CHAP): when a queue's Connect
//! response asks for it (ATR), before anything else on that queue, the initiator negotiates
//! (SHA-256, then SHA-384 and SHA-512; the NULL DH group), answers the controller's challenge
//! with R1 from its `DHHC-1` secret, and waits for Success1. Unidirectional: it does not ask
//! the controller to prove itself.

use super::{ok, NvmeError, NvmeQueue, NvmeTarget, Result};
use bytes::Bytes;
use cerberus_proto::nvme::{
    auth_command, failure, host_response, AuthMessage, DhchapSecret, HashId, DHGROUP_NULL,
    FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND,
};

/// Allocation length of an Authentication Receive: more than any message with the NULL
/// group (16 bytes and a SHA-512 value).
const RECEIVE_LEN: u32 = 1024;

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
    let negotiate = AuthMessage::Negotiate {
        tid,
        sc_c: 0,
        hashes: vec![
            HashId::Sha256 as u8,
            HashId::Sha384 as u8,
            HashId::Sha512 as u8,
        ],
        dhgroups: vec![DHGROUP_NULL],
    };
    send(q, &negotiate).await?;
    let (hash, seqnum, c1) = match receive(q).await? {
        AuthMessage::Challenge {
            tid: got,
            hash,
            dhgroup: DHGROUP_NULL,
            seqnum,
            challenge,
            ..
        } if got == tid => match HashId::from_id(hash) {
            Some(h) if challenge.len() == h.output_len() => (h, seqnum, challenge),
            _ => return give_up(q, tid, failure::INCORRECT_PAYLOAD, "a bad challenge").await,
        },
        AuthMessage::Failure { explanation, .. } => {
            return Err(refused(format!(
                "the controller refused the negotiation (explanation {explanation:#04x})"
            )))
        }
        _ => return give_up(q, tid, failure::INCORRECT_MESSAGE, "not a challenge").await,
    };
    let key = secret.transformed(&t.hostnqn);
    let response = host_response(hash, &key, &c1, seqnum, tid, 0, &t.hostnqn, subnqn);
    let reply = AuthMessage::Reply {
        tid,
        seqnum: 0,
        response,
        challenge: None,
        dh_value: Vec::new(),
    };
    send(q, &reply).await?;
    match receive(q).await? {
        AuthMessage::Success1 { tid: got, .. } if got == tid => Ok(()),
        AuthMessage::Failure { explanation, .. } => Err(refused(format!(
            "the controller refused this host's response (explanation {explanation:#04x})"
        ))),
        _ => Err(refused("neither Success1 nor Failure1")),
    }
}
