use super::*;
use cerberus_proto::nvme::{split_pdu, PduLimits};
use cerberus_proto::Reply;

fn frame(request: Request) -> (Header, Bytes) {
    let cmd = Command {
        cid: 9,
        nsid: 3,
        request,
    };
    let mut out = BytesMut::new();
    cmd.encode(&mut out).unwrap();
    let out = out.freeze();
    let header = Header::decode(out[..HEADER_LEN].try_into().unwrap());
    (header, out)
}

/// The KV command `request` goes as, the same whether read from its frame or taken as the
/// caller has it.
fn kv_of(request: Request) -> Option<(KvCommand, Bytes)> {
    let (header, bytes) = frame(request.clone());
    let from_frame = decode(&header, &bytes).and_then(|c| as_kv(&c.request, 1 << 20, 8192));
    let direct = as_kv(&request, 1 << 20, 8192);
    assert_eq!(from_frame, direct);
    direct
}

/// The PDUs in `out`, as the target would read them.
fn pdus(out: &mut BytesMut) -> Vec<Pdu> {
    let limits = PduLimits::uniform(1 << 20);
    let mut all = Vec::new();
    while let Some(p) = split_pdu(out, Digests::default(), limits).unwrap() {
        all.push(p);
    }
    assert!(out.is_empty(), "a partial PDU left");
    all
}

fn capsule(pdu: &Pdu) -> (Sqe, Bytes) {
    match pdu {
        Pdu::CapsuleCmd { sqe, data } => (*sqe, data.clone()),
        other => panic!("not a capsule: {other:?}"),
    }
}

fn resp(cid: u16, dw0: u32) -> Pdu {
    Pdu::CapsuleResp {
        cqe: Cqe {
            cid,
            dw0,
            ..Cqe::default()
        },
    }
}

fn native_response(cid: u32, reply: Reply) -> Bytes {
    let r = Response {
        cid,
        nsid: 3,
        opcode: Opcode::Authenticate as u8,
        status: Status::Success,
        reply,
    };
    let mut out = BytesMut::new();
    r.encode(&mut out).unwrap();
    out.freeze()
}

#[test]
fn a_pair_goes_submit_r2t_data_fetch_and_completes_the_native_command() {
    let mut f = Flights::new(Digests::default(), 64, 100);
    let secret = Bytes::from(vec![b's'; 200]);
    let (_, bytes) = frame(Request::Authenticate { secret });
    let mut out = BytesMut::new();
    let mut done = Vec::new();
    f.send(Native::Frame(bytes.clone()), 1 << 20, &mut out)
        .unwrap();
    let sent = pdus(&mut out);
    let (submit, inline) = capsule(&sent[0]);
    assert_eq!(
        (sent.len(), submit.opcode, inline.len()),
        (1, VENDOR_SUBMIT, 0)
    );
    // The target asks for the frame in two ranges: H2CData of at most 64 bytes each.
    let r2t = |r2to, r2tl| Pdu::R2T {
        cccid: submit.cid,
        ttag: 1,
        r2to,
        r2tl,
    };
    f.receive(r2t(0, 150), &mut out, &mut done).unwrap();
    f.receive(r2t(150, bytes.len() as u32 - 150), &mut out, &mut done)
        .unwrap();
    let mut got = BytesMut::new();
    for p in pdus(&mut out) {
        let Pdu::H2CData { datao, data, .. } = p else {
            panic!("not data")
        };
        assert!(data.len() <= 64);
        assert_eq!(datao as usize, got.len());
        got.extend_from_slice(&data);
    }
    assert_eq!(&got[..], &bytes[..]);
    // Submit completes: the Fetch goes, naming the native command.
    f.receive(resp(submit.cid, 0), &mut out, &mut done).unwrap();
    let (fetch, _) = capsule(&pdus(&mut out)[0]);
    assert_eq!((fetch.opcode, fetch.cdw[1]), (VENDOR_FETCH, 9));
    assert_ne!(fetch.cid, submit.cid);
    let answer = native_response(9, Reply::Empty);
    let data = Pdu::C2HData {
        cccid: fetch.cid,
        datao: 0,
        last: true,
        success: false,
        data: answer.clone(),
    };
    f.receive(data, &mut out, &mut done).unwrap();
    assert!(done.is_empty());
    f.receive(resp(fetch.cid, answer.len() as u32), &mut out, &mut done)
        .unwrap();
    assert_eq!((done.len(), done[0].header.cid), (1, 9));
    assert!(f.is_empty() && out.is_empty());
    // Authenticated: a short key's get now goes as one KV Retrieve.
    let (_, get) = frame(Request::Retrieve {
        key: Bytes::from_static(b"key"),
    });
    f.send(Native::Frame(get), 1 << 20, &mut out).unwrap();
    let (retrieve, _) = capsule(&pdus(&mut out)[0]);
    assert_eq!(
        KvCommand::decode(&retrieve).unwrap().unwrap().opcode,
        KvOpcode::Retrieve
    );
    let value = Pdu::C2HData {
        cccid: retrieve.cid,
        datao: 0,
        last: true,
        success: false,
        data: Bytes::from_static(b"value"),
    };
    f.receive(value, &mut out, &mut done).unwrap();
    f.receive(resp(retrieve.cid, 5), &mut out, &mut done)
        .unwrap();
    let r = Response::decode(&done[1]).unwrap();
    assert_eq!(r.reply, Reply::Value(Bytes::from_static(b"value")));
}

#[test]
fn pdus_the_queue_did_not_ask_for_break_it() {
    let mut f = Flights::new(Digests::default(), 4096, 8192);
    let (mut out, mut done) = (BytesMut::new(), Vec::new());
    assert!(f.receive(resp(5, 0), &mut out, &mut done).is_err());
    let (_, stats) = frame(Request::Stats);
    f.send(Native::Frame(stats.clone()), 64, &mut out).unwrap();
    let (submit, _) = capsule(&pdus(&mut out)[0]);
    let past = Pdu::R2T {
        cccid: submit.cid,
        ttag: 0,
        r2to: u32::MAX,
        r2tl: u32::MAX,
    };
    assert!(f.receive(past, &mut out, &mut done).is_err());
    f.receive(resp(submit.cid, 0), &mut out, &mut done).unwrap();
    let (fetch, _) = capsule(&pdus(&mut out)[0]);
    // More data than the Fetch's buffer (64 bytes of body and the header).
    let flood = Pdu::C2HData {
        cccid: fetch.cid,
        datao: 0,
        last: true,
        success: false,
        data: Bytes::from(vec![0; 64 + HEADER_LEN + 1]),
    };
    assert!(f.receive(flood, &mut out, &mut done).is_err());
    // A Fetch's completion with no frame.
    let mut f = Flights::new(Digests::default(), 4096, 8192);
    f.send(Native::Frame(stats), 64, &mut out).unwrap();
    let (submit, _) = capsule(&pdus(&mut out)[0]);
    f.receive(resp(submit.cid, 0), &mut out, &mut done).unwrap();
    let (fetch, _) = capsule(&pdus(&mut out)[0]);
    assert!(f.receive(resp(fetch.cid, 0), &mut out, &mut done).is_err());
    assert!(f
        .send(Native::Frame(Bytes::from_static(b"short")), 64, &mut out)
        .is_err());
}

#[test]
fn room_is_at_most_eight_pairs() {
    let mut f = Flights::new(Digests::default(), 4096, 8192);
    let mut out = BytesMut::new();
    for _ in 0..DEPTH {
        assert!(f.room());
        let (_, stats) = frame(Request::Stats);
        f.send(Native::Frame(stats), 64, &mut out).unwrap();
    }
    assert!(!f.room());
    let cids: HashSet<u16> = pdus(&mut out).iter().map(|p| capsule(p).0.cid).collect();
    assert_eq!(cids.len(), DEPTH);
}

#[test]
fn point_commands_on_short_keys_go_as_kv_commands_and_the_rest_as_the_pair() {
    let key = |n: usize| Bytes::from(vec![b'k'; n]);
    let (get, none) = kv_of(Request::Retrieve { key: key(16) }).unwrap();
    assert_eq!(
        (get.opcode, get.key.len(), get.size),
        (KvOpcode::Retrieve, 16, RETRIEVE_BUFFER)
    );
    assert!(none.is_empty());
    let put = Request::Store {
        key: key(4),
        value: Bytes::from_static(b"value"),
        mode: StoreMode::OnlyIfAbsent,
        sync: false,
    };
    let (store, value) = kv_of(put).unwrap();
    assert_eq!(
        (store.opcode, store.size, store.options, &value[..]),
        (KvOpcode::Store, 5, STORE_ONLY_IF_ABSENT, &b"value"[..])
    );
    assert_eq!(
        kv_of(Request::Exist { key: key(1) }).unwrap().0.opcode,
        KvOpcode::Exist
    );
    assert_eq!(
        kv_of(Request::Delete { key: key(2) }).unwrap().0.opcode,
        KvOpcode::Delete
    );
    // A key past 16 bytes, a synced store, a value past the capsule, or any other
    // command: the vendor pair.
    assert!(kv_of(Request::Retrieve { key: key(17) }).is_none());
    let store = |value: usize, sync| Request::Store {
        key: key(4),
        value: Bytes::from(vec![1; value]),
        mode: StoreMode::Always,
        sync,
    };
    assert!(kv_of(store(5, true)).is_none());
    assert!(kv_of(store(8193, false)).is_none());
    assert!(kv_of(store(8192, false)).is_some());
    assert!(kv_of(Request::Stats).is_none());
}

#[test]
fn kv_statuses_read_as_the_native_ones() {
    let s = |sc| kv_refusal(NvmeStatus::error(1, sc), 3).0;
    assert_eq!(s(0x87), Status::KeyNotExist);
    assert_eq!(s(0x89), Status::KeyExists);
    assert_eq!(s(0x85), Status::InvalidValueSize);
    assert_eq!(s(0x86), Status::InvalidKeySize);
    assert_eq!(s(0x10), Status::InternalError);
    let generic = kv_refusal(NvmeStatus::error(0, 0x06), 3).0;
    assert_eq!(generic, Status::InternalError);
    let fenced = kv_refusal(NvmeStatus::error(0, 0x20), 3).0;
    assert_eq!(fenced, Status::NamespaceReadOnly);
}

#[test]
fn an_ungranted_namespace_reads_as_access_denied() {
    let (s, msg) = refusal(NvmeStatus::error(0, 0x0B), 7);
    assert_eq!(s, Status::AccessDenied);
    assert!(msg.contains('7'));
    // Issue 65: the answer names the setting a first NVMe/TCP try is missing.
    assert!(msg.contains("[nvme.hosts]"), "{msg}");
    assert_eq!(
        refusal(NvmeStatus::error(0, 0x02), 1).0,
        Status::InvalidField
    );
    assert_eq!(
        refusal(NvmeStatus::error(0, 0x06), 1).0,
        Status::InternalError
    );
}

#[test]
fn data_in_one_piece_is_kept_as_it_came_and_pieces_are_gathered_in_order() {
    let one = Bytes::from_static(b"value");
    let mut g = Gathered::default();
    g.push(one.clone());
    assert_eq!(g.len(), 5);
    let kept = g.freeze();
    assert_eq!((kept.as_ptr(), &kept[..]), (one.as_ptr(), &b"value"[..]));
    let mut g = Gathered::default();
    for piece in ["va", "", "lu", "e"] {
        g.push(Bytes::from(piece));
    }
    assert_eq!(g.len(), 5);
    assert_eq!(&g.freeze()[..], b"value");
    assert_eq!(Gathered::default().freeze().len(), 0);
}

#[test]
fn a_value_past_the_retrieve_buffer_comes_whole_through_the_pair() {
    let mut f = Flights::new(Digests::default(), 1 << 20, 8192);
    f.authed.insert(3);
    let (mut out, mut done) = (BytesMut::new(), Vec::new());
    let (_, get) = frame(Request::Retrieve {
        key: Bytes::from_static(b"big"),
    });
    f.send(Native::Frame(get), 1 << 20, &mut out).unwrap();
    let (retrieve, _) = capsule(&pdus(&mut out)[0]);
    let cmd = KvCommand::decode(&retrieve).unwrap().unwrap();
    assert_eq!(
        (cmd.opcode, cmd.size),
        (KvOpcode::Retrieve, RETRIEVE_BUFFER)
    );
    // The target sends what fits and says how large the value is.
    let size = RETRIEVE_BUFFER as usize + 100;
    let part = Pdu::C2HData {
        cccid: retrieve.cid,
        datao: 0,
        last: true,
        success: false,
        data: Bytes::from(vec![7u8; RETRIEVE_BUFFER as usize]),
    };
    f.receive(part, &mut out, &mut done).unwrap();
    f.receive(resp(retrieve.cid, size as u32), &mut out, &mut done)
        .unwrap();
    assert!(done.is_empty(), "no caller completed with part of a value");
    // Asked again through the pair, whose Fetch brings the whole native response.
    let (submit, _) = capsule(&pdus(&mut out)[0]);
    assert_eq!(submit.opcode, VENDOR_SUBMIT);
    f.receive(resp(submit.cid, 0), &mut out, &mut done).unwrap();
    let (fetch, _) = capsule(&pdus(&mut out)[0]);
    let whole = Response {
        cid: 9,
        nsid: 3,
        opcode: Opcode::Retrieve as u8,
        status: Status::Success,
        reply: Reply::Value(Bytes::from(vec![7u8; size])),
    };
    let mut answer = BytesMut::new();
    whole.encode(&mut answer).unwrap();
    let data = Pdu::C2HData {
        cccid: fetch.cid,
        datao: 0,
        last: true,
        success: false,
        data: answer.freeze(),
    };
    f.receive(data, &mut out, &mut done).unwrap();
    f.receive(resp(fetch.cid, 0), &mut out, &mut done).unwrap();
    assert_eq!(Response::decode(&done[0]).unwrap(), whole);
    // The namespace still takes the KV route.
    assert!(f.authed.contains(&3) && f.is_empty());
}

#[test]
fn kv_failures_complete_as_the_native_error_frames() {
    let mut f = Flights::new(Digests::default(), 1 << 20, 8192);
    f.authed.insert(3);
    let (mut out, mut done) = (BytesMut::new(), Vec::new());
    for (sc, status) in [(0x87, Status::KeyNotExist), (0x89, Status::KeyExists)] {
        let (_, get) = frame(Request::Retrieve {
            key: Bytes::from_static(b"gone"),
        });
        f.send(Native::Frame(get), 1 << 20, &mut out).unwrap();
        let (retrieve, _) = capsule(&pdus(&mut out)[0]);
        let cqe = Cqe {
            cid: retrieve.cid,
            status: NvmeStatus::error(1, sc),
            ..Cqe::default()
        };
        f.receive(Pdu::CapsuleResp { cqe }, &mut out, &mut done)
            .unwrap();
        let got = done.pop().unwrap();
        // Byte for byte the frame the device's own answer would be.
        let (_, msg) = kv_refusal(cqe.status, 3);
        let mut want = BytesMut::new();
        Response::error(9, 3, Opcode::Retrieve as u8, status, msg)
            .encode(&mut want)
            .unwrap();
        let want = split_frame(&mut want, 1 << 20).unwrap().unwrap();
        assert_eq!((got.header, &got.body), (want.header, &want.body));
        assert_eq!(Response::decode(&got).unwrap().status, status);
    }
}

#[test]
fn a_point_command_is_encoded_only_when_it_goes_as_the_pair() {
    let store = Request::Store {
        key: Bytes::from_static(b"k"),
        value: Bytes::from_static(b"value"),
        mode: StoreMode::Always,
        sync: false,
    };
    let (header, bytes) = frame(store.clone());
    let mut out = BytesMut::new();
    // Its namespace not authenticated on this connection: the pair, whose Submit carries
    // the frame `Command::encode` writes.
    let mut f = Flights::new(Digests::default(), 1 << 20, 8192);
    f.send(Native::Point(header, store.clone()), 64, &mut out)
        .unwrap();
    let (submit, data) = capsule(&pdus(&mut out)[0]);
    assert_eq!((submit.opcode, &data), (VENDOR_SUBMIT, &bytes));
    // Authenticated: a KV Store. Refused as an invalid namespace, it goes again as the
    // pair, with the same frame.
    let mut f = Flights::new(Digests::default(), 1 << 20, 8192);
    f.authed.insert(3);
    f.send(Native::Point(header, store), 64, &mut out).unwrap();
    let (kv, value) = capsule(&pdus(&mut out)[0]);
    let cmd = KvCommand::decode(&kv).unwrap().unwrap();
    assert_eq!((cmd.opcode, &value[..]), (KvOpcode::Store, &b"value"[..]));
    let refused = Pdu::CapsuleResp {
        cqe: Cqe {
            cid: kv.cid,
            status: NvmeStatus::error(0, 0x0B),
            ..Cqe::default()
        },
    };
    let mut done = Vec::new();
    f.receive(refused, &mut out, &mut done).unwrap();
    assert!(done.is_empty());
    let (again, data) = capsule(&pdus(&mut out)[0]);
    assert_eq!((again.opcode, &data), (VENDOR_SUBMIT, &bytes));
    assert!(!f.authed.contains(&3));
}
