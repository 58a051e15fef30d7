//! The fuzz targets of `fuzz/` on stable: each target's committed seed corpus
//! (`fuzz/corpus/<target>`), the seeds this file makes with the crate's own encoders, and a
//! few thousand deterministic mutations of them, through exactly the function the target
//! calls. Each run must see inputs taken and inputs refused, so that it cannot pass by
//! reaching no decoder. `FUZZ_WRITE_SEEDS=1` rewrites the committed seeds from the encoders.

use bytes::{Bytes, BytesMut};
use cerberus_proto::fuzzing::{self, Tally};
use cerberus_proto::nvme::{
    auth_command, connect_data, fabrics_command, AdminCommand, AuthMessage, Cqe, Digests,
    KvCommand, KvKey, KvOpcode, NvmeStatus, Pdu, Sqe, FCTYPE_AUTH_SEND, PFV_1_0,
};
use cerberus_proto::{BatchWrite, Command, Reply, Request, Response, Status, StoreMode};
use std::path::PathBuf;

const MUTATIONS: usize = 4000;

fn corpus(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("fuzz/corpus/{target}"))
}

fn frame(cmd: &Command) -> Vec<u8> {
    let mut b = BytesMut::new();
    cmd.encode(&mut b).expect("encode");
    b.to_vec()
}

fn cmd(cid: u32, nsid: u32, request: Request) -> Command {
    Command { cid, nsid, request }
}

fn frames_seeds() -> Vec<Vec<u8>> {
    let store = cmd(
        1,
        7,
        Request::Store {
            key: Bytes::from_static(b"user:1"),
            value: Bytes::from_static(br#"{"a": {"b": 1}}"#),
            mode: StoreMode::OnlyIfAbsent,
            sync: true,
        },
    );
    let batch = cmd(
        2,
        7,
        Request::WriteBatch {
            writes: vec![
                BatchWrite::Put {
                    key: Bytes::from_static(b"k1"),
                    value: Bytes::from_static(b"v1"),
                },
                BatchWrite::Delete {
                    key: Bytes::from_static(b"k2"),
                },
            ],
            sync: false,
        },
    );
    let list = cmd(
        3,
        7,
        Request::List {
            start: Bytes::from_static(b"a"),
            start_exclusive: true,
            max_keys: 100,
        },
    );
    let create = cmd(
        4,
        0,
        Request::NamespaceCreate {
            name: "tenant-a".into(),
            settings: None,
        },
    );
    let iter = cmd(
        5,
        7,
        Request::IterOpen {
            start: Bytes::new(),
            upper_bound: Bytes::from_static(b"z"),
            prefix: Bytes::from_static(b"u"),
            keys_only: true,
        },
    );
    let query = cmd(
        6,
        7,
        Request::Query {
            query: Bytes::from_static(br#"{"filter": {"a.b": {"$gt": 0}}}"#),
        },
    );
    let auth = cmd(
        7,
        7,
        Request::Authenticate {
            secret: Bytes::from_static(&[0x42; 32]),
        },
    );
    let mut response = BytesMut::new();
    Response {
        cid: 1,
        nsid: 7,
        opcode: 2,
        status: Status::Success,
        reply: Reply::Value(Bytes::from_static(b"value")),
    }
    .encode(&mut response)
    .expect("encode");
    let mut all = Vec::new();
    for c in [&store, &batch, &list, &create, &iter, &query, &auth] {
        all.extend(frame(c));
    }
    let mut seeds = vec![
        [&[0u8][..], &frame(&store)].concat(),
        [&[3u8][..], &all].concat(),
        [&[255u8][..], &all].concat(),
        [&[16u8][..], &frame(&batch), &frame(&list)].concat(),
        [&[1u8][..], &frame(&create), &frame(&iter)].concat(),
        [&[64u8][..], &frame(&query), &frame(&auth)].concat(),
        [&[9u8][..], &response].concat(),
    ];
    // A frame cut short, and one whose length field claims more than the limit.
    let mut cut = seeds[1].clone();
    cut.truncate(cut.len() / 2);
    seeds.push(cut);
    let mut long = seeds[0].clone();
    long[5..9].copy_from_slice(&u32::MAX.to_le_bytes());
    seeds.push(long);
    seeds
}

fn pdu_bytes(pdus: &[Pdu], digests: Digests) -> Vec<u8> {
    let mut b = BytesMut::new();
    for p in pdus {
        p.encode(digests, &mut b);
    }
    b.to_vec()
}

fn kv_sqe(opcode: KvOpcode, key: &[u8], size: u32, cid: u16) -> Sqe {
    let mut sqe = Sqe {
        nsid: 1,
        cid,
        ..Sqe::default()
    };
    KvCommand {
        opcode,
        key: KvKey::new(key).expect("short key"),
        size,
        options: 0,
    }
    .encode(&mut sqe);
    sqe.dptr[8..12].copy_from_slice(&size.to_le_bytes());
    sqe.dptr[15] = 0x01;
    sqe
}

fn session_pdus() -> Vec<Pdu> {
    let connect = fabrics_command(0x01, 0, 31, 0);
    vec![
        Pdu::IcReq {
            pfv: PFV_1_0,
            hpda: 0,
            digests: Digests::default(),
            maxr2t: 0,
        },
        Pdu::CapsuleCmd {
            sqe: connect,
            data: Bytes::from(connect_data([7; 16], 0xFFFF, "nqn.s", "nqn.h")),
        },
        Pdu::CapsuleCmd {
            sqe: kv_sqe(KvOpcode::Store, b"key", 5, 1),
            data: Bytes::from_static(b"value"),
        },
        Pdu::H2CData {
            cccid: 1,
            ttag: 3,
            datao: 0,
            last: true,
            data: Bytes::from_static(b"value"),
        },
        Pdu::R2T {
            cccid: 1,
            ttag: 3,
            r2to: 0,
            r2tl: 4096,
        },
    ]
}

fn nvme_pdus_seeds() -> Vec<Vec<u8>> {
    let both = Digests {
        header: true,
        data: true,
    };
    let answers = vec![
        Pdu::IcResp {
            pfv: PFV_1_0,
            cpda: 0,
            digests: both,
            maxh2cdata: 131072,
        },
        Pdu::CapsuleResp {
            cqe: Cqe {
                cid: 1,
                status: NvmeStatus::error(0, 0x02),
                ..Cqe::default()
            },
        },
        Pdu::C2HData {
            cccid: 1,
            datao: 0,
            last: true,
            success: true,
            data: Bytes::from_static(b"value"),
        },
        Pdu::C2HTermReq {
            fes: 1,
            fei: 0,
            data: Bytes::from_static(&[0; 24]),
        },
        Pdu::H2CTermReq {
            fes: 2,
            fei: 4,
            data: Bytes::new(),
        },
    ];
    vec![
        [
            &[0u8, 0][..],
            &pdu_bytes(&session_pdus(), Digests::default()),
        ]
        .concat(),
        [&[7u8, 3][..], &pdu_bytes(&session_pdus(), both)].concat(),
        [
            &[200u8, 1][..],
            &pdu_bytes(
                &answers,
                Digests {
                    header: true,
                    data: false,
                },
            ),
        ]
        .concat(),
        [
            &[1u8, 2][..],
            &pdu_bytes(
                &answers[1..3],
                Digests {
                    header: false,
                    data: true,
                },
            ),
        ]
        .concat(),
        [
            &[24u8, 0][..],
            &pdu_bytes(&answers, Digests::default())[..50],
        ]
        .concat(),
    ]
}

fn capsule(sqe: &Sqe, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    sqe.encode(&mut b);
    b.extend_from_slice(data);
    b
}

fn nvme_commands_seeds() -> Vec<Vec<u8>> {
    let negotiate = AuthMessage::Negotiate {
        tid: 0,
        sc_c: 0,
        hashes: vec![1, 2, 3],
        dhgroups: vec![0, 1, 2],
    };
    let reply = AuthMessage::Reply {
        tid: 0,
        seqnum: 9,
        response: vec![0x11; 32],
        challenge: Some(vec![0x22; 32]),
        dh_value: vec![0x33; 256],
    };
    let mut admin = Sqe::default();
    AdminCommand::GetLogPage {
        lid: 2,
        offset: 8,
        len: 512,
    }
    .encode(&mut admin);
    let mut identify = Sqe::default();
    AdminCommand::Identify {
        cns: 1,
        cntid: 0,
        csi: 0,
        nsid: 0,
    }
    .encode(&mut identify);
    let n = negotiate.encode();
    vec![
        capsule(&kv_sqe(KvOpcode::Store, b"k", 5, 1), b"value"),
        capsule(
            &kv_sqe(KvOpcode::Retrieve, b"0123456789abcdef", 4096, 2),
            b"",
        ),
        capsule(&kv_sqe(KvOpcode::List, b"a", 1024, 3), b""),
        capsule(
            &fabrics_command(0x01, 1 << 16, 31, 0),
            &connect_data([1; 16], 1, "nqn.2026-11.dev.cerberus:kv", "nqn.h"),
        ),
        capsule(&fabrics_command(0x04, 1, 0, 0), b""),
        capsule(&auth_command(FCTYPE_AUTH_SEND, n.len() as u32), &n),
        capsule(&Sqe::default(), &reply.encode()),
        capsule(&admin, b""),
        capsule(&identify, b""),
        AuthMessage::Success1 {
            tid: 1,
            hl: 32,
            response: Some(vec![5; 32]),
        }
        .encode(),
        b"short".to_vec(),
    ]
}

fn check(target: &str, seeds: Vec<Vec<u8>>, entry: impl Fn(&[u8]) -> bool) {
    let t: Tally = Tally::run(&corpus(target), seeds, MUTATIONS, entry);
    eprintln!("{target}: {t:?}");
}

#[test]
fn frames_corpus() {
    check("frames", frames_seeds(), fuzzing::frames);
}

#[test]
fn nvme_pdus_corpus() {
    check("nvme_pdus", nvme_pdus_seeds(), fuzzing::nvme_pdus);
}

#[test]
fn nvme_commands_corpus() {
    check(
        "nvme_commands",
        nvme_commands_seeds(),
        fuzzing::nvme_commands,
    );
}

/// The guard against a corpus run that reaches nothing: an entry that refuses everything
/// fails the run.
#[test]
#[should_panic(expected = "tests nothing")]
fn a_run_that_reaches_no_decoder_fails() {
    Tally::run(&corpus("frames"), Vec::new(), 10, |_| false);
}
