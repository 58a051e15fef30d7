//! The decoders against random, truncated and mutated frames: never a panic, never a buffer
//! sized from a length field, and every valid command or response decodes to what was encoded.

use bytes::{BufMut, Bytes, BytesMut};
use cerberus_proto::*;
use proptest::prelude::*;

const MAX_BODY: u32 = 1 << 20;

fn bytes(max: usize) -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
}

fn request() -> impl Strategy<Value = Request> {
    let mode = prop_oneof![
        Just(StoreMode::Always),
        Just(StoreMode::OnlyIfAbsent),
        Just(StoreMode::OnlyIfPresent)
    ];
    prop_oneof![
        (bytes(40), bytes(300), mode, any::<bool>()).prop_map(|(key, value, mode, sync)| {
            Request::Store {
                key,
                value,
                mode,
                sync,
            }
        }),
        bytes(40).prop_map(|key| Request::Retrieve { key }),
        (bytes(40), any::<bool>(), any::<u32>()).prop_map(|(start, start_exclusive, max_keys)| {
            Request::List {
                start,
                start_exclusive,
                max_keys,
            }
        }),
        bytes(40).prop_map(|key| Request::Delete { key }),
        bytes(40).prop_map(|key| Request::Exist { key }),
        bytes(MAX_SECRET_LEN).prop_map(|secret| Request::Authenticate { secret }),
        ("[a-z0-9-]{1,40}", bytes(MAX_SECRET_LEN))
            .prop_map(|(name, secret)| Request::AuthenticateByName { name, secret }),
        ("[a-z0-9-]{1,40}", proptest::option::of(settings()))
            .prop_map(|(name, settings)| Request::NamespaceCreate { name, settings }),
        (
            proptest::option::of(settings()),
            proptest::option::of(any::<bool>())
        )
            .prop_filter("something to configure", |(s, r)| s.is_some()
                || r.is_some())
            .prop_map(|(settings, read_only)| Request::NamespaceConfigure {
                settings,
                read_only
            }),
        Just(Request::NamespaceDestroy),
        Just(Request::NamespaceRekey),
        Just(Request::NamespaceList),
        Just(Request::Identify),
        Just(Request::Stats),
        (bytes(40), bytes(40), bytes(40), any::<bool>()).prop_map(
            |(start, upper_bound, prefix, keys_only)| Request::IterOpen {
                start,
                upper_bound,
                prefix,
                keys_only,
            }
        ),
        any::<[u32; 3]>().prop_map(|a| Request::IterNext {
            iter: a[0],
            max_entries: a[1],
            max_bytes: a[2],
        }),
        any::<u32>().prop_map(|iter| Request::IterClose { iter }),
        ("[a-z.]{1,30}", any::<bool>()).prop_map(|(attr, vas)| Request::IndexCreate { attr, vas }),
        "[a-z.]{1,30}".prop_map(|attr| Request::IndexDrop { attr }),
        Just(Request::IndexList),
        bytes(200).prop_map(|query| Request::Query { query }),
        "/[a-z/]{1,40}".prop_map(|dir| Request::Backup { dir }),
        (
            proptest::collection::vec(batch_write(), 0..20),
            any::<bool>()
        )
            .prop_map(|(writes, sync)| Request::WriteBatch { writes, sync }),
    ]
}

fn batch_write() -> impl Strategy<Value = BatchWrite> {
    prop_oneof![
        (bytes(40), bytes(300)).prop_map(|(key, value)| BatchWrite::Put { key, value }),
        bytes(40).prop_map(|key| BatchWrite::Delete { key }),
    ]
}

/// A batch's count is checked before anything is sized from it: more writes than the limit,
/// or than its bytes can hold, is an error, not an allocation.
#[test]
fn a_batch_count_that_lies_is_refused() {
    let frame = |count: u32, rest: &[u8]| {
        let mut body = BytesMut::new();
        body.put_u32_le(count);
        body.put_slice(rest);
        let header = Header {
            version: VERSION,
            opcode: Opcode::WriteBatch as u8,
            word: 0,
            cid: 1,
            nsid: 1,
            body_len: body.len() as u32,
        };
        Frame {
            header,
            body: body.freeze(),
        }
    };
    let too_many = Command::decode(&frame(MAX_BATCH_WRITES as u32 + 1, &[0; 64]));
    assert!(
        matches!(too_many, Err(ProtoError::InvalidField(_))),
        "{too_many:?}"
    );
    let short = Command::decode(&frame(1000, &[BATCH_DELETE, 1, 0, b'k']));
    assert!(matches!(short, Err(ProtoError::Truncated(_))), "{short:?}");
    let bad_kind = Command::decode(&frame(1, &[9, 1, 0, b'k']));
    assert!(
        matches!(bad_kind, Err(ProtoError::InvalidField(_))),
        "{bad_kind:?}"
    );
    let one = Command::decode(&frame(1, &[BATCH_DELETE, 1, 0, b'k'])).unwrap();
    let want = vec![BatchWrite::Delete {
        key: Bytes::from_static(b"k"),
    }];
    assert_eq!(
        one.request,
        Request::WriteBatch {
            writes: want,
            sync: false
        }
    );
}

fn settings() -> impl Strategy<Value = NamespaceSettings> {
    (
        proptest::option::of(1..u64::MAX),
        any::<[u64; 4]>(),
        any::<u32>(),
    )
        .prop_map(|(capacity, a, weight)| NamespaceSettings {
            capacity,
            reservation_ops: a[0],
            reservation_bytes: a[1],
            weight,
            limit_ops: a[2],
            limit_bytes: a[3],
        })
}

fn command() -> impl Strategy<Value = Command> {
    (any::<u32>(), any::<u32>(), request()).prop_map(|(cid, nsid, request)| Command {
        cid,
        nsid,
        request,
    })
}

fn response() -> impl Strategy<Value = Response> {
    let ok = prop_oneof![
        (Just(Opcode::Store), Just(Reply::Empty)),
        (Just(Opcode::Retrieve), bytes(300).prop_map(Reply::Value)),
        (
            Just(Opcode::List),
            (proptest::collection::vec(bytes(20), 0..20), any::<bool>())
                .prop_map(|(keys, more)| Reply::Keys { keys, more })
        ),
        (
            Just(Opcode::NamespaceCreate),
            (any::<u32>(), "[0-9a-f]{0,64}")
                .prop_map(|(nsid, secret)| Reply::Created { nsid, secret })
        ),
        (
            Just(Opcode::NamespaceList),
            proptest::collection::vec((any::<u32>(), "[a-z]{1,20}"), 0..10).prop_map(|l| {
                Reply::Namespaces(
                    l.into_iter()
                        .map(|(nsid, name)| NamespaceEntry { nsid, name })
                        .collect(),
                )
            })
        ),
        (
            Just(Opcode::Identify),
            any::<[u32; 8]>().prop_map(|a| Reply::Identify(Identify {
                protocol_version: VERSION,
                max_key_len: a[0],
                max_value_len: a[1],
                max_inflight: a[2],
                max_frame_body: a[3],
                max_list_keys: a[4],
                max_iterators: a[5],
                max_iter_batch_bytes: a[6],
                iterator_idle_secs: a[7],
            }))
        ),
        (Just(Opcode::IterOpen), any::<u32>().prop_map(Reply::Iter)),
        (
            Just(Opcode::IterNext),
            (
                proptest::collection::vec((bytes(20), bytes(60)), 0..10),
                any::<bool>()
            )
                .prop_map(|(entries, done)| Reply::Entries { entries, done })
        ),
        (Just(Opcode::IterClose), Just(Reply::Empty)),
        (Just(Opcode::NamespaceConfigure), Just(Reply::Empty)),
        (Just(Opcode::Stats), bytes(100).prop_map(Reply::Stats)),
        (Just(Opcode::IndexCreate), Just(Reply::Empty)),
        (Just(Opcode::IndexDrop), Just(Reply::Empty)),
        (Just(Opcode::IndexList), bytes(100).prop_map(Reply::Json)),
        (Just(Opcode::Backup), bytes(100).prop_map(Reply::Json)),
        (
            Just(Opcode::Query),
            (
                bytes(100),
                proptest::collection::vec((bytes(20), bytes(60)), 0..10)
            )
                .prop_map(|(summary, records)| Reply::Found { summary, records })
        ),
    ];
    (any::<u32>(), any::<u32>(), ok).prop_map(|(cid, nsid, (op, reply))| Response {
        cid,
        nsid,
        opcode: op as u8,
        status: Status::Success,
        reply,
    })
}

/// Feeds `wire` in pieces of `chunk` bytes and decodes every frame as a command and as a
/// response; returns how many frames were split off.
fn feed(wire: &[u8], chunk: usize) -> usize {
    let mut buf = BytesMut::new();
    let mut frames = 0;
    for piece in wire.chunks(chunk.max(1)) {
        buf.put_slice(piece);
        loop {
            match split_frame(&mut buf, MAX_BODY) {
                Ok(Some(f)) => {
                    frames += 1;
                    let _ = Command::decode(&f);
                    let _ = Response::decode(&f);
                }
                Ok(None) => break,
                Err(_) => return frames,
            }
            // Capacity follows the bytes received and the limit, never a length field.
            assert!(buf.capacity() <= wire.len() + HEADER_LEN + MAX_BODY as usize);
        }
    }
    frames
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn commands_round_trip(cmds in proptest::collection::vec(command(), 1..8), chunk in 1usize..64) {
        let mut wire = BytesMut::new();
        for c in &cmds {
            c.encode(&mut wire).unwrap();
        }
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for piece in wire.chunks(chunk) {
            buf.put_slice(piece);
            while let Some(f) = split_frame(&mut buf, MAX_BODY).unwrap() {
                got.push(Command::decode(&f).unwrap());
            }
        }
        prop_assert_eq!(got, cmds);
    }

    #[test]
    fn responses_round_trip(r in response()) {
        let mut wire = BytesMut::new();
        r.encode(&mut wire).unwrap();
        let f = split_frame(&mut wire, MAX_BODY).unwrap().unwrap();
        prop_assert_eq!(Response::decode(&f).unwrap(), r);
    }

    #[test]
    fn error_responses_carry_their_message(cid in any::<u32>(), code in 1u16.., msg in "[ -~]{0,80}") {
        let r = Response::error(cid, 1, Opcode::Retrieve as u8, Status::from_code(code), msg.clone());
        let mut wire = BytesMut::new();
        r.encode(&mut wire).unwrap();
        let got = Response::decode(&split_frame(&mut wire, MAX_BODY).unwrap().unwrap()).unwrap();
        prop_assert_eq!(got.status.code(), code);
        if msg.is_empty() {
            prop_assert_eq!(got.reply, Reply::Empty);
        } else {
            prop_assert_eq!(got.reply, Reply::Error(msg));
        }
    }

    #[test]
    fn random_bytes_never_panic(wire in proptest::collection::vec(any::<u8>(), 0..512), chunk in 1usize..64) {
        feed(&wire, chunk);
    }

    #[test]
    fn random_frames_never_panic(opcode in any::<u8>(), word in any::<u16>(), body in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut wire = BytesMut::new();
        Header { version: VERSION, opcode, word, cid: 1, nsid: 2, body_len: body.len() as u32 }.encode(&mut wire);
        wire.put_slice(&body);
        prop_assert_eq!(feed(&wire, 7), 1);
    }

    #[test]
    fn truncated_and_mutated_frames_never_panic(
        c in command(),
        r in response(),
        cut in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        for which in 0..2 {
            let mut wire = BytesMut::new();
            if which == 0 { c.encode(&mut wire).unwrap() } else { r.encode(&mut wire).unwrap() }
            let mut bytes = wire.to_vec();
            for (i, b) in &flips {
                let i = i.index(bytes.len());
                bytes[i] ^= b;
            }
            feed(&bytes, 5);
            // A frame whose header claims more body than was sent: decoded as a shorter body
            // by adjusting the length, so the body decoders see truncated bodies.
            let keep = cut.index(bytes.len() + 1);
            if keep >= HEADER_LEN {
                let body_len = (keep - HEADER_LEN) as u32;
                bytes[12..16].copy_from_slice(&body_len.to_le_bytes());
                bytes.truncate(keep);
                feed(&bytes, 3);
            } else {
                prop_assert_eq!(feed(&bytes[..keep], 1), 0);
            }
        }
    }

    #[test]
    fn huge_length_fields_are_refused(len in (MAX_BODY + 1)..=u32::MAX) {
        let mut wire = BytesMut::new();
        Header { version: VERSION, opcode: Opcode::Store as u8, word: 0, cid: 1, nsid: 1, body_len: len }.encode(&mut wire);
        let err = split_frame(&mut wire, MAX_BODY).unwrap_err();
        let is_too_large = matches!(err, ProtoError::FrameTooLarge { .. });
        prop_assert!(is_too_large);
        prop_assert!(wire.capacity() < MAX_BODY as usize);
    }
}

#[test]
fn unknown_opcode_is_a_clear_error() {
    let mut wire = BytesMut::new();
    Header {
        version: VERSION,
        opcode: 0x7f,
        word: 0,
        cid: 9,
        nsid: 1,
        body_len: 0,
    }
    .encode(&mut wire);
    let f = split_frame(&mut wire, MAX_BODY).unwrap().unwrap();
    let err = Command::decode(&f).unwrap_err();
    assert_eq!(err, ProtoError::UnknownOpcode(0x7f));
    assert_eq!(err.status(), Status::InvalidOpcode);
    assert_eq!(err.to_string(), "unknown opcode 0x7f");
}

#[test]
fn list_reply_count_cannot_force_an_allocation() {
    // A list reply claiming 2^32-1 keys in a 5-byte body.
    let mut wire = BytesMut::new();
    Header {
        version: VERSION,
        opcode: Opcode::List as u8,
        word: 0,
        cid: 1,
        nsid: 1,
        body_len: 5,
    }
    .encode(&mut wire);
    wire.put_u8(0);
    wire.put_u32_le(u32::MAX);
    let f = split_frame(&mut wire, MAX_BODY).unwrap().unwrap();
    assert!(Response::decode(&f).is_err());
}

#[test]
fn identify_of_a_device_before_iterators_decodes_with_zeros() {
    let full = Response {
        cid: 9,
        nsid: DEVICE_NSID,
        opcode: Opcode::Identify as u8,
        status: Status::Success,
        reply: Reply::Identify(Identify {
            protocol_version: VERSION,
            max_key_len: 255,
            max_value_len: 1 << 20,
            max_inflight: 8,
            max_frame_body: 1 << 21,
            max_list_keys: 100,
            max_iterators: 16,
            max_iter_batch_bytes: 1 << 20,
            iterator_idle_secs: 60,
        }),
    };
    let mut out = BytesMut::new();
    full.encode(&mut out).unwrap();
    // The same frame as an older device sends it: the first 24 bytes of the body.
    let mut old = out[..HEADER_LEN + 24].to_vec();
    old[12..16].copy_from_slice(&24u32.to_le_bytes());
    let frame = split_frame(&mut BytesMut::from(&old[..]), MAX_BODY)
        .unwrap()
        .unwrap();
    match Response::decode(&frame).unwrap().reply {
        Reply::Identify(id) => {
            assert_eq!((id.max_key_len, id.max_list_keys), (255, 100));
            assert_eq!((id.max_iterators, id.max_iter_batch_bytes), (0, 0));
        }
        other => panic!("{other:?}"),
    }
    let frame = split_frame(&mut out, MAX_BODY).unwrap().unwrap();
    assert_eq!(Response::decode(&frame).unwrap(), full);
}
