//! Bytes from an NVMe/TCP connection: split into PDUs in pieces of the first byte's size,
//! with the digests the second byte's low bits say. Any panic is a bug; so is a buffer grown
//! past what arrived; every PDU taken re-encodes to bytes that split back to it.
#![no_main]

use bytes::{BufMut, BytesMut};
use cerberus_proto::nvme::{split_pdu, Digests, PduLimits};
use libfuzzer_sys::fuzz_target;

const LIMITS: PduLimits = PduLimits::uniform(16 << 10);

fuzz_target!(|data: &[u8]| {
    let [chunk, dg, wire @ ..] = data else {
        return;
    };
    let digests = Digests {
        header: dg & 1 != 0,
        data: dg & 2 != 0,
    };
    let mut buf = BytesMut::new();
    for piece in wire.chunks(usize::from(*chunk).max(1)) {
        buf.put_slice(piece);
        loop {
            match split_pdu(&mut buf, digests, LIMITS) {
                Ok(Some(pdu)) => {
                    let mut again = BytesMut::new();
                    pdu.encode(digests, &mut again);
                    let back = split_pdu(&mut again, digests, LIMITS);
                    // IC PDUs go without digests whatever was negotiated.
                    if let Ok(Some(back)) = back {
                        assert_eq!(back, pdu);
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
            assert!(buf.capacity() <= 2 * wire.len() + 64);
        }
    }
});
