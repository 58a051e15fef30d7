//! Bytes from the network: split into frames in pieces of the first byte's size and decode
//! each as a command and as a response. Any panic is a bug; so is a buffer grown past what
//! arrived plus the body limit.
#![no_main]

use bytes::{BufMut, BytesMut};
use cerberus_proto::{split_frame, Command, Response, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

const MAX_BODY: u32 = 64 << 10;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, wire)) = data.split_first() else {
        return;
    };
    let mut buf = BytesMut::new();
    for piece in wire.chunks(usize::from(chunk).max(1)) {
        buf.put_slice(piece);
        loop {
            match split_frame(&mut buf, MAX_BODY) {
                Ok(Some(frame)) => {
                    if let Ok(cmd) = Command::decode(&frame) {
                        // What decodes re-encodes to a frame that decodes the same.
                        let mut again = BytesMut::new();
                        cmd.encode(&mut again).expect("re-encode");
                        let f = split_frame(&mut again, u32::MAX).expect("split").expect("whole");
                        assert_eq!(Command::decode(&f).expect("decode again"), cmd);
                    }
                    let _ = Response::decode(&frame);
                }
                Ok(None) => break,
                Err(_) => return,
            }
            assert!(buf.capacity() <= wire.len() + HEADER_LEN + MAX_BODY as usize);
        }
    }
});
