//! NVMe in-band authentication with DH-HMAC-CHAP (NVMe Base 2.x, "Fabrics Authentication";
//! written from the specification): the messages a host and a controller carry in the
//! Fabrics Authentication Send and Receive commands' data, the `DHHC-1` secret
//! representation with its key transformation, and the responses both sides compute.
//!
//! DH groups: NULL (the challenge used as is) and the RFC 7919 groups (`dh`); hash
//! functions SHA-256, SHA-384 and SHA-512; bidirectional authentication (the host sends C2,
//! the controller answers R2 from its own secret).

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::queue_entry::NvmeStatus;

/// The security protocol (SECP) of DH-HMAC-CHAP in Authentication Send/Receive.
pub const SECP_DHCHAP: u8 = 0xE9;
/// SPSP0 and SPSP1 of DH-HMAC-CHAP: 01h, 01h (SPSP as one little-endian u16: 0x0101).
pub const SPSP_DHCHAP: u16 = 0x0101;
/// The Fabrics command type of Authentication Send.
pub const FCTYPE_AUTH_SEND: u8 = 0x05;
/// The Fabrics command type of Authentication Receive.
pub const FCTYPE_AUTH_RECEIVE: u8 = 0x06;
/// Connect response DW0: ATR, authentication required on this queue before any other
/// command (bit 17; bit 18, ASCR, a secure channel too, is never set here).
pub const CONNECT_ATR: u32 = 1 << 17;
/// The NULL DH group (no Diffie-Hellman exchange).
pub const DHGROUP_NULL: u8 = 0x00;
/// Bytes of one protocol descriptor in a Negotiate message.
const DESCRIPTOR_LEN: usize = 64;
/// Most protocol descriptors a Negotiate message is read for.
const MAX_DESCRIPTORS: usize = 4;

/// The status of a command refused before the queue's authentication succeeded
/// (command specific, "Authentication Required").
pub fn authentication_required() -> NvmeStatus {
    NvmeStatus::error(1, 0x91)
}

/// Failure reason code explanations (Failure1/Failure2 messages; the reason is always 01h,
/// "authentication failure").
pub mod failure {
    /// Authentication failed.
    pub const FAILED: u8 = 0x01;
    /// Authentication protocol not usable.
    pub const NOT_USABLE: u8 = 0x02;
    /// Secure channel concatenation mismatch.
    pub const CONCAT_MISMATCH: u8 = 0x03;
    /// Hash function not usable.
    pub const HASH_UNUSABLE: u8 = 0x04;
    /// DH group not usable.
    pub const DHGROUP_UNUSABLE: u8 = 0x05;
    /// Incorrect payload.
    pub const INCORRECT_PAYLOAD: u8 = 0x06;
    /// Incorrect protocol message.
    pub const INCORRECT_MESSAGE: u8 = 0x07;
}

/// A DH-HMAC-CHAP hash function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashId {
    /// SHA-256 (id 01h).
    Sha256 = 1,
    /// SHA-384 (id 02h).
    Sha384 = 2,
    /// SHA-512 (id 03h).
    Sha512 = 3,
}

impl HashId {
    /// The hash function with identifier `id`, if known.
    pub fn from_id(id: u8) -> Option<HashId> {
        match id {
            1 => Some(HashId::Sha256),
            2 => Some(HashId::Sha384),
            3 => Some(HashId::Sha512),
            _ => None,
        }
    }

    /// Bytes of its output (the challenge and response length, HL).
    pub fn output_len(self) -> usize {
        match self {
            HashId::Sha256 => 32,
            HashId::Sha384 => 48,
            HashId::Sha512 => 64,
        }
    }

    /// This hash of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            HashId::Sha256 => Sha256::digest(data).to_vec(),
            HashId::Sha384 => Sha384::digest(data).to_vec(),
            HashId::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// HMAC with this hash of the concatenated `parts` under `key`.
    pub fn hmac(self, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
            let mut m = <M as Mac>::new_from_slice(key).expect("HMAC takes any key length");
            for p in parts {
                m.update(p);
            }
            m.finalize().into_bytes().to_vec()
        }
        match self {
            HashId::Sha256 => run::<Hmac<Sha256>>(key, parts),
            HashId::Sha384 => run::<Hmac<Sha384>>(key, parts),
            HashId::Sha512 => run::<Hmac<Sha512>>(key, parts),
        }
    }
}

/// A DH-HMAC-CHAP secret: `DHHC-1:<hh>:<base64 of the key and its CRC-32>:`, where `hh` names
/// the hash the key is transformed with (00: none).
#[derive(Clone, PartialEq, Eq)]
pub struct DhchapSecret {
    /// The transformation hash (None for `00`).
    pub transform: Option<HashId>,
    /// The key (32, 48 or 64 bytes).
    pub key: Vec<u8>,
}

impl std::fmt::Debug for DhchapSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DhchapSecret({:?}, {} bytes)",
            self.transform,
            self.key.len()
        )
    }
}

impl DhchapSecret {
    /// Reads a secret's representation; the reason if it is malformed (prefix, hash id, key
    /// length, base64, CRC).
    pub fn parse(s: &str) -> Result<DhchapSecret, String> {
        let rest = s
            .strip_prefix("DHHC-1:")
            .ok_or("a DH-HMAC-CHAP secret begins with DHHC-1:")?;
        let (hh, rest) = rest.split_once(':').ok_or("DHHC-1:<hh>:<key>: expected")?;
        let transform = match hh {
            "00" => None,
            "01" | "02" | "03" => HashId::from_id(hh.as_bytes()[1] - b'0'),
            _ => return Err(format!("unknown key hash {hh:?} (00 to 03)")),
        };
        let b64 = rest.strip_suffix(':').unwrap_or(rest);
        let raw = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("the key is not base64: {e}"))?;
        if !matches!(raw.len(), 36 | 52 | 68) {
            return Err("the key has 32, 48 or 64 bytes (and its CRC-32)".into());
        }
        let (key, crc) = raw.split_at(raw.len() - 4);
        if crc32fast::hash(key).to_le_bytes() != crc {
            return Err("the key's CRC-32 does not match".into());
        }
        if let Some(h) = transform {
            if h.output_len() != key.len() {
                return Err(format!("key hash {hh} takes a {}-byte key", h.output_len()));
            }
        }
        Ok(DhchapSecret {
            transform,
            key: key.to_vec(),
        })
    }

    /// The representation of `key` (32, 48 or 64 bytes) with transformation `transform`.
    pub fn encode(transform: Option<HashId>, key: &[u8]) -> String {
        let mut raw = key.to_vec();
        raw.extend_from_slice(&crc32fast::hash(key).to_le_bytes());
        let b64 = base64::engine::general_purpose::STANDARD.encode(raw);
        format!("DHHC-1:{:02}:{b64}:", transform.map_or(0, |h| h as u8))
    }

    /// The key as the exchange uses it for `nqn` (the host's NQN for a host secret):
    /// HMAC(key, NQN || "NVMe-over-Fabrics") with the transformation hash, or the key itself.
    pub fn transformed(&self, nqn: &str) -> Vec<u8> {
        match self.transform {
            None => self.key.clone(),
            Some(h) => h.hmac(&self.key, &[nqn.as_bytes(), b"NVMe-over-Fabrics"]),
        }
    }
}

/// What a response is computed over, besides the key: the (augmented) challenge, its
/// sequence number, the transaction id and SC_C.
#[derive(Clone, Copy, Debug)]
pub struct Challenged<'a> {
    /// The hash function of the transaction.
    pub hash: HashId,
    /// C1 or C2, augmented with the DH secret when the group is not NULL (`augmented`).
    pub challenge: &'a [u8],
    /// S1 or S2.
    pub seqnum: u32,
    /// T_ID.
    pub tid: u16,
    /// SC_C.
    pub sc_c: u8,
}

impl Challenged<'_> {
    fn response(&self, key: &[u8], role: &[u8], nqn1: &str, nqn2: &str) -> Vec<u8> {
        self.hash.hmac(
            key,
            &[
                self.challenge,
                &self.seqnum.to_le_bytes(),
                &self.tid.to_le_bytes(),
                &[self.sc_c],
                role,
                nqn1.as_bytes(),
                &[0],
                nqn2.as_bytes(),
            ],
        )
    }

    /// The host's response R1 = HMAC(Kh, Ca || S1 || T_ID || SC_C || "HostHost" || NQNh ||
    /// 00h || NQNc), `key` the host key transformed for the host's NQN.
    pub fn host_response(&self, key: &[u8], hostnqn: &str, subnqn: &str) -> Vec<u8> {
        self.response(key, b"HostHost", hostnqn, subnqn)
    }

    /// The controller's response R2 = HMAC(Kc, Ca2 || S2 || T_ID || SC_C || "Controller" ||
    /// NQNc || 00h || NQNh), `key` the controller key transformed for the subsystem's NQN.
    pub fn controller_response(&self, key: &[u8], subnqn: &str, hostnqn: &str) -> Vec<u8> {
        self.response(key, b"Controller", subnqn, hostnqn)
    }
}

/// A DH-HMAC-CHAP message (or the common Negotiate message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthMessage {
    /// AUTH_Negotiate (host): the transaction id, secure channel concatenation, and the
    /// DH-HMAC-CHAP descriptor's hash functions and DH groups, in the host's order.
    Negotiate {
        /// Transaction id.
        tid: u16,
        /// SC_C (0: no secure channel).
        sc_c: u8,
        /// Hash function ids.
        hashes: Vec<u8>,
        /// DH group ids.
        dhgroups: Vec<u8>,
    },
    /// DH-HMAC-CHAP_Challenge (controller).
    Challenge {
        /// Transaction id.
        tid: u16,
        /// Hash function id.
        hash: u8,
        /// DH group id.
        dhgroup: u8,
        /// S1.
        seqnum: u32,
        /// C1 (HL bytes).
        challenge: Vec<u8>,
        /// The DH value (empty with the NULL group).
        dh_value: Vec<u8>,
    },
    /// DH-HMAC-CHAP_Reply (host).
    Reply {
        /// Transaction id.
        tid: u16,
        /// S2 (0 unless `challenge` is set).
        seqnum: u32,
        /// R1 (HL bytes).
        response: Vec<u8>,
        /// C2 for the controller's response (bidirectional authentication), if asked.
        challenge: Option<Vec<u8>>,
        /// The DH value (empty with the NULL group).
        dh_value: Vec<u8>,
    },
    /// DH-HMAC-CHAP_Success1 (controller): R2 when the host asked for it.
    Success1 {
        /// Transaction id.
        tid: u16,
        /// HL.
        hl: u8,
        /// R2, if bidirectional.
        response: Option<Vec<u8>>,
    },
    /// DH-HMAC-CHAP_Success2 (host, after checking R2).
    Success2 {
        /// Transaction id.
        tid: u16,
    },
    /// DH-HMAC-CHAP_Failure1 (controller) or _Failure2 (host: `from_host`).
    Failure {
        /// Transaction id.
        tid: u16,
        /// Sent by the host (Failure2).
        from_host: bool,
        /// Reason code explanation ([`failure`]).
        explanation: u8,
    },
}

const MSG_NEGOTIATE: u8 = 0x00;
const MSG_CHALLENGE: u8 = 0x01;
const MSG_REPLY: u8 = 0x02;
const MSG_SUCCESS1: u8 = 0x03;
const MSG_SUCCESS2: u8 = 0x04;
const MSG_FAILURE2: u8 = 0xF0;
const MSG_FAILURE1: u8 = 0xF1;

fn header(auth_type: u8, id: u8, tid: u16, len: usize) -> Vec<u8> {
    let mut d = vec![0u8; len];
    d[0] = auth_type;
    d[1] = id;
    d[4..6].copy_from_slice(&tid.to_le_bytes());
    d
}

fn le16(d: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([d[at], d[at + 1]])
}

fn le32(d: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

impl AuthMessage {
    /// Its bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            AuthMessage::Negotiate {
                tid,
                sc_c,
                hashes,
                dhgroups,
            } => {
                let mut d = header(0x00, MSG_NEGOTIATE, *tid, 8 + DESCRIPTOR_LEN);
                d[6] = *sc_c;
                d[7] = 1; // NAPD
                let (h, g) = (hashes.len().min(30), dhgroups.len().min(30));
                d[8] = 0x01; // AUTHID: DH-HMAC-CHAP
                d[10] = h as u8;
                d[11] = g as u8;
                d[12..12 + h].copy_from_slice(&hashes[..h]);
                d[42..42 + g].copy_from_slice(&dhgroups[..g]);
                d
            }
            AuthMessage::Challenge {
                tid,
                hash,
                dhgroup,
                seqnum,
                challenge,
                dh_value,
            } => {
                let mut d = header(0x01, MSG_CHALLENGE, *tid, 16);
                d[6] = challenge.len() as u8;
                d[8] = *hash;
                d[9] = *dhgroup;
                d[10..12].copy_from_slice(&(dh_value.len() as u16).to_le_bytes());
                d[12..16].copy_from_slice(&seqnum.to_le_bytes());
                d.extend_from_slice(challenge);
                d.extend_from_slice(dh_value);
                d
            }
            AuthMessage::Reply {
                tid,
                seqnum,
                response,
                challenge,
                dh_value,
            } => {
                let mut d = header(0x01, MSG_REPLY, *tid, 16);
                d[6] = response.len() as u8;
                d[8] = u8::from(challenge.is_some());
                d[10..12].copy_from_slice(&(dh_value.len() as u16).to_le_bytes());
                d[12..16].copy_from_slice(&seqnum.to_le_bytes());
                d.extend_from_slice(response);
                match challenge {
                    Some(c) => d.extend_from_slice(c),
                    None => d.resize(d.len() + response.len(), 0),
                }
                d.extend_from_slice(dh_value);
                d
            }
            AuthMessage::Success1 { tid, hl, response } => {
                let mut d = header(0x01, MSG_SUCCESS1, *tid, 16);
                d[6] = *hl;
                d[8] = u8::from(response.is_some());
                match response {
                    Some(r) => d.extend_from_slice(r),
                    None => d.resize(16 + usize::from(*hl), 0),
                }
                d
            }
            AuthMessage::Success2 { tid } => header(0x01, MSG_SUCCESS2, *tid, 16),
            AuthMessage::Failure {
                tid,
                from_host,
                explanation,
            } => {
                let id = if *from_host {
                    MSG_FAILURE2
                } else {
                    MSG_FAILURE1
                };
                let mut d = header(0x01, id, *tid, 8);
                d[6] = 0x01; // reason: authentication failure
                d[7] = *explanation;
                d
            }
        }
    }

    /// Reads a message; the failure explanation to answer if it is malformed (never
    /// panics, whatever the bytes).
    pub fn decode(d: &[u8]) -> Result<AuthMessage, u8> {
        use failure::{INCORRECT_MESSAGE, INCORRECT_PAYLOAD};
        if d.len() < 8 {
            return Err(INCORRECT_PAYLOAD);
        }
        let tid = le16(d, 4);
        let need = |n: usize| {
            if d.len() < n {
                Err(INCORRECT_PAYLOAD)
            } else {
                Ok(())
            }
        };
        match (d[0], d[1]) {
            (0x00, MSG_NEGOTIATE) => {
                let napd = usize::from(d[7]).min(MAX_DESCRIPTORS);
                let descriptors = d[8..].chunks_exact(DESCRIPTOR_LEN).take(napd);
                for p in descriptors {
                    let (h, g) = (usize::from(p[2]), usize::from(p[3]));
                    if p[0] != 0x01 || h > 30 || g > 30 {
                        continue;
                    }
                    return Ok(AuthMessage::Negotiate {
                        tid,
                        sc_c: d[6],
                        hashes: p[4..4 + h].to_vec(),
                        dhgroups: p[34..34 + g].to_vec(),
                    });
                }
                Err(failure::NOT_USABLE)
            }
            (0x01, MSG_CHALLENGE) => {
                need(16)?;
                let hl = usize::from(d[6]);
                let dhvlen = usize::from(le16(d, 10));
                need(16 + hl + dhvlen)?;
                Ok(AuthMessage::Challenge {
                    tid,
                    hash: d[8],
                    dhgroup: d[9],
                    seqnum: le32(d, 12),
                    challenge: d[16..16 + hl].to_vec(),
                    dh_value: d[16 + hl..16 + hl + dhvlen].to_vec(),
                })
            }
            (0x01, MSG_REPLY) => {
                need(16)?;
                let hl = usize::from(d[6]);
                let cvalid = d[8] & 1 != 0;
                let dhvlen = usize::from(le16(d, 10));
                // R1, then C2's field (HL bytes, cleared when CVALID is), then the DH value;
                // a reply without C2 may end after R1 when it has no DH value.
                let c2_field = if cvalid || dhvlen > 0 { hl } else { 0 };
                need(16 + hl + c2_field + dhvlen)?;
                let at = 16 + hl + c2_field;
                Ok(AuthMessage::Reply {
                    tid,
                    seqnum: le32(d, 12),
                    response: d[16..16 + hl].to_vec(),
                    challenge: cvalid.then(|| d[16 + hl..16 + 2 * hl].to_vec()),
                    dh_value: d[at..at + dhvlen].to_vec(),
                })
            }
            (0x01, MSG_SUCCESS1) => {
                need(16)?;
                let hl = d[6];
                let rvalid = d[8] & 1 != 0;
                if rvalid {
                    need(16 + usize::from(hl))?;
                }
                Ok(AuthMessage::Success1 {
                    tid,
                    hl,
                    response: rvalid.then(|| d[16..16 + usize::from(hl)].to_vec()),
                })
            }
            (0x01, MSG_SUCCESS2) => Ok(AuthMessage::Success2 { tid }),
            (0x01, id @ (MSG_FAILURE1 | MSG_FAILURE2)) => Ok(AuthMessage::Failure {
                tid,
                from_host: id == MSG_FAILURE2,
                explanation: d[7],
            }),
            _ => Err(INCORRECT_MESSAGE),
        }
    }
}

#[cfg(test)]
mod tests;
