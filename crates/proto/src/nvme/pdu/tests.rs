use super::*;
use crate::nvme::NvmeStatus;
use proptest::prelude::*;

const LIMITS: PduLimits = PduLimits::uniform(8192);

fn digests() -> impl Strategy<Value = Digests> {
    (any::<bool>(), any::<bool>()).prop_map(|(header, data)| Digests { header, data })
}

fn bytes(max: usize) -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

fn sqe() -> impl Strategy<Value = Sqe> {
    (
        any::<[u8; 16]>(),
        any::<[u32; 6]>(),
        any::<(u8, u16, u32, u32)>(),
    )
        .prop_map(|(dptr, cdw, (opcode, cid, nsid, cdw2))| Sqe {
            opcode,
            cid,
            nsid,
            cdw2,
            dptr,
            cdw,
            ..Sqe::default()
        })
}

fn pdu() -> impl Strategy<Value = Pdu> {
    prop_oneof![
        (any::<u16>(), 0u8..32, digests(), any::<u32>()).prop_map(
            |(pfv, hpda, digests, maxr2t)| {
                Pdu::IcReq {
                    pfv,
                    hpda,
                    digests,
                    maxr2t,
                }
            }
        ),
        (any::<u16>(), any::<u8>(), digests(), any::<u32>()).prop_map(
            |(pfv, cpda, digests, maxh2cdata)| Pdu::IcResp {
                pfv,
                cpda,
                digests,
                maxh2cdata,
            }
        ),
        (any::<u16>(), any::<u32>(), bytes(128)).prop_map(|(fes, fei, data)| Pdu::C2HTermReq {
            fes,
            fei,
            data
        }),
        (sqe(), bytes(2000)).prop_map(|(sqe, data)| Pdu::CapsuleCmd { sqe, data }),
        (any::<(u32, u16, u16)>(), 0u8..8, any::<u8>()).prop_map(|((dw0, cid, sqhd), sct, sc)| {
            Pdu::CapsuleResp {
                cqe: Cqe {
                    dw0,
                    cid,
                    sqhd,
                    status: NvmeStatus::error(sct, sc),
                    ..Cqe::default()
                },
            }
        }),
        (any::<(u16, u16, u32, bool)>(), bytes(3000)).prop_map(
            |((cccid, ttag, datao, last), data)| Pdu::H2CData {
                cccid,
                ttag,
                datao,
                last,
                data,
            }
        ),
        (any::<(u16, u32, bool, bool)>(), bytes(3000)).prop_map(
            |((cccid, datao, last, success), data)| Pdu::C2HData {
                cccid,
                datao,
                last,
                success,
                data,
            }
        ),
        any::<(u16, u16, u32, u32)>().prop_map(|(cccid, ttag, r2to, r2tl)| Pdu::R2T {
            cccid,
            ttag,
            r2to,
            r2tl,
        }),
    ]
}

/// IC PDUs never carry digests: they come before the connection has any.
fn on_wire(p: &Pdu, d: Digests) -> Digests {
    match p.pdu_type() {
        PduType::IcReq | PduType::IcResp => Digests::default(),
        _ => d,
    }
}

proptest! {
    /// Every PDU splits back off a stream, whole, whatever pieces the bytes arrive in.
    #[test]
    fn pdus_round_trip_in_any_pieces(pdus in proptest::collection::vec(pdu(), 1..6), d in digests(), piece in 1usize..300) {
        let mut wire = BytesMut::new();
        for p in &pdus {
            p.encode(on_wire(p, d), &mut wire);
        }
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for chunk in wire.chunks(piece) {
            buf.put_slice(chunk);
            while let Some(p) = split_pdu(&mut buf, d, LIMITS).unwrap() {
                got.push(p);
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(got, pdus);
    }

    /// Random bytes never panic, and a refused PDU is refused from its common header alone.
    #[test]
    fn garbage_is_an_error_or_a_pdu_never_a_panic(wire in proptest::collection::vec(any::<u8>(), 0..600), d in digests()) {
        let mut buf = BytesMut::from(&wire[..]);
        while let Ok(Some(_)) = split_pdu(&mut buf, d, LIMITS) {}
    }
}

fn capsule(data: usize) -> BytesMut {
    let mut out = BytesMut::new();
    let p = Pdu::CapsuleCmd {
        sqe: Sqe::default(),
        data: Bytes::from(vec![7u8; data]),
    };
    p.encode(Digests::default(), &mut out);
    out
}

#[test]
fn a_pdu_over_the_data_limit_is_refused_before_its_bytes_arrive() {
    let wire = capsule(9000);
    let mut first = BytesMut::from(&wire[..CH_LEN]);
    let err = split_pdu(&mut first, Digests::default(), LIMITS).unwrap_err();
    assert!(
        matches!(err, NvmeTcpError::DataLimitExceeded { .. }),
        "{err}"
    );
    assert_eq!(err.fes_fei().0, 0x05);
    // Within the limit, a partial PDU waits.
    let wire = capsule(8192);
    let mut part = BytesMut::from(&wire[..100]);
    assert_eq!(split_pdu(&mut part, Digests::default(), LIMITS), Ok(None));
}

#[test]
fn bad_headers_name_their_field() {
    let good = capsule(10);
    let refused = |at: usize, byte: u8| {
        let mut b = good.clone();
        b[at] = byte;
        split_pdu(&mut b, Digests::default(), LIMITS).unwrap_err()
    };
    assert_eq!(refused(0, 0x08), NvmeTcpError::InvalidHeader { fei: 0 }); // no type 8
    assert_eq!(refused(2, 71), NvmeTcpError::InvalidHeader { fei: 2 }); // HLEN
    assert_eq!(refused(1, F_HDGST), NvmeTcpError::InvalidHeader { fei: 1 }); // not negotiated
    assert_eq!(refused(3, 10), NvmeTcpError::InvalidHeader { fei: 3 }); // PDO in the header
                                                                        // A PLEN past the data for a PDU without data.
    let mut resp = BytesMut::new();
    Pdu::CapsuleResp {
        cqe: Cqe::default(),
    }
    .encode(Digests::default(), &mut resp);
    resp[4] = 30;
    let err = split_pdu(&mut resp, Digests::default(), LIMITS).unwrap_err();
    assert_eq!(err, NvmeTcpError::InvalidHeader { fei: 4 });
}

#[test]
fn digests_are_checked() {
    let d = Digests {
        header: true,
        data: true,
    };
    let p = Pdu::CapsuleCmd {
        sqe: Sqe::default(),
        data: Bytes::from_static(b"value"),
    };
    let mut wire = BytesMut::new();
    p.encode(d, &mut wire);
    let mut ok = wire.clone();
    assert_eq!(split_pdu(&mut ok, d, LIMITS), Ok(Some(p.clone())));
    // Data sent without the negotiated data digest is refused.
    let mut bare = BytesMut::new();
    p.encode(
        Digests {
            header: true,
            data: false,
        },
        &mut bare,
    );
    assert_eq!(
        split_pdu(&mut bare, d, LIMITS),
        Err(NvmeTcpError::InvalidHeader { fei: 1 })
    );
    let mut header = wire.clone();
    header[20] ^= 1;
    assert_eq!(
        split_pdu(&mut header, d, LIMITS),
        Err(NvmeTcpError::HeaderDigest)
    );
    let mut data = wire.clone();
    let at = data.len() - 6;
    data[at] ^= 1;
    assert_eq!(
        split_pdu(&mut data, d, LIMITS),
        Err(NvmeTcpError::DataDigest)
    );
}
