use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:host-a";
const SUB: &str = "nqn.2026-11.dev.cerberus:kv";

/// Known answers computed independently with Python's `hmac`, `hashlib`, `base64` and
/// `zlib.crc32` (a one-off script, not this code):
/// key = bytes(range(32)); secret = "DHHC-1:01:" + b64(key + crc32(key) as le32) + ":";
/// Kh = HMAC-SHA-256(key, HOST + "NVMe-over-Fabrics");
/// R1 = HMAC-SHA-256(Kh, bytes(range(100, 132)) + le32(0x01020304) + le16(7) + b"\0"
///      + b"HostHost" + HOST + b"\0" + SUB).
#[test]
fn the_response_matches_an_independent_computation() {
    let secret =
        DhchapSecret::parse("DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:").unwrap();
    assert_eq!(secret.transform, Some(HashId::Sha256));
    assert_eq!(secret.key, (0u8..32).collect::<Vec<_>>());
    let kh = secret.transformed(HOST);
    assert_eq!(
        kh,
        hex("6e6d8de2b99eef7acbff04059c974ace41b1add2f97cb03477816a6c4324802e")
    );
    let c1: Vec<u8> = (100u8..132).collect();
    let at = |hash, challenge| Challenged {
        hash,
        challenge,
        seqnum: 0x0102_0304,
        tid: 7,
        sc_c: 0,
    };
    let r1 = at(HashId::Sha256, &c1).host_response(&kh, HOST, SUB);
    assert_eq!(
        r1,
        hex("b460bfd0a1e7836b0ff45615a1fe55968107ba9afa12b65aa32f4c45493d0e66")
    );
    // SHA-512 with an untransformed key (hh 00), the same script: HMAC-SHA-512(key, ...).
    let c1: Vec<u8> = (0u8..64).collect();
    let key: Vec<u8> = (0u8..32).collect();
    let r1 = at(HashId::Sha512, &c1).host_response(&key, HOST, SUB);
    assert_eq!(
        r1,
        hex("18db273d0f2f2c855de157b8c340d7011d1819c328d9c3842ffa498538a0e97271c9a42854fee468efe646842bd0c5cf9ef989375de86b890f65149037296945")
    );
    let s48 = "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vcSEgBQ==:";
    let p = DhchapSecret::parse(s48).unwrap();
    assert_eq!((p.transform, p.key.len()), (None, 48));
    assert_eq!(DhchapSecret::encode(None, &p.key), s48);
}

/// The controller's response over an ffdhe2048 exchange, against the same kind of one-off
/// Python script (`pow` for the exchange, the prime read from rustls' table):
/// xa = int(bytes([7] * 64)) + 2, xb = int(bytes([9] * 64)) + 2, Z = (2^xb)^xa mod p in 256
/// bytes; Kc = HMAC-SHA-256(bytes(range(32)), SUB + "NVMe-over-Fabrics");
/// Ca2 = HMAC-SHA-256(SHA-256(Z), bytes(range(200, 232)));
/// R2 = HMAC-SHA-256(Kc, Ca2 + le32(0x0a0b0c0d) + le16(9) + b"\0" + b"Controller" + SUB +
/// b"\0" + HOST).
#[test]
fn the_controller_response_over_ffdhe2048_matches_an_independent_computation() {
    use crate::nvme::dh::{augmented, DhGroup, DH_PRIVATE_LEN};
    let a = DhGroup::Ffdhe2048.key_pair(&[7; DH_PRIVATE_LEN]);
    let b = DhGroup::Ffdhe2048.key_pair(&[9; DH_PRIVATE_LEN]);
    assert_eq!(a.public[..8], hex("a27350f6fa23f497"));
    let z = a.shared(&b.public).unwrap();
    assert_eq!(
        HashId::Sha256.digest(&z),
        hex("ae7429a2546d02ca0a419cec988a5914e7cdb9c30cc1729f5f5733aee3de34ab")
    );
    let c2: Vec<u8> = (200u8..232).collect();
    let ca = augmented(HashId::Sha256, Some(&z), &c2);
    assert_eq!(
        ca,
        hex("c0b9f76de2c96ee7d63472ecaa1303145f94ccd06eb06e7b056cffec515bc583")
    );
    let secret = DhchapSecret::encode(Some(HashId::Sha256), &(0u8..32).collect::<Vec<_>>());
    let kc = DhchapSecret::parse(&secret).unwrap().transformed(SUB);
    let at = Challenged {
        hash: HashId::Sha256,
        challenge: &ca,
        seqnum: 0x0a0b_0c0d,
        tid: 9,
        sc_c: 0,
    };
    assert_eq!(
        at.controller_response(&kc, SUB, HOST),
        hex("74ef3db9cf81dcb75a7d6f0aadecb5295adcdca1679515c191f57f0999d7c074")
    );
}

#[test]
fn malformed_secrets_are_refused() {
    let good = DhchapSecret::encode(Some(HashId::Sha256), &[9; 32]);
    assert!(DhchapSecret::parse(&good).is_ok());
    for bad in [
        "DHHC-2:01:AAAA:",
        "DHHC-1:04:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:",
        "DHHC-1:01:not base64!:",
        "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaS:", // CRC off
        "DHHC-1:02:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", // 02 wants 48 bytes
        "DHHC-1:00:AAAAAA==:",
        "",
    ] {
        assert!(DhchapSecret::parse(bad).is_err(), "{bad}");
    }
    assert!(!format!("{:?}", DhchapSecret::parse(&good).unwrap()).contains("9, 9"));
}

#[test]
fn messages_round_trip() {
    let msgs = [
        AuthMessage::Negotiate {
            tid: 3,
            sc_c: 0,
            hashes: vec![1, 2, 3],
            dhgroups: vec![0, 1],
        },
        AuthMessage::Challenge {
            tid: 3,
            hash: 1,
            dhgroup: 0,
            seqnum: 99,
            challenge: vec![7; 32],
            dh_value: vec![],
        },
        AuthMessage::Reply {
            tid: 3,
            seqnum: 0,
            response: vec![5; 48],
            challenge: None,
            dh_value: vec![],
        },
        AuthMessage::Reply {
            tid: 3,
            seqnum: 12,
            response: vec![5; 32],
            challenge: Some(vec![6; 32]),
            dh_value: vec![],
        },
        AuthMessage::Success1 {
            tid: 3,
            hl: 32,
            response: None,
        },
        AuthMessage::Success1 {
            tid: 3,
            hl: 32,
            response: Some(vec![1; 32]),
        },
        AuthMessage::Success2 { tid: 3 },
        AuthMessage::Failure {
            tid: 3,
            from_host: false,
            explanation: failure::FAILED,
        },
        AuthMessage::Failure {
            tid: 3,
            from_host: true,
            explanation: failure::HASH_UNUSABLE,
        },
    ];
    for m in msgs {
        let bytes = m.encode();
        assert_eq!(AuthMessage::decode(&bytes), Ok(m.clone()));
        // Every cut of it decodes to something or an explanation, never a panic.
        for n in 0..bytes.len() {
            let _ = AuthMessage::decode(&bytes[..n]);
        }
    }
    // The negotiate message's layout: 8 bytes of header, one 64-byte descriptor.
    let n = AuthMessage::Negotiate {
        tid: 0x0102,
        sc_c: 0,
        hashes: vec![1],
        dhgroups: vec![0],
    }
    .encode();
    assert_eq!(n.len(), 72);
    assert_eq!(&n[..12], &[0, 0, 0, 0, 2, 1, 0, 1, 1, 0, 1, 1]);
    assert_eq!((n[12], n[42]), (1, 0));
    assert_eq!(
        AuthMessage::decode(&[1, 0x42, 0, 0, 0, 0, 0, 0]),
        Err(failure::INCORRECT_MESSAGE)
    );
}
